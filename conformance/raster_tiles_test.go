package conformance

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"meridian/internal/cog"
	"meridian/internal/rastertiles/rastertest"
)

// Raster tiles: the desktop plugin's path (token, XYZ template, a tile that decodes as GDAL's
// rendering of the same window), signatures and visibility, caching, colour ramps, elevation
// encodings, quicklooks, and a corrupt COG.

// rasterFixtures are COGs made once for the suite, as raster ingest makes them.
var rasterFixtures = struct {
	sync.Once
	dir           string
	rgb, dem, bad string
	err           error
}{}

// The fixtures lie over 5..7 E, 48.4..50 N: full resolution at zoom 9, overviews to zoom 6.
var rasterBBox = [4]float64{5, 48.4, 7, 50}

const rasterNoData = -9999.0

func rasterCOGs(t *testing.T) (rgb, dem, bad string) {
	t.Helper()
	f := &rasterFixtures
	f.Do(func() {
		f.dir, f.err = os.MkdirTemp(server.dataDir, "raster-fixtures-") // removed with the server
		if f.err != nil {
			return
		}
		base := rastertest.Spec{Width: 1000, Height: 800, West: 5, North: 50, Res: 0.002}
		rgb := base
		rgb.Bands, rgb.DType, rgb.Value = 3, "Byte", rastertest.RGB
		f.rgb = filepath.Join(f.dir, "rgb.tif")
		if f.err = rastertest.Make(f.rgb, rgb); f.err != nil {
			return
		}
		nodata := rasterNoData
		dem := base
		dem.Bands, dem.DType, dem.NoData, dem.Predictor = 1, "Float32", &nodata, true
		dem.Value = func(x, y, _ int) float64 {
			if dx, dy := x-500, y-400; dx*dx+dy*dy < 60*60 {
				return rasterNoData
			}
			return rastertest.DEM(x, y)
		}
		f.dem = filepath.Join(f.dir, "dem.tif")
		if f.err = rastertest.Make(f.dem, dem); f.err != nil {
			return
		}
		f.bad, f.err = corruptTile(f.rgb, filepath.Join(f.dir, "bad.tif"))
	})
	if f.err != nil {
		t.Fatal(f.err)
	}
	return f.rgb, f.dem, f.bad
}

// corruptTile copies src with the full resolution's tile under (6 E, 49.2 N) scrambled.
func corruptTile(src, dst string) (string, error) {
	data, err := os.ReadFile(src)
	if err != nil {
		return "", err
	}
	c, err := cog.Open(bytes.NewReader(data), int64(len(data)), cog.DefaultLimits)
	if err != nil {
		return "", err
	}
	levels, err := c.Pyramid()
	if err != nil {
		return "", err
	}
	l := levels[0]
	x, y := rasterTileAt(6, 49.2, 9)
	off, n, err := l.Image.TileRange(x-int(l.PX0/256), y-int(l.PY0/256))
	if err != nil {
		return "", err
	}
	for i := off + 2; i < off+n; i++ {
		data[i] ^= 0x5a
	}
	return dst, os.WriteFile(dst, data, 0o644)
}

func rasterTileAt(lon, lat float64, z int) (int, int) {
	x, y := cog.LonLatToMercator(lon, lat)
	n := math.Ldexp(1, z)
	return int((x + cog.WorldHalf) / (2 * cog.WorldHalf) * n), int((cog.WorldHalf - y) / (2 * cog.WorldHalf) * n)
}

