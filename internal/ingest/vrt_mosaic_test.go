package ingest

import (
	"encoding/xml"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/uuid"

	"meridian/internal/catalog"
)

// source is a stored COG of width x height pixels at the box b (EPSG:3857) with bands of dtype.
func source(b []float64, width, height int, nodata *string, dtypes ...string) mosaicSource {
	r := catalog.Raster{COG: catalog.COGGrid{Width: width, Height: height, Bounds: b}}
	for i, d := range dtypes {
		r.Bands = append(r.Bands, catalog.RasterBand{Index: i + 1, DType: d, NoData: nodata, ColorInterp: "gray"})
	}
	return mosaicSource{ID: uuid.New(), R: r, Path: "/work/s" + uuid.NewString() + ".tif"}
}

// TestPlanMosaic: the mosaic is the union of its sources at the pixel size the strategy picks.
func TestPlanMosaic(t *testing.T) {
	a := source([]float64{0, 0, 100, 100}, 100, 100, nil, "uint8") // 1 m
	b := source([]float64{50, -50, 250, 50}, 50, 25, nil, "uint8") // 4 m
	for _, c := range []struct {
		strategy string
		res      float64
	}{{"finest", 1}, {"coarsest", 4}, {"average", 2.5}} {
		p, err := planMosaic(VRTMosaic, c.strategy, []mosaicSource{a, b})
		if err != nil {
			t.Fatal(err)
		}
		if p.Res != c.res || p.MinX != 0 || p.MaxY != 100 || p.Width != int(math.Ceil(250/c.res)) || p.Height != int(math.Ceil(150/c.res)) {
			t.Fatalf("%s: %+v", c.strategy, p)
		}
		if p.NoData != nil {
			t.Fatalf("%s: no common nodata, yet %v", c.strategy, *p.NoData)
		}
	}
}

// TestCheckLayouts: a mosaic's sources agree in bands, a band stack's have one band each.
func TestCheckLayouts(t *testing.T) {
	l := func(dtypes ...string) vrtLayout { return vrtLayout{ID: uuid.New(), DTypes: dtypes} }
	for _, c := range []struct {
		kind    string
		layouts []vrtLayout
		ok      bool
	}{
		{VRTMosaic, []vrtLayout{l("uint8", "uint8", "uint8"), l("uint8", "uint8", "uint8")}, true},
		{VRTMosaic, []vrtLayout{l("uint8", "uint8", "uint8"), l("uint8")}, false},
		{VRTMosaic, []vrtLayout{l("float32"), l("int16")}, false},
		{VRTMosaic, []vrtLayout{l("float32"), l()}, true}, // a VRT without a generation is judged later
		{VRTBandStack, []vrtLayout{l("float32"), l("float32")}, true},
		{VRTBandStack, []vrtLayout{l("float32"), l("uint8")}, false},
		{VRTBandStack, []vrtLayout{l("uint8", "uint8")}, false},
	} {
		if err := checkLayouts(c.kind, c.layouts); (err == nil) != c.ok {
			t.Errorf("%s of %v: %v", c.kind, c.layouts, err)
		}
	}
}

// TestWriteVRT: a band stack's band n is source n's band 1; without a common nodata an alpha
// band is drawn from every source's mask; sources are placed by their bounds on the plan's grid.
func TestWriteVRT(t *testing.T) {
	a := source([]float64{0, 0, 100, 100}, 100, 100, nil, "float32")
	b := source([]float64{100, 0, 200, 100}, 100, 100, nil, "float32")
	p, err := planMosaic(VRTBandStack, "finest", []mosaicSource{a, b})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "m.vrt")
	if err := writeVRT(path, VRTBandStack, "bilinear", p, []mosaicSource{a, b}); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc vrtDataset
	if err := xml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Bands) != 3 || doc.Bands[2].ColorInterp != "alpha" || len(doc.Bands[2].Sources) != 2 {
		t.Fatalf("bands: %+v", doc.Bands)
	}
	for i, src := range []mosaicSource{a, b} {
		s := doc.Bands[i].Sources
		if len(s) != 1 || s[0].Filename.Path != src.Path || s[0].Band != "1" || s[0].Dst.X != float64(100*i) || s[0].Dst.W != 100 {
			t.Fatalf("band %d: %+v", i+1, s)
		}
	}
}
