package rastertiles

import (
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"math"

	"meridian/internal/cog"
)

// TileSize is the edge of every tile served.
const TileSize = 256

// MaxZoom is the deepest zoom served (the grid's, as the tile token's maxzoom bound).
const MaxZoom = 24

// Params are how a request wants a tile drawn. Zero values take the defaults.
type Params struct {
	Colormap   string   // gray (default), viridis, ... ; single bands only
	Stretch    string   // minmax (default), percentile, stddev
	PMin, PMax *float64 // percentiles of stretch=percentile, 0..100; default 2 and 98
	Sigma      *float64 // standard deviations of stretch=stddev; default 2
	// Encoding, for single-band rasters, replaces the colour ramp by elevation in RGB: terrarium
	// (Mapzen) or mapbox (Terrain-RGB), what map libraries read as raster-dem sources.
	Encoding string
}

// ErrParams is wrapped by errors about a request's parameters.
var ErrParams = errors.New("rastertiles: invalid parameters")

func paramErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrParams, fmt.Sprintf(format, args...))
}

// Check validates p and fills the defaults.
func (p Params) Check() (Params, error) {
	if p.Colormap == "" {
		p.Colormap = "gray"
	}
	if _, ok := luts[p.Colormap]; !ok {
		return p, paramErr("colormap_name %q: one of %v", p.Colormap, Colormaps())
	}
	if p.Stretch == "" {
		p.Stretch = "minmax"
	}
	switch p.Stretch {
	case "minmax":
	case "percentile":
		lo, hi := 2.0, 98.0
		if p.PMin != nil {
			lo = *p.PMin
		}
		if p.PMax != nil {
			hi = *p.PMax
		}
		if !(lo >= 0 && hi <= 100 && lo < hi) {
			return p, paramErr("pmin and pmax are percentiles with 0 <= pmin < pmax <= 100 (got %g, %g)", lo, hi)
		}
		p.PMin, p.PMax = &lo, &hi
	case "stddev":
		s := 2.0
		if p.Sigma != nil {
			s = *p.Sigma
		}
		if !(s > 0 && s <= 100) {
			return p, paramErr("sigma must be above 0 and at most 100 (got %g)", s)
		}
		p.Sigma = &s
	default:
		return p, paramErr("stretch %q: one of minmax, percentile, stddev", p.Stretch)
	}
	switch p.Encoding {
	case "", "terrarium", "mapbox":
	default:
		return p, paramErr("encoding %q: one of terrarium, mapbox", p.Encoding)
	}
	return p, nil
}

// Key is the part of a cache key that p adds (defaults filled by Check).
func (p Params) Key() string {
	k := p.Colormap + "|" + p.Stretch + "|" + p.Encoding
	switch p.Stretch {
	case "percentile":
		k += fmt.Sprintf("|%g|%g", *p.PMin, *p.PMax)
	case "stddev":
		k += fmt.Sprintf("|%g", *p.Sigma)
	}
	return k
}

// window is the part of a level a tile reads: planes of float32 values, c channels a pixel;
// channel c-1 is alpha (0 or 255 for single bands, which carry NaN where invalid too).
type window struct {
	x0, y0, w, h int64 // in the level's pixels
	c            int
	v            []float32
}

// Tile renders XYZ tile z/x/y, nil when it holds no data (outside the raster, or every pixel
// nodata). It reads only when the tile meets the raster's extent.
func (rs *Raster) Tile(z, x, y int, p Params) (*image.NRGBA, error) {
	if p.Encoding != "" && rs.mode != modeSingle {
		return nil, paramErr("encoding %s needs a single-band raster", p.Encoding)
	}
	if z < rs.MinZoom || z > MaxZoom {
		return nil, nil
	}
	// A tile beyond the data extent is empty, known without a read.
	if t := cog.TileBounds(z, x, y); t[0] >= rs.extent[2] || t[2] <= rs.extent[0] || t[1] >= rs.extent[3] || t[3] <= rs.extent[1] {
		return nil, nil
	}
	return rs.render(z, int64(x)*TileSize, int64(y)*TileSize, TileSize, 1, p)
}

