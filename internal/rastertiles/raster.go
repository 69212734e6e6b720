// Package rastertiles renders web-mercator XYZ tiles and quicklooks of the COGs raster ingest
// writes (internal/cog reads them): one XYZ tile at a zoom the COG holds is cut from its internal
// tiles without resampling; deeper zooms resample the finest (nearest for categorical rasters,
// bilinear otherwise), shallower ones average the coarsest overview. Byte RGB(A) passes through;
// single bands are stretched onto a colour ramp, or encoded as elevation (Terrarium, Mapbox
// Terrain-RGB) for DEMs.
package rastertiles

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"meridian/internal/cog"
)

// Meta is what the catalog records of a raster beyond its COG (the band statistics ingest
// computes over the full resolution). Statistics left nil are estimated from the COG's coarsest
// overview when it is opened.
type Meta struct {
	IsDEM bool
	// Categorical rasters (classes, not measures) are resampled by nearest neighbour.
	Categorical bool
	// NoData overrides the COG's GDAL_NODATA.
	NoData *float64
	Bands  []BandStats // by band, band 1 first
	// Bounds are the data's extent in WGS 84 (west, south, east, north), nil for the COG's,
	// which GDAL pads to whole tiles: tiles beyond it are answered empty without a read.
	Bounds *[4]float64
}

// BandStats are one band's statistics.
type BandStats struct {
	Min, Max, Mean, StdDev, P2, P98 *float64
	ColorInterp                     string
	// Quantiles, when given, are the band's percentiles 0..100 (a registered raster's, from its
	// histogram): other percentiles than p2 and p98 are read between them rather than from the
	// opened file's own values, which of a warped picture are the picture's, not the raster's.
	Quantiles []float64
}

// mode is how a raster's samples become colours.
type mode int

const (
	modeSingle       mode = iota // one band through a stretch and a ramp
	modeRGB                      // three byte bands as they are
	modeRGBStretched             // three bands of another type, each stretched
)

// Raster is an opened COG ready to render. It is safe for concurrent use.
type Raster struct {
	file   *cog.File
	levels []cog.Level // finest first
	meta   Meta
	mode   mode
	nodata *float64
	alpha  int // sample holding alpha, -1 for none
	bands  []resolved
	// MinZoom and MaxZoom are the zooms the raster is served at without refusal: MaxZoom the full
	// resolution's (deeper zooms resample it), MinZoom the lowest whose tiles need at most
	// maxDownTiles internal tiles of the coarsest overview.
	MinZoom, MaxZoom int
	tiles            *TileCache
	extent           [4]float64 // of the data in EPSG:3857: west, south, east, north
}

// resolved are a used band's statistics, with the sorted sample they were estimated from.
type resolved struct {
	min, max, mean, std, p2, p98 float64
	sample                       []float32
}

// maxDownTiles bounds the internal tiles one downsampled tile reads.
const maxDownTiles = 16

// maxSampleValues bounds the values kept per band for percentiles.
const maxSampleValues = 1 << 16

// ErrUnservable is wrapped by errors about a COG that cannot be tiled (not on the grid, no
// usable band).
var ErrUnservable = errors.New("rastertiles: raster cannot be tiled")

// Open reads the COG's directories and the coarsest overview (for statistics the metadata
// lacks). tiles, shared by the rasters of a server, keeps decoded internal tiles; nil keeps none.
func Open(r io.ReaderAt, size int64, meta Meta, tiles *TileCache) (*Raster, error) {
	f, err := cog.Open(r, size, cog.DefaultLimits)
	if err != nil {
		return nil, err
	}
	levels, err := f.Pyramid()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnservable, err)
	}
	full := f.Images[0]
	rs := &Raster{file: f, levels: levels, meta: meta, alpha: -1, tiles: tiles, MaxZoom: levels[0].Zoom}
	rs.nodata = f.NoData
	if meta.NoData != nil {
		rs.nodata = meta.NoData
	}
	if n := len(full.ExtraSamples); n > 0 {
		for k, e := range full.ExtraSamples {
			if e == 1 || e == 2 {
				rs.alpha = full.Samples - n + k
			}
		}
	}
	colour := full.Samples
	if rs.alpha >= 0 {
		colour = rs.alpha
	}
	switch {
	case colour >= 3 && full.DType == cog.Uint8:
		rs.mode = modeRGB
	case colour >= 3:
		rs.mode = modeRGBStretched
	case colour >= 1:
		rs.mode = modeSingle
	default:
		return nil, fmt.Errorf("%w: no colour band", ErrUnservable)
	}
	for _, im := range f.Images {
		if im.Samples != full.Samples || im.DType != full.DType {
			return nil, fmt.Errorf("%w: overviews of another layout than the full resolution", ErrUnservable)
		}
	}
	coarsest := levels[len(levels)-1]
	rs.MinZoom = coarsest.Zoom
	if coarsest.Image.Tiles() <= maxDownTiles {
		rs.MinZoom = 0
	} else if coarsest.Zoom > 0 {
		rs.MinZoom = coarsest.Zoom - 1
	}
	rs.extent = f.Bounds()
	if b := meta.Bounds; b != nil {
		w, s := cog.LonLatToMercator(b[0], b[1])
		e, n := cog.LonLatToMercator(b[2], b[3])
		if w < e && s < n {
			rs.extent = [4]float64{max(w, rs.extent[0]), max(s, rs.extent[1]), min(e, rs.extent[2]), min(n, rs.extent[3])}
		}
	}
	if err := rs.resolveStats(); err != nil {
		return nil, err
	}
	return rs, nil
}

