package rastertiles

import (
	"errors"
	"image"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"meridian/internal/cog"
	"meridian/internal/rastertiles/rastertest"
)

// The fixtures lie over 5..7 E, 48.4..50 N in EPSG:4326 (1000 x 800 pixels of 0.002 degrees);
// GDAL warps them to the GoogleMapsCompatible grid at zoom 9 with overviews down to zoom 6.
var (
	fixtureDir  string
	fixtureOnce sync.Mutex
	fixtures    = map[string]string{}
)

func fixture(t testing.TB, name string, s rastertest.Spec) string {
	t.Helper()
	fixtureOnce.Lock()
	defer fixtureOnce.Unlock()
	if p, ok := fixtures[name]; ok {
		return p
	}
	if fixtureDir == "" {
		d, err := os.MkdirTemp("", "rastertiles-test-")
		if err != nil {
			t.Fatal(err)
		}
		fixtureDir = d
	}
	if s.Width == 0 {
		s.Width, s.Height, s.West, s.North, s.Res = 1000, 800, 5, 50, 0.002
	}
	p := filepath.Join(fixtureDir, name+".tif")
	if err := rastertest.Make(p, s); err != nil {
		t.Fatal(err)
	}
	fixtures[name] = p
	return p
}

func TestMain(m *testing.M) {
	code := m.Run()
	if fixtureDir != "" {
		os.RemoveAll(fixtureDir)
	}
	os.Exit(code)
}

func rgbSpec(compress string) rastertest.Spec {
	return rastertest.Spec{Bands: 3, DType: "Byte", Compress: compress, Value: rastertest.RGB}
}

var demNoData = -9999.0

// demSpec has a nodata disc in the middle.
func demSpec() rastertest.Spec {
	return rastertest.Spec{Bands: 1, DType: "Float32", NoData: &demNoData, Predictor: true, Compress: "DEFLATE",
		Value: func(x, y, _ int) float64 {
			if dx, dy := x-500, y-400; dx*dx+dy*dy < 60*60 {
				return demNoData
			}
			return rastertest.DEM(x, y)
		}}
}

// countingReader counts reads, to tell a tile answered without reading.
type countingReader struct {
	f     *os.File
	reads atomic.Int64
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	c.reads.Add(1)
	return c.f.ReadAt(p, off)
}

func open(t testing.TB, path string, meta Meta) (*Raster, *countingReader) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	st, _ := f.Stat()
	cr := &countingReader{f: f}
	rs, err := Open(cr, st.Size(), meta, NewTileCache(16<<20))
	if err != nil {
		t.Fatal(err)
	}
	return rs, cr
}