// render draws size x size pixels whose top-left is global pixel (gx, gy) of zoom z, each output
// pixel spanning step global pixels.
func (rs *Raster) render(z int, gx, gy int64, size int, step int64, p Params) (*image.NRGBA, error) {
	li := rs.levelFor(z)
	l := rs.levels[li]
	// f is the level's pixels per pixel of zoom z (below 1 when overzooming).
	f := math.Ldexp(1, l.Zoom-z)
	u0 := float64(gx)*f - float64(l.PX0)
	v0 := float64(gy)*f - float64(l.PY0)
	span := float64(int64(size)*step) * f
	im := l.Image
	if u0 >= float64(im.Width) || v0 >= float64(im.Height) || u0+span <= 0 || v0+span <= 0 {
		return nil, nil
	}
	// Level pixels to read, with a pixel of margin for bilinear sampling when overzooming (at
	// the zooms the COG holds a tile reads exactly its pixels, one internal tile when aligned).
	var margin int64
	if f*float64(step) < 1 {
		margin = 1
	}
	ax := max(0, int64(math.Floor(u0))-margin)
	ay := max(0, int64(math.Floor(v0))-margin)
	bx := min(int64(im.Width), int64(math.Ceil(u0+span))+margin)
	by := min(int64(im.Height), int64(math.Ceil(v0+span))+margin)
	if bx <= ax || by <= ay {
		return nil, nil
	}
	tiles := ((bx-1)/256 - ax/256 + 1) * ((by-1)/256 - ay/256 + 1)
	if tiles > maxDownTiles {
		return nil, nil
	}
	pt := rs.painter(p)
	if f == 1 && step == 1 {
		return rs.direct(li, int64(u0), int64(v0), size, pt)
	}
	win, any, err := rs.read(li, ax, ay, bx, by)
	if err != nil || !any {
		return nil, err
	}
	out := image.NewNRGBA(image.Rect(0, 0, size, size))
	pf := f * float64(step) // level pixels per output pixel
	var drawn bool
	switch {
	case pf >= 1:
		drawn = rs.box(win, out, u0, v0, pf, pt)
	case rs.meta.Categorical:
		drawn = rs.nearest(win, out, u0, v0, pf, pt)
	default:
		drawn = rs.bilinear(win, out, u0, v0, pf, pt)
	}
	if !drawn {
		return nil, nil
	}
	return out, nil
}

// levelFor picks the level a zoom reads: the coarsest at least as fine as z, else the finest.
func (rs *Raster) levelFor(z int) int {
	for i := len(rs.levels) - 1; i >= 0; i-- {
		if rs.levels[i].Zoom >= z {
			return i
		}
	}
	return 0
}

// read assembles level li's pixels [ax,bx) x [ay,by) from its internal tiles; any tells whether
// a pixel holds data.
func (rs *Raster) read(li int, ax, ay, bx, by int64) (*window, bool, error) {
	c := rs.colourBands() + 1
	w := &window{x0: ax, y0: ay, w: bx - ax, h: by - ay, c: c}
	w.v = make([]float32, w.w*w.h*int64(c))
	if rs.mode == modeSingle {
		for i := 0; i < len(w.v); i += 2 {
			w.v[i] = float32(math.NaN())
		}
	}
	im := rs.levels[li].Image
	var any bool
	for row := ay / 256; row <= (by-1)/256; row++ {
		for col := ax / 256; col <= (bx-1)/256; col++ {
			t, mask, err := rs.readTile(li, int(col), int(row))
			if err != nil {
				return nil, false, err
			}
			if t.Empty {
				continue
			}
			// The tile's pixels inside the window.
			tx0, ty0 := col*256, row*256
			sx, sy := max(ax, tx0), max(ay, ty0)
			ex := min(bx, tx0+256, int64(im.Width))
			ey := min(by, ty0+256, int64(im.Height))
			for py := sy; py < ey; py++ {
				for px := sx; px < ex; px++ {
					ti := int((py-ty0)*int64(t.Width) + (px - tx0))
					if !rs.valid(t, mask, ti) {
						continue
					}
					any = true
					o := ((py-ay)*w.w + (px - ax)) * int64(c)
					for b := 0; b < c-1; b++ {
						w.v[o+int64(b)] = float32(t.Float(ti, b))
					}
					w.v[o+int64(c-1)] = 255
				}
			}
		}
	}
	return w, any, nil
}

