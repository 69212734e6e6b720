package conformance

import (
	"bytes"
	"fmt"
	"image"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"meridian/internal/cog"
	"meridian/internal/rastertiles/rastertest"
)

// STAC Import mode register: remote GeoTIFFs catalogued where they are, then served like any
// raster (tiles, quicklook, Download COG, the STAC item) by reading them by byte range.

// registerFixtures are the remote files: a float DEM with nodata (a disc in its middle) and an
// RGB image, both COGs on their own grid in UTM 33N (not web mercator), and a striped GeoTIFF.
type registerFixtures struct {
	dem, rgb, merc             string // paths
	demData, rgbData, mercData []byte
	striped                    []byte
	demNoData                  float64
	demCentre, rgbMid          [2]float64 // lon, lat
}

func makeRegisterFixtures(t *testing.T) registerFixtures {
	t.Helper()
	dir := t.TempDir()
	fx := registerFixtures{dem: filepath.Join(dir, "dem.tif"), rgb: filepath.Join(dir, "rgb.tif"), merc: filepath.Join(dir, "merc.tif"),
		demNoData: -9999}
	dem := rastertest.Spec{Width: 1024, Height: 768, Bands: 1, DType: "Float32", SRS: "EPSG:32633", West: 500000, North: 5173040, Res: 30,
		NoData: &fx.demNoData, Predictor: true, Native: true, Value: func(x, y, _ int) float64 {
			if dx, dy := x-512, y-384; dx*dx+dy*dy < 80*80 {
				return fx.demNoData
			}
			return rastertest.DEM(x, y)
		}}
	rgb := rastertest.Spec{Width: 600, Height: 400, Bands: 3, DType: "Byte", SRS: "EPSG:32633", West: 520000, North: 5170000, Res: 30,
		Native: true, Value: rastertest.RGB}
	// A COG as the ingest writes it, on the web-mercator tile grid: read without a warp.
	merc := rastertest.Spec{Width: 2000, Height: 1200, Bands: 3, DType: "Byte", West: 15, North: 46.9, Res: 0.0005, Value: rastertest.RGB}
	for _, m := range []struct {
		path string
		spec rastertest.Spec
	}{{fx.dem, dem}, {fx.rgb, rgb}, {fx.merc, merc}} {
		if err := rastertest.Make(m.path, m.spec); err != nil {
			t.Fatal(err)
		}
	}
	fx.demData, fx.rgbData, fx.mercData = readFile(t, fx.dem), readFile(t, fx.rgb), readFile(t, fx.merc)
	// gdal_create writes strips: 1000 x 700 pixels, rows of the whole width each.
	fx.striped = createdTIFF(t, "-outsize", "1000", "700", "-bands", "1", "-ot", "Byte", "-burn", "7", "-a_srs", "EPSG:32633",
		"-a_ullr", "500000", "5170000", "530000", "5149000")
	fx.demCentre = lonLatOf(t, fx.dem, 512, 384)
	fx.rgbMid = lonLatOf(t, fx.rgb, 300, 200)
	return fx
}

// lonLatOf is pixel (col, row)'s centre of a raster in WGS 84 (gdaltransform).
func lonLatOf(t *testing.T, path string, col, row int) [2]float64 {
	t.Helper()
	info := gdalinfoOf(t, path)
	gt := info["geoTransform"].([]any)
	x := gt[0].(float64) + (float64(col)+0.5)*gt[1].(float64)
	y := gt[3].(float64) + (float64(row)+0.5)*gt[5].(float64)
	cmd := exec.Command("gdaltransform", "-s_srs", "EPSG:32633", "-t_srs", "EPSG:4326", "-output_xy")
	cmd.Stdin = strings.NewReader(fmt.Sprintf("%f %f\n", x, y))
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(out))
	lon, _ := strconv.ParseFloat(f[0], 64)
	lat, _ := strconv.ParseFloat(f[1], 64)
	return [2]float64{lon, lat}
}

