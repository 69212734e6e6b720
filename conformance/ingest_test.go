package conformance

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// upload sends one file as multipart/form-data to /ingest/upload of the shared server.
func upload(t *testing.T, s session, filename string, content []byte) reply {
	t.Helper()
	return uploadAt(t, httpc, server.APIRoot, s.Access, filename, content)
}

// uploadAt sends one file to /ingest/upload of the server at root.
func uploadAt(t *testing.T, hc *http.Client, root, token, filename string, content []byte) reply {
	t.Helper()
	return postFileAt(t, hc, root+"/ingest/upload", token, filename, content)
}

// postFileAt posts one file as the multipart/form-data field "file" to url.
func postFileAt(t *testing.T, hc *http.Client, url, token, filename string, content []byte) reply {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fw, err := mw.CreateFormFile("file", filename)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = fw.Write(content)
	_ = mw.Close()
	req, _ := http.NewRequest(http.MethodPost, url, &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return reply{Status: res.StatusCode, Header: res.Header, Body: b}
}

// importFile uploads, commits and waits for the job to end; it returns the final job.
func importFile(t *testing.T, s session, filename string, content []byte, commit map[string]any) map[string]any {
	t.Helper()
	up := upload(t, s, filename, content)
	if up.Status != 201 || up.JSON(t)["status"] != "pending" {
		t.Fatalf("upload %s: %d %s", filename, up.Status, up.Body)
	}
	id := up.JSON(t)["job_id"].(string)
	if commit == nil {
		commit = map[string]any{}
	}
	c := call(t, "POST", "/ingest/commit/"+id, commit, bearer(s.Access)...)
	if c.Status != 202 {
		t.Fatalf("commit: %d %s", c.Status, c.Body)
	}
	return waitJobEnd(t, s, id)
}

// waitJobEnd waits for a committed job to end and returns it.
func waitJobEnd(t *testing.T, s session, id string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		job := call(t, "GET", "/jobs/"+id, nil, bearer(s.Access)...).JSON(t)
		if job["status"] == "complete" || job["status"] == "failed" {
			return job
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("job %s did not finish", id)
	return nil
}

func pointsGeoJSON(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"type":"FeatureCollection","features":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"type":"Feature","properties":{"name":"p%d","rank":%d},"geometry":{"type":"Point","coordinates":[%g,%g]}}`,
			i, i, 5+float64(i)*0.01, 50+float64(i)*0.01)
	}
	b.WriteString("]}")
	return []byte(b.String())
}

func dataTables(t *testing.T) int {
	t.Helper()
	ctx := context.Background()
	conn := dbConn(t)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE schemaname = 'data'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestIngestGeoJSONEndToEnd(t *testing.T) {
	u := newUser(t, "editor")
	job := importFile(t, u, "places.geojson", pointsGeoJSON(25), map[string]any{"title": "Places", "visibility": "internal"})
	if job["status"] != "complete" || job["current_step"] != "complete" || job["progress"].(float64) != 1 || job["dataset_id"] == nil {
		t.Fatalf("job: %v", job)
	}
	d := call(t, "GET", "/datasets/"+job["dataset_id"].(string), nil, bearer(u.Access)...).JSON(t)
	bbox := d["extent_bbox"].([]any)
	if d["title"] != "Places" || d["feature_count"].(float64) != 25 || d["geometry_type"] != "MULTIPOINT" || d["srid"].(float64) != 4326 ||
		d["source_format"] != "GeoJSON" || d["source_filename"] != "places.geojson" || d["visibility"] != "internal" ||
		bbox[0].(float64) != 5 || bbox[1].(float64) != 50 || len(d["column_info"].([]any)) != 2 {
		t.Fatalf("dataset record: %v", d)
	}
	if r := call(t, "POST", "/jobs/"+job["id"].(string)+"/retry", nil, bearer(u.Access)...); r.Status != 409 {
		t.Fatalf("retry of a complete job: %d", r.Status)
	}
	if r := call(t, "GET", "/jobs/"+job["id"].(string), nil, bearer(newUser(t, "editor").Access)...); r.Status != 404 {
		t.Fatalf("job of another user: %d", r.Status)
	}
	if r := call(t, "POST", "/ingest/commit/"+job["id"].(string), nil, bearer(u.Access)...); r.Status != 409 {
		t.Fatalf("second commit: %d", r.Status)
	}
}

// Commit answers the job with job_id and a message, and takes the fields clients send: the
// temporal extent becomes the data vintage; raster options are refused for a vector file.
func TestCommitClientFields(t *testing.T) {
	u := newUser(t, "editor")
	id := upload(t, u, "when.geojson", pointsGeoJSON(3)).JSON(t)["job_id"].(string)
	for _, body := range []map[string]any{{"title": "x", "compression": "DEFLATE"}, {"title": "x", "nodata_override": 0},
		{"title": "x", "temporal_start": "2021-01-01T00:00:00Z", "temporal_end": "2020-01-01T00:00:00Z"}} {
		if r := call(t, "POST", "/ingest/commit/"+id, body, bearer(u.Access)...); r.Status != 422 {
			t.Fatalf("commit %v: %d %s", body, r.Status, r.Body)
		}
	}
	c := call(t, "POST", "/ingest/commit/"+id, map[string]any{"title": "When", "token": "ignored",
		"temporal_start": "2020-03-01T00:00:00Z", "temporal_end": "2021-06-30T12:00:00Z"}, bearer(u.Access)...)
	if c.Status != 202 || c.JSON(t)["job_id"] != id || c.JSON(t)["id"] != id || c.JSON(t)["message"] == "" {
		t.Fatalf("commit: %d %s", c.Status, c.Body)
	}
	job := waitJob(t, httpc, server.APIRoot, u.Access, id, time.Minute, func(j map[string]any) bool { return j["status"] != "pending" && j["status"] != "running" })
	d := call(t, "GET", "/datasets/"+job["dataset_id"].(string), nil, bearer(u.Access)...).JSON(t)
	if d["data_vintage_start"] != "2020-03-01" || d["data_vintage_end"] != "2021-06-30" {
		t.Fatalf("vintage from the commit's temporal extent: %v %v", d["data_vintage_start"], d["data_vintage_end"])
	}
}

func TestIngestCSVWithCoordinates(t *testing.T) {
	u := newUser(t, "editor")
	csv := "name,lon,lat,when,survey_date\nA,4.9,52.37,2024-01-02,spring 2024\nB,-0.12,51.5,2024-03-04,\n"
	job := importFile(t, u, "cities.csv", []byte(csv), nil)
	if job["status"] != "complete" {
		t.Fatalf("csv job: %v", job)
	}
	if tpe := job["temporal_parse_errors"].(map[string]any); tpe["survey_date"] == nil || tpe["when"] != nil {
		t.Fatalf("temporal_parse_errors: %v", tpe)
	}
	d := call(t, "GET", "/datasets/"+job["dataset_id"].(string), nil, bearer(u.Access)...).JSON(t)
	if d["feature_count"].(float64) != 2 || d["title"] != "cities" {
		t.Fatalf("csv dataset: %v", d)
	}
	// A first quality score comes with the import: 9 of the 10 attribute values are filled
	// (lon/lat stay columns beside the geometry built from them).
	if q := d["quality_detail"].(map[string]any); q["attribute_completeness"].(float64) != 90 || q["crs_defined"].(float64) != 100 {
		t.Fatalf("quality after import: %v", q)
	}
	if cols := fmt.Sprint(d["column_info"]); !strings.Contains(cols, "name:lon ") || !strings.Contains(cols, "name:lat ") {
		t.Fatalf("the coordinate columns are gone: %s", cols)
	}
}

// Bad input ends in a clear problem or a failed job with a clear error_message, and nothing
// half-written is left behind.
func TestIngestBadInput(t *testing.T) {
	u := newUser(t, "editor")
	// Unreadable files are refused at commit, naming the file.
	for name, tc := range map[string]struct {
		file    string
		content []byte
	}{
		"truncated GeoJSON":                {"broken.geojson", pointsGeoJSON(10)[:200]},
		"extension lies about the content": {"image.gpkg", []byte("this is not a geopackage at all")},
	} {
		t.Run(name, func(t *testing.T) {
			id := upload(t, u, tc.file, tc.content).JSON(t)["job_id"].(string)
			r := call(t, "POST", "/ingest/commit/"+id, map[string]any{}, bearer(u.Access)...)
			if r.Status != 422 || !strings.Contains(r.JSON(t)["detail"].(string), tc.file) {
				t.Fatalf("commit: %d %s", r.Status, r.Body)
			}
		})
	}
	for name, tc := range map[string]struct {
		filename string
		content  []byte
		status   int
	}{
		"0-byte upload":              {"empty.geojson", nil, 422},
		"path traversal in the name": {"../../x.gpkg", []byte("x"), 422},
		"unsupported extension":      {"notes.exe", []byte("x"), 422},
	} {
		t.Run(name, func(t *testing.T) {
			if r := upload(t, u, tc.filename, tc.content); r.Status != tc.status {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
		})
	}
	t.Run("viewer cannot upload", func(t *testing.T) {
		if r := upload(t, newUser(t, "viewer"), "a.geojson", pointsGeoJSON(1)); r.Status != 403 {
			t.Fatalf("%d", r.Status)
		}
	})
}

func TestJobsAdministration(t *testing.T) {
	u, a := newUser(t, "editor"), admin(t)
	job := importFile(t, u, "few.geojson", pointsGeoJSON(3), nil)
	ds := job["dataset_id"].(string)
	if r := call(t, "GET", "/jobs/by-dataset/"+ds, nil, bearer(u.Access)...); r.Status != 200 || r.JSON(t)["id"] != job["id"] {
		t.Fatalf("job by dataset: %d %s", r.Status, r.Body)
	}
	list := call(t, "GET", "/admin/jobs/?created_by="+u.ID, nil, bearer(a.Access)...).JSON(t)
	if list["total"].(float64) != 1 {
		t.Fatalf("admin jobs: %v", list)
	}
	cfg := call(t, "GET", "/ingest/upload/config", nil, bearer(u.Access)...).JSON(t)
	if ext, _ := cfg["allowed_extensions"].(string); cfg["max_file_size_bytes"].(float64) != 500<<20 || !strings.Contains(ext, ".gpkg,") ||
		len(cfg["allowed_extensions_list"].([]any)) != strings.Count(ext, ",")+1 {
		t.Fatalf("upload config: %v", cfg)
	}

	// A job left "running" by a server that died: cleanup finds it and makes it retryable (its
	// staging file is kept).
	ctx := context.Background()
	conn := dbConn(t)
	staged := filepath.Join(server.dataDir, "staging", "lost-"+randomHex(4), "lost.gpkg")
	if err := os.MkdirAll(filepath.Dir(staged), 0o750); err != nil || os.WriteFile(staged, []byte("kept"), 0o640) != nil {
		t.Fatal("staging file", err)
	}
	var stale string
	if err := conn.QueryRow(ctx, `INSERT INTO catalog.ingest_jobs (status, current_step, source_filename, staging_path, created_by, updated_at)
		VALUES ('running', 'ogr2ogr', 'lost.gpkg', $2, $1, now() - interval '3 hours') RETURNING id::text`, u.ID, staged).Scan(&stale); err != nil {
		t.Fatal(err)
	}
	// The server's own stall sweeper would fail this job at any moment too; a lock on its row
	// holds the sweeper (and any write) off while the dry run, which only reads, is checked.
	lock, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.Exec(ctx, `SELECT 1 FROM catalog.ingest_jobs WHERE id = $1 FOR UPDATE`, stale); err != nil {
		t.Fatal(err)
	}
	dry := call(t, "POST", "/jobs/cleanup/stale/", map[string]any{"dry_run": true}, bearer(a.Access)...).JSON(t)
	if !strings.Contains(fmt.Sprint(dry["job_ids"]), stale) || dry["dry_run"] != true {
		t.Fatalf("dry run: %v", dry)
	}
	if j := call(t, "GET", "/jobs/"+stale, nil, bearer(u.Access)...).JSON(t); j["status"] != "running" {
		t.Fatalf("dry run changed the job: %v", j)
	}
	if err := lock.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	call(t, "POST", "/jobs/cleanup/stale/", map[string]any{}, bearer(a.Access)...)
	if j := call(t, "GET", "/jobs/"+stale, nil, bearer(u.Access)...).JSON(t); j["status"] != "failed" || j["can_retry"] != true {
		t.Fatalf("after cleanup: %v", j)
	}
	if j := call(t, "GET", "/jobs/"+job["id"].(string), nil, bearer(u.Access)...).JSON(t); j["status"] != "complete" {
		t.Fatalf("cleanup touched a finished job: %v", j)
	}
}

// ogrCount opens a file with GDAL and returns its feature count.
func ogrCount(t *testing.T, path string) int {
	t.Helper()
	out, err := exec.Command("ogrinfo", "-ro", "-so", "-al", path).CombinedOutput()
	if err != nil {
		t.Fatalf("ogrinfo %s: %v\n%s", path, err, out)
	}
	m := regexp.MustCompile(`Feature Count: (\d+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no feature count in %s", out)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

func TestExportFormats(t *testing.T) {
	u := newUser(t, "editor")
	job := importFile(t, u, "exp.geojson", pointsGeoJSON(12), map[string]any{"title": "Export me"})
	id := job["dataset_id"].(string)
	dir := t.TempDir()
	for _, f := range []struct{ format, ext string }{{"geojson", "geojson"}, {"csv", "csv"}, {"gpkg", "gpkg"}, {"fgb", "fgb"}, {"shp", "zip"}} {
		t.Run(f.format, func(t *testing.T) {
			open, disposition := exportedFile(t, dir, id, f.format, f.ext, u.Access)
			if !strings.Contains(disposition, "Export_me."+f.ext) {
				t.Fatalf("Content-Disposition %q", disposition)
			}
			if n := ogrCount(t, open); n != 12 {
				t.Fatalf("%s export holds %d features, want 12", f.format, n)
			}
		})
	}
	r := call(t, "GET", "/datasets/"+id+"/export?format=geojson&bbox=4.9,49.9,5.05,50.05", nil, bearer(u.Access)...)
	var fc struct{ Features []any }
	if err := json.Unmarshal(r.Body, &fc); err != nil || len(fc.Features) != 6 {
		t.Fatalf("bbox export: %d features (%v)", len(fc.Features), err)
	}
	if r := call(t, "GET", "/datasets/"+id+"/export?format=geojson&crs=3857", nil, bearer(u.Access)...); r.Status != 200 || !strings.Contains(string(r.Body), "556597") {
		t.Fatalf("export in EPSG:3857: %d %.200s", r.Status, r.Body)
	}
	if r := call(t, "GET", "/datasets/"+id+"/export?format=geojson&crs=999999", nil, bearer(u.Access)...); r.Status != 422 {
		t.Fatalf("unknown crs: %d", r.Status)
	}
	for target, status := range map[string]int{"EPSG:3857": 200, "3857": 200, "http://www.opengis.net/def/crs/EPSG/0/3857": 200, "EPSG:x": 400} {
		r := call(t, "GET", "/datasets/"+id+"/export?format=geojson&target_crs="+url.QueryEscape(target), nil, bearer(u.Access)...)
		if r.Status != status || status == 200 && !strings.Contains(string(r.Body), "556597") {
			t.Fatalf("target_crs %s: %d %.200s", target, r.Status, r.Body)
		}
	}
	if r := call(t, "GET", "/datasets/"+id+"/export?format=geojson&crs=4326&target_crs=EPSG:3857", nil, bearer(u.Access)...); r.Status != 400 {
		t.Fatalf("crs and target_crs disagreeing: %d", r.Status)
	}
	// where: a CQL2 filter whose values reach the database as settings, never as SQL or options;
	// a value with spaces, quotes and backslashes stays one value.
	for filter, want := range map[string]int{"rank >= 9": 3, "name = 'p1' OR name LIKE 'p1%'": 3,
		`name = 'p1 -c statement_timeout=1 \ '' x'`: 0, "rank < 2 AND name <> 'p0'": 1} {
		r := call(t, "GET", "/datasets/"+id+"/export?format=geojson&where="+url.QueryEscape(filter), nil, bearer(u.Access)...)
		var fc struct{ Features []any }
		if err := json.Unmarshal(r.Body, &fc); r.Status != 200 || err != nil || len(fc.Features) != want {
			t.Fatalf("where %s: %d, %d features, want %d (%.300s)", filter, r.Status, len(fc.Features), want, r.Body)
		}
	}
	for _, bad := range []string{"nope = 1", "rank >"} {
		if r := call(t, "GET", "/datasets/"+id+"/export?format=geojson&where="+url.QueryEscape(bad), nil, bearer(u.Access)...); r.Status != 400 {
			t.Fatalf("where %s: %d", bad, r.Status)
		}
	}
	// The dataset is private: anonymous callers need a download token.
	if r := call(t, "GET", "/datasets/"+id+"/export?format=csv", nil); r.Status != 404 {
		t.Fatalf("anonymous export of a private dataset: %d", r.Status)
	}
	tok := call(t, "POST", "/auth/download-token/"+id, nil, bearer(u.Access)...).JSON(t)["token"].(string)
	if r := call(t, "GET", "/datasets/"+id+"/export?format=csv&token="+url.QueryEscape(tok), nil); r.Status != 200 || !strings.Contains(string(r.Body), "POINT") {
		t.Fatalf("export with a download token: %d %s", r.Status, r.Body)
	}
	if r := call(t, "GET", "/datasets/"+id+"/export?format=csv&token=forged", nil); r.Status != 401 {
		t.Fatalf("export with a forged token: %d", r.Status)
	}
}

// A where value with white space, backslashes, quotes and what looks like a libpq option
// reaches the database whole, as the one value it is.
func TestExportWhereValuesStayValues(t *testing.T) {
	u := newUser(t, "editor")
	odd := `a b\\c 'q'\t-c statement_timeout=1 -c role=postgres`
	gj := `{"type":"FeatureCollection","features":[` +
		`{"type":"Feature","properties":{"name":"` + odd + `"},"geometry":{"type":"Point","coordinates":[1,1]}},` +
		`{"type":"Feature","properties":{"name":"plain"},"geometry":{"type":"Point","coordinates":[2,2]}}]}`
	job := importFile(t, u, "odd.geojson", []byte(gj), map[string]any{"title": "Odd"})
	var stored []string
	for _, f := range gjFeatures(t, call(t, "GET", "/datasets/"+job["dataset_id"].(string)+"/export?format=geojson", nil, bearer(u.Access)...)) {
		stored = append(stored, f.Properties["name"].(string))
	}
	value := stored[0]
	if !strings.Contains(value, `\`) || !strings.Contains(value, "\t") {
		t.Fatalf("fixture names: %q", stored)
	}
	literal := "'" + strings.ReplaceAll(value, "'", "''") + "'"
	for filter, want := range map[string]string{"name = " + literal: value, "name <> " + literal: "plain"} {
		r := call(t, "GET", "/datasets/"+job["dataset_id"].(string)+"/export?format=geojson&where="+url.QueryEscape(filter), nil, bearer(u.Access)...)
		fs := gjFeatures(t, r)
		if len(fs) != 1 || fs[0].Properties["name"] != want {
			t.Fatalf("where %s: %d %.300s", filter, r.Status, r.Body)
		}
	}
}

type gjFeature struct{ Properties map[string]any }

func gjFeatures(t *testing.T, r reply) []gjFeature {
	t.Helper()
	var fc struct{ Features []gjFeature }
	if err := json.Unmarshal(r.Body, &fc); r.Status != 200 || err != nil {
		t.Fatalf("export: %d %v %.300s", r.Status, err, r.Body)
	}
	return fc.Features
}

// gdal runs a GDAL command line tool for fixture files.
func gdal(t *testing.T, tool string, args ...string) {
	t.Helper()
	if out, err := exec.Command(tool, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", tool, args, err, out)
	}
}

func TestMultiLayerPreviewAndFanOut(t *testing.T) {
	u := newUser(t, "editor")
	dir := t.TempDir()
	src := filepath.Join(dir, "p.geojson")
	if err := os.WriteFile(src, pointsGeoJSON(4), 0o600); err != nil {
		t.Fatal(err)
	}
	gpkg := filepath.Join(dir, "two.gpkg")
	gdal(t, "ogr2ogr", "-f", "GPKG", gpkg, src, "-nln", "roads")
	gdal(t, "ogr2ogr", "-f", "GPKG", "-update", gpkg, src, "-nln", "parks", "-t_srs", "EPSG:3857")
	content, _ := os.ReadFile(gpkg)

	up := upload(t, u, "two.gpkg", content).JSON(t)
	id := up["job_id"].(string)
	pv := call(t, "POST", "/ingest/preview/"+id, map[string]any{"sample_size": 2}, bearer(u.Access)...)
	if pv.Status != 200 {
		t.Fatalf("preview: %d %s", pv.Status, pv.Body)
	}
	layers := pv.JSON(t)["layers"].([]any)
	if len(layers) != 2 {
		t.Fatalf("preview layers: %s", pv.Body)
	}
	parks := layers[1].(map[string]any)
	if parks["name"] != "parks" || parks["crs"].(float64) != 3857 || parks["feature_count"].(float64) != 4 || len(parks["sample_rows"].([]any)) != 2 ||
		parks["field_count"].(float64) != 2 {
		t.Fatalf("parks preview: %v", parks)
	}
	// The top level describes the first layer, or the one named by layer_name.
	if top := pv.JSON(t); top["layer_name"] != "roads" || top["crs"].(float64) != 4326 || len(top["columns"].([]any)) != 2 {
		t.Fatalf("preview top level: %v", top)
	}
	named := call(t, "POST", "/ingest/preview/"+id+"?layer_name=parks", nil, bearer(u.Access)...).JSON(t)
	if named["layer_name"] != "parks" || named["crs"].(float64) != 3857 || named["feature_count"].(float64) != 4 {
		t.Fatalf("preview of layer_name=parks: %v", named)
	}
	if r := call(t, "POST", "/ingest/preview/"+id+"?layer_name=nope", nil, bearer(u.Access)...); r.Status != 422 {
		t.Fatalf("preview of a missing layer: %d", r.Status)
	}
	// Without layer_name a commit imports the first layer.
	first := importFile(t, u, "two.gpkg", content, map[string]any{})
	if first["status"] != "complete" {
		t.Fatalf("commit of a two-layer file without a layer: %v", first)
	}
	if d := call(t, "GET", "/datasets/"+first["dataset_id"].(string), nil, bearer(u.Access)...).JSON(t); d["title"] != "two" || d["original_srid"] != nil && d["original_srid"].(float64) == 3857 {
		t.Fatalf("the first layer (roads, EPSG:4326) was not the one imported: %v", d)
	}
	fo := call(t, "POST", "/ingest/commit-fan-out/"+id, map[string]any{}, bearer(u.Access)...)
	if fo.Status != 202 || fo.JSON(t)["status"] != "fanned_out" || len(fo.JSON(t)["items"].([]any)) != 2 || fo.JSON(t)["fan_out_id"] != id {
		t.Fatalf("fan out: %d %s", fo.Status, fo.Body)
	}
	for i, r := range fo.JSON(t)["results"].([]any) {
		res, item := r.(map[string]any), fo.JSON(t)["items"].([]any)[i].(map[string]any)
		if res["status"] != "queued" || res["new_job_id"] != item["job_id"] || res["layer_name"] != item["layer_name"] {
			t.Fatalf("fan-out result %v for item %v", res, item)
		}
	}
	if j := call(t, "GET", "/jobs/"+id, nil, bearer(u.Access)...).JSON(t); j["status"] != "fanned_out" {
		t.Fatalf("parent job: %v", j)
	}
	for _, it := range fo.JSON(t)["items"].([]any) {
		child := it.(map[string]any)["job_id"].(string)
		var job map[string]any
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if job = call(t, "GET", "/jobs/"+child, nil, bearer(u.Access)...).JSON(t); job["status"] == "complete" || job["status"] == "failed" {
				break
			}
		}
		if job["status"] != "complete" {
			t.Fatalf("child job: %v", job)
		}
		d := call(t, "GET", "/datasets/"+job["dataset_id"].(string), nil, bearer(u.Access)...).JSON(t)
		// Fan-out titles are "{file title}: {layer}".
		if d["title"] != "two: roads" && d["title"] != "two: parks" {
			t.Fatalf("fan-out title: %v", d["title"])
		}
		if d["title"] == "two: parks" && d["original_srid"].(float64) != 3857 {
			t.Fatalf("parks kept no original SRID: %v", d)
		}
		if d["feature_count"].(float64) != 4 {
			t.Fatalf("layer dataset: %v", d)
		}
	}
}

func TestIngestBrokenContainers(t *testing.T) {
	u := newUser(t, "editor")
	dir := t.TempDir()
	src := filepath.Join(dir, "p.geojson")
	_ = os.WriteFile(src, pointsGeoJSON(3), 0o600)

	// A GeoPackage whose only layer was dropped: zero layers.
	gpkg := filepath.Join(dir, "empty.gpkg")
	gdal(t, "ogr2ogr", "-f", "GPKG", gpkg, src, "-nln", "gone")
	gdal(t, "ogrinfo", gpkg, "-sql", "DROP TABLE gone")
	empty, _ := os.ReadFile(gpkg)

	// A zipped Shapefile without its .shx index.
	shpDir := filepath.Join(dir, "shp")
	gdal(t, "ogr2ogr", "-f", "ESRI Shapefile", shpDir, src, "-nln", "pts")
	var zbuf bytes.Buffer
	zw := zip.NewWriter(&zbuf)
	for _, ext := range []string{"shp", "dbf", "prj"} {
		b, _ := os.ReadFile(filepath.Join(shpDir, "pts."+ext))
		w, _ := zw.Create("pts." + ext)
		_, _ = w.Write(b)
	}
	_ = zw.Close()

	for name, tc := range map[string]struct {
		file    string
		content []byte
	}{"GeoPackage with zero layers": {"empty.gpkg", empty}, "zip without .shx": {"noshx.zip", zbuf.Bytes()}} {
		t.Run(name, func(t *testing.T) {
			id := upload(t, u, tc.file, tc.content).JSON(t)["job_id"].(string)
			r := call(t, "POST", "/ingest/commit/"+id, map[string]any{}, bearer(u.Access)...)
			if r.Status != 422 {
				t.Fatalf("commit: %d %s", r.Status, r.Body)
			}
			if d := r.JSON(t)["detail"].(string); d == "" {
				t.Fatal("no reason given")
			}
		})
	}
}

// Source fields that collide with the reserved columns, or whose names are too long for
// PostgreSQL, are renamed and reported.
func TestIngestRenamesReservedAndLongFields(t *testing.T) {
	u := newUser(t, "editor")
	long := strings.Repeat("x", 300)
	gj := `{"type":"FeatureCollection","features":[{"type":"Feature","properties":{"gid":7,"geom":"a","` + long + `":1,"ok":true},` +
		`"geometry":{"type":"Point","coordinates":[1,2]}}]}`
	job := importFile(t, u, "reserved.geojson", []byte(gj), nil)
	if job["status"] != "complete" {
		t.Fatalf("job: %v", job)
	}
	ws := job["warnings"].([]any)
	if len(ws) != 1 {
		t.Fatalf("warnings: %v", ws)
	}
	rr := ws[0].(map[string]any)
	details := fmt.Sprint(rr["details"])
	if rr["kind"] != "reserved_rename" || !strings.Contains(details, "renamed:src_gid") || !strings.Contains(details, "renamed:src_geom") ||
		!strings.Contains(details, "renamed:"+strings.Repeat("x", 63)+"]") {
		t.Fatalf("reserved_rename warning: %v", rr)
	}
	d := call(t, "GET", "/datasets/"+job["dataset_id"].(string), nil, bearer(u.Access)...).JSON(t)
	cols := fmt.Sprint(d["column_info"])
	if !strings.Contains(cols, "src_gid") || !strings.Contains(cols, strings.Repeat("x", 63)) || strings.Contains(cols, strings.Repeat("x", 64)) {
		t.Fatalf("columns: %s", cols)
	}
}

func TestRowsStatsValuesAndValidation(t *testing.T) {
	u := newUser(t, "editor")
	gj := `{"type":"FeatureCollection","features":[` +
		`{"type":"Feature","properties":{"kind":"shop","size":10},"geometry":{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,1],[0,0]]]}},` +
		`{"type":"Feature","properties":{"kind":"shop","size":30},"geometry":{"type":"Polygon","coordinates":[[[0,0],[2,2],[2,0],[0,2],[0,0]]]}},` +
		`{"type":"Feature","properties":{"kind":"park","size":null},"geometry":null}]}`
	job := importFile(t, u, "lots.geojson", []byte(gj), map[string]any{"title": "Lots"})
	if job["status"] != "complete" {
		t.Fatalf("job: %v", job)
	}
	id := job["dataset_id"].(string)
	rows := call(t, "GET", "/datasets/"+id+"/rows/?sort=-size&columns=size", nil, bearer(u.Access)...).JSON(t)
	first := rows["rows"].([]any)[0].(map[string]any)
	if rows["total"].(float64) != 3 || first["size"].(float64) != 30 || first["kind"] != nil || first["gid"] == nil {
		t.Fatalf("rows: %v", rows)
	}
	if r := call(t, "GET", "/datasets/"+id+"/rows/?sort=nope", nil, bearer(u.Access)...); r.Status != 422 {
		t.Fatalf("sort by an unknown column: %d", r.Status)
	}
	if q := call(t, "GET", "/datasets/"+id+"/rows/?q=PARK", nil, bearer(u.Access)...).JSON(t); q["total"].(float64) != 1 || q["approximate_total"].(float64) != 1 {
		t.Fatalf("row search: %v", q)
	}
	// Keyset paging: next_cursor leads from page to page, the last page has none.
	var keys []any
	for after, pages := "", 0; pages < 5; pages++ {
		pg := call(t, "GET", "/datasets/"+id+"/rows/?limit=2"+after, nil, bearer(u.Access)...).JSON(t)
		if n, _ := pg["approximate_total"].(float64); n != 3 {
			t.Fatalf("rows page: %v", pg)
		}
		for _, r := range pg["rows"].([]any) {
			keys = append(keys, r.(map[string]any)["gid"])
		}
		if pg["next_cursor"] == nil {
			break
		}
		after = fmt.Sprintf("&after=%v", pg["next_cursor"])
	}
	if fmt.Sprint(keys) != "[1 2 3]" {
		t.Fatalf("keyset pages gave the keys %v", keys)
	}
	if r := call(t, "GET", "/datasets/"+id+"/rows/?after=1&sort=-size", nil, bearer(u.Access)...); r.Status != 422 {
		t.Fatalf("after with a sort: %d", r.Status)
	}
	st := call(t, "GET", "/datasets/"+id+"/columns/size/stats/", nil, bearer(u.Access)...).JSON(t)
	if st["count"].(float64) != 3 || st["null_count"].(float64) != 1 || st["mean"].(float64) != 20 || st["min"].(float64) != 10 || st["median"].(float64) != 20 ||
		fmt.Sprint(st["quantiles"]) != "[15 20 25]" || st["data_type"] != "numeric" {
		t.Fatalf("stats: %v", st)
	}
	vals := call(t, "GET", "/datasets/"+id+"/columns/kind/values/", nil, bearer(u.Access)...).JSON(t)
	top := vals["value_counts"].([]any)[0].(map[string]any)
	if vals["total"].(float64) != 2 || vals["count"].(float64) != 2 || top["value"] != "shop" || top["count"].(float64) != 2 ||
		vals["values"].([]any)[0] != "shop" {
		t.Fatalf("values: %v", vals)
	}
	if r := call(t, "GET", "/datasets/"+id+"/columns/"+url.PathEscape(`x"; DROP TABLE catalog.users; --`)+"/values/", nil, bearer(u.Access)...); r.Status != 404 {
		t.Fatalf("unknown column: %d", r.Status)
	}
	v := call(t, "GET", "/datasets/"+id+"/validate/", nil, bearer(u.Access)...).JSON(t)
	if v["valid"] != false || v["is_valid"] != false || v["invalid_geometry_count"].(float64) != 1 || v["null_geometry_count"].(float64) != 1 ||
		v["crs_defined"] != true || len(v["errors"].([]any)) != 2 || len(v["warnings"].([]any)) != 0 || v["quality_score"] == nil {
		t.Fatalf("validation: %v", v)
	}
	if !strings.Contains(fmt.Sprint(v["issues"]), "Self-intersection") {
		t.Fatalf("no ST_IsValidReason in the issues: %v", v["issues"])
	}
	d := call(t, "GET", "/datasets/"+id, nil, bearer(u.Access)...).JSON(t)
	qd := d["quality_detail"].(map[string]any)
	if qd["geometry_validity"].(float64) != 33.3 || qd["crs_defined"].(float64) != 100 {
		t.Fatalf("stored quality: %v", qd)
	}
	if r := call(t, "GET", "/datasets/"+id+"/rows/", nil, bearer(newUser(t, "viewer").Access)...); r.Status != 404 {
		t.Fatalf("rows of a private dataset, other user: %d", r.Status)
	}
}