// at is the window's pixel at level pixel (x, y), nil outside it or where it holds no data.
func (w *window) at(x, y int64) []float32 {
	if x < w.x0 || y < w.y0 || x >= w.x0+w.w || y >= w.y0+w.h {
		return nil
	}
	o := ((y-w.y0)*w.w + (x - w.x0)) * int64(w.c)
	px := w.v[o : o+int64(w.c)]
	if px[w.c-1] == 0 {
		return nil
	}
	return px
}

// box draws each output pixel as the mean of the valid level pixels it covers (pf >= 1: pf x pf
// of them, one at the zooms the COG holds).
func (rs *Raster) box(w *window, out *image.NRGBA, u0, v0, pf float64, pt *painter) bool {
	n := int64(pf)
	size := out.Rect.Dx()
	acc := make([]float64, w.c)
	var drawn bool
	for j := 0; j < size; j++ {
		ly := int64(math.Floor(v0 + float64(j)*pf))
		for i := 0; i < size; i++ {
			lx := int64(math.Floor(u0 + float64(i)*pf))
			if n == 1 {
				if px := w.at(lx, ly); px != nil {
					pt.paint(out, i, j, px)
					drawn = true
				}
				continue
			}
			for k := range acc {
				acc[k] = 0
			}
			var cnt float64
			for yy := ly; yy < ly+n; yy++ {
				for xx := lx; xx < lx+n; xx++ {
					if px := w.at(xx, yy); px != nil {
						for k := 0; k < w.c-1; k++ {
							acc[k] += float64(px[k])
						}
						cnt++
					}
				}
			}
			// Half the covered pixels must hold data, so edges do not smear outwards.
			if cnt == 0 || cnt*2 < float64(n*n) {
				continue
			}
			px := make([]float32, w.c)
			for k := 0; k < w.c-1; k++ {
				px[k] = float32(acc[k] / cnt)
			}
			px[w.c-1] = 255
			pt.paint(out, i, j, px)
			drawn = true
		}
	}
	return drawn
}

// nearest draws each output pixel as the level pixel under its centre.
func (rs *Raster) nearest(w *window, out *image.NRGBA, u0, v0, pf float64, pt *painter) bool {
	size := out.Rect.Dx()
	var drawn bool
	for j := 0; j < size; j++ {
		ly := int64(math.Floor(v0 + (float64(j)+0.5)*pf))
		for i := 0; i < size; i++ {
			lx := int64(math.Floor(u0 + (float64(i)+0.5)*pf))
			if px := w.at(lx, ly); px != nil {
				pt.paint(out, i, j, px)
				drawn = true
			}
		}
	}
	return drawn
}

// bilinear draws each output pixel interpolated between the four level pixels around its
// centre; where one of them holds no data, the nearest valid one stands in for it.
func (rs *Raster) bilinear(w *window, out *image.NRGBA, u0, v0, pf float64, pt *painter) bool {
	size := out.Rect.Dx()
	px := make([]float32, w.c)
	var drawn bool
	for j := 0; j < size; j++ {
		fy := v0 + (float64(j)+0.5)*pf - 0.5
		y0 := int64(math.Floor(fy))
		ty := float32(fy - float64(y0))
		for i := 0; i < size; i++ {
			fx := u0 + (float64(i)+0.5)*pf - 0.5
			x0 := int64(math.Floor(fx))
			tx := float32(fx - float64(x0))
			// The pixel under the centre decides whether there is data at all.
			cx, cy := x0, y0
			if tx >= 0.5 {
				cx++
			}
			if ty >= 0.5 {
				cy++
			}
			centre := w.at(cx, cy)
			if centre == nil {
				continue
			}
			corners := [4][]float32{w.at(x0, y0), w.at(x0+1, y0), w.at(x0, y0+1), w.at(x0+1, y0+1)}
			weights := [4]float32{(1 - tx) * (1 - ty), tx * (1 - ty), (1 - tx) * ty, tx * ty}
			for k := 0; k < w.c-1; k++ {
				var s float32
				for q, c := range corners {
					if c == nil {
						c = centre
					}
					s += c[k] * weights[q]
				}
				px[k] = s
			}
			px[w.c-1] = 255
			pt.paint(out, i, j, px)
			drawn = true
		}
	}
	return drawn
}