// registerCatalog lays out a static catalog of the fixtures: items dem-r and rgb-r (COGs),
// striped-r (a striped GeoTIFF) and vec-r (GeoJSON).
func registerCatalog(t *testing.T, f *stacRemote, fx registerFixtures, title string) string {
	t.Helper()
	catalog := f.url("/catalog.json")
	f.putJSON(t, "/catalog.json", map[string]any{"type": "Catalog", "stac_version": "1.0.0", "id": "remote-cogs", "description": "COGs",
		"links": []map[string]any{{"rel": "self", "href": catalog}, {"rel": "child", "href": "./scenes/collection.json"}}})
	ids := []string{"dem-r", "rgb-r", "merc-r", "striped-r", "vec-r"}
	var links []map[string]any
	for _, id := range ids {
		links = append(links, map[string]any{"rel": "item", "href": "./" + id + "/" + id + ".json"})
	}
	f.putJSON(t, "/scenes/collection.json", map[string]any{"type": "Collection", "stac_version": "1.0.0", "id": "scenes",
		"title": title, "description": "Registered scenes", "license": "CC-BY-4.0",
		"extent": map[string]any{"spatial": map[string]any{"bbox": [][]float64{{14, 46, 16, 47}}},
			"temporal": map[string]any{"interval": [][]any{{"2023-01-01T00:00:00Z", nil}}}},
		"links": append(links, map[string]any{"rel": "self", "href": f.url("/scenes/collection.json")})})
	putRegisterItem(t, f, "dem-r", "Heights", "2024-01-01T00:00:00Z")
	putRegisterItem(t, f, "rgb-r", "Picture", "2024-01-01T00:00:00Z")
	putRegisterItem(t, f, "merc-r", "On the grid", "2024-01-01T00:00:00Z")
	putRegisterItem(t, f, "striped-r", "Strips", "2024-01-01T00:00:00Z")
	f.putJSON(t, "/scenes/vec-r/vec-r.json", stacItem(f, "vec-r", []float64{15, 46.4, 15.4, 46.7},
		map[string]any{"datetime": "2023-05-01T00:00:00Z", "title": "Points"},
		map[string]any{"data": map[string]any{"href": "./vec-r.geojson", "type": "application/geo+json", "roles": []string{"data"}}}))
	f.put("/scenes/dem-r/dem-r.tif", "image/tiff", fx.demData)
	f.put("/scenes/rgb-r/rgb-r.tif", "image/tiff", fx.rgbData)
	f.put("/scenes/merc-r/merc-r.tif", "image/tiff", fx.mercData)
	f.put("/scenes/striped-r/striped-r.tif", "image/tiff", fx.striped)
	f.put("/scenes/vec-r/vec-r.geojson", "application/geo+json", pointsGeoJSON(3))
	return catalog
}

func putRegisterItem(t *testing.T, f *stacRemote, id, title, updated string) {
	t.Helper()
	f.putJSON(t, "/scenes/"+id+"/"+id+".json", stacItem(f, id, []float64{15, 46.4, 15.4, 46.7},
		map[string]any{"datetime": "2023-05-01T00:00:00Z", "title": title, "updated": updated, "keywords": []string{"registered"}},
		map[string]any{"data": map[string]any{"href": "./" + id + ".tif", "type": cogType, "roles": []string{"data"}}}))
}

