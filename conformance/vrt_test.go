package conformance

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
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
	job := waitJobEnd(t, owner, m["job_id"].(string))
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

// vrtGenerations lists a VRT's generations, newest first.
func vrtGenerations(t *testing.T, s session, id string) []any {
	t.Helper()
	r := call(t, "GET", "/datasets/"+id+"/vrt/generations/", nil, bearer(s.Access)...)
	if r.Status != 200 {
		t.Fatalf("generations: %d %s", r.Status, r.Body)
	}
	return r.JSON(t)["generations"].([]any)
}

// vrtSourceIDs lists a VRT's sources in order.
func vrtSourceIDs(t *testing.T, s session, id string) []string {
	t.Helper()
	r := call(t, "GET", "/datasets/"+id+"/vrt-sources/", nil, bearer(s.Access)...)
	if r.Status != 200 {
		t.Fatalf("sources: %d %s", r.Status, r.Body)
	}
	var ids []string
	for i, s := range r.JSON(t)["sources"].([]any) {
		s := s.(map[string]any)
		if s["position"] != float64(i+1) {
			t.Fatalf("source %d has position %v", i, s["position"])
		}
		ids = append(ids, s["dataset_id"].(string))
	}
	return ids
}

// TestVRTSourcesAndGenerations: adding and removing sources queues generations that show the
// change; the generations' history says why each ran, from which sources, and which is served;
// Get VRT Status follows them; the rules of removal and regeneration answer as the contract says.
func TestVRTSourcesAndGenerations(t *testing.T) {
	owner, reader := newUser(t, "editor"), newUser(t, "viewer")
	var ids []string
	for i, ullr := range [][]string{{"10", "48", "10.3", "47.8"}, {"10.2", "48.05", "10.5", "47.85"}, {"10.4", "48", "10.7", "47.8"}} {
		d := importRaster(t, owner, "s.tif", colourTIFF(t, "10", "20", "30", ullr...), map[string]any{"title": "S" + randomHex(3), "visibility": "public"})
		ids = append(ids, d["id"].(string))
		_ = i
	}
	id, _ := createVRT(t, owner, map[string]any{"title": "Sources " + randomHex(3), "vrt_type": "mosaic", "visibility": "internal",
		"resolution_strategy": "average", "source_dataset_ids": ids[:2]})
	width := func() float64 { return vrtRecord(t, owner, id)["raster"].(map[string]any)["width"].(float64) }
	w1 := width()

	// Add the third: a regeneration whose mosaic is wider.
	r := call(t, "POST", "/ingest/vrt/"+id+"/sources/", map[string]any{"source_dataset_id": ids[2]}, bearer(owner.Access)...)
	if r.Status != 202 {
		t.Fatalf("add source: %d %s", r.Status, r.Body)
	}
	if job := waitJobEnd(t, owner, r.JSON(t)["job_id"].(string)); job["status"] != "complete" {
		t.Fatalf("generation after adding: %v", job)
	}
	if got := vrtSourceIDs(t, reader, id); strings.Join(got, ",") != strings.Join(ids, ",") {
		t.Fatalf("sources after adding: %v, want %v", got, ids)
	}
	if w2 := width(); w2 <= w1 {
		t.Fatalf("the mosaic did not grow with its third source: %v then %v", w1, w2)
	}
	// Adding one already there changes nothing; a reader may not add; nor may the VRT hold itself.
	if r := call(t, "POST", "/ingest/vrt/"+id+"/sources/", map[string]any{"source_dataset_id": ids[2]}, bearer(owner.Access)...); r.Status != 202 {
		t.Fatalf("add again: %d %s", r.Status, r.Body)
	}
	if r := call(t, "POST", "/ingest/vrt/"+id+"/sources/", map[string]any{"source_dataset_id": ids[0]}, bearer(reader.Access)...); r.Status != 403 {
		t.Fatalf("a reader adds a source: %d %s", r.Status, r.Body)
	}
	if r := call(t, "POST", "/ingest/vrt/"+id+"/sources/", map[string]any{"source_dataset_id": id}, bearer(owner.Access)...); r.Status != 422 {
		t.Fatalf("the VRT as its own source: %d %s", r.Status, r.Body)
	}

	// Remove the first: the next generation is built from the other two.
	r = call(t, "DELETE", "/ingest/vrt/"+id+"/sources/"+ids[0]+"/", nil, bearer(owner.Access)...)
	if r.Status != 202 {
		t.Fatalf("remove source: %d %s", r.Status, r.Body)
	}
	if job := waitJobEnd(t, owner, r.JSON(t)["job_id"].(string)); job["status"] != "complete" {
		t.Fatalf("generation after removing: %v", job)
	}
	if got := vrtSourceIDs(t, owner, id); strings.Join(got, ",") != strings.Join(ids[1:], ",") {
		t.Fatalf("sources after removing: %v", got)
	}
	if r := call(t, "DELETE", "/ingest/vrt/"+id+"/sources/"+ids[0]+"/", nil, bearer(owner.Access)...); r.Status != 404 {
		t.Fatalf("remove a source not in the VRT: %d %s", r.Status, r.Body)
	}

	// The history: newest first, why each ran, from which sources, the newest served.
	gens := vrtGenerations(t, reader, id)
	want := []struct {
		trigger string
		sources []string
	}{{"source_removed", ids[1:]}, {"source_added", ids}, {"create", ids[:2]}}
	if len(gens) != len(want) {
		t.Fatalf("%d generations: %v", len(gens), gens)
	}
	for i, w := range want {
		g := gens[i].(map[string]any)
		var src []string
		for _, s := range g["source_dataset_ids"].([]any) {
			src = append(src, s.(string))
		}
		if g["triggered_by"] != w.trigger || g["status"] != "complete" || strings.Join(src, ",") != strings.Join(w.sources, ",") ||
			g["source_count"] != float64(len(w.sources)) || g["served"] != (i == 0) || g["generation"] != float64(3-i) {
			t.Fatalf("generation %d: %v, want %s from %v", i, g, w.trigger, w.sources)
		}
	}
	if r := call(t, "GET", "/datasets/"+id+"/vrt/generations/?limit=1&skip=1", nil, bearer(owner.Access)...).JSON(t); r["total"] != 3.0 ||
		len(r["generations"].([]any)) != 1 || r["generations"].([]any)[0].(map[string]any)["triggered_by"] != "source_added" {
		t.Fatalf("a page of generations: %v", r)
	}

	// Status: ready, two healthy sources, the served generation's time.
	st := call(t, "GET", "/datasets/"+id+"/vrt/status/", nil, bearer(reader.Access)...)
	if st.Status != 200 {
		t.Fatalf("status: %d %s", st.Status, st.Body)
	}
	s := st.JSON(t)
	health := s["source_health"].([]any)
	if s["status"] != "ready" || s["source_count"] != 2.0 || s["last_generation_at"] == nil || len(health) != 2 ||
		health[0].(map[string]any)["status"] != "healthy" || health[1].(map[string]any)["dataset_id"] != ids[2] {
		t.Fatalf("status: %v", s)
	}

	// Regenerate: queued at once (the status says so), a second one while it is on its way is 409.
	r = call(t, "POST", "/datasets/"+id+"/vrt/regenerate/", nil, bearer(owner.Access)...)
	if r.Status != 202 {
		t.Fatalf("regenerate: %d %s", r.Status, r.Body)
	}
	job := r.JSON(t)["job_id"].(string)
	if s := call(t, "GET", "/datasets/"+id+"/vrt/status/", nil, bearer(reader.Access)...).JSON(t); s["job_id"] != job ||
		(s["status"] != "regenerating" && call(t, "GET", "/jobs/"+job, nil, bearer(owner.Access)...).JSON(t)["status"] != "complete") {
		t.Fatalf("status while a regeneration is on its way: %v", s)
	}
	if again := call(t, "POST", "/datasets/"+id+"/vrt/regenerate/", nil, bearer(owner.Access)...); again.Status != 409 &&
		call(t, "GET", "/jobs/"+job, nil, bearer(owner.Access)...).JSON(t)["status"] != "complete" {
		t.Fatalf("regenerate while one is on its way: %d %s", again.Status, again.Body)
	}
	if job := waitJobEnd(t, owner, job); job["status"] != "complete" {
		t.Fatalf("manual generation: %v", job)
	}
	if g := vrtGenerations(t, owner, id)[0].(map[string]any); g["triggered_by"] != "manual" || g["served"] != true {
		t.Fatalf("manual generation in the history: %v", g)
	}
	if r := call(t, "POST", "/datasets/"+id+"/vrt/regenerate/", nil, bearer(reader.Access)...); r.Status != 403 {
		t.Fatalf("a reader regenerates: %d %s", r.Status, r.Body)
	}

	// The last source stays; a raster is not a VRT.
	if r := call(t, "DELETE", "/ingest/vrt/"+id+"/sources/"+ids[1]+"/", nil, bearer(owner.Access)...); r.Status != 202 {
		t.Fatalf("remove the second: %d %s", r.Status, r.Body)
	}
	if r := call(t, "DELETE", "/ingest/vrt/"+id+"/sources/"+ids[2]+"/", nil, bearer(owner.Access)...); r.Status != 409 {
		t.Fatalf("remove the last source: %d %s", r.Status, r.Body)
	}
	for _, path := range []string{"/vrt/status/", "/vrt/generations/", "/vrt-sources/"} {
		if r := call(t, "GET", "/datasets/"+ids[0]+path, nil, bearer(owner.Access)...); r.Status != 409 {
			t.Fatalf("%s of a raster: %d %s", path, r.Status, r.Body)
		}
	}
}