// paint colours output pixel (i, j) from a valid pixel's values.
func (rs *Raster) paint(out *image.NRGBA, i, j int, px []float32, p Params) {
	rs.painter(p).paint(out, i, j, px)
}

// painter is a request's colouring with the stretch's ranges worked out once.
type painter struct {
	mode     mode
	encoding string
	lut      *lut
	lo, k    [3]float64 // value v maps to (v - lo) * k in 0..1
}

func (rs *Raster) painter(p Params) *painter {
	pt := &painter{mode: rs.mode, encoding: p.Encoding, lut: luts[p.Colormap]}
	for b := range rs.bands {
		lo, hi := rs.Range(b, p)
		pt.lo[b] = lo
		if hi > lo {
			pt.k[b] = 1 / (hi - lo)
		}
	}
	return pt
}

// unit maps band b's value to 0..1.
func (pt *painter) unit(b int, v float64) float64 {
	if pt.k[b] == 0 {
		if v > pt.lo[b] {
			return 1
		}
		return 0
	}
	t := (v - pt.lo[b]) * pt.k[b]
	switch {
	case t <= 0 || math.IsNaN(t):
		return 0
	case t >= 1:
		return 1
	}
	return t
}

func (pt *painter) paint(out *image.NRGBA, i, j int, px []float32) {
	o := out.PixOffset(i, j)
	if pt.mode == modeSingle {
		pt.set(out.Pix[o:o+4:o+4], px[0], 0, 0)
		return
	}
	pt.set(out.Pix[o:o+4:o+4], px[0], px[1], px[2])
}

// set writes the colour of values a (and b, c for three bands) to d.
func (pt *painter) set(d []uint8, a, b, c float32) {
	switch pt.mode {
	case modeRGB:
		d[0], d[1], d[2], d[3] = byteOf(a), byteOf(b), byteOf(c), 255
	case modeRGBStretched:
		d[0] = uint8(pt.unit(0, float64(a))*255 + 0.5)
		d[1] = uint8(pt.unit(1, float64(b))*255 + 0.5)
		d[2] = uint8(pt.unit(2, float64(c))*255 + 0.5)
		d[3] = 255
	default:
		v := float64(a)
		switch pt.encoding {
		case "terrarium":
			d[0], d[1], d[2] = terrarium(v)
		case "mapbox":
			d[0], d[1], d[2] = mapboxRGB(v)
		default:
			col := pt.lut[int(pt.unit(0, v)*255+0.5)]
			d[0], d[1], d[2] = col[0], col[1], col[2]
		}
		d[3] = 255
	}
}

// direct draws a tile at a zoom the COG holds: each output pixel is one level pixel, read from
// the decoded internal tiles as they are (no window of floats): (u0, v0) is the tile's top-left
// in the level's pixels.
func (rs *Raster) direct(li int, u0, v0 int64, size int, pt *painter) (*image.NRGBA, error) {
	im := rs.levels[li].Image
	ax, ay := max(0, u0), max(0, v0)
	bx := min(int64(im.Width), u0+int64(size))
	by := min(int64(im.Height), v0+int64(size))
	out := image.NewNRGBA(image.Rect(0, 0, size, size))
	var drawn bool
	for row := ay / 256; row <= (by-1)/256; row++ {
		for col := ax / 256; col <= (bx-1)/256; col++ {
			t, mask, err := rs.readTile(li, int(col), int(row))
			if err != nil {
				return nil, err
			}
			if t.Empty {
				continue
			}
			tx0, ty0 := col*256, row*256
			sx, sy := max(ax, tx0), max(ay, ty0)
			ex, ey := min(bx, tx0+256), min(by, ty0+256)
			plain := rs.mode == modeRGB && t.DType == cog.Uint8 && (mask == nil || mask.Empty) && rs.nodata == nil
			ramp := rs.mode == modeSingle && pt.encoding == "" && t.DType == cog.Float32 && rs.alpha < 0
			var maskRow []uint8
			for py := sy; py < ey; py++ {
				ti := int((py-ty0)*int64(t.Width) + (sx - tx0))
				o := out.PixOffset(int(sx-u0), int(py-v0))
				if plain && rs.alpha < 0 {
					// Every pixel holds data: the row's colours as they are, opaque.
					copyRGB(out.Pix[o:o+4*int(ex-sx)], t.Data[ti*t.Samples:], t.Samples)
					drawn = true
					continue
				}
				if plain {
					// The pixels with alpha, a row at a time (drawPixel's rule without a call per pixel).
					if copyRGBWhereAlpha(out.Pix[o:o+4*int(ex-sx)], t.Data[ti*t.Samples:], t.Samples, rs.alpha) {
						drawn = true
					}
					continue
				}
				if ramp {
					// A float band through the ramp (a DEM), a row at a time: drawPixel's rule.
					if maskRow = nil; mask != nil && !mask.Empty {
						maskRow = mask.Data[ti:]
					}
					if pt.rampFloat32(out.Pix[o:o+4*int(ex-sx)], t.Data[4*ti*t.Samples:], t.Samples, maskRow, rs.nodata) {
						drawn = true
					}
					continue
				}
				for px := sx; px < ex; px, ti, o = px+1, ti+1, o+4 {
					if rs.drawPixel(t, mask, ti, out.Pix[o:o+4:o+4], pt) {
						drawn = true
					}
				}
			}
		}
	}
	if !drawn {
		return nil, nil
	}
	return out, nil
}