// TestStacRegister: a static catalog's COGs (in UTM, not on the tile grid) are imported with
// mode register. The job registers each COG (the GeoJSON is refused at once, the striped file by
// its job); each becomes a raster dataset whose record has the band statistics, nodata, CRS and
// extent GDAL reports of the file, and nothing is stored. Its tiles are GDAL's warp of the
// remote's window drawn with the record's statistics (checked pixel by pixel against gdalwarp of
// the file, through the stretches), a tile outside it answers 204 without a request to the
// remote; its quicklook, Download COG (ranges, HEAD, 416) and the STAC item's data asset serve the
// remote's bytes. A re-import updates the same dataset. Once the remote is gone, an uncached tile
// and a download answer 502 (or 504) problems.
func TestStacRegister(t *testing.T) {
	fx := makeRegisterFixtures(t)
	f := newStacRemote(t)
	var hits atomic.Int64
	var down atomic.Bool
	var mu sync.Mutex
	var ranges []string
	files := f.srv.Config.Handler
	f.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		mu.Lock()
		ranges = append(ranges, r.Header.Get("Range"))
		mu.Unlock()
		if down.Load() {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
		files.ServeHTTP(w, r)
	})
	title := "Registered " + randomHex(3)
	catalog := registerCatalog(t, f, fx, title)
	srv := startFresh(t, "REMOTE_ALLOW_PRIVATE=true", "RATE_LIMIT_ENABLED=false")
	hc := contractAt(t, srv)
	admin := loginAt(t, hc, srv.APIRoot, "admin", AdminPassword)
	s := stacSession{hc: hc, root: srv.APIRoot, token: newUserAt(t, hc, srv.APIRoot, admin, "editor")}

	found := s.post(t, "/services/stac/search", map[string]any{"url": catalog, "collections": []string{"scenes"}}, 200)
	items := byID(found["items"].([]any), "id")
	body := importItems(catalog, found["items"].([]any), "public")
	body["mode"] = "register"
	res := s.post(t, "/services/stac/import", body, 200)
	results := byID(res["results"].([]any), "item_id")
	if res["created"] != 4.0 || results["vec-r"]["status"] != "error" || !strings.Contains(fmt.Sprint(results["vec-r"]["error"]), "not a GeoTIFF") {
		t.Fatalf("register import: %v", res)
	}
	job := s.wait(t, res["job_id"].(string))
	if job["status"] != "complete" || job["rows_processed"] != 3.0 || job["rows_failed"] != 2.0 ||
		!strings.Contains(fmt.Sprint(job["warnings"]), "not tiled") {
		t.Fatalf("the register job: %v", job)
	}
	datasets := stacDatasets(t, s, title)
	dem, rgb, merc := datasets[f.url("/scenes/dem-r/dem-r.json")], datasets[f.url("/scenes/rgb-r/rgb-r.json")],
		datasets[f.url("/scenes/merc-r/merc-r.json")]
	if len(datasets) != 3 || dem == nil || rgb == nil || merc == nil {
		t.Fatalf("registered datasets: %v", datasets)
	}
	demID, rgbID := dem["id"].(string), rgb["id"].(string)
	checkRegisteredRecord(t, fx, dem)
	if files := storedFiles(t, srv); len(files) != 0 {
		t.Fatalf("registration stored files: %v", files)
	}

	// Tiles: the DEM's tile over its nodata disc, as gdalwarp draws the window, through stretches.
	tok := s.call(t, "GET", "/tiles/token/"+demID+"/", nil).JSON(t)
	z := int(tok["maxzoom"].(float64))
	if tok["kind"] != "raster" || z != 12 || tok["minzoom"] != 0.0 {
		t.Fatalf("the registered DEM's token: %v", tok)
	}
	x, y := rasterTileAt(fx.demCentre[0], fx.demCentre[1], z)
	band := dem["raster"].(map[string]any)["bands"].([]any)[0].(map[string]any)
	vals := warpedValues(t, fx.dem, z, x, y)
	before := hits.Load()
	for _, stretch := range []struct {
		query  string
		lo, hi float64
	}{{"", band["min"].(float64), band["max"].(float64)}, {"stretch=percentile", band["p2"].(float64), band["p98"].(float64)}} {
		r := callAt(t, hc, "", "GET", tileURL(tok["tile_url"].(string), z, x, y)+"&"+stretch.query, nil)
		if r.Status != 200 || r.Header.Get("Content-Type") != "image/png" {
			t.Fatalf("a registered DEM's tile (%s): %d %s", stretch.query, r.Status, r.Body)
		}
		compareGray(t, decodeNRGBA(t, r.Body), vals, fx.demNoData, stretch.lo, stretch.hi)
	}
	if hits.Load() == before {
		t.Fatal("the tiles were drawn without reading the remote")
	}
	gray := callAt(t, hc, "", "GET", tileURL(tok["tile_url"].(string), z, x, y), nil)
	viridis := callAt(t, hc, "", "GET", tileURL(tok["tile_url"].(string), z, x, y)+"&colormap_name=viridis", nil)
	if viridis.Status != 200 || bytes.Equal(viridis.Body, gray.Body) {
		t.Fatalf("viridis: %d, same as gray %v", viridis.Status, bytes.Equal(viridis.Body, gray.Body))
	}
	// Outside the extent: 204 without a request to the remote.
	before = hits.Load()
	ox, oy := rasterTileAt(fx.demCentre[0]+3, fx.demCentre[1], z)
	if r := callAt(t, hc, "", "GET", tileURL(tok["tile_url"].(string), z, ox, oy), nil); r.Status != 204 || hits.Load() != before {
		t.Fatalf("a tile outside the extent: %d, %d remote requests", r.Status, hits.Load()-before)
	}
	checkRegisteredRGBTile(t, s, fx, rgbID)

	// The COG on the grid: its tiles are cut from the remote file as from a stored COG (GDAL's
	// pixels of the window), the file opened once: a second tile reads without probing it again.
	var direct bool
	if err := connect(t, srv.DBURL).QueryRow(t.Context(), "SELECT coalesce((raster->'cog'->>'direct')::bool, false) FROM catalog.datasets WHERE id = $1",
		merc["id"]).Scan(&direct); err != nil || !direct {
		t.Fatalf("the COG on the grid is not read directly (%v)", err)
	}
	mtok := s.call(t, "GET", "/tiles/token/"+merc["id"].(string)+"/", nil).JSON(t)
	mz := int(mtok["maxzoom"].(float64))
	mx, my := rasterTileAt(15.5, 46.6, mz)
	for i, tx := range []int{mx, mx + 1} {
		mu.Lock()
		ranges = nil
		mu.Unlock()
		r := callAt(t, hc, "", "GET", tileURL(mtok["tile_url"].(string), mz, tx, my), nil)
		if r.Status != 200 {
			t.Fatalf("a tile of the COG on the grid: %d %s", r.Status, r.Body)
		}
		got, want := decodeNRGBA(t, r.Body), gdalPNG(t, fx.merc, mz, tx, my)
		for p := range got.Pix {
			if d := int(got.Pix[p]) - int(want.Pix[p]); d > 1 || d < -1 {
				t.Fatalf("z%d/%d/%d differs from GDAL's at byte %d: %d vs %d", mz, tx, my, p, got.Pix[p], want.Pix[p])
			}
		}
		mu.Lock()
		seen := slices.Clone(ranges)
		mu.Unlock()
		if i == 1 && (len(seen) == 0 || slices.Contains(seen, "bytes=0-0") || slices.Contains(seen, "")) {
			t.Fatalf("the second tile of the COG on the grid read %v: not the tile by range alone", seen)
		}
	}

	// Quicklook, Download COG and the STAC item's COG asset: the remote's bytes.
	q := s.call(t, "GET", "/datasets/"+demID+"/quicklook?size=64", nil)
	if q.Status != 200 {
		t.Fatalf("quicklook: %d %s", q.Status, q.Body)
	}
	if img := decodeNRGBA(t, q.Body); max(img.Bounds().Dx(), img.Bounds().Dy()) != 64 {
		t.Fatalf("quicklook of %v", img.Bounds())
	}
	checkRegisteredDownload(t, s, demID, fx.demData)
	item := s.call(t, "GET", "/stac/items/"+demID, nil).JSON(t)
	href := item["assets"].(map[string]any)["data"].(map[string]any)["href"].(string)
	if !strings.HasSuffix(href, "/datasets/"+demID+"/download/cog") {
		t.Fatalf("the STAC item's data asset: %s", href)
	}
	if r := callAt(t, hc, "", "GET", href, nil, bearer(s.token)...); r.Status != 200 || !bytes.Equal(r.Body, fx.demData) {
		t.Fatalf("the STAC item's COG: %d, %d bytes", r.Status, len(r.Body))
	}

	// No file here: a VRT (which combines stored COGs) refuses it, saying why.
	if r := s.call(t, "POST", "/ingest/vrt/create", map[string]any{"title": "Of registered " + randomHex(2), "vrt_type": "mosaic",
		"resolution_strategy": "finest", "source_dataset_ids": []string{demID}}); r.Status != 422 || !strings.Contains(string(r.Body), "registered raster") {
		t.Fatalf("a VRT of a registered raster: %d %s", r.Status, r.Body)
	}

	// A re-import of a changed item updates the same dataset.
	putRegisterItem(t, f, "dem-r", "Heights, again", "2025-01-01T00:00:00Z")
	again := importItems(catalog, []any{items["dem-r"]}, "public")
	again["mode"] = "register"
	res = s.post(t, "/services/stac/import", again, 200)
	r0 := res["results"].([]any)[0].(map[string]any)
	if r0["status"] != "created" || r0["updated"] != true || r0["dataset_id"] != demID {
		t.Fatalf("a re-import: %v", res)
	}
	if j := s.wait(t, res["job_id"].(string)); j["status"] != "complete" {
		t.Fatalf("the re-import's job: %v", j)
	}
	d := s.call(t, "GET", "/datasets/"+demID, nil).JSON(t)
	if d["title"] != "Heights, again" || d["current_version"] != 2.0 || d["record_type"] != "raster_dataset" || len(stacDatasets(t, s, title)) != 3 {
		t.Fatalf("the re-imported dataset: %v", d)
	}
	if files := storedFiles(t, srv); len(files) != 0 {
		t.Fatalf("the re-import stored files: %v", files)
	}

	// The remote fails: a tile not drawn yet is the remote's failure, and is not kept (the same
	// tile is drawn once the remote is back).
	down.Store(true)
	next := tileURL(tok["tile_url"].(string), z, x+1, y)
	if r := callAt(t, hc, "", "GET", next, nil); r.Status != 502 || r.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("a tile of a failing remote: %d %s", r.Status, r.Body)
	}
	down.Store(false)
	if r := callAt(t, hc, "", "GET", next, nil); r.Status != 200 {
		t.Fatalf("the tile once the remote is back: %d %s", r.Status, r.Body)
	}
	// The remote is gone: a tile not drawn yet and a download are the remote's failure.
	f.srv.Close()
	if r := callAt(t, hc, "", "GET", tileURL(tok["tile_url"].(string), z, x+2, y), nil); (r.Status != 502 && r.Status != 504) ||
		r.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("a tile of a vanished remote: %d %s", r.Status, r.Body)
	}
	if r := s.call(t, "GET", "/datasets/"+demID+"/download/cog", nil); r.Status != 502 {
		t.Fatalf("a download of a vanished remote: %d %s", r.Status, r.Body)
	}
}