// rasterDataset puts a raster dataset in the catalog as raster ingest leaves it: a published
// raster_dataset record of owner with its extent, naming its COG stored (in the local object
// store) at DATA_DIR/rasters/<id>/v1.tif. The tests below so draw prepared COGs of every
// compression; TestRasterUploadToTile goes through a real upload.
func rasterDataset(t *testing.T, owner session, visibility, cogPath string) string {
	t.Helper()
	conn := dbConn(t)
	var id string
	err := conn.QueryRow(context.Background(), `INSERT INTO catalog.datasets
		(table_name, title, record_type, visibility, record_status, created_by, extent_bbox, published_at)
		VALUES ('raster_' || substr(md5(random()::text), 1, 10), $1, 'raster_dataset', $2, 'published', $3, $4, now())
		RETURNING id`, "Raster "+randomHex(3), visibility, owner.ID, rasterBBox[:]).Scan(&id)
	if err != nil {
		t.Fatal(err)
	}
	// The record names its COG as raster ingest does (the object store's key, under DATA_DIR).
	if _, err := conn.Exec(context.Background(), `UPDATE catalog.datasets SET raster = jsonb_build_object('storage_key',
		'rasters/' || id || '/v1.tif', 'band_count', 1, 'bands', '[]'::jsonb) WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(server.dataDir, "rasters", id)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(cogPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "v1.tif"), data, 0o640); err != nil {
		t.Fatal(err)
	}
	return id
}

// gdalPNG is GDAL's rendering of XYZ tile z/x/y of path: gdal_translate -projwin of the tile's
// bounds in EPSG:3857 to a 256 x 256 PNG.
func gdalPNG(t *testing.T, path string, z, x, y int) *image.NRGBA {
	t.Helper()
	b := cog.TileBounds(z, x, y)
	out := filepath.Join(t.TempDir(), "gdal.png")
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	args := []string{"-q", "-of", "PNG", "-outsize", "256", "256", "-projwin", f(b[0]), f(b[3]), f(b[2]), f(b[1]), path, out}
	if msg, err := exec.Command("gdal_translate", args...).CombinedOutput(); err != nil {
		t.Fatalf("gdal_translate: %v: %s", err, msg)
	}
	return decodeNRGBA(t, readFile(t, out))
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func decodeNRGBA(t *testing.T, body []byte) *image.NRGBA {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("decode png: %v", err)
	}
	out := image.NewNRGBA(img.Bounds())
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
			out.Set(x, y, img.At(x, y))
		}
	}
	return out
}

// getRaster fetches an absolute or API-relative URL and checks its status.
func getRaster(t *testing.T, u string, want int, headers ...string) reply {
	t.Helper()
	root := server.APIRoot
	if strings.HasPrefix(u, "http") {
		root = ""
	}
	r := callAt(t, httpc, root, "GET", u, nil, headers...)
	if r.Status != want {
		t.Fatalf("GET %s: %d, want %d: %s", u, r.Status, want, r.Body)
	}
	return r
}

func tileURL(template string, z, x, y int) string {
	return strings.NewReplacer("{z}", strconv.Itoa(z), "{x}", strconv.Itoa(x), "{y}", strconv.Itoa(y)).Replace(template)
}

// TestRasterTilesPluginPath: the desktop plugin's raster path. A raster token gives the tile
// URL on the raster tile proxy, bounds and zooms; its tiles, fetched without a credential,
// decode as GDAL's pixels of the same window at the full resolution and at an overview; the
// edge path answers the same; caching, formats, visibility and kinds as the document says.
func TestRasterTilesPluginPath(t *testing.T) {
	rgbPath, _, _ := rasterCOGs(t)
	owner, other := newUser(t, "editor"), newUser(t, "viewer")
	id := rasterDataset(t, owner, "private", rgbPath)

	// Anonymous: 401 (a private dataset); another user: 404.
	if r := call(t, "GET", "/tiles/token/"+id+"/", nil); r.Status != 401 {
		t.Fatalf("anonymous raster token: %d %s", r.Status, r.Body)
	}
	if r := call(t, "GET", "/tiles/token/"+id+"/", nil, bearer(other.Access)...); r.Status != 404 {
		t.Fatalf("raster token of an invisible dataset: %d %s", r.Status, r.Body)
	}
	tok := tileToken(t, id, bearer(owner.Access)...)
	prefix := server.APIRoot + "/tiles/raster-proxy/" + id + "/{z}/{x}/{y}.png?"
	bounds, _ := tok["bounds"].([]any)
	if tok["kind"] != "raster" || !strings.HasPrefix(tok["tile_url"].(string), prefix) || tok["format"] != "png" ||
		tok["tile_size"] != 256.0 || tok["minzoom"] != 0.0 || tok["maxzoom"] != 9.0 || len(bounds) != 4 {
		t.Fatalf("raster token %v", tok)
	}
	for i, want := range rasterBBox {
		if math.Abs(bounds[i].(float64)-want) > 1e-6 {
			t.Fatalf("bounds %v, want %v", bounds, rasterBBox)
		}
	}
	if !strings.Contains(tok["tile_url"].(string), signedQuery(tok)) {
		t.Fatalf("tile_url %s does not carry the signature %s", tok["tile_url"], signedQuery(tok))
	}
	template := tok["tile_url"].(string)

	for _, z := range []int{9, 7} {
		x, y := rasterTileAt(6, 49.2, z)
		r := getRaster(t, tileURL(template, z, x, y), 200)
		if ct := r.Header.Get("Content-Type"); ct != "image/png" {
			t.Fatalf("content type %q", ct)
		}
		got, want := decodeNRGBA(t, r.Body), gdalPNG(t, rgbPath, z, x, y)
		if !bytes.Equal(got.Pix, want.Pix) {
			t.Fatalf("z%d/%d/%d differs from gdal_translate -projwin of the same window", z, x, y)
		}
		if cc := r.Header.Get("Cache-Control"); !strings.HasPrefix(cc, "private, max-age=") {
			t.Fatalf("Cache-Control of a private raster's signed tile: %q", cc)
		}
	}
	x, y := rasterTileAt(6, 49.2, 9)
	first := getRaster(t, tileURL(template, 9, x, y), 200)
	etag := first.Header.Get("ETag")
	getRaster(t, tileURL(template, 9, x, y), 304, "If-None-Match", etag)
	if r := getRaster(t, tileURL(template, 9, x+1, y), 200); r.Header.Get("ETag") == etag {
		t.Fatal("two tiles share an ETag")
	}
	// The edge path, as a deployment's smoke script fetches it.
	edge := strings.Replace(tileURL(template, 9, x, y), "/api/tiles/raster-proxy/"+id+"/", "/raster-tiles/"+id+"/tiles/", 1)
	if r := callAt(t, http.DefaultClient, "", "GET", edge, nil); r.Status != 200 || !bytes.Equal(r.Body, first.Body) {
		t.Fatalf("edge path %s: %d", edge, r.Status)
	}
	// Beyond the extent: 204, at a deep zoom too.
	getRaster(t, tileURL(template, 9, 0, 0), 204)
	ox, oy := rasterTileAt(20, 10, 14)
	getRaster(t, tileURL(template, 14, ox, oy), 204)
	// Overzoom, and below the coarsest overview.
	for _, z := range []int{12, 3} {
		x, y := rasterTileAt(6, 49.2, z)
		if img := decodeNRGBA(t, getRaster(t, tileURL(template, z, x, y), 200).Body); img.Bounds().Dx() != 256 {
			t.Fatalf("z%d tile of %v", z, img.Bounds())
		}
	}
	// JPEG decodes; WEBP is refused as the document says.
	jr := getRaster(t, strings.Replace(tileURL(template, 9, x, y), ".png?", ".jpg?", 1), 200)
	if img, err := jpeg.Decode(bytes.NewReader(jr.Body)); err != nil || img.Bounds().Dx() != 256 || jr.Header.Get("Content-Type") != "image/jpeg" {
		t.Fatalf("jpg tile: %v %v", err, jr.Header.Get("Content-Type"))
	}
	getRaster(t, strings.Replace(tileURL(template, 9, x, y), ".png?", ".webp?", 1), 422)
	if r := call(t, "GET", "/tiles/token/"+id+"/?format=webp", nil, bearer(owner.Access)...); r.Status != 422 {
		t.Fatalf("webp token: %d", r.Status)
	}

	// Without the signature: the credential decides.
	plain := fmt.Sprintf("/tiles/raster-proxy/%s/9/%d/%d.png", id, x, y)
	getRaster(t, plain, 404)
	getRaster(t, plain, 404, bearer(other.Access)...)
	if r := getRaster(t, plain, 200, bearer(owner.Access)...); r.Header.Get("Cache-Control") != "private, no-cache" {
		t.Fatalf("Cache-Control of a private raster's tile: %q", r.Header.Get("Cache-Control"))
	}
	// Out of the grid: 400.
	getRaster(t, fmt.Sprintf("/tiles/raster-proxy/%s/2/4/0.png", id), 400, bearer(owner.Access)...)
	// A raster has no vector tiles, a vector dataset no raster tiles.
	getRaster(t, "/tiles/"+id+"/9/0/0.pbf", 409, bearer(owner.Access)...)
	vector := ogcDataset(t, owner, "private")
	getRaster(t, "/tiles/raster-proxy/"+vector+"/0/0/0.png", 422, bearer(owner.Access)...)

	// The batch: a raster token (png), a vector token, and a failure in its place.
	missing := "6f1c1f3e-0000-4000-8000-000000000000"
	b := call(t, "POST", "/tiles/tokens/", map[string]any{"dataset_ids": []string{id, vector, missing}}, bearer(owner.Access)...)
	if b.Status != 200 {
		t.Fatalf("batch: %d %s", b.Status, b.Body)
	}
	tokens := b.JSON(t)["tokens"].(map[string]any)
	rt, vt, ft := tokens[id].(map[string]any), tokens[vector].(map[string]any), tokens[missing].(map[string]any)
	if rt["kind"] != "raster" || !strings.HasPrefix(rt["tile_url"].(string), prefix) || vt["kind"] != "vector" || ft["status"] != 404.0 {
		t.Fatalf("batch tokens: %v", tokens)
	}
}

// TestRasterTilesRendering: a public float DEM with nodata is drawn through the colour ramps and
// stretches, nodata transparent, its values in Terrarium and Mapbox encodings exactly GDAL's
// within their precision; bad parameters are 400, parameters a raster cannot honour 422.
func TestRasterTilesRendering(t *testing.T) {
	_, demPath, _ := rasterCOGs(t)
	owner := newUser(t, "editor")
	id := rasterDataset(t, owner, "public", demPath)
	x, y := rasterTileAt(6, 49.2, 9) // over the nodata disc
	base := fmt.Sprintf("/tiles/raster-proxy/%s/9/%d/%d.png", id, x, y)

	// GDAL's elevations of the window.
	b := cog.TileBounds(9, x, y)
	raw := filepath.Join(t.TempDir(), "dem.raw")
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	if msg, err := exec.Command("gdal_translate", "-q", "-of", "ENVI", "-outsize", "256", "256", "-projwin",
		f(b[0]), f(b[3]), f(b[2]), f(b[1]), demPath, raw).CombinedOutput(); err != nil {
		t.Fatalf("gdal_translate: %v %s", err, msg)
	}
	vals, err := rastertest.ReadENVI(raw, "Float32", 256, 256, 1)
	if err != nil {
		t.Fatal(err)
	}

	var seen []string
	for _, q := range []string{"", "colormap_name=viridis", "colormap_name=terrain&stretch=percentile",
		"colormap_name=magma&stretch=percentile&pmin=10&pmax=90", "colormap_name=bugn&stretch=stddev&sigma=1.5"} {
		r := getRaster(t, base+"?"+q, 200)
		if cc := r.Header.Get("Cache-Control"); cc != "public, no-cache" {
			t.Fatalf("Cache-Control of a public raster's tile: %q", cc)
		}
		img := decodeNRGBA(t, r.Body)
		for i, v := range vals[0] {
			if transparent := img.Pix[4*i+3] == 0; transparent != (v == rasterNoData) {
				t.Fatalf("%s: pixel %d (%g) transparent %v", q, i, v, transparent)
			}
		}
		for _, s := range seen {
			if s == string(r.Body) {
				t.Fatalf("%s draws as an earlier ramp did", q)
			}
		}
		seen = append(seen, string(r.Body))
	}
	for _, enc := range []string{"terrarium", "mapbox"} {
		img := decodeNRGBA(t, getRaster(t, base+"?encoding="+enc, 200).Body)
		for i, v := range vals[0] {
			p := img.Pix[4*i : 4*i+4]
			if v == rasterNoData {
				if p[3] != 0 {
					t.Fatalf("%s: nodata pixel %d drawn", enc, i)
				}
				continue
			}
			r, g, b := float64(p[0]), float64(p[1]), float64(p[2])
			got := r*256 + g + b/256 - 32768
			if enc == "mapbox" {
				got = -10000 + (r*65536+g*256+b)*0.1
			}
			if math.Abs(got-v) > 0.1 {
				t.Fatalf("%s pixel %d: %g encoded as %g", enc, i, v, got)
			}
		}
	}
	getRaster(t, base+"?stretch=percentile&pmin=90&pmax=10", 400)
	getRaster(t, base+"?stretch=stddev&sigma=0", 400)
	getRaster(t, strings.Replace(base, ".png", ".jpg", 1)+"?encoding=terrarium", 422)

	// The quicklook: the data extent, longer side size, from the overviews; ETag by version.
	q := getRaster(t, "/datasets/"+id+"/quicklook?size=64", 200)
	img := decodeNRGBA(t, q.Body)
	// 2 degrees of longitude by 1.6 of latitude at 49 N: taller than wide in web mercator.
	if w, h := img.Bounds().Dx(), img.Bounds().Dy(); h != 64 || w < 50 || w > 54 {
		t.Fatalf("quicklook of %dx%d", w, h)
	}
	getRaster(t, "/datasets/"+id+"/quicklook?size=64", 304, "If-None-Match", q.Header.Get("ETag"))
	if d := getRaster(t, "/datasets/"+id+"/quicklook", 200); decodeNRGBA(t, d.Body).Bounds().Dy() != 256 {
		t.Fatal("default quicklook is not 256 pixels high")
	}
	getRaster(t, "/datasets/"+id+"/quicklook?size=0", 422) // the schema bounds: the validator answers
	getRaster(t, "/datasets/"+id+"/quicklook?size=513", 422)
	vector := ogcDataset(t, owner, "public")
	getRaster(t, "/datasets/"+vector+"/quicklook", 404)
}

// TestRasterCorruptTile: a COG with a scrambled tile answers that tile 502 naming the dataset,
// and the server goes on serving its other tiles.
func TestRasterCorruptTile(t *testing.T) {
	_, _, badPath := rasterCOGs(t)
	owner := newUser(t, "editor")
	id := rasterDataset(t, owner, "public", badPath)
	x, y := rasterTileAt(6, 49.2, 9)
	r := getRaster(t, fmt.Sprintf("/tiles/raster-proxy/%s/9/%d/%d.png", id, x, y), 502)
	if !strings.Contains(string(r.Body), id) || r.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("corrupt tile: %s %s", r.Header.Get("Content-Type"), r.Body)
	}
	getRaster(t, fmt.Sprintf("/tiles/raster-proxy/%s/9/%d/%d.png", id, x+1, y), 200)
	getRaster(t, "/health", 200)
}

// The desktop plugin's raster path from a real upload: a GeoTIFF imported, its record's tile
// token, a tile from the template, equal to gdal_translate of the same window of the COG the
// dataset serves for download; a DEM with a colour ramp renders too, and the quicklook.
func TestRasterUploadToTile(t *testing.T) {
	owner := newUser(t, "editor")
	d := importRaster(t, owner, "scene.tif", rgbTIFF(t), map[string]any{"title": "Scene " + randomHex(3), "visibility": "public"})
	id := d["id"].(string)
	tok := tileToken(t, id)
	if tok["kind"] != "raster" {
		t.Fatalf("token of an imported raster: %v", tok)
	}
	z := int(tok["maxzoom"].(float64))
	x, y := rasterTileAt(10.15, 47.9, z)
	r := getRaster(t, tileURL(tok["tile_url"].(string), z, x, y), 200)
	got, want := decodeNRGBA(t, r.Body), gdalPNG(t, download(t, owner, id), z, x, y)
	if len(got.Pix) != len(want.Pix) {
		t.Fatalf("tile sizes differ: %d and %d", len(got.Pix), len(want.Pix))
	}
	for i := range got.Pix {
		if d := int(got.Pix[i]) - int(want.Pix[i]); d > 1 || d < -1 {
			t.Fatalf("z%d/%d/%d differs from gdal_translate of the downloaded COG at byte %d: %d vs %d", z, x, y, i, got.Pix[i], want.Pix[i])
		}
	}
	// A DEM: single band, the viridis ramp, and its quicklook.
	dem := importRaster(t, owner, "dem.tif", demTIFF(t, 64, 64), map[string]any{"title": "DEM " + randomHex(3), "visibility": "public"})
	dtok := tileToken(t, dem["id"].(string))
	dz := int(dtok["maxzoom"].(float64))
	bounds := dtok["bounds"].([]any)
	dx, dy := rasterTileAt((bounds[0].(float64)+bounds[2].(float64))/2, (bounds[1].(float64)+bounds[3].(float64))/2, dz)
	getRaster(t, tileURL(dtok["tile_url"].(string), dz, dx, dy)+"&colormap_name=viridis", 200)
	if q := call(t, "GET", "/datasets/"+dem["id"].(string)+"/quicklook?size=64", nil); q.Status != 200 || q.Header.Get("Content-Type") != "image/png" {
		t.Fatalf("quicklook: %d %s", q.Status, q.Header.Get("Content-Type"))
	}
}