// copyRGB writes the pixels of src (samples per pixel, the first three red, green and blue) into
// dst as opaque NRGBA, as many as dst holds.
func copyRGB(dst, src []uint8, samples int) {
	for o, i := 0, 0; o+4 <= len(dst); o, i = o+4, i+samples {
		s := src[i : i+3 : i+3]
		d := dst[o : o+4 : o+4]
		d[0], d[1], d[2], d[3] = s[0], s[1], s[2], 255
	}
}

// copyRGBWhereAlpha is copyRGB for the pixels whose alpha sample is not zero; the others stay
// as they are (no data). It reports whether it wrote any.
func copyRGBWhereAlpha(dst, src []uint8, samples, alpha int) bool {
	wrote := false
	for o, i := 0, 0; o+4 <= len(dst); o, i = o+4, i+samples {
		s := src[i : i+samples : i+samples]
		if s[alpha] == 0 {
			continue
		}
		d := dst[o : o+4 : o+4]
		d[0], d[1], d[2], d[3] = s[0], s[1], s[2], 255
		wrote = true
	}
	return wrote
}

// rampFloat32 colours the pixels of dst through the ramp from the first of each pixel's samples
// (float32) in src, those with data only: not masked (mask, when not nil, is zero there), not
// NaN, not the nodata value. It reports whether it wrote any.
func (pt *painter) rampFloat32(dst, src []uint8, samples int, mask []uint8, nodata *float64) bool {
	wrote := false
	for o, i, x := 0, 0, 0; o+4 <= len(dst); o, i, x = o+4, i+4*samples, x+1 {
		if mask != nil && mask[x] == 0 {
			continue
		}
		v := float64(math.Float32frombits(binary.LittleEndian.Uint32(src[i:])))
		if math.IsNaN(v) || nodata != nil && v == *nodata {
			continue
		}
		col := pt.lut[int(pt.unit(0, v)*255+0.5)]
		d := dst[o : o+4 : o+4]
		d[0], d[1], d[2], d[3] = col[0], col[1], col[2], 255
		wrote = true
	}
	return wrote
}

// drawPixel colours d from pixel ti of a decoded tile, when it holds data.
func (rs *Raster) drawPixel(t *cog.Tile, mask *cog.Tile, ti int, d []uint8, pt *painter) bool {
	if mask != nil && !mask.Empty && mask.Data[ti] == 0 {
		return false
	}
	if rs.mode == modeRGB && t.DType == cog.Uint8 {
		s := t.Data[ti*t.Samples:]
		if rs.alpha >= 0 && s[rs.alpha] == 0 {
			return false
		}
		if nd := rs.nodata; nd != nil && float64(s[0]) == *nd && float64(s[1]) == *nd && float64(s[2]) == *nd {
			return false
		}
		d[0], d[1], d[2], d[3] = s[0], s[1], s[2], 255
		return true
	}
	if !rs.valid(t, mask, ti) {
		return false
	}
	if rs.mode == modeSingle {
		pt.set(d, float32(t.Float(ti, 0)), 0, 0)
	} else {
		pt.set(d, float32(t.Float(ti, 0)), float32(t.Float(ti, 1)), float32(t.Float(ti, 2)))
	}
	return true
}

