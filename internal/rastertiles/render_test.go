package rastertiles

import (
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