// checkRegisteredRecord compares a registered DEM's record with what GDAL says of the file.
func checkRegisteredRecord(t *testing.T, fx registerFixtures, d map[string]any) {
	t.Helper()
	ra := d["raster"].(map[string]any)
	band := ra["bands"].([]any)[0].(map[string]any)
	info := gdalinfoOf(t, fx.dem, "-stats")
	want := info["bands"].([]any)[0].(map[string]any)
	for _, k := range [][2]string{{"min", "minimum"}, {"max", "maximum"}, {"mean", "mean"}, {"stddev", "stdDev"}} {
		if got, ok := band[k[0]].(float64); !ok || math.Abs(got-want[k[1]].(float64)) > 1e-3*math.Max(1, math.Abs(got)) {
			t.Errorf("band %s %v, GDAL says %v", k[0], band[k[0]], want[k[1]])
		}
	}
	if d["record_type"] != "raster_dataset" || d["origin"] != "stac" || d["srid"] != 32633.0 || ra["epsg"] != 32633.0 ||
		ra["width"] != 1024.0 || ra["height"] != 768.0 || ra["nodata"] != "-9999" || ra["is_dem"] != true || ra["res_x"] != 30.0 ||
		ra["size_bytes"] != float64(len(fx.demData)) || ra["compression"] != "DEFLATE" || band["p2"] == nil || band["dtype"] != "float32" {
		t.Fatalf("the registered DEM's record: %v", d)
	}
	if _, leaked := ra["remote"]; leaked {
		t.Fatalf("the record shows its internal part: %v", ra)
	}
	ring := info["wgs84Extent"].(map[string]any)["coordinates"].([]any)[0].([]any)
	w, s, e, n := math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)
	for _, p := range ring {
		lon, lat := p.([]any)[0].(float64), p.([]any)[1].(float64)
		w, s, e, n = math.Min(w, lon), math.Min(s, lat), math.Max(e, lon), math.Max(n, lat)
	}
	bbox := d["extent_bbox"].([]any)
	for i, v := range []float64{w, s, e, n} {
		if math.Abs(bbox[i].(float64)-v) > 1e-6 {
			t.Fatalf("extent_bbox %v, GDAL's box %v", bbox, []float64{w, s, e, n})
		}
	}
}

