package conformance

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
)

// Raster fixtures are made in the test from a few lines of ASCII grid (or gdal_create), never
// committed as binaries.

// asciiGrid writes an Arc/Info ASCII grid of w x h cells whose value at (col, row) is f, with
// nodata cells where f returns nodata.
func asciiGrid(t *testing.T, dir string, w, h int, nodata float64, f func(col, row int) float64) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "ncols %d\nnrows %d\nxllcorner 500000\nyllcorner 5150000\ncellsize 30\nNODATA_value %g\n", w, h, nodata)
	for r := 0; r < h; r++ {
		for c := 0; c < w; c++ {
			fmt.Fprintf(&b, "%g ", f(c, r))
		}
		b.WriteString("\n")
	}
	p := filepath.Join(dir, fmt.Sprintf("grid-%d.asc", time.Now().UnixNano()))
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// demTIFF is a 1-band float32 DEM in UTM 33N (around 15 E, 46.5 N): heights 100 + col + row
// metres, nodata -9999 in its top-left 10 x 10 corner.
func demTIFF(t *testing.T, w, h int, extra ...string) []byte {
	t.Helper()
	dir := t.TempDir()
	asc := asciiGrid(t, dir, w, h, -9999, func(c, r int) float64 {
		if c < 10 && r < 10 {
			return -9999
		}
		return float64(100 + c + r)
	})
	out := filepath.Join(dir, "dem.tif")
	gdal(t, "gdal_translate", append([]string{"-q", "-ot", "Float32", "-a_srs", "EPSG:32633", "-co", "TILED=YES"}, append(extra, asc, out)...)...)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// createdTIFF runs gdal_create with args (size, bands, type, georeferencing) and returns the file.
func createdTIFF(t *testing.T, args ...string) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), "made.tif")
	gdal(t, "gdal_create", append(append([]string{"-of", "GTiff"}, args...), out)...)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rgbTIFF is a 3-band 8-bit image in WGS 84.
func rgbTIFF(t *testing.T) []byte {
	return createdTIFF(t, "-outsize", "300", "200", "-bands", "3", "-ot", "Byte", "-burn", "200", "-burn", "120", "-burn", "40",
		"-a_srs", "EPSG:4326", "-a_ullr", "10", "48", "10.3", "47.8")
}

// uploadJob uploads a file and returns its job id.
func uploadJob(t *testing.T, s session, name string, content []byte) string {
	t.Helper()
	up := upload(t, s, name, content)
	if up.Status != 201 {
		t.Fatalf("upload %s: %d %s", name, up.Status, up.Body)
	}
	return up.JSON(t)["job_id"].(string)
}

// importRaster uploads, commits and waits; it returns the dataset of a completed job.
func importRaster(t *testing.T, s session, name string, content []byte, commit map[string]any) map[string]any {
	t.Helper()
	job := importFile(t, s, name, content, commit)
	if job["status"] != "complete" {
		t.Fatalf("raster import: %v", job)
	}
	d := call(t, "GET", "/datasets/"+job["dataset_id"].(string), nil, bearer(s.Access)...)
	if d.Status != 200 {
		t.Fatalf("dataset: %d %s", d.Status, d.Body)
	}
	return d.JSON(t)
}

