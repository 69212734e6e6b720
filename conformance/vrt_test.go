package conformance

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// VRT datasets (issue 29): mosaics and band stacks of raster datasets, built by generations that
// run as ingest jobs; each generation's COG tiles and downloads like any raster.

// colourTIFF is a 3-band 8-bit image of one colour in WGS 84 over the box west, north, east,
// south (0.001 degree pixels).
func colourTIFF(t *testing.T, r, g, b string, ullr ...string) []byte {
	return createdTIFF(t, "-outsize", "300", "200", "-bands", "3", "-ot", "Byte", "-burn", r, "-burn", g, "-burn", b,
		"-a_srs", "EPSG:4326", "-a_ullr", ullr[0], ullr[1], ullr[2], ullr[3])
}

// createVRT asks for a VRT of owner's and waits for its first generation; it returns the
// dataset's id and the job.
func createVRT(t *testing.T, owner session, body map[string]any) (string, map[string]any) {
	t.Helper()
	r := call(t, "POST", "/ingest/vrt/create", body, bearer(owner.Access)...)
	if r.Status != 202 {
		t.Fatalf("create VRT: %d %s", r.Status, r.Body)
	}
	m := r.JSON(t)
	job := waitRasterJob(t, owner, m["job_id"].(string))
	if job["dataset_id"] != m["dataset_id"] {
		t.Fatalf("the generation's job names dataset %v, the answer %v", job["dataset_id"], m["dataset_id"])
	}
	return m["dataset_id"].(string), job
}

// vrtDataset reads a dataset's record.
func vrtRecord(t *testing.T, s session, id string) map[string]any {
	t.Helper()
	r := call(t, "GET", "/datasets/"+id, nil, bearer(s.Access)...)
	if r.Status != 200 {
		t.Fatalf("dataset %s: %d %s", id, r.Status, r.Body)
	}
	return r.JSON(t)
}

// TestVRTMosaicTiles: a mosaic of two uploaded GeoTIFFs, the later drawn over the earlier where
// they overlap, is a raster whose tile from a tile token equals GDAL's own mosaic of the two
// sources' COGs (gdalbuildvrt, then gdal_translate of the tile's window) within one level.
func TestVRTMosaicTiles(t *testing.T) {
	owner := newUser(t, "editor")
	a := importRaster(t, owner, "a.tif", colourTIFF(t, "200", "120", "40", "10", "48", "10.3", "47.8"),
		map[string]any{"title": "A " + randomHex(3)})
	b := importRaster(t, owner, "b.tif", colourTIFF(t, "30", "60", "220", "10.2", "48.05", "10.5", "47.85"),
		map[string]any{"title": "B " + randomHex(3)})
	id, job := createVRT(t, owner, map[string]any{"title": "Mosaic " + randomHex(3), "vrt_type": "mosaic",
		"resolution_strategy": "finest", "source_dataset_ids": []string{a["id"].(string), b["id"].(string)}})
	if job["status"] != "complete" {
		t.Fatalf("first generation: %v", job)
	}
	d := vrtRecord(t, owner, id)
	raster, _ := d["raster"].(map[string]any)
	if d["record_type"] != "vrt_dataset" || raster == nil || raster["status"] != "ready" || raster["vrt_type"] != "mosaic" ||
		raster["source_count"] != 2.0 || raster["band_count"] != 3.0 {
		t.Fatalf("the VRT's record: %v", d)
	}

	// GDAL's mosaic of the same two COGs, as the sources serve them for download.
	dir := t.TempDir()
	ref := filepath.Join(dir, "ref.vrt")
	if msg, err := exec.Command("gdalbuildvrt", "-q", ref, download(t, owner, a["id"].(string)),
		download(t, owner, b["id"].(string))).CombinedOutput(); err != nil {
		t.Fatalf("gdalbuildvrt: %v %s", err, msg)
	}
	tok := tileToken(t, id, bearer(owner.Access)...)
	if tok["kind"] != "raster" {
		t.Fatalf("token of a VRT: %v", tok)
	}
	z := int(tok["maxzoom"].(float64))
	for _, at := range [][2]float64{{10.1, 47.9}, {10.25, 47.9}, {10.4, 47.95}} { // A alone, both (B wins), B alone
		x, y := rasterTileAt(at[0], at[1], z)
		got := decodeNRGBA(t, getRaster(t, tileURL(tok["tile_url"].(string), z, x, y), 200).Body)
		want := gdalPNG(t, ref, z, x, y)
		if len(got.Pix) != len(want.Pix) {
			t.Fatalf("tile sizes differ: %d and %d", len(got.Pix), len(want.Pix))
		}
		for i := range got.Pix {
			if d := int(got.Pix[i]) - int(want.Pix[i]); d > 1 || d < -1 {
				t.Fatalf("z%d/%d/%d at %v differs from GDAL's mosaic at byte %d: %d vs %d", z, x, y, at, i, got.Pix[i], want.Pix[i])
			}
		}
	}
	// And the COG it downloads is the same mosaic.
	info := gdalinfoOf(t, download(t, owner, id))
	if bands := info["bands"].([]any); len(bands) != 4 { // three colours and the alpha of where any source has data
		t.Fatalf("downloaded VRT COG has %d bands", len(bands))
	}
}