// vrtReady waits until a VRT's status is ready again (a regeneration a change of a source asked
// for, queued by the server by itself) and returns it.
func vrtReady(t *testing.T, s session, id string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		st := call(t, "GET", "/datasets/"+id+"/vrt/status/", nil, bearer(s.Access)...).JSON(t)
		if st["status"] == "ready" && st["serving"] == true {
			return st
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("VRT %s did not become ready again", id)
	return nil
}

// opaque counts a tile's pixels with data (alpha above zero); a 204 has none.
func opaque(t *testing.T, r reply) int {
	t.Helper()
	if r.Status == 204 {
		return 0
	}
	img, n := decodeNRGBA(t, r.Body), 0
	for i := 3; i < len(img.Pix); i += 4 {
		if img.Pix[i] > 0 {
			n++
		}
	}
	return n
}

// TestVRTSourceAccess: a VRT holds only sources its creator may read (404 otherwise, as any
// read) and could publish (422), and is seen by no more people than any source (422, at
// creation and when its visibility is widened later).
func TestVRTSourceAccess(t *testing.T) {
	owner, other := newUser(t, "editor"), newUser(t, "editor")
	mine := importRaster(t, owner, "mine.tif", rgbTIFF(t), map[string]any{"title": "Mine " + randomHex(3)})["id"].(string)
	private := importRaster(t, other, "p.tif", rgbTIFF(t), map[string]any{"title": "P " + randomHex(3)})["id"].(string)
	internal := importRaster(t, other, "i.tif", rgbTIFF(t), map[string]any{"title": "I " + randomHex(3), "visibility": "internal"})["id"].(string)
	public := importRaster(t, other, "q.tif", rgbTIFF(t), map[string]any{"title": "Q " + randomHex(3), "visibility": "public"})["id"].(string)
	vector := createDataset(t, owner, "private", false)["id"].(string)
	create := func(vis string, ids ...string) reply {
		return call(t, "POST", "/ingest/vrt/create", map[string]any{"title": "V " + randomHex(3), "vrt_type": "mosaic",
			"resolution_strategy": "finest", "visibility": vis, "source_dataset_ids": ids}, bearer(owner.Access)...)
	}
	for _, c := range []struct {
		name, vis string
		ids       []string
		want      int
	}{
		{"another user's private raster", "private", []string{mine, private}, 404},
		{"a dataset that does not exist", "private", []string{mine, "00000000-0000-4000-8000-000000000001"}, 404},
		{"another user's internal raster (readable, not the owner's to publish)", "private", []string{internal}, 422},
		{"a private source in a public VRT", "public", []string{mine, public}, 422},
		{"a vector dataset", "private", []string{vector}, 422},
	} {
		if r := create(c.vis, c.ids...); r.Status != c.want || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/problem+json") {
			t.Fatalf("%s: %d %s", c.name, r.Status, r.Body)
		}
	}
	if r := call(t, "POST", "/ingest/vrt/create", map[string]any{"title": "V", "vrt_type": "mosaic", "resolution_strategy": "finest",
		"source_dataset_ids": []string{public}}); r.Status != 401 {
		t.Fatalf("anonymous create: %d %s", r.Status, r.Body)
	}
	// Another user's public raster may be used; adding a private one of theirs later is 404 too.
	if r := create("public", public); r.Status != 202 {
		t.Fatalf("a public raster of another user in a public VRT: %d %s", r.Status, r.Body)
	}
	r := create("private", mine)
	if r.Status != 202 {
		t.Fatalf("own private raster: %d %s", r.Status, r.Body)
	}
	id := r.JSON(t)["dataset_id"].(string)
	if r := call(t, "POST", "/ingest/vrt/"+id+"/sources/", map[string]any{"source_dataset_ids": []string{private}}, bearer(owner.Access)...); r.Status != 404 {
		t.Fatalf("add another user's private raster: %d %s", r.Status, r.Body)
	}
	// Widening the VRT past its private source is refused, whatever the path.
	if r := call(t, "PATCH", "/datasets/"+id, map[string]any{"visibility": "public"}, bearer(owner.Access)...); r.Status != 422 ||
		!strings.Contains(string(r.Body), mine) {
		t.Fatalf("a VRT made public over a private source: %d %s", r.Status, r.Body)
	}
	// Others do not see a private VRT at all.
	if r := call(t, "GET", "/datasets/"+id+"/vrt/status/", nil, bearer(other.Access)...); r.Status != 404 {
		t.Fatalf("another user's private VRT status: %d %s", r.Status, r.Body)
	}
}

