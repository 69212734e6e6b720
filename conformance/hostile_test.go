package conformance

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// zipOf builds an archive from name → content; a name ending in "@link" becomes a symlink
// member pointing at its content.
func zipOf(t *testing.T, members ...any) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for i := 0; i+1 < len(members); i += 2 {
		name, content := members[i].(string), members[i+1].([]byte)
		h := &zip.FileHeader{Name: name, Method: zip.Deflate}
		if target, ok := strings.CutSuffix(name, "@link"); ok {
			h.Name = target
			h.SetMode(fs.ModeSymlink | 0o777)
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write(content)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// liarZip holds one member whose header declares far more bytes than it holds.
func liarZip(t *testing.T, name string, declared uint64) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	body := []byte(`{"type":"FeatureCollection","features":[]}`)
	w, err := zw.CreateRaw(&zip.FileHeader{Name: name, Method: zip.Store, CRC32: crc32.ChecksumIEEE(body),
		CompressedSize64: uint64(len(body)), UncompressedSize64: declared})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = w.Write(body)
	_ = zw.Close()
	return buf.Bytes()
}

// catalogState is what a hostile file must not change: the accounts and their roles.
func catalogState(t *testing.T) string {
	t.Helper()
	var s string
	err := dbConn(t).QueryRow(context.Background(),
		`SELECT count(*)::text || ':' || coalesce(string_agg(username || '=' || role || '/' || token_version, ',' ORDER BY username), '') FROM catalog.users`).Scan(&s)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// strayTables lists tables in the data schema that no dataset record owns.
func strayTables(t *testing.T) []string {
	t.Helper()
	rows, err := dbConn(t).Query(context.Background(), `SELECT tablename FROM pg_tables p WHERE schemaname = 'data'
		AND NOT EXISTS (SELECT 1 FROM catalog.datasets d WHERE d.table_schema = 'data' AND d.table_name = p.tablename)`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		_ = rows.Scan(&n)
		names = append(names, n)
	}
	return names
}

// pgSource is a GDAL connection string to the shared server's own database, as an attacker who
// guessed it would write it into a VRT.
func pgSource(t *testing.T) string {
	u, err := url.Parse(server.DBURL)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("PG:host=%s port=%s dbname=%s user=%s", u.Hostname(), u.Port(), strings.TrimPrefix(u.Path, "/"), u.User.Username())
}

func vrt(src, sql string) []byte {
	return []byte(fmt.Sprintf(`<OGRVRTDataSource><OGRVRTLayer name="loot"><SrcDataSource>%s</SrcDataSource>%s</OGRVRTLayer></OGRVRTDataSource>`, src, sql))
}

// Files built to make GDAL read the catalog, change it, fetch URLs or read local files, or to
// exhaust the server: every one is refused with a problem that names the reason, before GDAL
// opens anything it should not, and none leaves a trace.
func TestHostileUploadsAreRefused(t *testing.T) {
	u := newUser(t, "editor")
	var hits atomic.Int64
	listener := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = w.Write(pointsGeoJSON(2))
	}))
	defer listener.Close()
	before := catalogState(t)
	pg := pgSource(t)
	readUsers := vrt(pg, `<SrcSQL>SELECT username, password_hash, role FROM catalog.users</SrcSQL>`)
	promote := vrt(pg, fmt.Sprintf(`<SrcSQL>UPDATE catalog.users SET role = 'admin', token_version = token_version WHERE username = '%s' RETURNING username</SrcSQL>`, u.Username))
	point := pointsGeoJSON(2)
	zeros := bytes.Repeat([]byte(" "), 24<<20)

	cases := []struct {
		name, file string
		content    []byte
		status     int
		reason     string // in the problem's detail
	}{
		{"zipped VRT reading the catalog", "loot.zip", zipOf(t, "loot.vrt", readUsers), 422, "loot.vrt"},
		{"zipped VRT updating the catalog", "promote.zip", zipOf(t, "promote.vrt", promote), 422, "promote.vrt"},
		{"zipped VRT fetching a URL", "fetch.zip", zipOf(t, "fetch.vrt", vrt("/vsicurl/"+listener.URL+"/p.geojson", "")), 422, "fetch.vrt"},
		{"zipped VRT reading a local file", "local.zip", zipOf(t, "local.vrt", vrt("CSV:/etc/passwd", "")), 422, "local.vrt"},
		{"VRT named .csv", "loot.csv", readUsers, 422, "not a CSV"},
		{"VRT named .geojson", "loot.geojson", readUsers, 422, "not a GeoJSON"},
		{"VRT named .gpkg", "loot.gpkg", readUsers, 422, "not a GeoPackage"},
		{"VRT named .kml", "loot.kml", promote, 422, "not a KML"},
		{"nested archive", "nested.zip", zipOf(t, "inner.zip", zipOf(t, "p.geojson", point)), 422, "inner.zip"},
		{"member climbing out", "climb.zip", zipOf(t, "../../escape.geojson", point), 422, "../../escape.geojson"},
		{"absolute member", "absolute.zip", zipOf(t, "/tmp/absolute.geojson", point), 422, "/tmp/absolute.geojson"},
		{"symlink member", "link.zip", zipOf(t, "p.geojson@link", []byte("/etc/passwd")), 422, "p.geojson"},
		{"compression bomb", "bomb.zip", zipOf(t, "big.geojson", zeros), 422, "compress"},
		{"declared size beyond the limit", "huge.zip", liarZip(t, "huge.geojson", 1<<42), 413, "huge.geojson"},
		{"declared size smaller than the content", "liar.zip", liarZip(t, "liar.geojson", 3), 422, "liar.geojson"},
		{"archive without a dataset", "readme.zip", zipOf(t, "README.txt", []byte("hello")), 422, "no file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			up := upload(t, u, tc.file, tc.content)
			if up.Status != 201 {
				t.Fatalf("upload: %d %s", up.Status, up.Body)
			}
			id := up.JSON(t)["job_id"].(string)
			for _, step := range []string{"/ingest/preview/", "/ingest/commit/"} {
				r := call(t, "POST", step+id, map[string]any{}, bearer(u.Access)...)
				if r.Status != tc.status {
					t.Fatalf("%s: %d, want %d: %s", step, r.Status, tc.status, r.Body)
				}
				if d, _ := r.JSON(t)["detail"].(string); !strings.Contains(d, tc.reason) {
					t.Fatalf("%s: the problem does not name %q: %s", step, tc.reason, d)
				}
			}
			// The refused commit ends the job, with the reason (a retry cannot change the file).
			job := call(t, "GET", "/jobs/"+id, nil, bearer(u.Access)...).JSON(t)
			if job["status"] != "failed" || job["can_retry"] != false || !strings.Contains(fmt.Sprint(job["error_message"]), tc.reason) {
				t.Fatalf("job after the refused commit: %v", job)
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the server fetched the attacker's URL %d time(s)", n)
	}
	if after := catalogState(t); after != before {
		t.Errorf("the catalog changed:\nbefore %s\nafter  %s", before, after)
	}
	if stray := strayTables(t); len(stray) > 0 {
		t.Errorf("tables outside the catalog: %v", stray)
	}
}

// Sidecar files are data too: a .prj asking for a grid on the network and a .csvt naming a URL
// import (or fail) without GDAL or PROJ fetching anything.
func TestHostileSidecarsFetchNothing(t *testing.T) {
	u := newUser(t, "editor")
	var hits atomic.Int64
	listener := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer listener.Close()
	dir := t.TempDir()
	src := filepath.Join(dir, "p.geojson")
	_ = os.WriteFile(src, pointsGeoJSON(3), 0o600)
	gdal(t, "ogr2ogr", "-f", "ESRI Shapefile", filepath.Join(dir, "shp"), src, "-nln", "pts")
	read := func(ext string) []byte { b, _ := os.ReadFile(filepath.Join(dir, "shp", "pts."+ext)); return b }
	prj := []byte("+proj=longlat +ellps=WGS84 +nadgrids=" + listener.URL + "/grid.tif +no_defs")
	csv := []byte("name,lon,lat\na,5,50\nb,6,51\n")
	csvt := []byte(`"String","/vsicurl/` + listener.URL + `/t","Real"`)
	for name, content := range map[string][]byte{
		"prj.zip":  zipOf(t, "pts.shp", read("shp"), "pts.shx", read("shx"), "pts.dbf", read("dbf"), "pts.prj", prj),
		"csvt.zip": zipOf(t, "pts.csv", csv, "pts.csvt", csvt),
	} {
		job := importFile(t, u, name, content, nil)
		if job["status"] != "complete" && job["status"] != "failed" {
			t.Fatalf("%s: %v", name, job)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("GDAL or PROJ fetched the listener's URL %d time(s)", n)
	}
	if stray := strayTables(t); len(stray) > 0 {
		t.Errorf("tables outside the catalog: %v", stray)
	}
}

// Layer names come from the file; they reach ogr2ogr as data, never as options.
func TestLayerNamesAreNeverOptions(t *testing.T) {
	u := newUser(t, "editor")
	for _, name := range []string{"--config", "-sql", "--optfile"} {
		fc := strings.Replace(string(pointsGeoJSON(4)), `{"type":"FeatureCollection",`, `{"type":"FeatureCollection","name":"`+name+`",`, 1)
		job := importFile(t, u, "named.geojson", []byte(fc), nil)
		if job["status"] != "complete" {
			t.Fatalf("layer %q: %v", name, job)
		}
		ds := call(t, "GET", "/datasets/"+job["dataset_id"].(string), nil, bearer(u.Access)...).JSON(t)
		if ds["feature_count"] != float64(4) {
			t.Fatalf("layer %q: %v features", name, ds["feature_count"])
		}
	}
	// A GeoPackage with two such layers: the chosen one is imported, whatever its name.
	dir := t.TempDir()
	src := filepath.Join(dir, "p.geojson")
	_ = os.WriteFile(src, pointsGeoJSON(5), 0o600)
	gpkg := filepath.Join(dir, "two.gpkg")
	// GDAL's own tools cannot be told such names either; SQL renames the layers.
	gdal(t, "ogr2ogr", "-f", "GPKG", gpkg, src, "-nln", "all")
	gdal(t, "ogr2ogr", "-f", "GPKG", "-update", gpkg, src, "-nln", "two", "-where", "rank < 2")
	gdal(t, "ogrinfo", gpkg, "-sql", `ALTER TABLE "all" RENAME TO "--config"`)
	gdal(t, "ogrinfo", gpkg, "-sql", `ALTER TABLE two RENAME TO "-sql"`)
	content, _ := os.ReadFile(gpkg)
	for layer, want := range map[string]float64{"-sql": 2, "--config": 5} {
		job := importFile(t, u, "two.gpkg", content, map[string]any{"layer_name": layer})
		if job["status"] != "complete" {
			t.Fatalf("layer %q: %v", layer, job)
		}
		ds := call(t, "GET", "/datasets/"+job["dataset_id"].(string), nil, bearer(u.Access)...).JSON(t)
		if ds["feature_count"] != want {
			t.Fatalf("layer %q: %v features, want %v", layer, ds["feature_count"], want)
		}
	}
	var odd int
	_ = dbConn(t).QueryRow(context.Background(), `SELECT count(*) FROM pg_tables WHERE schemaname = 'data' AND tablename NOT LIKE 'ds\_%'`).Scan(&odd)
	if odd != 0 {
		t.Errorf("%d table(s) named after a layer instead of the job", odd)
	}
	if stray := strayTables(t); len(stray) > 0 {
		t.Errorf("tables outside the catalog: %v", stray)
	}
}