// colourBands are the samples rendered: one, or three.
func (rs *Raster) colourBands() int {
	if rs.mode == modeSingle {
		return 1
	}
	return 3
}

// IsRGB tells a raster whose byte bands pass through.
func (rs *Raster) IsRGB() bool { return rs.mode == modeRGB }

// resolveStats takes the metadata's statistics and estimates the missing ones (and the sample
// for other percentiles) from the coarsest overview's valid values.
func (rs *Raster) resolveStats() error {
	n := rs.colourBands()
	rs.bands = make([]resolved, n)
	samples, err := rs.sampleCoarsest(n)
	if err != nil {
		return err
	}
	for b := 0; b < n; b++ {
		s := samples[b]
		slices.Sort(s)
		r := resolved{sample: s}
		if len(s) > 0 {
			r.min, r.max = float64(s[0]), float64(s[len(s)-1])
			r.p2, r.p98 = percentile(s, 2), percentile(s, 98)
			var sum, sq float64
			for _, v := range s {
				sum += float64(v)
			}
			r.mean = sum / float64(len(s))
			for _, v := range s {
				d := float64(v) - r.mean
				sq += d * d
			}
			r.std = math.Sqrt(sq / float64(len(s)))
		}
		if b < len(rs.meta.Bands) {
			m := rs.meta.Bands[b]
			set := func(dst *float64, v *float64) {
				if v != nil && !math.IsNaN(*v) && !math.IsInf(*v, 0) {
					*dst = *v
				}
			}
			set(&r.min, m.Min)
			set(&r.max, m.Max)
			set(&r.mean, m.Mean)
			set(&r.std, m.StdDev)
			set(&r.p2, m.P2)
			set(&r.p98, m.P98)
			if len(m.Quantiles) == 101 {
				r.sample = make([]float32, len(m.Quantiles))
				for i, q := range m.Quantiles {
					r.sample[i] = float32(q)
				}
			}
		}
		rs.bands[b] = r
	}
	return nil
}

// percentile of sorted values, p in 0..100, linear between ranks.
func percentile(sorted []float32, p float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	pos := p / 100 * float64(len(sorted)-1)
	i := int(pos)
	if i >= len(sorted)-1 {
		return float64(sorted[len(sorted)-1])
	}
	f := pos - float64(i)
	return float64(sorted[i])*(1-f) + float64(sorted[i+1])*f
}

// sampleCoarsest reads up to maxDownTiles tiles of the coarsest overview and keeps up to
// maxSampleValues valid values per colour band.
func (rs *Raster) sampleCoarsest(n int) ([][]float32, error) {
	l := rs.levels[len(rs.levels)-1]
	im := l.Image
	out := make([][]float32, n)
	total := im.Tiles()
	step := max(1, total/maxDownTiles)
	var read int64
	for i := int64(0); i < total && read < maxDownTiles; i += step {
		col, row := int(i%int64(im.TilesAcross)), int(i/int64(im.TilesAcross))
		t, mask, err := rs.readTile(len(rs.levels)-1, col, row)
		if err != nil {
			return nil, err
		}
		read++
		if t.Empty {
			continue
		}
		w := min(im.TileWidth, im.Width-col*im.TileWidth)
		h := min(im.TileHeight, im.Height-row*im.TileHeight)
		stride := max(1, w*h*int(min(total, maxDownTiles))/maxSampleValues)
		for p := 0; p < w*h; p += stride {
			px := (p/w)*t.Width + p%w
			if !rs.valid(t, mask, px) {
				continue
			}
			for b := 0; b < n; b++ {
				if len(out[b]) < maxSampleValues {
					out[b] = append(out[b], float32(t.Float(px, b)))
				}
			}
		}
	}
	return out, nil
}

// valid tells whether pixel px of a decoded tile holds data: not masked, not transparent, not
// nodata (in every colour band) and not NaN.
func (rs *Raster) valid(t *cog.Tile, mask *cog.Tile, px int) bool {
	if mask != nil && !mask.Empty && mask.Data[px] == 0 {
		return false
	}
	if rs.alpha >= 0 && t.Float(px, rs.alpha) == 0 {
		return false
	}
	n := rs.colourBands()
	nodata := 0
	for b := 0; b < n; b++ {
		v := t.Float(px, b)
		if math.IsNaN(v) {
			return false
		}
		if rs.nodata != nil && v == *rs.nodata {
			nodata++
		}
	}
	return nodata < n
}

// readTile reads internal tile (col, row) of level li and its mask, through the tile cache.
func (rs *Raster) readTile(li, col, row int) (*cog.Tile, *cog.Tile, error) {
	key := tileKey{r: rs, level: li, col: col, row: row}
	if e, ok := rs.tiles.get(key); ok {
		return e.data, e.mask, nil
	}
	im := rs.levels[li].Image
	t, err := im.ReadTile(col, row)
	if err != nil {
		return nil, nil, err
	}
	var mask *cog.Tile
	if im.Mask != nil && im.Mask.TilesAcross == im.TilesAcross && im.Mask.TilesDown == im.TilesDown {
		if mask, err = im.Mask.ReadTile(col, row); err != nil {
			return nil, nil, err
		}
	}
	rs.tiles.put(key, cachedTile{data: t, mask: mask})
	return t, mask, nil
}

// Bounds are the raster's extent in WGS 84: west, south, east, north.
func (rs *Raster) Bounds() [4]float64 {
	b := rs.extent
	w, s := cog.MercatorToLonLat(b[0], b[1])
	e, n := cog.MercatorToLonLat(b[2], b[3])
	return [4]float64{w, s, e, n}
}