// warpedValues is gdalwarp's window of tile z/x/y of path in EPSG:3857 (bilinear, GDAL's choice
// of overview), the values a registered raster's tile draws.
func warpedValues(t *testing.T, path string, z, x, y int) []float64 {
	t.Helper()
	b := cog.TileBounds(z, x, y)
	raw := filepath.Join(t.TempDir(), "window.raw")
	num := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	gdal(t, "gdalwarp", "-q", "-of", "ENVI", "-t_srs", "EPSG:3857", "-r", "bilinear", "-te", num(b[0]), num(b[1]), num(b[2]), num(b[3]),
		"-ts", "256", "256", path, raw)
	vals, err := rastertest.ReadENVI(raw, "Float32", 256, 256, 1)
	if err != nil {
		t.Fatal(err)
	}
	return vals[0]
}

// compareGray checks a gray tile against values stretched from lo to hi, nodata transparent.
func compareGray(t *testing.T, img *image.NRGBA, vals []float64, nodata, lo, hi float64) {
	t.Helper()
	pix := img.Pix
	var opaque int
	for i, v := range vals {
		p := pix[4*i : 4*i+4]
		if v == nodata {
			if p[3] != 0 {
				t.Fatalf("pixel %d (nodata) drawn %v", i, p)
			}
			continue
		}
		unit := math.Max(0, math.Min(1, (v-lo)/(hi-lo)))
		if want := unit * 255; p[3] != 255 || math.Abs(float64(p[0])-want) > 1.5 {
			t.Fatalf("pixel %d: value %g stretched %g..%g is %v, want gray %.1f", i, v, lo, hi, p, want)
		}
		opaque++
	}
	if opaque == 0 || opaque == len(vals) {
		t.Fatalf("%d of %d pixels hold data: the tile is not over the disc", opaque, len(vals))
	}
}