func TestIngestRecordDetails(t *testing.T) {
	u := newUser(t, "editor")
	gj := `{"type":"FeatureCollection","features":[` +
		`{"type":"Feature","properties":{"site_id":"A1","kind":"buoy","depth":12.5,"observed":"2024-05-01"},"geometry":{"type":"Point","coordinates":[179.5,-17]}},` +
		`{"type":"Feature","properties":{"site_id":"A2","kind":"buoy","depth":30,"observed":"2024-05-02"},"geometry":{"type":"Point","coordinates":[-179.5,-16]}},` +
		`{"type":"Feature","properties":{"site_id":"A3","kind":"buoy","depth":7,"observed":"2024-05-03"},"geometry":{"type":"Point","coordinates":[-179.8,-16.5]}}]}`
	job := importFile(t, u, "fiji.geojson", []byte(gj), nil)
	if job["status"] != "complete" {
		t.Fatalf("job: %v", job)
	}
	d := call(t, "GET", "/datasets/"+job["dataset_id"].(string), nil, bearer(u.Access)...).JSON(t)
	bbox := d["extent_bbox"].([]any)
	if bbox[0].(float64) != 179.5 || bbox[2].(float64) != -179.5 {
		t.Fatalf("antimeridian extent %v, want west 179.5 > east -179.5", bbox)
	}
	roles := map[string]string{}
	for _, c := range d["column_info"].([]any) {
		m := c.(map[string]any)
		roles[m["name"].(string)] = fmt.Sprint(m["semantic_role"])
		if len(m["sample_values"].([]any)) == 0 || m["stats"].(map[string]any)["count"].(float64) != 3 {
			t.Fatalf("column %v lacks samples or stats", m)
		}
	}
	want := map[string]string{"site_id": "identifier", "kind": "category", "depth": "measure", "observed": "temporal"}
	for k, v := range want {
		if roles[k] != v {
			t.Errorf("semantic role of %s: %s, want %s", k, roles[k], v)
		}
	}
}