// TestVRTBandStack: a band stack of two single-band DEMs has one band per source, each the
// source's values (band statistics computed as at ingest); sources that cannot be combined as
// asked are refused with a problem saying which.
func TestVRTBandStack(t *testing.T) {
	owner := newUser(t, "editor")
	dem := importRaster(t, owner, "dem.tif", demTIFF(t, 64, 64), map[string]any{"title": "DEM " + randomHex(3)})
	dem2 := importRaster(t, owner, "dem2.tif", demTIFF(t, 64, 64), map[string]any{"title": "DEM 2 " + randomHex(3)})
	rgb := importRaster(t, owner, "rgb.tif", rgbTIFF(t), map[string]any{"title": "RGB " + randomHex(3)})
	id, job := createVRT(t, owner, map[string]any{"title": "Stack " + randomHex(3), "vrt_type": "band_stack",
		"resolution_strategy": "coarsest", "source_dataset_ids": []string{dem["id"].(string), dem2["id"].(string)}})
	if job["status"] != "complete" {
		t.Fatalf("band stack generation: %v", job)
	}
	raster := vrtRecord(t, owner, id)["raster"].(map[string]any)
	bands := raster["bands"].([]any)
	if raster["band_count"] != 2.0 || len(bands) != 2 || raster["vrt_type"] != "band_stack" {
		t.Fatalf("band stack's raster: %v", raster)
	}
	srcBand := dem["raster"].(map[string]any)["bands"].([]any)[0].(map[string]any)
	for _, b := range bands {
		b := b.(map[string]any)
		if b["dtype"] != "float32" || b["min"] != srcBand["min"] || b["max"] != srcBand["max"] {
			t.Fatalf("stacked band %v, source band %v", b, srcBand)
		}
	}
	info := gdalinfoOf(t, download(t, owner, id))
	if n := len(info["bands"].([]any)); n != 2 {
		t.Fatalf("downloaded band stack has %d bands", n)
	}

	for _, c := range []struct {
		name string
		body map[string]any
	}{
		{"3 bands in a stack", map[string]any{"vrt_type": "band_stack", "source_dataset_ids": []string{dem["id"].(string), rgb["id"].(string)}}},
		{"mixed layouts in a mosaic", map[string]any{"vrt_type": "mosaic", "source_dataset_ids": []string{dem["id"].(string), rgb["id"].(string)}}},
		{"a source twice", map[string]any{"vrt_type": "mosaic", "source_dataset_ids": []string{dem["id"].(string), dem["id"].(string)}}},
		{"no source", map[string]any{"vrt_type": "mosaic", "source_dataset_ids": []string{}}},
		{"unknown kind", map[string]any{"vrt_type": "stack", "source_dataset_ids": []string{dem["id"].(string)}}},
		{"blank title", map[string]any{"vrt_type": "mosaic", "title": " ", "source_dataset_ids": []string{dem["id"].(string)}}},
	} {
		body := map[string]any{"title": "Bad " + randomHex(2), "resolution_strategy": "finest"}
		for k, v := range c.body {
			body[k] = v
		}
		r := call(t, "POST", "/ingest/vrt/create", body, bearer(owner.Access)...)
		if r.Status != 422 || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/problem+json") {
			t.Fatalf("%s: %d %s %s", c.name, r.Status, r.Header.Get("Content-Type"), r.Body)
		}
	}
}