// checkRegisteredRGBTile compares a registered RGB image's tile with gdalwarp's of the file.
func checkRegisteredRGBTile(t *testing.T, s stacSession, fx registerFixtures, id string) {
	t.Helper()
	tok := s.call(t, "GET", "/tiles/token/"+id+"/", nil).JSON(t)
	z := int(tok["maxzoom"].(float64))
	x, y := rasterTileAt(fx.rgbMid[0], fx.rgbMid[1], z)
	r := callAt(t, s.hc, "", "GET", tileURL(tok["tile_url"].(string), z, x, y), nil)
	if r.Status != 200 {
		t.Fatalf("a registered RGB tile: %d %s", r.Status, r.Body)
	}
	got := decodeNRGBA(t, r.Body)
	b := cog.TileBounds(z, x, y)
	dir := t.TempDir()
	num := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	gdal(t, "gdalwarp", "-q", "-t_srs", "EPSG:3857", "-r", "bilinear", "-dstalpha", "-te", num(b[0]), num(b[1]), num(b[2]), num(b[3]),
		"-ts", "256", "256", fx.rgb, filepath.Join(dir, "w.tif"))
	gdal(t, "gdal_translate", "-q", "-of", "PNG", filepath.Join(dir, "w.tif"), filepath.Join(dir, "w.png"))
	want := decodeNRGBA(t, readFile(t, filepath.Join(dir, "w.png")))
	for i := 0; i < len(want.Pix); i += 4 {
		a := want.Pix[i+3]
		switch {
		case a == 0 && got.Pix[i+3] != 0:
			t.Fatalf("pixel %d: drawn where GDAL has none", i/4)
		case a == 255 && (got.Pix[i+3] != 255 || absDiff(got.Pix[i], want.Pix[i]) > 1 || absDiff(got.Pix[i+1], want.Pix[i+1]) > 1 ||
			absDiff(got.Pix[i+2], want.Pix[i+2]) > 1):
			t.Fatalf("pixel %d: %v, GDAL %v", i/4, got.Pix[i:i+4], want.Pix[i:i+4])
		}
	}
}

func absDiff(a, b uint8) int {
	if a > b {
		return int(a - b)
	}
	return int(b - a)
}

// checkRegisteredDownload: Download COG of a registered raster answers the remote's bytes, by
// range, whole, to HEAD, and 416 past the end.
func checkRegisteredDownload(t *testing.T, s stacSession, id string, data []byte) {
	t.Helper()
	path := "/datasets/" + id + "/download/cog"
	r := callAt(t, s.hc, s.root, "GET", path, nil, append(bearer(s.token), "Range", "bytes=100-1099")...)
	if r.Status != 206 || !bytes.Equal(r.Body, data[100:1100]) || r.Header.Get("Content-Range") != fmt.Sprintf("bytes 100-1099/%d", len(data)) {
		t.Fatalf("a range of a registered COG: %d %q, %d bytes", r.Status, r.Header.Get("Content-Range"), len(r.Body))
	}
	if r := callAt(t, s.hc, s.root, "HEAD", path, nil, bearer(s.token)...); r.Status != 200 ||
		r.Header.Get("Content-Length") != strconv.Itoa(len(data)) || r.Header.Get("Accept-Ranges") != "bytes" {
		t.Fatalf("HEAD of a registered COG: %d %v", r.Status, r.Header)
	}
	if r := s.call(t, "GET", path, nil); r.Status != 200 || !bytes.Equal(r.Body, data) {
		t.Fatalf("a registered COG whole: %d, %d bytes", r.Status, len(r.Body))
	}
	if r := callAt(t, s.hc, s.root, "GET", path, nil, append(bearer(s.token), "Range", fmt.Sprintf("bytes=%d-", len(data)))...); r.Status != 416 ||
		r.Header.Get("Content-Range") != fmt.Sprintf("bytes */%d", len(data)) {
		t.Fatalf("a range past the end: %d %v", r.Status, r.Header)
	}
}