// putPart sends one part to a presigned URL (outside the contract: it stands for object storage).
func putPart(t *testing.T, u string, body []byte) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, u, bytes.NewReader(body))
	res, err := plain.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode, res.Header.Get("ETag")
}

func TestPresignedUploadSinglePart(t *testing.T) {
	u := newUser(t, "editor")
	content := pointsGeoJSON(5)
	r := call(t, "POST", "/ingest/upload/presigned", map[string]any{"filename": "direct.geojson", "file_size": len(content)}, bearer(u.Access)...)
	if r.Status != 200 {
		t.Fatalf("presigned: %d %s", r.Status, r.Body)
	}
	ps := r.JSON(t)
	urls := ps["urls"].([]any)
	if len(urls) != 1 || ps["upload_id"] != nil || ps["part_size"] != nil {
		t.Fatalf("single-part answer: %v", ps)
	}
	tampered := strings.Replace(urls[0].(string), "sig=", "sig=0", 1)
	if code, _ := putPart(t, tampered, content); code != 403 {
		t.Fatalf("tampered URL: %d", code)
	}
	if code, _ := putPart(t, urls[0].(string), append(content, ' ')); code != 413 {
		t.Fatalf("more bytes than declared: %d", code)
	}
	if code, etag := putPart(t, urls[0].(string), content); code != 200 || etag == "" {
		t.Fatalf("put: %d %q", code, etag)
	}
	id := ps["job_id"].(string)
	// Before the upload is completed there is nothing to read: 409, and the job stays pending.
	for _, step := range []string{"/ingest/preview/", "/ingest/commit/"} {
		if r := call(t, "POST", step+id, map[string]any{}, bearer(u.Access)...); r.Status != 409 {
			t.Fatalf("%s before complete: %d %s", step, r.Status, r.Body)
		}
	}
	if j := call(t, "GET", "/jobs/"+id, nil, bearer(u.Access)...).JSON(t); j["status"] != "pending" {
		t.Fatalf("job after an early commit: %v", j)
	}
	if r := call(t, "POST", "/ingest/upload/presigned/"+id+"/complete", map[string]any{}, bearer(u.Access)...); r.Status != 200 {
		t.Fatalf("complete: %d %s", r.Status, r.Body)
	}
	if r := call(t, "POST", "/ingest/upload/presigned/"+id+"/complete", map[string]any{}, bearer(u.Access)...); r.Status != 409 {
		t.Fatalf("second complete: %d", r.Status)
	}
	if r := call(t, "POST", "/ingest/commit/"+id, map[string]any{}, bearer(u.Access)...); r.Status != 202 {
		t.Fatalf("commit: %d %s", r.Status, r.Body)
	}
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if j := call(t, "GET", "/jobs/"+id, nil, bearer(u.Access)...).JSON(t); j["status"] == "complete" {
			return
		}
	}
	t.Fatal("the presigned import did not complete")
}