// TestVRTSourceDropsOut: a source made private by its owner, or deleted, is withdrawn at once
// from a VRT that shows it (no tile, no download of the generation holding it), and the VRT
// regenerates by itself without it: readers then see the remaining sources only, and the
// history and status say what was left out.
func TestVRTSourceDropsOut(t *testing.T) {
	owner, other, reader := newUser(t, "editor"), newUser(t, "editor"), newUser(t, "viewer")
	a := importRaster(t, owner, "a.tif", colourTIFF(t, "200", "120", "40", "10", "48", "10.3", "47.8"),
		map[string]any{"title": "A " + randomHex(3), "visibility": "public"})["id"].(string)
	q := importRaster(t, other, "q.tif", colourTIFF(t, "30", "60", "220", "11", "48", "11.3", "47.8"),
		map[string]any{"title": "Q " + randomHex(3), "visibility": "public"})["id"].(string)
	// Far enough apart that no tile at the VRT's full resolution holds two of them.
	w := importRaster(t, other, "w.tif", colourTIFF(t, "90", "90", "90", "9", "48", "9.3", "47.8"),
		map[string]any{"title": "W " + randomHex(3), "visibility": "public"})["id"].(string)
	id, _ := createVRT(t, owner, map[string]any{"title": "Shared " + randomHex(3), "vrt_type": "mosaic", "visibility": "public",
		"resolution_strategy": "finest", "source_dataset_ids": []string{a, q, w}})
	tok := tileToken(t, id, bearer(reader.Access)...)
	z := int(tok["maxzoom"].(float64))
	tile := func(lon, lat float64) reply {
		x, y := rasterTileAt(lon, lat, z)
		return call(t, "GET", "/tiles/raster-proxy/"+id+"/"+strconv.Itoa(z)+"/"+strconv.Itoa(x)+"/"+strconv.Itoa(y)+".png", nil,
			bearer(reader.Access)...)
	}
	if n := opaque(t, tile(11.1, 47.9)); n == 0 {
		t.Fatal("Q's part of the mosaic has no data before the change")
	}

	// Q made private: at once no tile and no COG of the generation that holds it.
	if r := call(t, "PATCH", "/datasets/"+q, map[string]any{"visibility": "private"}, bearer(other.Access)...); r.Status != 200 {
		t.Fatalf("make Q private: %d %s", r.Status, r.Body)
	}
	if r := tile(11.1, 47.9); r.Status == 200 || r.Status == 204 {
		t.Fatalf("a tile of the withdrawn generation after its source went private: %d", r.Status)
	}
	if r := call(t, "GET", "/datasets/"+id+"/download/cog", nil, bearer(reader.Access)...); r.Status == 200 {
		t.Fatal("the COG holding a source made private is still downloaded")
	}
	st := vrtReady(t, reader, id)
	if n := opaque(t, tile(11.1, 47.9)); n != 0 {
		t.Fatalf("Q's part of the mosaic still has %d pixels with data after it went private", n)
	}
	if n := opaque(t, tile(10.1, 47.9)); n == 0 {
		t.Fatal("A's part of the mosaic lost its data")
	}
	health := map[string]string{}
	for _, h := range st["source_health"].([]any) {
		h := h.(map[string]any)
		health[h["dataset_id"].(string)] = h["status"].(string)
		if h["dataset_id"] == q && h["title"] != "" {
			t.Fatalf("the reader sees the title of a source they may not read: %v", h)
		}
	}
	if health[a] != "healthy" || health[q] != "inaccessible" || health[w] != "healthy" {
		t.Fatalf("source health after Q went private: %v", health)
	}
	g := vrtGenerations(t, owner, id)[0].(map[string]any)
	if g["triggered_by"] != "source_updated" || fmt.Sprint(g["skipped_dataset_ids"]) != fmt.Sprint([]any{q}) || g["source_count"] != 2.0 {
		t.Fatalf("the generation without Q: %v", g)
	}

	// W deleted: the same, and it leaves the VRT's sources.
	if r := call(t, "DELETE", "/datasets/"+w, nil, bearer(other.Access)...); r.Status != 204 {
		t.Fatalf("delete W: %d %s", r.Status, r.Body)
	}
	if r := tile(9.1, 47.9); r.Status == 200 || r.Status == 204 {
		t.Fatalf("a tile of the withdrawn generation after its source was deleted: %d", r.Status)
	}
	vrtReady(t, reader, id)
	if n := opaque(t, tile(9.1, 47.9)); n != 0 {
		t.Fatalf("W's part of the mosaic still has %d pixels with data after it was deleted", n)
	}
	if got := vrtSourceIDs(t, owner, id); strings.Join(got, ",") != a+","+q {
		t.Fatalf("sources after W's deletion: %v", got)
	}
	if g := vrtGenerations(t, owner, id)[0].(map[string]any); g["triggered_by"] != "source_removed" {
		t.Fatalf("the generation after W's deletion: %v", g)
	}
}