func byteOf(v float32) uint8 {
	switch {
	case v <= 0:
		return 0
	case v >= 255:
		return 255
	}
	return uint8(v + 0.5)
}

// Range is the values of band b (0-based) that the stretch maps to the ends of the ramp.
func (rs *Raster) Range(b int, p Params) (lo, hi float64) {
	s := rs.bands[b]
	switch p.Stretch {
	case "percentile":
		lo, hi = s.p2, s.p98
		if *p.PMin != 2 {
			lo = percentile(s.sample, *p.PMin)
		}
		if *p.PMax != 98 {
			hi = percentile(s.sample, *p.PMax)
		}
		return lo, hi
	case "stddev":
		return s.mean - *p.Sigma*s.std, s.mean + *p.Sigma*s.std
	}
	return s.min, s.max
}

// terrarium encodes an elevation in metres as Mapzen's Terrarium: (R*256 + G + B/256) - 32768.
func terrarium(v float64) (uint8, uint8, uint8) {
	v = math.Max(0, math.Min(65535.99, v+32768))
	i := math.Floor(v)
	return uint8(int(i) >> 8), uint8(int(i) & 255), uint8((v - i) * 256)
}

// mapboxRGB encodes an elevation in metres as Mapbox Terrain-RGB: -10000 + (R*65536 + G*256 +
// B) * 0.1.
func mapboxRGB(v float64) (uint8, uint8, uint8) {
	c := int(math.Round((v + 10000) * 10))
	c = max(0, min(c, 1<<24-1))
	return uint8(c >> 16), uint8(c >> 8), uint8(c)
}

// Quicklook renders the raster's data extent with its longer side size pixels, from the
// coarsest overview at least that large (the finest when none is), sampled at each output
// pixel's centre. It answers nil for a raster without data.
func (rs *Raster) Quicklook(size int, p Params) (*image.NRGBA, error) {
	li := 0
	for i := len(rs.levels) - 1; i >= 0; i-- {
		if im := rs.levels[i].Image; max(im.Width, im.Height) >= size {
			li = i
			break
		}
	}
	ax, ay, bx, by := rs.dataRect(li)
	if bx <= ax || by <= ay {
		return nil, nil
	}
	if (bx-ax)*(by-ay) > maxQuicklookRead {
		return nil, fmt.Errorf("%w: no overview small enough for a quicklook (%dx%d pixels to read)", ErrUnservable, bx-ax, by-ay)
	}
	pf := float64(max(bx-ax, by-ay)) / float64(size)
	w := max(1, int(math.Round(float64(bx-ax)/pf)))
	h := max(1, int(math.Round(float64(by-ay)/pf)))
	win, any, err := rs.read(li, ax, ay, bx, by)
	if err != nil || !any {
		return nil, err
	}
	out := image.NewNRGBA(image.Rect(0, 0, w, h))
	var drawn bool
	pt := rs.painter(p)
	if pf >= 1 || rs.meta.Categorical {
		drawn = rs.nearest(win, out, float64(ax), float64(ay), pf, pt)
	} else {
		drawn = rs.bilinear(win, out, float64(ax), float64(ay), pf, pt)
	}
	if !drawn {
		return nil, nil
	}
	return out, nil
}

// maxQuicklookRead bounds the pixels a quicklook reads: an overview of up to twice the largest
// quicklook a side, with room for GDAL's padding.
const maxQuicklookRead = 1 << 21

// dataRect is the raster's data extent in level li's pixels, clipped to the level.
func (rs *Raster) dataRect(li int) (ax, ay, bx, by int64) {
	l := rs.levels[li]
	pixel := cog.PixelSize(l.Zoom)
	b := rs.extent
	ax = max(0, int64(math.Floor((b[0]+cog.WorldHalf)/pixel))-l.PX0)
	bx = min(int64(l.Image.Width), int64(math.Ceil((b[2]+cog.WorldHalf)/pixel))-l.PX0)
	ay = max(0, int64(math.Floor((cog.WorldHalf-b[3])/pixel))-l.PY0)
	by = min(int64(l.Image.Height), int64(math.Ceil((cog.WorldHalf-b[1])/pixel))-l.PY0)
	return ax, ay, bx, by
}

// MaxQuicklookSide bounds a quicklook's longer side.
const MaxQuicklookSide = 512