// gdalTile is GDAL's rendering of the same window: gdal_translate -projwin of the tile's bounds
// in EPSG:3857 to 256 x 256 pixels, as raw band-sequential values.
func gdalTile(t testing.TB, path string, z, x, y int, dtype string, bands int, extra ...string) [][]float64 {
	t.Helper()
	b := cog.TileBounds(z, x, y)
	out := filepath.Join(t.TempDir(), "gdal.raw")
	args := append([]string{"-q", "-of", "ENVI", "-co", "INTERLEAVE=BSQ", "-ot", dtype, "-outsize", "256", "256",
		"-projwin", f(b[0]), f(b[3]), f(b[2]), f(b[1])}, extra...)
	args = append(args, path, out)
	if msg, err := exec.Command("gdal_translate", args...).CombinedOutput(); err != nil {
		t.Fatalf("gdal_translate %v: %v: %s", args, err, msg)
	}
	v, err := rastertest.ReadENVI(out, dtype, 256, 256, bands)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func f(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// tileOf is the XYZ tile at zoom z holding lon, lat.
func tileOf(z int, lon, lat float64) (int, int) {
	x, y := cog.LonLatToMercator(lon, lat)
	n := math.Ldexp(1, z)
	return int((x + cog.WorldHalf) / (2 * cog.WorldHalf) * n), int((cog.WorldHalf - y) / (2 * cog.WorldHalf) * n)
}

// diff compares our RGBA tile with GDAL's RGBA (band-sequential, alpha last): the mean and
// largest absolute difference of the colour of pixels both hold, and how many pixels differ in
// whether they hold data.
func diff(img *image.NRGBA, ref [][]float64) (mean, worst float64, alphaMismatch int) {
	var sum float64
	var n int
	for i := 0; i < 256*256; i++ {
		o := img.PixOffset(i%256, i/256)
		ours := img.Pix[o+3] != 0
		theirs := ref[3][i] != 0
		if ours != theirs {
			alphaMismatch++
			continue
		}
		if !ours {
			continue
		}
		for c := 0; c < 3; c++ {
			d := math.Abs(float64(img.Pix[o+c]) - ref[c][i])
			sum += d
			worst = math.Max(worst, d)
			n++
		}
	}
	if n > 0 {
		mean = sum / float64(n)
	}
	return mean, worst, alphaMismatch
}

// TestRGBTilesMatchGDAL: for each compression of raster ingest, tiles at the full resolution and
// at two overviews (which GDAL does not align with the XYZ grid) are GDAL's pixels: exactly for
// the lossless compressions, within a JPEG decoder's rounding for the lossy ones.
func TestRGBTilesMatchGDAL(t *testing.T) {
	cases := []struct {
		compress  string
		predictor bool
		mean, max float64
	}{
		{compress: "DEFLATE"},
		{compress: "DEFLATE", predictor: true},
		{compress: "LZW"},
		{compress: "ZSTD"},
		{compress: "ZSTD", predictor: true}, // raster ingest's default
		{compress: "NONE"},
		{compress: "JPEG", mean: 1, max: 8},
		{compress: "WEBP", mean: 1, max: 8},
	}
	for _, c := range cases {
		name := c.compress
		if c.predictor {
			name += "-predictor"
		}
		t.Run(name, func(t *testing.T) {
			s := rgbSpec(c.compress)
			s.Predictor = c.predictor
			path := fixture(t, "rgb-"+name, s)
			rs, _ := open(t, path, Meta{})
			if !rs.IsRGB() || rs.MaxZoom != 9 {
				t.Fatalf("rgb %v, max zoom %d", rs.IsRGB(), rs.MaxZoom)
			}
			for _, z := range []int{9, 8, 7} {
				x, y := tileOf(z, 6, 49.2)
				img, err := rs.Tile(z, x, y, Params{})
				if err != nil || img == nil {
					t.Fatalf("z%d: %v, %v", z, img, err)
				}
				ref := gdalTile(t, path, z, x, y, "Byte", 4, rgbaBands(c.compress)...)
				mean, worst, am := diff(img, ref)
				if mean > c.mean || worst > c.max || am > 0 {
					t.Errorf("z%d/%d/%d: mean difference %.3f (at most %g), largest %.0f (at most %g), %d pixels differ in alpha",
						z, x, y, mean, c.mean, worst, c.max, am)
				}
			}
		})
	}
}

// rgbaBands asks GDAL for colour and alpha: JPEG COGs keep alpha as a mask, not a band.
func rgbaBands(compress string) []string {
	if compress == "JPEG" {
		return []string{"-b", "1", "-b", "2", "-b", "3", "-b", "mask"}
	}
	return nil
}

// TestRGBEdgeTransparency: a tile across the raster's edge is transparent where GDAL's alpha
// is, for masks (JPEG keeps alpha as a mask directory) and alpha bands alike.
func TestRGBEdgeTransparency(t *testing.T) {
	for _, compress := range []string{"DEFLATE", "JPEG"} {
		t.Run(compress, func(t *testing.T) {
			path := fixture(t, "rgb-"+compress, rgbSpec(compress))
			rs, _ := open(t, path, Meta{})
			x, y := tileOf(9, 5.0005, 49.9995) // the north-west corner
			img, err := rs.Tile(9, x, y, Params{})
			if err != nil || img == nil {
				t.Fatal(img, err)
			}
			ref := gdalTile(t, path, 9, x, y, "Byte", 4, rgbaBands(compress)...)
			var transparent int
			for i := range ref[3] {
				if ref[3][i] == 0 {
					transparent++
				}
			}
			_, _, am := diff(img, ref)
			// JPEG's mask is 1-bit: a few edge pixels may round the other way in GDAL's warp.
			if transparent == 0 || am > 0 {
				t.Errorf("%d transparent pixels in GDAL's tile, %d differ in alpha", transparent, am)
			}
		})
	}
}

// singleRef renders GDAL's values of a single band through our stretch and ramp: what the tile
// must show, pixel by pixel (transparent where GDAL reads nodata).
func singleRef(rs *Raster, vals []float64, nodata *float64, p Params) *image.NRGBA {
	out := image.NewNRGBA(image.Rect(0, 0, 256, 256))
	for i, v := range vals {
		if nodata != nil && v == *nodata || math.IsNaN(v) {
			continue
		}
		rs.paint(out, i%256, i/256, []float32{float32(v), 255}, p)
	}
	return out
}

func compareRGBA(a, b *image.NRGBA) (mean, worst float64, alphaMismatch int) {
	var sum float64
	var n int
	for i := 0; i < len(a.Pix); i += 4 {
		if (a.Pix[i+3] == 0) != (b.Pix[i+3] == 0) {
			alphaMismatch++
			continue
		}
		if a.Pix[i+3] == 0 {
			continue
		}
		for c := 0; c < 3; c++ {
			d := math.Abs(float64(a.Pix[i+c]) - float64(b.Pix[i+c]))
			sum += d
			worst = math.Max(worst, d)
			n++
		}
	}
	if n > 0 {
		mean = sum / float64(n)
	}
	return mean, worst, alphaMismatch
}

// TestDEMTilesMatchGDAL: a float DEM with nodata (and the floating-point predictor) renders
// GDAL's values through each stretch and ramp, nodata transparent; Terrarium and Mapbox encode
// GDAL's elevations to within their precision.
func TestDEMTilesMatchGDAL(t *testing.T) {
	path := fixture(t, "dem", demSpec())
	rs, _ := open(t, path, Meta{IsDEM: true})
	if rs.IsRGB() || rs.file.NoData == nil || *rs.file.NoData != demNoData {
		t.Fatalf("rgb %v, nodata %v", rs.IsRGB(), rs.file.NoData)
	}
	pmin, pmax, sigma := 10.0, 90.0, 1.5
	params := []Params{
		{}, {Colormap: "viridis"}, {Colormap: "terrain", Stretch: "percentile"},
		{Colormap: "magma", Stretch: "percentile", PMin: &pmin, PMax: &pmax},
		{Colormap: "inferno", Stretch: "stddev", Sigma: &sigma},
	}
	for _, z := range []int{9, 8} {
		x, y := tileOf(z, 6, 49.2) // over the nodata disc
		ref := gdalTile(t, path, z, x, y, "Float32", 1)
		var holes int
		for _, v := range ref[0] {
			if v == demNoData {
				holes++
			}
		}
		if holes == 0 {
			t.Fatalf("z%d: the tile misses the nodata disc", z)
		}
		for _, p := range params {
			p, err := p.Check()
			if err != nil {
				t.Fatal(err)
			}
			img, err := rs.Tile(z, x, y, p)
			if err != nil || img == nil {
				t.Fatal(img, err)
			}
			mean, worst, am := compareRGBA(img, singleRef(rs, ref[0], &demNoData, p))
			if mean > 0.05 || worst > 3 || am > 0 {
				t.Errorf("z%d %s/%s: mean %.3f, largest %.0f, %d pixels differ in transparency", z, p.Colormap, p.Stretch, mean, worst, am)
			}
		}
		for _, enc := range []string{"terrarium", "mapbox"} {
			p, _ := Params{Encoding: enc}.Check()
			img, err := rs.Tile(z, x, y, p)
			if err != nil || img == nil {
				t.Fatal(img, err)
			}
			for i, v := range ref[0] {
				o := img.PixOffset(i%256, i/256)
				r, g, b := float64(img.Pix[o]), float64(img.Pix[o+1]), float64(img.Pix[o+2])
				if v == demNoData {
					if img.Pix[o+3] != 0 {
						t.Fatalf("%s: nodata pixel %d drawn", enc, i)
					}
					continue
				}
				got := r*256 + g + b/256 - 32768
				if enc == "mapbox" {
					got = -10000 + (r*65536+g*256+b)*0.1
				}
				if math.Abs(got-v) > 0.1 {
					t.Fatalf("%s z%d pixel %d: %g encoded as %g", enc, z, i, v, got)
				}
			}
		}
	}
	// The stretch's ends are the band's statistics: metadata's when given.
	lo, hi := 100.0, 300.0
	rs2, _ := open(t, path, Meta{Bands: []BandStats{{Min: &lo, Max: &hi}}})
	p, _ := Params{}.Check()
	if l, h := rs2.Range(0, p); l != lo || h != hi {
		t.Errorf("minmax range %g..%g, metadata says %g..%g", l, h, lo, hi)
	}
}

// TestUint16TilesMatchGDAL: three 16-bit bands (horizontal predictor) are each stretched by
// their own range.
func TestUint16TilesMatchGDAL(t *testing.T) {
	s := rastertest.Spec{Bands: 3, DType: "UInt16", Predictor: true, Compress: "ZSTD",
		Value: func(x, y, b int) float64 { return rastertest.RGB(x, y, b)*200 + float64(b*1000) }}
	path := fixture(t, "uint16", s)
	rs, _ := open(t, path, Meta{})
	if rs.mode != modeRGBStretched {
		t.Fatalf("mode %d", rs.mode)
	}
	p, _ := Params{}.Check()
	x, y := tileOf(9, 6, 49.2)
	img, err := rs.Tile(9, x, y, p)
	if err != nil || img == nil {
		t.Fatal(img, err)
	}
	ref := gdalTile(t, path, 9, x, y, "UInt16", 4)
	want := image.NewNRGBA(image.Rect(0, 0, 256, 256))
	for i := range ref[0] {
		if ref[3][i] == 0 {
			continue
		}
		o := want.PixOffset(i%256, i/256)
		for b := 0; b < 3; b++ {
			want.Pix[o+b] = uint8(rs.painter(p).unit(b, ref[b][i])*255 + 0.5)
		}
		want.Pix[o+3] = 255
	}
	if mean, worst, am := compareRGBA(img, want); mean > 0 || worst > 0 || am > 0 {
		t.Errorf("mean %.3f, largest %.0f, %d pixels differ in transparency", mean, worst, am)
	}
}

// TestOverzoomAndDownsample: beyond the full resolution tiles are GDAL's bilinear resampling of
// it; below the coarsest overview, GDAL's average of it; categorical rasters resample by
// nearest neighbour, exactly GDAL's.
func TestOverzoomAndDownsample(t *testing.T) {
	path := fixture(t, "rgb-DEFLATE", rgbSpec("DEFLATE"))
	rs, _ := open(t, path, Meta{})
	cases := []struct {
		z         int
		meta      Meta
		r         string
		mean, max float64
	}{
		{z: 11, r: "bilinear", mean: 1.5, max: 40},
		{z: 12, meta: Meta{Categorical: true}, r: "near", mean: 0, max: 0},
		{z: 4, r: "average", mean: 3, max: 60},
	}
	for _, c := range cases {
		rs := rs
		if c.meta.Categorical {
			rs, _ = open(t, path, c.meta)
		}
		x, y := tileOf(c.z, 6.3, 49.3)
		img, err := rs.Tile(c.z, x, y, Params{})
		if err != nil || img == nil {
			t.Fatalf("z%d: %v %v", c.z, img, err)
		}
		ref := gdalTile(t, path, c.z, x, y, "Byte", 4, "-r", c.r)
		mean, worst, _ := diff(img, ref)
		if mean > c.mean || worst > c.max {
			t.Errorf("z%d (%s): mean %.3f (at most %g), largest %.0f (at most %g)", c.z, c.r, mean, c.mean, worst, c.max)
		}
	}
	if rs.MinZoom != 0 {
		t.Errorf("min zoom %d: the coarsest overview is one tile, so every zoom is served", rs.MinZoom)
	}
}

// TestOutsideExtentReadsNothing: a tile beyond the data answers empty without a read.
func TestOutsideExtentReadsNothing(t *testing.T) {
	path := fixture(t, "rgb-DEFLATE", rgbSpec("DEFLATE"))
	b := [4]float64{5, 48.4, 7, 50}
	rs, cr := open(t, path, Meta{Bounds: &b})
	before := cr.reads.Load()
	for _, tc := range [][3]int{{9, 0, 0}, {12, 2100, 1400}, {3, 7, 7}} {
		img, err := rs.Tile(tc[0], tc[1], tc[2], Params{})
		if err != nil || img != nil {
			t.Errorf("%v: %v, %v; want empty", tc, img, err)
		}
	}
	if n := cr.reads.Load() - before; n != 0 {
		t.Errorf("%d reads for tiles outside the extent", n)
	}
}

// TestCorruptTile: a tile whose compressed bytes are garbage is an error naming the format,
// not a panic, and the raster's other tiles still render.
func TestCorruptTile(t *testing.T) {
	for _, compress := range []string{"DEFLATE", "LZW", "ZSTD", "JPEG", "WEBP"} {
		t.Run(compress, func(t *testing.T) {
			src := fixture(t, "rgb-"+compress, rgbSpec(compress))
			data, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			rs, _ := open(t, src, Meta{})
			x, y := tileOf(9, 6, 49.2)
			l := rs.levels[0]
			off, n, err := l.Image.TileRange(x-int(l.PX0/256), y-int(l.PY0/256))
			if err != nil || n == 0 {
				t.Fatal(n, err)
			}
			for i := off + 2; i < off+n; i++ {
				data[i] ^= 0x5a
			}
			bad := filepath.Join(t.TempDir(), "bad.tif")
			if err := os.WriteFile(bad, data, 0o644); err != nil {
				t.Fatal(err)
			}
			rb, _ := open(t, bad, Meta{})
			if _, err := rb.Tile(9, x, y, Params{}); err == nil || !errors.Is(err, cog.ErrFormat) {
				t.Errorf("corrupt tile: %v", err)
			}
			if img, err := rb.Tile(9, x+1, y, Params{}); err != nil || img == nil {
				t.Errorf("neighbour: %v, %v", img, err)
			}
		})
	}
}