// TestVRTRetiredCOGsRemoved: the COG of a generation no longer served is deleted once the grace
// (VRT_RETIRE_GRACE) has passed, the served one stays, and a deleted VRT leaves none.
func TestVRTRetiredCOGsRemoved(t *testing.T) {
	s := startFresh(t, "VRT_RETIRE_GRACE=1s", "RATE_LIMIT_ENABLED=false")
	hc := contractAt(t, s)
	tok := loginAt(t, hc, s.APIRoot, "admin", AdminPassword)
	up := uploadAt(t, hc, s.APIRoot, tok, "src.tif", rgbTIFF(t))
	if up.Status != 201 {
		t.Fatalf("upload: %d %s", up.Status, up.Body)
	}
	job := up.JSON(t)["job_id"].(string)
	if c := callAt(t, hc, s.APIRoot, "POST", "/ingest/commit/"+job, map[string]any{}, bearer(tok)...); c.Status != 202 {
		t.Fatalf("commit: %d %s", c.Status, c.Body)
	}
	done := func(j map[string]any) bool { return j["status"] == "complete" || j["status"] == "failed" }
	src := waitJob(t, hc, s.APIRoot, tok, job, time.Minute, done)["dataset_id"].(string)
	r := callAt(t, hc, s.APIRoot, "POST", "/ingest/vrt/create", map[string]any{"title": "Retire", "vrt_type": "mosaic",
		"resolution_strategy": "finest", "source_dataset_ids": []string{src}}, bearer(tok)...)
	if r.Status != 202 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	id := r.JSON(t)["dataset_id"].(string)
	if j := waitJob(t, hc, s.APIRoot, tok, r.JSON(t)["job_id"].(string), time.Minute, done); j["status"] != "complete" {
		t.Fatalf("first generation: %v", j)
	}
	cogs := func() []string {
		names, _ := filepath.Glob(filepath.Join(s.dataDir, "rasters", id, "*.tif"))
		for i, n := range names {
			names[i] = filepath.Base(n)
		}
		return names
	}
	if got := cogs(); fmt.Sprint(got) != "[g1.tif]" {
		t.Fatalf("COGs after the first generation: %v", got)
	}
	r = callAt(t, hc, s.APIRoot, "POST", "/datasets/"+id+"/vrt/regenerate/", nil, bearer(tok)...)
	if r.Status != 202 {
		t.Fatalf("regenerate: %d %s", r.Status, r.Body)
	}
	if j := waitJob(t, hc, s.APIRoot, tok, r.JSON(t)["job_id"].(string), time.Minute, done); j["status"] != "complete" {
		t.Fatalf("second generation: %v", j)
	}
	deadline := time.Now().Add(15 * time.Second)
	for fmt.Sprint(cogs()) != "[g2.tif]" && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	if got := cogs(); fmt.Sprint(got) != "[g2.tif]" {
		t.Fatalf("COGs after the grace of the replaced generation: %v", got)
	}
	if r := callAt(t, hc, s.APIRoot, "DELETE", "/datasets/"+id, nil, bearer(tok)...); r.Status != 204 {
		t.Fatalf("delete VRT: %d %s", r.Status, r.Body)
	}
	deadline = time.Now().Add(15 * time.Second)
	for len(cogs()) > 0 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	if got := cogs(); len(got) > 0 {
		t.Fatalf("COGs of a deleted VRT: %v", got)
	}
}

