package ingest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"meridian/internal/catalog"
	"meridian/internal/cog"
	"meridian/internal/gdalcmd"
)

// registerTime bounds the description of a registered raster (two reads of its header and of
// one overview through the range proxy).
const registerTime = 3 * time.Minute

// wholeStatsPixels is the largest raster without an overview of statsPixels whose statistics
// are computed on every pixel; a larger one's are GDAL's approximation from a sample of its
// blocks.
const wholeStatsPixels = 4096 * 4096

// DescribeRemoteRaster describes a GeoTIFF that is registered rather than ingested (STAC Import
// mode register) as raster ingest describes the COG it stores: grid, CRS, bands with their
// statistics (on the overview of about statsPixels, as the ingest's), nodata, the DEM heuristic,
// plus the zooms its tiles are served at. path is the file as GDAL reads it (a grant of the range
// proxy, whose settings env are), name what errors call it. Only the GTiff driver is registered;
// a file that is not tiled, has no geotransform or CRS, crosses the antimeridian or exceeds the
// bounds is refused (ImportError). The second result is its box in WGS 84.
func DescribeRemoteRaster(ctx context.Context, lim gdalcmd.Limits, env []string, path, name string, b RasterBounds) (catalog.Raster, []float64, error) {
	ctx, cancel := context.WithTimeout(ctx, registerTime)
	defer cancel()
	env = append(append([]string{}, rasterEnv...), env...)
	named := func(err error) error {
		var ie *ImportError
		if errors.As(err, &ie) {
			return &ImportError{Msg: name + ": " + strings.ReplaceAll(ie.Msg, path, "the file")}
		}
		return err
	}
	j, err := gdalinfoIn(ctx, lim, env, "GTiff", path)
	if err != nil {
		return catalog.Raster{}, nil, named(err)
	}
	info, err := rasterInfoOf(j)
	if err != nil {
		return catalog.Raster{}, nil, &ImportError{Msg: fmt.Sprintf("%s: %v", name, err)}
	}
	if err := checkRegistered(name, j, info, b); err != nil {
		return catalog.Raster{}, nil, err
	}
	sj, err := gdalinfoIn(ctx, lim, env, "GTiff", path, registeredStatsArgs(j, info)...)
	if err != nil {
		return catalog.Raster{}, nil, named(err)
	}
	r := catalog.Raster{EPSG: info.EPSG, CRSIsGeographic: info.Geographic, ResX: info.ResX, ResY: info.ResY, Width: info.Width,
		Height: info.Height, BandCount: len(info.Bands), Compression: strings.ToUpper(cmp.Or(info.Compression, "NONE")),
		Extent: info.Extent, Resampling: defaultResampling(info)}
	stats := make([]bandStats, len(info.Bands))
	for i, band := range info.Bands {
		rb := catalog.RasterBand{Index: band.Index, DType: band.DType, NoData: band.NoData, ColorInterp: band.ColorInterp}
		if i < len(sj.Bands) {
			sb := sj.Bands[i]
			rb.Min, rb.Max, rb.Mean, rb.StdDev = sb.Minimum, sb.Maximum, sb.Mean, sb.StdDev
			if h := sb.Histogram; h != nil {
				rb.P2, rb.P98 = percentile(h.Min, h.Max, h.Buckets, 0.02), percentile(h.Min, h.Max, h.Buckets, 0.98)
				rb.Quantiles = quantiles(h.Min, h.Max, h.Buckets)
			} else if sb.Minimum != nil && sb.Maximum != nil && *sb.Minimum == *sb.Maximum {
				rb.P2, rb.P98 = sb.Minimum, sb.Maximum
			}
		}
		stats[i] = bandStats{Min: rb.Min, Max: rb.Max, Mean: rb.Mean, StdDev: rb.StdDev, P2: rb.P2, P98: rb.P98}
		r.Bands = append(r.Bands, rb)
	}
	r.NoData = r.Bands[0].NoData
	r.IsDEMDetected = detectDEM(info.Bands, stats)
	r.IsDEM = r.IsDEMDetected
	r.COG = servedGrid(j, info)
	return r, info.WGS84, nil
}