func TestPresignedUploadMultipartAndLimits(t *testing.T) {
	s := startFresh(t, "PRESIGNED_THRESHOLD_BYTES=100", "PRESIGNED_PART_BYTES=64", "MAX_UPLOAD_BYTES=100000", "RATE_LIMIT_ENABLED=false")
	c, _ := NewContract(mustDoc(t), s.APIRoot)
	hc := c.Client()
	tok := callAt(t, hc, s.APIRoot, "POST", "/auth/login", url.Values{"username": {"admin"}, "password": {AdminPassword}}).JSON(t)["access_token"].(string)
	content := pointsGeoJSON(3)
	if r := callAt(t, hc, s.APIRoot, "POST", "/ingest/upload/presigned", map[string]any{"filename": "big.geojson", "file_size": 100001}, bearer(tok)...); r.Status != 413 {
		t.Fatalf("over the maximum: %d", r.Status)
	}
	if r := callAt(t, hc, s.APIRoot, "POST", "/ingest/upload/presigned", map[string]any{"filename": "zero.geojson", "file_size": 0}, bearer(tok)...); r.Status != 422 {
		t.Fatalf("zero bytes: %d", r.Status)
	}
	r := callAt(t, hc, s.APIRoot, "POST", "/ingest/upload/presigned", map[string]any{"filename": "multi.geojson", "file_size": len(content)}, bearer(tok)...)
	ps := r.JSON(t)
	urls := ps["urls"].([]any)
	want := (len(content) + 63) / 64
	if r.Status != 200 || len(urls) != want || ps["part_size"].(float64) != 64 || ps["upload_id"] == nil {
		t.Fatalf("multipart answer (%d bytes): %v", len(content), ps)
	}
	id := ps["job_id"].(string)
	var parts []map[string]any
	for i, u := range urls {
		chunk := content[i*64 : min((i+1)*64, len(content))]
		code, etag := putPart(t, u.(string), chunk)
		if code != 200 {
			t.Fatalf("part %d: %d", i+1, code)
		}
		if i < len(urls)-1 { // leave the last one out first
			parts = append(parts, map[string]any{"part_number": i + 1, "etag": etag})
		} else {
			defer func(etag string) {
				bad := append(append([]map[string]any{}, parts...), map[string]any{"part_number": i + 1, "etag": `"deadbeef"`})
				if r := callAt(t, hc, s.APIRoot, "POST", "/ingest/upload/presigned/"+id+"/complete", map[string]any{"parts": bad}, bearer(tok)...); r.Status != 422 {
					t.Errorf("wrong ETag: %d", r.Status)
				}
				good := append(parts, map[string]any{"part_number": i + 1, "etag": etag})
				if r := callAt(t, hc, s.APIRoot, "POST", "/ingest/upload/presigned/"+id+"/complete", map[string]any{"parts": good}, bearer(tok)...); r.Status != 200 {
					t.Errorf("complete: %d %s", r.Status, r.Body)
				}
				pv := callAt(t, hc, s.APIRoot, "POST", "/ingest/preview/"+id, map[string]any{}, bearer(tok)...)
				if pv.Status != 200 || !strings.Contains(string(pv.Body), `"feature_count":3`) {
					t.Errorf("preview of the assembled file: %d %s", pv.Status, pv.Body)
				}
			}(etag)
		}
	}
	if r := callAt(t, hc, s.APIRoot, "POST", "/ingest/upload/presigned/"+id+"/complete", map[string]any{"parts": parts}, bearer(tok)...); r.Status != 422 {
		t.Fatalf("missing part: %d %s", r.Status, r.Body)
	}
}