// storedFiles are the files of a server's local object store.
func storedFiles(t *testing.T, srv *Server) []string {
	t.Helper()
	var out []string
	_ = filepath.Walk(filepath.Join(srv.dataDir, "rasters"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// TestStacRegisterRemotePolicy: registration reads the remote under the remote policy. A server
// that reaches only localhost (REMOTE_ALLOW_HOSTS) refuses an asset at another address at once
// and one a redirect sends there in its job; neither leaves a dataset. The shared server, which
// reaches no private address, refuses a registration from loopback naming REMOTE_ALLOW_PRIVATE.
func TestStacRegisterRemotePolicy(t *testing.T) {
	fx := makeRegisterFixtures(t)
	f := newStacRemote(t)
	local := strings.Replace(f.srv.URL, "127.0.0.1", "localhost", 1)
	f.srv.Config.Handler = redirecting(f.srv.Config.Handler, f.srv.URL)
	f.put("/scenes/dem-r/dem-r.tif", "image/tiff", fx.demData)
	hrefs := map[string]string{"direct": f.url("/scenes/dem-r/dem-r.tif"), "moved": local + "/redirect/dem-r/dem-r.tif"}
	for id, href := range hrefs {
		f.putJSON(t, "/scenes/"+id+"/"+id+".json", stacItem(f, id, []float64{15, 46.4, 15.4, 46.7}, map[string]any{"datetime": "2023-01-01T00:00:00Z"},
			map[string]any{"data": map[string]any{"href": href, "type": cogType, "roles": []string{"data"}}}))
	}
	f.putJSON(t, "/catalog.json", map[string]any{"type": "Catalog", "stac_version": "1.0.0", "id": "policy", "description": "x",
		"links": []map[string]any{{"rel": "self", "href": local + "/catalog.json"}}})
	item := func(id string) map[string]any {
		return map[string]any{"id": id, "title": id, "item_href": local + "/scenes/" + id + "/" + id + ".json", "data_asset_href": hrefs[id]}
	}

	srv := startFresh(t, "REMOTE_ALLOW_HOSTS=localhost", "RATE_LIMIT_ENABLED=false")
	hc := contractAt(t, srv)
	admin := loginAt(t, hc, srv.APIRoot, "admin", AdminPassword)
	s := stacSession{hc: hc, root: srv.APIRoot, token: newUserAt(t, hc, srv.APIRoot, admin, "editor")}
	body := map[string]any{"url": local + "/catalog.json", "items": []any{item("direct"), item("moved")}, "mode": "register"}
	res := s.post(t, "/services/stac/import", body, 200)
	results := byID(res["results"].([]any), "item_id")
	if results["direct"]["status"] != "error" || !strings.Contains(fmt.Sprint(results["direct"]["error"]), "REMOTE_ALLOW_HOSTS") ||
		results["moved"]["status"] != "created" {
		t.Fatalf("register under REMOTE_ALLOW_HOSTS: %v", res)
	}
	job := s.wait(t, res["job_id"].(string))
	if job["status"] != "failed" || !strings.Contains(fmt.Sprint(job["warnings"]), "redirect") {
		t.Fatalf("the job: %v", job)
	}
	var n int
	if err := connect(t, srv.DBURL).QueryRow(t.Context(), "SELECT count(*) FROM catalog.datasets").Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d datasets after refused registrations (%v)", n, err)
	}

	editor := newUser(t, "editor")
	r := call(t, "POST", "/services/stac/import", map[string]any{"url": f.url("/catalog.json"), "mode": "register",
		"items": []any{map[string]any{"id": "direct", "title": "d", "item_href": f.url("/scenes/direct/direct.json"),
			"data_asset_href": hrefs["direct"]}}}, bearer(editor.Access)...)
	if r.Status != 422 || !strings.Contains(string(r.Body), "REMOTE_ALLOW_PRIVATE") {
		t.Fatalf("a registration from loopback on the default policy: %d %s", r.Status, r.Body)
	}
}

// TestStacRegisterWithCredentials: a catalog and COG behind an API key are registered with the
// key as `credentials`. The key stays sealed on the import while the dataset reads with it (its
// tiles and download work long after the job ended), and goes to the catalog's origin only: a
// COG registered from another origin is read without it.
func TestStacRegisterWithCredentials(t *testing.T) {
	const key = "reg-" + "s3cret"
	fx := makeRegisterFixtures(t)
	home, away := newStacRemote(t), newStacRemote(t)
	awayURL := strings.Replace(away.srv.URL, "127.0.0.1", "localhost", 1)
	gate := &credentialGate{seen: map[string][]string{}}
	homeFiles, awayFiles := home.srv.Config.Handler, away.srv.Config.Handler
	home.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if gate.record(r) != key {
			http.Error(w, "an API key is needed", http.StatusUnauthorized)
			return
		}
		homeFiles.ServeHTTP(w, r)
	})
	away.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gate.record(r)
		awayFiles.ServeHTTP(w, r)
	})
	catalog := home.url("/catalog.json")
	home.putJSON(t, "/catalog.json", map[string]any{"type": "Catalog", "stac_version": "1.0.0", "id": "gated", "description": "Needs a key",
		"links": []map[string]any{{"rel": "self", "href": catalog}}})
	hrefs := map[string]string{"home": home.url("/scenes/home/home.tif"), "away": awayURL + "/away.tif"}
	for id, href := range hrefs {
		home.putJSON(t, "/scenes/"+id+"/"+id+".json", stacItem(home, id, []float64{15, 46.4, 15.4, 46.7},
			map[string]any{"datetime": "2023-01-01T00:00:00Z", "title": "Gated " + id},
			map[string]any{"data": map[string]any{"href": href, "type": cogType, "roles": []string{"data"}}}))
	}
	home.put("/scenes/home/home.tif", "image/tiff", fx.demData)
	away.put("/away.tif", "image/tiff", fx.demData)

	srv := startFresh(t, "REMOTE_ALLOW_PRIVATE=true", "RATE_LIMIT_ENABLED=false")
	hc := contractAt(t, srv)
	admin := loginAt(t, hc, srv.APIRoot, "admin", AdminPassword)
	s := stacSession{hc: hc, root: srv.APIRoot, token: newUserAt(t, hc, srv.APIRoot, admin, "editor")}
	var items []any
	for _, id := range []string{"home", "away"} {
		items = append(items, map[string]any{"id": id, "title": id, "item_href": home.url("/scenes/" + id + "/" + id + ".json"), "data_asset_href": hrefs[id]})
	}
	res := s.post(t, "/services/stac/import", map[string]any{"url": catalog, "items": items, "mode": "register", "visibility": "private",
		"credentials": map[string]any{"header": "X-Api-Key", "value": key}}, 200)
	job := s.wait(t, res["job_id"].(string))
	if job["status"] != "complete" || job["rows_processed"] != 2.0 {
		t.Fatalf("the registration with a key: %v", job)
	}
	ids := map[string]string{}
	for _, raw := range s.call(t, "GET", "/datasets/?limit=50", nil).JSON(t)["datasets"].([]any) {
		d := raw.(map[string]any)
		ids[fmt.Sprint(d["title"])] = d["id"].(string)
	}
	var sealed []byte
	if err := connect(t, srv.DBURL).QueryRow(t.Context(), "SELECT credential FROM catalog.stac_imports WHERE job_id = $1", res["job_id"]).Scan(&sealed); err != nil ||
		len(sealed) == 0 || bytes.Contains(sealed, []byte(key)) {
		t.Fatalf("the credential after the job: %q %v", sealed, err)
	}
	id := ids["Gated home"]
	tok := s.call(t, "GET", "/tiles/token/"+id+"/", nil).JSON(t)
	z := int(tok["maxzoom"].(float64))
	x, y := rasterTileAt(fx.demCentre[0], fx.demCentre[1], z)
	if r := callAt(t, hc, "", "GET", tileURL(tok["tile_url"].(string), z, x, y), nil); r.Status != 200 {
		t.Fatalf("a tile of the gated COG: %d %s", r.Status, r.Body)
	}
	checkRegisteredDownload(t, s, id, fx.demData)
	if r := s.call(t, "GET", "/datasets/"+ids["Gated away"]+"/download/cog", nil); r.Status != 200 || !bytes.Equal(r.Body, fx.demData) {
		t.Fatalf("the COG of the other origin: %d", r.Status)
	}
	// The sealed credential stays while a registered raster reads with it, and goes with the last.
	credential := func() []byte {
		var c []byte
		if err := connect(t, srv.DBURL).QueryRow(t.Context(), "SELECT credential FROM catalog.stac_imports WHERE job_id = $1", res["job_id"]).Scan(&c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	if r := s.call(t, "DELETE", "/datasets/"+ids["Gated away"], nil); r.Status != 204 || len(credential()) == 0 {
		t.Fatalf("deleting the dataset that reads without the credential: %d, credential kept %v", r.Status, len(credential()) > 0)
	}
	if r := s.call(t, "DELETE", "/datasets/"+id, nil); r.Status != 204 || credential() != nil {
		t.Fatalf("deleting the last dataset that reads with the credential: %d, credential still kept %v", r.Status, credential() != nil)
	}
	gate.mu.Lock()
	defer gate.mu.Unlock()
	if len(gate.seen["localhost /away.tif"]) == 0 {
		t.Fatalf("no request for the other origin's COG: %v", gate.seen)
	}
	for where, creds := range gate.seen {
		for _, c := range creds {
			if (c == key) != strings.HasPrefix(where, "127.0.0.1 ") {
				t.Errorf("%s was sent credential %q", where, c)
			}
		}
	}
}
