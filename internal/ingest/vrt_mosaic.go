package ingest

import (
	"encoding/xml"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"meridian/internal/apperr"
	"meridian/internal/catalog"
)

// A generation's mosaic is a GDAL VRT written here, by this code, over local copies of its
// sources' stored COGs: nothing of a request reaches it but dataset ids, and GDAL reads no other
// file (the copies are named by the build) and no URL. All stored COGs lie on the
// GoogleMapsCompatible grid in EPSG:3857 (the ingest's contract, catalog.Raster.COG), so the
// mosaic is their union on that grid at the pixel size the strategy picks, each source placed
// by its bounds.

// VRT kinds and resolution strategies (the contract's words).
const (
	VRTMosaic    = "mosaic"
	VRTBandStack = "band_stack"
)

var vrtStrategies = []string{"finest", "coarsest", "average"}

// MaxVRTSources is how many sources a VRT may have.
const MaxVRTSources = 500

// gdalTypeNames are GDAL's data type names by the catalog's dtypes.
var gdalTypeNames = func() map[string]string {
	out := map[string]string{}
	for g, d := range gdalTypes {
		out[d] = g
	}
	return out
}()

// vrtLayout is what decides whether rasters can be combined: each band's data type.
type vrtLayout struct {
	ID     uuid.UUID
	Title  string
	DTypes []string
}

func layoutOf(id uuid.UUID, title string, r catalog.Raster) vrtLayout {
	l := vrtLayout{ID: id, Title: title}
	for _, b := range r.Bands {
		l.DTypes = append(l.DTypes, b.DType)
	}
	return l
}

// checkLayouts tells whether rasters of these layouts can be combined as kind: a mosaic's have
// the same band count and types, a band stack's one band each, of one type. A layout without
// bands (a VRT before its first generation) cannot be judged yet and is passed over.
func checkLayouts(kind string, layouts []vrtLayout) error {
	var first *vrtLayout
	for i := range layouts {
		l := &layouts[i]
		if len(l.DTypes) == 0 {
			continue
		}
		if kind == VRTBandStack && len(l.DTypes) != 1 {
			return apperr.Unprocessable("a band stack takes single-band rasters (one band per source); %s (%q) has %d bands",
				l.ID, l.Title, len(l.DTypes))
		}
		if first == nil {
			first = l
			continue
		}
		if !slices.Equal(l.DTypes, first.DTypes) {
			what := "a mosaic's sources have the same band count and data types"
			if kind == VRTBandStack {
				what = "a band stack's sources have one data type"
			}
			return apperr.Unprocessable("%s: %s (%q) has %d bands of %s, %s (%q) %d of %s", what, l.ID, l.Title, len(l.DTypes),
				strings.Join(l.DTypes, ", "), first.ID, first.Title, len(first.DTypes), strings.Join(first.DTypes, ", "))
		}
	}
	return nil
}

// mosaicSource is one source of a generation: its COG's local copy and its description.
type mosaicSource struct {
	ID   uuid.UUID
	Path string
	R    catalog.Raster
}

// mosaicPlan is the grid of a generation's mosaic and what its bands are.
type mosaicPlan struct {
	MinX, MaxY, Res float64
	Width, Height   int
	Bands           []RasterBandInfo
	NoData          *string // the sources' common nodata; nil: an alpha band marks where data is
}

// planMosaic places the sources on one grid: their union, at the pixel size strategy picks
// among theirs. A source whose description has no grid cannot be placed.
func planMosaic(kind, strategy string, srcs []mosaicSource) (mosaicPlan, error) {
	var p mosaicPlan
	minY, maxX := math.Inf(1), math.Inf(-1)
	p.MinX, p.MaxY = math.Inf(1), math.Inf(-1)
	var sizes []float64
	for _, s := range srcs {
		g := s.R.COG
		if len(g.Bounds) != 4 || g.Width <= 0 || g.Height <= 0 || len(s.R.Bands) == 0 {
			return p, fmt.Errorf("source %s has no stored grid to place", s.ID)
		}
		p.MinX, minY = min(p.MinX, g.Bounds[0]), min(minY, g.Bounds[1])
		maxX, p.MaxY = max(maxX, g.Bounds[2]), max(p.MaxY, g.Bounds[3])
		sizes = append(sizes, (g.Bounds[2]-g.Bounds[0])/float64(g.Width))
	}
	switch strategy {
	case "coarsest":
		p.Res = slices.Max(sizes)
	case "average":
		for _, v := range sizes {
			p.Res += v / float64(len(sizes))
		}
	default:
		p.Res = slices.Min(sizes)
	}
	// The union is whole pixels of the finest grid; a coarser pixel may overhang by a fraction.
	p.Width = int(math.Ceil((maxX-p.MinX)/p.Res - 1e-6))
	p.Height = int(math.Ceil((p.MaxY-minY)/p.Res - 1e-6))
	p.NoData = commonNoData(srcs)
	first := srcs[0].R.Bands
	if kind == VRTBandStack {
		for i, s := range srcs {
			p.Bands = append(p.Bands, RasterBandInfo{Index: i + 1, DType: s.R.Bands[0].DType, NoData: p.NoData, ColorInterp: "gray"})
		}
		return p, nil
	}
	for i, b := range first {
		ci := b.ColorInterp
		if ci == "palette" || ci == "alpha" || ci == "" {
			ci = "gray" // a colour table is not carried over
		}
		p.Bands = append(p.Bands, RasterBandInfo{Index: i + 1, DType: b.DType, NoData: p.NoData, ColorInterp: ci})
	}
	return p, nil
}