// TestVRTOfVRTs: a VRT may be a source of another; a new generation of the inner one makes the
// outer one regenerate by itself, and a VRT cannot come to hold itself through another.
func TestVRTOfVRTs(t *testing.T) {
	owner := newUser(t, "editor")
	a := importRaster(t, owner, "a.tif", colourTIFF(t, "200", "120", "40", "10", "48", "10.3", "47.8"), map[string]any{"title": "A"})["id"].(string)
	b := importRaster(t, owner, "b.tif", colourTIFF(t, "30", "60", "220", "10.2", "48.05", "10.5", "47.85"), map[string]any{"title": "B"})["id"].(string)
	inner, _ := createVRT(t, owner, map[string]any{"title": "Inner", "vrt_type": "mosaic", "resolution_strategy": "finest",
		"source_dataset_ids": []string{a}})
	outer, job := createVRT(t, owner, map[string]any{"title": "Outer", "vrt_type": "mosaic", "resolution_strategy": "finest",
		"source_dataset_ids": []string{inner, b}})
	if job["status"] != "complete" {
		t.Fatalf("outer generation: %v", job)
	}
	if r := call(t, "POST", "/ingest/vrt/"+inner+"/sources/", map[string]any{"source_dataset_id": outer}, bearer(owner.Access)...); r.Status != 422 {
		t.Fatalf("a VRT holding itself through another: %d %s", r.Status, r.Body)
	}
	r := call(t, "POST", "/datasets/"+inner+"/vrt/regenerate/", nil, bearer(owner.Access)...)
	if r.Status != 202 {
		t.Fatalf("regenerate inner: %d %s", r.Status, r.Body)
	}
	waitJobEnd(t, owner, r.JSON(t)["job_id"].(string))
	deadline := time.Now().Add(60 * time.Second)
	for {
		g := vrtGenerations(t, owner, outer)[0].(map[string]any)
		if g["triggered_by"] == "source_updated" && g["status"] == "complete" && g["served"] == true {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the outer VRT did not regenerate after its inner one did: %v", g)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