// checkRegistered refuses what a registered raster cannot be: untiled (every read of a strip
// spans the file's width, so a tile would read rows of the whole file), without a geotransform
// or a CRS, across the antimeridian, or over the raster bounds.
func checkRegistered(name string, j gdalinfoJSON, info RasterInfo, b RasterBounds) error {
	block := j.Bands[0].Block
	small := info.Width <= 512 && info.Height <= 512
	switch {
	case len(j.GeoTransform) != 6:
		return &ImportError{Msg: name + ": the raster has no geotransform: it cannot be placed on the map without a copy (mode copy)"}
	case info.WKT == "":
		return &ImportError{Msg: name + ": the raster declares no CRS: it cannot be registered (import it with mode copy and srid_override)"}
	case len(block) != 2 || !small && block[0] == info.Width && block[1] != block[0]:
		return &ImportError{Msg: fmt.Sprintf("%s is not tiled (blocks of %v for %d x %d pixels): only tiled GeoTIFFs (COGs) are read by range; "+
			"import it with mode copy", name, block, info.Width, info.Height)}
	case len(info.WGS84) != 4:
		return &ImportError{Msg: name + ": its extent cannot be given in WGS 84"}
	case info.WGS84[0] > info.WGS84[2]:
		return &ImportError{Msg: name + ": it crosses the antimeridian, which registered rasters' tiles do not: import it with mode copy"}
	}
	return b.check(name, info)
}

// registeredStatsArgs are the gdalinfo arguments of the statistics: on the smallest overview at
// least statsPixels wide or high (as the ingest's), else on the whole raster when it is small,
// else GDAL's approximation from a sample of its blocks.
func registeredStatsArgs(j gdalinfoJSON, info RasterInfo) []string {
	level := -1
	for i, ov := range j.Bands[0].Overviews {
		if len(ov.Size) == 2 && max(ov.Size[0], ov.Size[1]) >= statsPixels {
			level = i
		}
	}
	switch {
	case level >= 0:
		return []string{"-oo", "OVERVIEW_LEVEL=" + strconv.Itoa(level), "-stats", "-hist"}
	case int64(info.Width)*int64(info.Height) <= wholeStatsPixels:
		return []string{"-stats", "-hist"}
	}
	return []string{"-approx_stats", "-hist"}
}

// quantiles are the percentiles 0..100 of a histogram (nil when it is empty).
func quantiles(lo, hi float64, buckets []int64) []float64 {
	out := make([]float64, 0, 101)
	for q := 0; q <= 100; q++ {
		v := percentile(lo, hi, buckets, float64(q)/100)
		if v == nil {
			return nil
		}
		out = append(out, *v)
	}
	return out
}

// servedGrid is the web-mercator zooms a registered raster's tiles are served at: its full
// resolution's zoom (the closest to its pixel size, as GDAL's COG driver picks it) down to the
// zoom its coarsest overview serves without reading more than 4 x 4 of its tiles, as for a COG
// the ingest stored; and its box in EPSG:3857.
func servedGrid(j gdalinfoJSON, info RasterInfo) catalog.COGGrid {
	w, s := cog.LonLatToMercator(info.WGS84[0], info.WGS84[1])
	e, n := cog.LonLatToMercator(info.WGS84[2], info.WGS84[3])
	zoomOf := func(pixels int) int {
		res := (e - w) / float64(max(1, pixels))
		z := int(math.Round(math.Log2(2 * cog.WorldHalf / (256 * res))))
		return min(max(z, 0), 24)
	}
	g := catalog.COGGrid{Width: info.Width, Height: info.Height, Bands: len(info.Bands), MaxZoom: zoomOf(info.Width),
		Bounds: []float64{w, s, e, n}}
	coarsest := [2]int{info.Width, info.Height}
	if ovs := j.Bands[0].Overviews; len(ovs) > 0 && len(ovs[len(ovs)-1].Size) == 2 {
		coarsest = [2]int{ovs[len(ovs)-1].Size[0], ovs[len(ovs)-1].Size[1]}
	}
	g.MinZoom = zoomOf(coarsest[0])
	// The coarsest level's pixels at its zoom: within 4 x 4 tiles it serves every zoom above.
	if span := (e - w) / cog.PixelSize(g.MinZoom); span <= 1024 && (n-s)/cog.PixelSize(g.MinZoom) <= 1024 {
		g.MinZoom = 0
	} else if g.MinZoom > 0 {
		g.MinZoom--
	}
	return g
}
