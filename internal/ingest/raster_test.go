package ingest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"meridian/internal/gdalcmd"
)

func gdalTool(t *testing.T, tool string, args ...string) {
	t.Helper()
	if out, err := exec.Command(tool, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", tool, args, err, out)
	}
}

// Sidecars beside an uploaded raster (as if an attacker could place them there) are never
// read: external overviews, an external mask, an .aux.xml naming another CRS, a world file.
func TestInspectRasterReadsNoSidecar(t *testing.T) {
	dir := t.TempDir()
	tif := filepath.Join(dir, "up.tif")
	gdalTool(t, "gdal_create", "-of", "GTiff", "-outsize", "64", "64", "-bands", "1", "-ot", "Int16", "-burn", "3",
		"-a_srs", "EPSG:32633", "-a_ullr", "500000", "5200000", "501920", "5198080", tif)
	// External overviews and a mask, made by GDAL itself next to the file.
	gdalTool(t, "gdaladdo", "-q", "-ro", tif, "2", "4")
	gdalTool(t, "gdal_create", "-of", "GTiff", "-outsize", "64", "64", "-bands", "1", tif+".msk")
	aux := `<PAMDataset><SRS>EPSG:4326</SRS><Metadata><MDI key="x">y</MDI></Metadata></PAMDataset>`
	if err := os.WriteFile(tif+".aux.xml", []byte(aux), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tif + ".ovr"); err != nil {
		t.Fatalf("the fixture needs its external overviews: %v", err)
	}
	src := Source{Path: tif, Driver: "GTiff", Name: "up.tif", Raster: true}
	info, err := InspectRaster(context.Background(), gdalcmd.Limits{}, src, RasterBounds{})
	if err != nil {
		t.Fatal(err)
	}
	if info.Overviews != 0 || info.EPSG != 32633 {
		t.Fatalf("sidecars were read: %d overviews, EPSG %d", info.Overviews, info.EPSG)
	}
	// The same file read the ordinary way shows them: the test would see a reader that used them.
	out, _ := exec.Command("gdalinfo", tif).CombinedOutput()
	if !strings.Contains(string(out), "Overviews: 32x32") {
		t.Fatalf("plain gdalinfo should find the external overviews:\n%s", out)
	}
}

func TestPercentile(t *testing.T) {
	// 100 counts spread evenly over [0, 100): the 2nd percentile is 2, the 98th 98.
	buckets := make([]int64, 100)
	for i := range buckets {
		buckets[i] = 1
	}
	if p := percentile(0, 100, buckets, 0.02); p == nil || *p != 2 {
		t.Fatalf("p2 = %v", p)
	}
	if p := percentile(0, 100, buckets, 0.98); p == nil || *p != 98 {
		t.Fatalf("p98 = %v", p)
	}
	if p := percentile(0, 1, []int64{0, 0}, 0.5); p != nil {
		t.Fatalf("an empty histogram has no percentile: %v", *p)
	}
}

func TestLonLatBoxAcrossTheAntimeridian(t *testing.T) {
	cases := []struct {
		name    string
		ring    [][]float64
		degrees float64
		want    []float64
	}{
		{"projected, across 180", [][]float64{{179.5, -16}, {179.5, -17}, {-179.2, -17}, {-179.2, -16}}, 0, []float64{179.5, -17, -179.2, -16}},
		{"geographic 170..190", [][]float64{{170, 1}, {190, 1}, {190, 2}, {170, 2}}, 20, []float64{170, 1, -170, 2}},
		{"the whole world", [][]float64{{-180, -90}, {-180, 90}, {180, 90}, {180, -90}}, 360, []float64{-180, -90, 180, 90}},
		{"the whole world, projected", [][]float64{{-180, -85}, {-180, 85}, {180, 85}, {180, -85}}, 0, []float64{-180, -85, 180, 85}},
		{"ordinary", [][]float64{{10, 47}, {11, 48}}, 0, []float64{10, 47, 11, 48}},
	}
	for _, c := range cases {
		if got := lonLatBox(c.ring, c.degrees); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestRasterOptions(t *testing.T) {
	dem := RasterInfo{Bands: []RasterBandInfo{{Index: 1, DType: "float32", ColorInterp: "gray"}}}
	rgb := RasterInfo{Bands: []RasterBandInfo{{DType: "uint8"}, {DType: "uint8"}, {DType: "uint8"}}}
	classes := RasterInfo{Bands: []RasterBandInfo{{DType: "uint8", ColorInterp: "palette"}}}
	cases := []struct {
		info   RasterInfo
		in     RasterOptions
		ok     bool
		comp   string
		resamp string
		nodata string
	}{
		{dem, RasterOptions{}, true, "ZSTD", "bilinear", ""},
		{classes, RasterOptions{}, true, "ZSTD", "nearest", ""},
		{rgb, RasterOptions{Compression: "jpeg", Resampling: "Cubic"}, true, "JPEG", "cubic", ""},
		{rgb, RasterOptions{Compression: "webp"}, true, "WEBP", "bilinear", ""},
		{dem, RasterOptions{Compression: "jpeg"}, false, "", "", ""},
		{rgb, RasterOptions{Compression: "lzma"}, false, "", "", ""},
		{dem, RasterOptions{Resampling: "sharp"}, false, "", "", ""},
		{dem, RasterOptions{NoData: "NaN"}, true, "ZSTD", "bilinear", "nan"},
		{dem, RasterOptions{NoData: "-9999.0"}, true, "ZSTD", "bilinear", "-9999"},
		{rgb, RasterOptions{NoData: "256"}, false, "", "", ""},
		{rgb, RasterOptions{NoData: "nan"}, false, "", "", ""},
		{rgb, RasterOptions{NoData: "none"}, true, "ZSTD", "bilinear", "none"},
	}
	for _, c := range cases {
		got, err := CheckRasterOptions(c.in, c.info)
		if (err == nil) != c.ok || c.ok && (got.Compression != c.comp || got.Resampling != c.resamp || got.NoData != c.nodata) {
			t.Errorf("%+v on %v: %+v, %v", c.in, c.info.Bands, got, err)
		}
	}
}

func TestDetectDEM(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	band := []RasterBandInfo{{DType: "float32", ColorInterp: "gray"}}
	if !detectDEM(band, []bandStats{{Min: f(-20), Max: f(3100)}}) {
		t.Error("a float band of heights is a DEM")
	}
	if detectDEM(band, []bandStats{{Min: f(0), Max: f(40000)}}) {
		t.Error("values past 9000 are no heights")
	}
	if detectDEM([]RasterBandInfo{{DType: "uint8", ColorInterp: "gray"}}, []bandStats{{Min: f(0), Max: f(200)}}) {
		t.Error("8-bit data is imagery or classes")
	}
	if detectDEM([]RasterBandInfo{{DType: "int16", ColorInterp: "palette"}}, []bandStats{{Min: f(0), Max: f(20)}}) {
		t.Error("a palette band is classes")
	}
}