// storedRasters lists the COG files in the shared server's local object store.
func storedRasters(t *testing.T) []string {
	t.Helper()
	var files []string
	_ = filepath.WalkDir(filepath.Join(server.dataDir, "rasters"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	return files
}

// gdalinfoJSON runs gdalinfo -json on a file.
func gdalinfoOf(t *testing.T, path string, args ...string) map[string]any {
	t.Helper()
	out, err := exec.Command("gdalinfo", append(append([]string{"-json"}, args...), path)...).Output()
	if err != nil {
		t.Fatalf("gdalinfo %s: %v", path, err)
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestRasterPreviewCommitAndRecord(t *testing.T) {
	u := newUser(t, "editor")
	dem := demTIFF(t, 400, 300)
	job := uploadJob(t, u, "heights.tif", dem)
	pv := call(t, "POST", "/ingest/preview/"+job, nil, bearer(u.Access)...)
	if pv.Status != 200 {
		t.Fatalf("preview: %d %s", pv.Status, pv.Body)
	}
	p := pv.JSON(t)
	r, _ := p["raster"].(map[string]any)
	if p["detected_format"] != "GTiff" || r == nil || r["crs_epsg"] != 32633.0 || r["band_count"] != 1.0 || r["width"] != 400.0 ||
		r["height"] != 300.0 || r["dtype"] != "float32" || r["nodata"] != "-9999" || r["res_x"] != 30.0 || p["band_count"] != 1.0 {
		t.Fatalf("preview of a DEM: %s", pv.Body)
	}
	layer := p["layers"].([]any)[0].(map[string]any)
	if layer["geometry_type"] != nil || layer["band_count"] != 1.0 || layer["feature_count"] != nil {
		t.Fatalf("a raster previews as one layer without geometry: %v", layer)
	}
	c := call(t, "POST", "/ingest/commit/"+job, map[string]any{"title": "Heights"}, bearer(u.Access)...)
	if c.Status != 202 {
		t.Fatalf("commit: %d %s", c.Status, c.Body)
	}
	done := waitJobEnd(t, u, job)
	if done["status"] != "complete" || done["current_step"] != "complete" || done["progress"] != 1.0 {
		t.Fatalf("job: %v", done)
	}
	d := call(t, "GET", "/datasets/"+done["dataset_id"].(string), nil, bearer(u.Access)...).JSON(t)
	ra, _ := d["raster"].(map[string]any)
	if d["record_type"] != "raster_dataset" || d["srid"] != 3857.0 || d["original_srid"] != 32633.0 || d["feature_count"] != nil ||
		d["geometry_type"] != nil || d["record_status"] != "published" || ra == nil || ra["epsg"] != 32633.0 || ra["is_dem"] != true ||
		ra["band_count"] != 1.0 || ra["compression"] != "ZSTD" || ra["width"] != 400.0 || ra["size_bytes"].(float64) < 1000 {
		t.Fatalf("raster dataset: %v", d)
	}
	if _, leaked := ra["storage_key"]; leaked {
		t.Fatalf("the storage key is shown: %v", ra)
	}
	// Heights run from 110 (the first valid cells) to 100 + 399 + 299 = 798; nodata is left out.
	band := ra["bands"].([]any)[0].(map[string]any)
	lo, hi, p2, p98 := band["min"].(float64), band["max"].(float64), band["p2"].(float64), band["p98"].(float64)
	if lo < 100 || lo > 130 || hi < 770 || hi > 800 || p2 <= lo || p98 >= hi || p2 >= p98 || band["nodata"] != "-9999" || band["dtype"] != "float32" {
		t.Fatalf("band statistics: %v", band)
	}
	bbox := d["extent_bbox"].([]any)
	if w, s := bbox[0].(float64), bbox[1].(float64); w < 14.9 || w > 15.1 || s < 46.4 || s > 46.6 {
		t.Fatalf("extent_bbox in WGS 84: %v", bbox)
	}
	// The record's internal part: where the COG is and its place on the tile grid, as the file says.
	grid := storedGrid(t, d["id"].(string))
	info := gdalinfoOf(t, download(t, u, d["id"].(string)))
	zoom := info["metadata"].(map[string]any)["TILING_SCHEME"].(map[string]any)["ZOOM_LEVEL"]
	overviews := len(info["bands"].([]any)[0].(map[string]any)["overviews"].([]any))
	if grid.Key != "rasters/"+d["id"].(string)+"/v1.tif" || fmt.Sprint(grid.COG.MaxZoom) != zoom || grid.COG.MinZoom != grid.COG.MaxZoom-overviews ||
		grid.COG.Bands != 1 || grid.COG.Alpha || grid.COG.Mask {
		t.Fatalf("stored grid %+v; the file has zoom %v and %d overviews", grid, zoom, overviews)
	}
	if e := call(t, "GET", "/datasets/"+d["id"].(string)+"/export?format=gpkg", nil, bearer(u.Access)...); e.Status != 409 {
		t.Fatalf("export of a raster: %d %s", e.Status, e.Body)
	}
}

func TestRasterRecordsAndIsDEM(t *testing.T) {
	u := newUser(t, "editor")
	d := importRaster(t, u, "terrain.tif", demTIFF(t, 120, 80), nil)
	id := d["id"].(string)
	rec := call(t, "GET", "/collections/datasets/items/"+id, nil, bearer(u.Access)...)
	if rec.Status != 200 {
		t.Fatalf("record: %d %s", rec.Status, rec.Body)
	}
	var got struct {
		Links      []struct{ Rel, Href string }
		Properties struct {
			RecordType    string  `json:"record_type"`
			BandCount     *int    `json:"band_count"`
			HasQuicklook  bool    `json:"has_quicklook"`
			GSD           float64 `json:"gsd"`
			Distributions []struct {
				Format, URL   string
				AutoGenerated bool `json:"auto_generated"`
			}
			Assets map[string]struct{ Href string }
		}
	}
	_ = json.Unmarshal(rec.Body, &got)
	pr := got.Properties
	if pr.RecordType != "raster_dataset" || pr.BandCount == nil || *pr.BandCount != 1 || !pr.HasQuicklook || pr.GSD != 30 {
		t.Fatalf("raster record properties: %s", rec.Body)
	}
	if len(pr.Distributions) == 0 || pr.Distributions[0].Format != "cog" || !strings.HasSuffix(pr.Distributions[0].URL, "/datasets/"+id+"/download/cog") ||
		!pr.Distributions[0].AutoGenerated || len(pr.Distributions) != 1 {
		t.Fatalf("a raster's distributions are its COG download: %+v", pr.Distributions)
	}
	if !strings.HasSuffix(pr.Assets["data"].Href, "/download/cog") || !strings.HasSuffix(pr.Assets["thumbnail"].Href, "/datasets/"+id+"/quicklook") {
		t.Fatalf("assets: %+v", pr.Assets)
	}
	// A vector record keeps band_count null.
	v := importFile(t, u, "pts.geojson", pointsGeoJSON(3), nil)
	vr := call(t, "GET", "/collections/datasets/items/"+v["dataset_id"].(string), nil, bearer(u.Access)...).JSON(t)
	if props := vr["properties"].(map[string]any); props["band_count"] != nil || props["has_quicklook"] != false {
		t.Fatalf("vector record: %v", props)
	}
	if r := call(t, "PATCH", "/datasets/"+v["dataset_id"].(string), map[string]any{"is_dem": true}, bearer(u.Access)...); r.Status != 422 {
		t.Fatalf("is_dem on a vector dataset: %d %s", r.Status, r.Body)
	}
	// PATCH is_dem overrides the detection; null returns to it.
	for _, step := range []struct {
		body any
		want bool
	}{{map[string]any{"is_dem": false}, false}, {map[string]any{"title": "Terrain"}, false}, {json.RawMessage(`{"is_dem": null}`), true}} {
		r := call(t, "PATCH", "/datasets/"+id, step.body, bearer(u.Access)...)
		if r.Status != 200 || r.JSON(t)["raster"].(map[string]any)["is_dem"] != step.want {
			t.Fatalf("PATCH %v: %d %s", step.body, r.Status, r.Body)
		}
	}
	// Deleting the dataset removes its COG.
	before := len(storedRasters(t))
	if r := call(t, "DELETE", "/datasets/"+id, nil, bearer(u.Access)...); r.Status != 204 {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	if after := len(storedRasters(t)); after != before-1 {
		t.Fatalf("stored COGs %d before the delete, %d after", before, after)
	}
}

func TestRasterCommitOptions(t *testing.T) {
	u := newUser(t, "editor")
	rgb := rgbTIFF(t)
	// JPEG with nearest resampling and a nodata value: the stored COG says so.
	d := importRaster(t, u, "photo.tif", rgb, map[string]any{"compression": "jpeg", "resampling": "nearest", "nodata_override": 0})
	ra := d["raster"].(map[string]any)
	if ra["compression"] != "JPEG" || ra["is_dem"] != false || ra["band_count"] != 3.0 || ra["bands"].([]any)[0].(map[string]any)["nodata"] != "0" {
		t.Fatalf("raster: %v", ra)
	}
	// Reprojected without nodata, JPEG imagery gets an internal mask, other compressions an alpha
	// band: the tile reader finds which in the record.
	if g := storedGrid(t, d["id"].(string)); g.COG.Mask || g.COG.Alpha || g.COG.Bands != 3 {
		t.Fatalf("a JPEG COG with nodata: %+v", g)
	}
	masked := importRaster(t, u, "photo.tif", rgb, map[string]any{"compression": "JPEG"})
	if g := storedGrid(t, masked["id"].(string)); !g.COG.Mask || g.COG.Alpha || g.COG.Bands != 3 {
		t.Fatalf("a JPEG COG without nodata: %+v", g)
	}
	alpha := importRaster(t, u, "photo.tif", rgb, map[string]any{"compression": "ZSTD"})
	if g := storedGrid(t, alpha["id"].(string)); g.COG.Mask || !g.COG.Alpha || g.COG.Bands != 4 || alpha["raster"].(map[string]any)["band_count"] != 3.0 {
		t.Fatalf("a ZSTD COG without nodata: %+v", g)
	}
	cog := download(t, u, d["id"].(string))
	info := gdalinfoOf(t, cog)
	md := info["metadata"].(map[string]any)
	if !strings.Contains(md["IMAGE_STRUCTURE"].(map[string]any)["COMPRESSION"].(string), "JPEG") || md["TILING_SCHEME"].(map[string]any)["NAME"] != "GoogleMapsCompatible" {
		t.Fatalf("stored COG metadata: %v", md)
	}
	// A raster without CRS: refused without one, placed with srid_override (assigned, not reprojected).
	bare := createdTIFF(t, "-outsize", "50", "40", "-bands", "1", "-ot", "Int16", "-burn", "7", "-a_ullr", "600000", "5200000", "601500", "5198800")
	job := uploadJob(t, u, "bare.tif", bare)
	if r := call(t, "POST", "/ingest/commit/"+job, map[string]any{}, bearer(u.Access)...); r.Status != 422 || !strings.Contains(string(r.Body), "srid_override") {
		t.Fatalf("commit of a raster without CRS: %d %s", r.Status, r.Body)
	}
	c := call(t, "POST", "/ingest/commit/"+job, map[string]any{"srid_override": 32632}, bearer(u.Access)...)
	if c.Status != 202 {
		t.Fatalf("commit with srid_override: %d %s", c.Status, c.Body)
	}
	done := waitJobEnd(t, u, job)
	bd := call(t, "GET", "/datasets/"+done["dataset_id"].(string), nil, bearer(u.Access)...).JSON(t)
	if bd["original_srid"] != 32632.0 || bd["raster"].(map[string]any)["epsg"] != 32632.0 || bd["raster"].(map[string]any)["res_x"] != 30.0 {
		t.Fatalf("assigned CRS: %v", bd)
	}
	if w := bd["extent_bbox"].([]any)[0].(float64); w < 10 || w > 11 {
		t.Fatalf("the extent of UTM 32N coordinates 600000 is near 10.3 E: %v", bd["extent_bbox"])
	}
	// Impossible choices answer 422 and leave the job pending.
	bad := []map[string]any{{"compression": "LZMA"}, {"compression": "WEBP"}, {"resampling": "sharpest"}, {"nodata_override": 40000},
		{"nodata_override": "nan"}, {"nodata_override": "high"}}
	for _, body := range bad {
		job := uploadJob(t, u, "again.tif", bare)
		body["srid_override"] = 32632
		if r := call(t, "POST", "/ingest/commit/"+job, body, bearer(u.Access)...); r.Status != 422 {
			t.Errorf("commit %v: %d %s", body, r.Status, r.Body)
		}
	}
	vec := uploadJob(t, u, "pts.geojson", pointsGeoJSON(2))
	if r := call(t, "POST", "/ingest/commit/"+vec, map[string]any{"compression": "DEFLATE"}, bearer(u.Access)...); r.Status != 422 {
		t.Fatalf("raster options on a vector file: %d %s", r.Status, r.Body)
	}
}

// rasterGrid is the internal part of a raster record the tile reader uses.
type rasterGrid struct {
	Key string `json:"storage_key"`
	COG struct {
		MinZoom, MaxZoom, Bands int
		Alpha, Mask             bool
	} `json:"cog"`
}

// storedGrid reads a raster dataset's storage key and COG grid from the catalog.
func storedGrid(t *testing.T, id string) rasterGrid {
	t.Helper()
	var raw []byte
	if err := dbConn(t).QueryRow(t.Context(), "SELECT raster FROM catalog.datasets WHERE id = $1", id).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	var g rasterGrid
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	return g
}

// download fetches a dataset's whole COG into a file.
func download(t *testing.T, s session, id string) string {
	t.Helper()
	r := call(t, "GET", "/datasets/"+id+"/download/cog", nil, bearer(s.Access)...)
	if r.Status != 200 {
		t.Fatalf("download: %d %.300s", r.Status, r.Body)
	}
	p := filepath.Join(t.TempDir(), "cog.tif")
	if err := os.WriteFile(p, r.Body, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRasterDownloadRanges(t *testing.T) {
	u := newUser(t, "editor")
	d := importRaster(t, u, "ranges.tif", demTIFF(t, 200, 150), nil)
	id := d["id"].(string)
	path := "/datasets/" + id + "/download/cog"
	whole := call(t, "GET", path, nil, bearer(u.Access)...)
	size := len(whole.Body)
	etag := whole.Header.Get("ETag")
	if whole.Status != 200 || whole.Header.Get("Accept-Ranges") != "bytes" || etag == "" || whole.Header.Get("Content-Length") != fmt.Sprint(size) ||
		!bytes.HasPrefix(whole.Body, []byte("II*\x00")) || int64(size) != int64(d["raster"].(map[string]any)["size_bytes"].(float64)) {
		t.Fatalf("whole download: %d %v (%d bytes)", whole.Status, whole.Header, size)
	}
	cases := []struct {
		name    string
		headers []string
		status  int
		body    []byte
		crange  string
	}{
		{"first bytes", []string{"Range", "bytes=0-15"}, 206, whole.Body[:16], fmt.Sprintf("bytes 0-15/%d", size)},
		{"middle", []string{"Range", "bytes=100-199"}, 206, whole.Body[100:200], fmt.Sprintf("bytes 100-199/%d", size)},
		{"suffix", []string{"Range", "bytes=-10"}, 206, whole.Body[size-10:], fmt.Sprintf("bytes %d-%d/%d", size-10, size-1, size)},
		{"open end past the file", []string{"Range", fmt.Sprintf("bytes=%d-", size-5)}, 206, whole.Body[size-5:], fmt.Sprintf("bytes %d-%d/%d", size-5, size-1, size)},
		{"unsatisfiable", []string{"Range", fmt.Sprintf("bytes=%d-", size)}, 416, nil, fmt.Sprintf("bytes */%d", size)},
		{"not modified", []string{"If-None-Match", etag}, 304, nil, ""},
		{"if-range of this version", []string{"Range", "bytes=0-3", "If-Range", etag}, 206, whole.Body[:4], fmt.Sprintf("bytes 0-3/%d", size)},
		{"if-range of another version", []string{"Range", "bytes=0-3", "If-Range", `"cog-old"`}, 200, whole.Body, ""},
		{"malformed range is ignored", []string{"Range", "bytes=z-"}, 200, whole.Body, ""},
	}
	for _, c := range cases {
		r := call(t, "GET", path, nil, append(bearer(u.Access), c.headers...)...)
		if r.Status != c.status || !bytes.Equal(r.Body, c.body) && c.body != nil || r.Header.Get("Content-Range") != c.crange {
			t.Errorf("%s: %d Content-Range %q, %d bytes", c.name, r.Status, r.Header.Get("Content-Range"), len(r.Body))
		}
	}
	multi := call(t, "GET", path, nil, append(bearer(u.Access), "Range", "bytes=0-3,10-13")...)
	if multi.Status != 206 || !strings.HasPrefix(multi.Header.Get("Content-Type"), "multipart/byteranges") ||
		!bytes.Contains(multi.Body, whole.Body[10:14]) || !strings.Contains(string(multi.Body), fmt.Sprintf("bytes 10-13/%d", size)) {
		t.Fatalf("two ranges: %d %v", multi.Status, multi.Header)
	}
	head := call(t, "HEAD", path, nil, bearer(u.Access)...)
	if head.Status != 200 || head.Header.Get("Content-Length") != fmt.Sprint(size) || len(head.Body) != 0 {
		t.Fatalf("HEAD: %d %v", head.Status, head.Header)
	}
	// Read access as for exports: another user does not see a private raster; a download token opens it.
	other := newUser(t, "viewer")
	if r := call(t, "GET", path, nil, bearer(other.Access)...); r.Status != 404 {
		t.Fatalf("another user's private raster: %d", r.Status)
	}
	tok := call(t, "POST", "/auth/download-token/"+id, nil, bearer(u.Access)...).JSON(t)["token"].(string)
	if r := call(t, "GET", path+"?token="+url.QueryEscape(tok), nil, "Range", "bytes=0-3"); r.Status != 206 || string(r.Body) != "II*\x00" {
		t.Fatalf("download with a token: %d", r.Status)
	}
	// A vector dataset has no COG.
	v := importFile(t, u, "pts.geojson", pointsGeoJSON(2), nil)
	if r := call(t, "GET", "/datasets/"+v["dataset_id"].(string)+"/download/cog", nil, bearer(u.Access)...); r.Status != 409 {
		t.Fatalf("COG of a vector dataset: %d %s", r.Status, r.Body)
	}
}

// rangeCounter is a reverse proxy in front of the API that counts what GDAL asks for.
type rangeCounter struct {
	mu            sync.Mutex
	ranged, whole int
	sent          int64
}

func TestRasterReadRemotelyWithVsicurl(t *testing.T) {
	u := newUser(t, "editor")
	d := importRaster(t, u, "remote.tif", demTIFF(t, 1500, 1200), nil)
	size := int64(d["raster"].(map[string]any)["size_bytes"].(float64))
	target, _ := url.Parse(server.APIRoot)
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: target.Scheme, Host: target.Host})
	var rc rangeCounter
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		proxy.ServeHTTP(rec, r)
		rc.mu.Lock()
		if r.Method == http.MethodGet && r.Header.Get("Range") != "" {
			rc.ranged++
		} else if r.Method == http.MethodGet {
			rc.whole++
		}
		rc.sent += int64(rec.Body.Len())
		rc.mu.Unlock()
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = io.Copy(w, rec.Body)
	}))
	defer front.Close()
	u2 := front.URL + strings.TrimPrefix(server.APIRoot, "http://"+target.Host) + "/datasets/" + d["id"].(string) + "/download/cog"
	// Reading one pixel of the COG's smallest overview reads its header and one tile.
	cmd := exec.Command("gdallocationinfo", "-valonly", "-wgs84", "--config", "GDAL_HTTP_HEADERS", "Authorization: Bearer "+u.Access,
		"--config", "CPL_VSIL_CURL_ALLOWED_EXTENSIONS", "cog", "--config", "GDAL_DISABLE_READDIR_ON_OPEN", "EMPTY_DIR",
		"-oo", "OVERVIEW_LEVEL=0", "/vsicurl/"+u2, "15.2", "46.55")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("gdallocationinfo over /vsicurl/: %v\n%s", err, out)
	}
	info, err := exec.Command("gdalinfo", "--config", "GDAL_HTTP_HEADERS", "Authorization: Bearer "+u.Access,
		"--config", "CPL_VSIL_CURL_ALLOWED_EXTENSIONS", "cog", "--config", "GDAL_DISABLE_READDIR_ON_OPEN", "EMPTY_DIR", "/vsicurl/"+u2).CombinedOutput()
	if err != nil || !strings.Contains(string(info), "GoogleMapsCompatible") || !strings.Contains(string(info), "EPSG\",3857") {
		t.Fatalf("gdalinfo over /vsicurl/: %v\n%s", err, info)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.ranged == 0 || rc.whole > 0 || rc.sent >= size/2 {
		t.Fatalf("GDAL made %d ranged and %d whole requests and got %d of the file's %d bytes: it should read by range", rc.ranged, rc.whole, rc.sent, size)
	}
	t.Logf("GDAL read the COG remotely with %d ranged requests, %d of %d bytes (value %s)", rc.ranged, rc.sent, size, strings.TrimSpace(string(out)))
}

// noiseDEM is a DEFLATE-tiled float DEM whose values do not compress away, so its tiles fill
// the file: damage in its middle lands in tile data.
func noiseDEM(t *testing.T) []byte {
	t.Helper()
	dir := t.TempDir()
	asc := asciiGrid(t, dir, 512, 512, -9999, func(c, r int) float64 { return float64(100+c+r) + float64((c*7919+r*104729)%1000)/1000 })
	out := filepath.Join(dir, "noise.tif")
	gdal(t, "gdal_translate", "-q", "-ot", "Float32", "-a_srs", "EPSG:32633", "-co", "TILED=YES", "-co", "COMPRESS=DEFLATE", asc, out)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Hostile rasters: each is refused with a problem naming the reason at preview and commit, or,
// when only reading its pixels shows it, fails its job with the reason; none leaves a dataset or
// a stored file behind.
func TestHostileRasters(t *testing.T) {
	u := newUser(t, "editor")
	huge := createdTIFF(t, "-outsize", "100000", "100000", "-bands", "1", "-ot", "Byte", "-co", "SPARSE_OK=YES", "-co", "TILED=YES",
		"-co", "BLOCKXSIZE=4096", "-co", "BLOCKYSIZE=4096", "-a_srs", "EPSG:4326", "-a_ullr", "0", "10", "10", "0")
	bands := createdTIFF(t, "-outsize", "2", "2", "-bands", "10000", "-ot", "Byte", "-a_srs", "EPSG:4326", "-a_ullr", "0", "1", "1", "0")
	rasterVRT := []byte(`<VRTDataset rasterXSize="10" rasterYSize="10"><VRTRasterBand dataType="Byte" band="1"><SimpleSource>` +
		`<SourceFilename>/etc/passwd</SourceFilename></SimpleSource></VRTRasterBand></VRTDataset>`)
	refused := []struct {
		name, file string
		content    []byte
		detail     string
	}{
		{"100000 x 100000 declared pixels", "huge.tif", huge, "RASTER_MAX_PIXELS"},
		{"10,000 bands", "bands.tif", bands, "RASTER_MAX_BANDS"},
		{"a VRT named as a GeoTIFF", "sneaky.tif", rasterVRT, "not a GeoTIFF"},
		{"a VRT in an archive", "mosaic.zip", zipOf(t, "a.tif", rgbTIFF(t), "mosaic.vrt", rasterVRT), "virtual formats"},
		{"a JPEG 2000 that is not one", "scene.jp2", []byte("<xml>not a codestream</xml>"), "not a JPEG 2000"},
	}
	datasets := func() int {
		var n int
		_ = dbConn(t).QueryRow(t.Context(), "SELECT count(*) FROM catalog.datasets WHERE record_type = 'raster_dataset'").Scan(&n)
		return n
	}
	before, stored := datasets(), len(storedRasters(t))
	for _, c := range refused {
		job := uploadJob(t, u, c.file, c.content)
		pv := call(t, "POST", "/ingest/preview/"+job, nil, bearer(u.Access)...)
		if pv.Status != 422 || !strings.Contains(string(pv.Body), c.detail) {
			t.Errorf("%s: preview %d %s", c.name, pv.Status, pv.Body)
		}
		job = uploadJob(t, u, c.file, c.content)
		cm := call(t, "POST", "/ingest/commit/"+job, map[string]any{}, bearer(u.Access)...)
		if cm.Status != 422 || !strings.Contains(string(cm.Body), c.detail) {
			t.Errorf("%s: commit %d %s", c.name, cm.Status, cm.Body)
		}
	}
	// Damage only reading the pixels finds: the job fails saying so.
	noise := noiseDEM(t)
	corrupt := bytes.Clone(noise)
	for i := len(corrupt) / 2; i < len(corrupt)/2+4000; i++ {
		corrupt[i] = 0xAB
	}
	failing := []struct {
		name    string
		content []byte
		detail  string
	}{
		{"corrupt tiles", corrupt, "could not be converted"},
		{"tiles whose offsets lie past the end", noise[:len(noise)/2], "could not be converted"},
	}
	for _, c := range failing {
		job := importFile(t, u, "damaged.tif", c.content, nil)
		if job["status"] != "failed" || !strings.Contains(fmt.Sprint(job["error_message"]), c.detail) {
			t.Errorf("%s: job %v", c.name, job)
		}
	}
	if after := datasets(); after != before {
		t.Errorf("hostile rasters made %d datasets", after-before)
	}
	if after := len(storedRasters(t)); after != stored {
		t.Errorf("hostile rasters left %d stored files", after-stored)
	}
	// Sidecars of a GeoTIFF in an archive (external overviews, mask, .aux.xml naming another CRS,
	// world file) are never unpacked, so GDAL cannot read them: the CRS stays the file's own.
	small := func(crs string) []byte {
		return createdTIFF(t, "-outsize", "8", "8", "-bands", "1", "-ot", "Int16", "-burn", "5", "-a_srs", crs, "-a_ullr", "500000", "5200000", "500240", "5199760")
	}
	aux := []byte(`<PAMDataset><SRS>GEOGCS["WGS 84",DATUM["WGS_1984",SPHEROID["WGS 84",6378137,298.257223563]],PRIMEM["Greenwich",0],UNIT["degree",0.0174532925199433],AUTHORITY["EPSG","4326"]]</SRS></PAMDataset>`)
	job := uploadJob(t, u, "with-sidecars.zip", zipOf(t, "dem.tif", small("EPSG:32633"), "dem.tif.ovr", small("EPSG:4326"), "dem.tif.msk", small("EPSG:4326"),
		"dem.tif.aux.xml", aux, "dem.tfw", []byte("1\n0\n0\n-1\n0\n0\n")))
	pv := call(t, "POST", "/ingest/preview/"+job, nil, bearer(u.Access)...)
	if pv.Status != 200 || pv.JSON(t)["crs_epsg"] != 32633.0 {
		t.Fatalf("a GeoTIFF with sidecars: %d %s", pv.Status, pv.Body)
	}
	unpacked, _ := os.ReadDir(filepath.Join(server.dataDir, "staging", job, "unpacked"))
	if len(unpacked) != 1 || unpacked[0].Name() != "dem.tif" {
		t.Fatalf("unpacked members: %v", unpacked)
	}
}

// A server killed while it converts a raster leaves nothing: after a restart the job is failed
// and retryable, the half-written COG is gone, and so is a COG a run stored before its record
// (placed here where such a run would have left it); the retry makes one dataset and one file.
func TestKilledRasterImportLeavesNothing(t *testing.T) {
	s := startFresh(t, "IMPORT_STALL_TIMEOUT=3s", "IMPORT_STALL_RESCUES=0", "RATE_LIMIT_ENABLED=false", "LOG_LEVEL=info")
	hc := contractAt(t, s)
	tok := loginAt(t, hc, s.APIRoot, "admin", AdminPassword)
	up := uploadAt(t, hc, s.APIRoot, tok, "big.tif", demTIFF(t, 4000, 3000))
	if up.Status != 201 {
		t.Fatalf("upload: %d %s", up.Status, up.Body)
	}
	id := up.JSON(t)["job_id"].(string)
	if c := callAt(t, hc, s.APIRoot, "POST", "/ingest/commit/"+id, map[string]any{"compression": "ZSTD"}, bearer(tok)...); c.Status != 202 {
		t.Fatalf("commit: %d %s", c.Status, c.Body)
	}
	job := waitJob(t, hc, s.APIRoot, tok, id, 60*time.Second, func(j map[string]any) bool {
		return j["current_step"] == "cog_convert" || j["status"] != "running" && j["status"] != "pending"
	})
	if job["status"] != "running" {
		t.Fatalf("the import ended before it could be killed: %v", job)
	}
	time.Sleep(300 * time.Millisecond) // GDAL is writing
	s.Kill()
	staging := filepath.Join(s.dataDir, "staging", id)
	partial, _ := filepath.Glob(filepath.Join(staging, ".cog-*"))
	if len(partial) == 0 {
		t.Fatalf("no half-written COG in %s to clean up after the kill", staging)
	}
	orphan := filepath.Join(s.dataDir, "rasters", uuid.NewSHA1(uuid.MustParse(id), []byte("raster-dataset/1")).String(), "v1.tif")
	if err := os.MkdirAll(filepath.Dir(orphan), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(orphan, []byte("II*\x00 stored before its record"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	job = waitJob(t, hc, s.APIRoot, tok, id, 2*time.Minute, func(j map[string]any) bool { return j["status"] != "running" })
	if job["status"] != "failed" || job["can_retry"] != true {
		t.Fatalf("after the restart: %v", job)
	}
	if _, err := os.Stat(orphan); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the COG stored before its record is still there: %v", err)
	}
	if r := callAt(t, hc, s.APIRoot, "POST", "/jobs/"+id+"/retry", nil, bearer(tok)...); r.Status != 200 {
		t.Fatalf("retry: %d %s", r.Status, r.Body)
	}
	job = waitJob(t, hc, s.APIRoot, tok, id, 3*time.Minute, func(j map[string]any) bool { return j["status"] == "complete" || j["status"] == "failed" })
	if job["status"] != "complete" {
		t.Fatalf("the retry did not complete: %v", job)
	}
	var files []string
	_ = filepath.WalkDir(filepath.Join(s.dataDir, "rasters"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	var datasets int
	_ = connect(t, s.DBURL).QueryRow(t.Context(), "SELECT count(*) FROM catalog.datasets").Scan(&datasets)
	left, _ := filepath.Glob(filepath.Join(staging, ".cog-*"))
	if datasets != 1 || len(files) != 1 || len(left) != 0 {
		t.Fatalf("after the retry: %d datasets, stored %v, temporary %v", datasets, files, left)
	}
}

// converted is a fixture rewritten by gdal_translate with args (another format, BigTIFF, a COG).
func converted(t *testing.T, src []byte, name string, args ...string) []byte {
	t.Helper()
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.tif"), filepath.Join(dir, name)
	if err := os.WriteFile(in, src, 0o644); err != nil {
		t.Fatal(err)
	}
	gdal(t, "gdal_translate", append(append([]string{"-q"}, args...), in, out)...)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Every accepted raster kind becomes a raster dataset: BigTIFF, a file that is a COG already,
// JPEG 2000, a 16-bit integer GeoTIFF, and a GeoTIFF alone in a zip.
func TestRasterSourceKinds(t *testing.T) {
	u := newUser(t, "editor")
	dem := demTIFF(t, 64, 48)
	int16 := converted(t, dem, "i16.tif", "-ot", "Int16")
	cases := []struct {
		name      string
		content   []byte
		format    string
		dtype     string
		bands     float64
		cogSource bool
	}{
		{"big.tif", converted(t, dem, "big.tif", "-co", "BIGTIFF=YES"), "GeoTIFF", "float32", 1, false},
		{"ready.tif", converted(t, dem, "ready.tif", "-of", "COG"), "GeoTIFF", "float32", 1, true},
		{"scene.jp2", converted(t, rgbTIFF(t), "scene.jp2", "-of", "JP2OpenJPEG"), "JPEG2000", "uint8", 3, false},
		{"counts.tif", int16, "GeoTIFF", "int16", 1, false},
		{"zipped.zip", zipOf(t, "inside.tif", int16), "GeoTIFF", "int16", 1, false},
	}
	for _, c := range cases {
		job := uploadJob(t, u, c.name, c.content)
		pv := call(t, "POST", "/ingest/preview/"+job, nil, bearer(u.Access)...)
		r, _ := pv.JSON(t)["raster"].(map[string]any)
		if pv.Status != 200 || r == nil || r["dtype"] != c.dtype || r["band_count"] != c.bands || r["is_cog_compliant"] != c.cogSource {
			t.Errorf("%s: preview %d %.400s", c.name, pv.Status, pv.Body)
			continue
		}
		if cm := call(t, "POST", "/ingest/commit/"+job, map[string]any{}, bearer(u.Access)...); cm.Status != 202 {
			t.Errorf("%s: commit %d %s", c.name, cm.Status, cm.Body)
			continue
		}
		done := waitJobEnd(t, u, job)
		if done["status"] != "complete" {
			t.Errorf("%s: job %v", c.name, done)
			continue
		}
		d := call(t, "GET", "/datasets/"+done["dataset_id"].(string), nil, bearer(u.Access)...).JSON(t)
		if d["record_type"] != "raster_dataset" || d["source_format"] != c.format || d["raster"].(map[string]any)["bands"].([]any)[0].(map[string]any)["dtype"] != c.dtype {
			t.Errorf("%s: dataset %v", c.name, d)
		}
	}
}