// commonNoData is the nodata value every band of every source has, or nil when they differ or
// one has none (its data is then masked by an alpha band or a JPEG mask).
func commonNoData(srcs []mosaicSource) *string {
	var v *string
	for _, s := range srcs {
		for _, b := range s.R.Bands {
			switch {
			case b.NoData == nil:
				return nil
			case v == nil:
				v = b.NoData
			case *v != *b.NoData:
				return nil
			}
		}
	}
	return v
}

// info describes the mosaic as raster ingest describes a source: in EPSG:3857, its grid and bands.
func (p mosaicPlan) info() RasterInfo {
	ext := []float64{p.MinX, p.MaxY - float64(p.Height)*p.Res, p.MinX + float64(p.Width)*p.Res, p.MaxY}
	return RasterInfo{Width: p.Width, Height: p.Height, Bands: p.Bands, EPSG: 3857, Georeferenced: true, Extent: ext,
		WGS84: mercatorToLonLat(ext), ResX: p.Res, ResY: p.Res}
}

// The VRT document, as GDAL's VRT driver reads it.
type vrtDataset struct {
	XMLName      xml.Name  `xml:"VRTDataset"`
	Width        int       `xml:"rasterXSize,attr"`
	Height       int       `xml:"rasterYSize,attr"`
	SRS          string    `xml:"SRS"`
	GeoTransform string    `xml:"GeoTransform"`
	Bands        []vrtBand `xml:"VRTRasterBand"`
}

type vrtBand struct {
	DataType    string      `xml:"dataType,attr"`
	Band        int         `xml:"band,attr"`
	NoData      *string     `xml:"NoDataValue,omitempty"`
	ColorInterp string      `xml:"ColorInterp"`
	Sources     []vrtSource `xml:"ComplexSource"`
}

type vrtSource struct {
	Resampling string      `xml:"resampling,attr,omitempty"`
	Filename   vrtFilename `xml:"SourceFilename"`
	Band       string      `xml:"SourceBand"`
	Src        vrtRect     `xml:"SrcRect"`
	Dst        vrtRect     `xml:"DstRect"`
	NoData     *string     `xml:"NODATA,omitempty"`
	UseMask    string      `xml:"UseMaskBand,omitempty"`
}

type vrtFilename struct {
	Relative int    `xml:"relativeToVRT,attr"`
	Path     string `xml:",chardata"`
}

type vrtRect struct {
	X float64 `xml:"xOff,attr"`
	Y float64 `xml:"yOff,attr"`
	W float64 `xml:"xSize,attr"`
	H float64 `xml:"ySize,attr"`
}

// writeVRT writes the mosaic of srcs planned by p to path. Each data band takes its sources in
// order, each drawn only where it has data (UseMaskBand: its alpha band, JPEG mask or nodata), so
// later sources cover earlier ones there and nowhere else. Without a common nodata an alpha band
// is the union of the sources' masks: each source's mask drawn where it is set (NODATA 0).
func writeVRT(path, kind, resampling string, p mosaicPlan, srcs []mosaicSource) error {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 17, 64) }
	doc := vrtDataset{Width: p.Width, Height: p.Height, SRS: "EPSG:3857",
		GeoTransform: strings.Join([]string{f(p.MinX), f(p.Res), "0", f(p.MaxY), "0", f(-p.Res)}, ", ")}
	place := func(s mosaicSource, band string) vrtSource {
		b := s.R.COG.Bounds
		return vrtSource{Resampling: resampling, Filename: vrtFilename{Path: s.Path}, Band: band,
			Src: vrtRect{W: float64(s.R.COG.Width), H: float64(s.R.COG.Height)},
			Dst: vrtRect{X: (b[0] - p.MinX) / p.Res, Y: (p.MaxY - b[3]) / p.Res, W: (b[2] - b[0]) / p.Res, H: (b[3] - b[1]) / p.Res}}
	}
	for i, b := range p.Bands {
		vb := vrtBand{DataType: gdalTypeNames[b.DType], Band: i + 1, NoData: p.NoData, ColorInterp: b.ColorInterp}
		for k, s := range srcs {
			if kind == VRTBandStack && k != i {
				continue
			}
			band := strconv.Itoa(i + 1)
			if kind == VRTBandStack {
				band = "1"
			}
			src := place(s, band)
			src.UseMask = "true"
			vb.Sources = append(vb.Sources, src)
		}
		doc.Bands = append(doc.Bands, vb)
	}
	if p.NoData == nil {
		zero := "0"
		alpha := vrtBand{DataType: "Byte", Band: len(p.Bands) + 1, ColorInterp: "alpha"}
		for _, s := range srcs {
			src := place(s, "mask,1")
			src.Resampling, src.NoData = "nearest", &zero
			alpha.Sources = append(alpha.Sources, src)
		}
		doc.Bands = append(doc.Bands, alpha)
	}
	out, err := xml.MarshalIndent(doc, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o600)
}