// TestIngestFormats converts one small GeoJSON into every supported format with GDAL and imports
// each: the dataset must hold every feature and the attributes.
func TestIngestFormats(t *testing.T) {
	u := newUser(t, "editor")
	dir := t.TempDir()
	src := filepath.Join(dir, "src.geojson")
	if err := os.WriteFile(src, pointsGeoJSON(7), 0o600); err != nil {
		t.Fatal(err)
	}
	shp := filepath.Join(dir, "shp")
	gdal(t, "ogr2ogr", "-f", "ESRI Shapefile", shp, src, "-nln", "pts", "-lco", "ENCODING=UTF-8")
	var zbuf bytes.Buffer
	zw := zip.NewWriter(&zbuf)
	entries, _ := os.ReadDir(shp)
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(shp, e.Name()))
		w, _ := zw.Create(e.Name())
		_, _ = w.Write(b)
	}
	_ = zw.Close()
	files := map[string][]byte{"pts.zip": zbuf.Bytes()}
	// A spreadsheet carries coordinates as longitude/latitude columns.
	var sheet strings.Builder
	sheet.WriteString("name,lon,lat,rank\n")
	for i := 0; i < 7; i++ {
		fmt.Fprintf(&sheet, "p%d,%g,%g,%d\n", i, 5+float64(i)*0.01, 50+float64(i)*0.01, i)
	}
	sheetCSV := filepath.Join(dir, "sheet.csv")
	_ = os.WriteFile(sheetCSV, []byte(sheet.String()), 0o600)
	gdal(t, "ogr2ogr", "-f", "XLSX", filepath.Join(dir, "pts.xlsx"), sheetCSV, "-nln", "pts")
	files["pts.xlsx"], _ = os.ReadFile(filepath.Join(dir, "pts.xlsx"))
	for ext, driver := range map[string]string{"geojsonl": "GeoJSONSeq", "fgb": "FlatGeobuf", "kml": "KML", "gpkg": "GPKG"} {
		out := filepath.Join(dir, "pts."+ext)
		gdal(t, "ogr2ogr", "-f", driver, out, src, "-nln", "pts")
		files["pts."+ext], _ = os.ReadFile(out)
	}
	// CSV with a WKT column instead of lon/lat.
	var csv strings.Builder
	csv.WriteString("wkt,name,rank\n")
	for i := 0; i < 7; i++ {
		fmt.Fprintf(&csv, "\"POINT (%g %g)\",p%d,%d\n", 5+float64(i)*0.01, 50+float64(i)*0.01, i, i)
	}
	files["pts_wkt.csv"] = []byte(csv.String())
	for name, content := range files {
		t.Run(name, func(t *testing.T) {
			job := importFile(t, u, name, content, nil)
			if job["status"] != "complete" {
				t.Fatalf("job: %v", job)
			}
			d := call(t, "GET", "/datasets/"+job["dataset_id"].(string), nil, bearer(u.Access)...).JSON(t)
			if d["feature_count"].(float64) != 7 || !strings.Contains(fmt.Sprint(d["column_info"]), "name") {
				t.Fatalf("dataset from %s: count %v columns %v", name, d["feature_count"], d["column_info"])
			}
		})
	}
}

func TestExpiredPresignedUploadsAreCancelled(t *testing.T) {
	u := newUser(t, "editor")
	r := call(t, "POST", "/ingest/upload/presigned", map[string]any{"filename": "late.geojson", "file_size": 10}, bearer(u.Access)...)
	id := r.JSON(t)["job_id"].(string)
	ctx := context.Background()
	if _, err := dbConn(t).Exec(ctx, "UPDATE catalog.ingest_jobs SET expires_at = now() - interval '1 minute' WHERE id = $1", id); err != nil {
		t.Fatal(err)
	}
	if r := call(t, "POST", "/ingest/upload/presigned/"+id+"/complete", map[string]any{}, bearer(u.Access)...); r.Status != 409 {
		t.Fatalf("completing an expired upload: %d", r.Status)
	}
	res := call(t, "POST", "/jobs/cleanup/stale/", map[string]any{}, bearer(admin(t).Access)...).JSON(t)
	if !strings.Contains(fmt.Sprint(res["job_ids"]), id) {
		t.Fatalf("cleanup: %v", res)
	}
	if j := call(t, "GET", "/jobs/"+id, nil, bearer(u.Access)...).JSON(t); j["status"] != "cancelled" {
		t.Fatalf("expired job: %v", j)
	}
}
