package cog

import (
	"fmt"
	"math"
)

// The GoogleMapsCompatible tile matrix set (OGC 17-083r2, Annex D): EPSG:3857, 256-pixel tiles,
// zoom 0 one tile over the whole world.
const (
	WebMercatorEPSG = 3857
	WorldHalf       = 20037508.342789244 // pi * 6378137, half the world's width in metres
	worldHalf       = WorldHalf
	worldSize       = 2 * worldHalf
)

// PixelSize is the width of a pixel of zoom z in metres.
func PixelSize(z int) float64 { return worldSize / float64(int64(256)<<z) }

// LonLatToMercator converts WGS 84 degrees to EPSG:3857 metres (latitudes clamped to the
// grid's).
func LonLatToMercator(lon, lat float64) (x, y float64) {
	lat = math.Max(-85.05112878, math.Min(85.05112878, lat))
	x = lon / 180 * worldHalf
	y = math.Log(math.Tan((90+lat)*math.Pi/360)) * 6378137
	return x, y
}

// Level is one directory of a COG on the web-mercator grid: its zoom and where its top-left
// pixel lies in the global pixel grid of that zoom (256 x 2^zoom pixels a side). GDAL aligns the
// full resolution's tiles with the XYZ tiles; an overview's are aligned only when the file was
// written with ALIGNED_LEVELS, else they are offset by a fraction of a tile, and one XYZ tile
// then spans up to four internal tiles.
type Level struct {
	Image    *Image
	Zoom     int
	PX0, PY0 int64
}

// Aligned tells whether the level's tiles are XYZ tiles.
func (l Level) Aligned() bool { return l.PX0%256 == 0 && l.PY0%256 == 0 }

// ErrNotOnGrid tells a file that is not laid out on the GoogleMapsCompatible grid.
var ErrNotOnGrid = fmt.Errorf("%w: not on the GoogleMapsCompatible (web mercator) tile grid", ErrFormat)

// Pyramid maps every directory to its XYZ zoom, finest first. It checks what lets XYZ tiles be
// cut from internal tiles without resampling: EPSG:3857, 256-pixel tiles, a pixel size of a
// web-mercator zoom for the full resolution and each overview, and an origin on a pixel corner of
// that zoom. A file whose GDAL_METADATA names another tiling scheme, or a zoom that disagrees, is
// refused too.
func (f *File) Pyramid() ([]Level, error) {
	g := f.Geo
	if g.EPSG != WebMercatorEPSG || !g.Valid {
		return nil, fmt.Errorf("%w (EPSG:%d)", ErrNotOnGrid, g.EPSG)
	}
	if f.TilingScheme != "" && f.TilingScheme != "GoogleMapsCompatible" {
		return nil, fmt.Errorf("%w (tiling scheme %s)", ErrNotOnGrid, f.TilingScheme)
	}
	full := f.Images[0]
	out := make([]Level, 0, len(f.Images))
	for i, im := range f.Images {
		if im.TileWidth != 256 || im.TileHeight != 256 {
			return nil, fmt.Errorf("%w (tiles of %dx%d)", ErrNotOnGrid, im.TileWidth, im.TileHeight)
		}
		// An overview's pixel is the full resolution's scaled by the ratio of their widths.
		res := g.ResX * float64(full.Width) / float64(im.Width)
		resY := g.ResY * float64(full.Height) / float64(im.Height)
		zf := math.Log2(worldSize / (256 * res))
		z := int(math.Round(zf))
		if z < 0 || z > 30 || math.Abs(zf-float64(z)) > 1e-6 || math.Abs(resY-res)/res > 1e-6 {
			return nil, fmt.Errorf("%w (directory %d: pixel size %g x %g is no zoom's)", ErrNotOnGrid, i, res, resY)
		}
		pixel := worldSize / float64(int64(256)<<z)
		xf := (g.OriginX + worldHalf) / pixel
		yf := (worldHalf - g.OriginY) / pixel
		x0, y0 := math.Round(xf), math.Round(yf)
		if math.Abs(xf-x0) > 1e-3 || math.Abs(yf-y0) > 1e-3 {
			return nil, fmt.Errorf("%w (directory %d: origin off the pixel corners of zoom %d)", ErrNotOnGrid, i, z)
		}
		n := float64(int64(256) << z)
		if x0 < 0 || y0 < 0 || x0+float64(im.Width) > n || y0+float64(im.Height) > n {
			return nil, fmt.Errorf("%w (directory %d: pixels beyond the world at zoom %d)", ErrNotOnGrid, i, z)
		}
		if i == 0 && f.ZoomLevel >= 0 && f.ZoomLevel != z {
			return nil, fmt.Errorf("%w (ZOOM_LEVEL %d, pixel size of zoom %d)", ErrNotOnGrid, f.ZoomLevel, z)
		}
		if i > 0 && z >= out[i-1].Zoom {
			return nil, fmt.Errorf("%w (directory %d: zoom %d after zoom %d)", ErrNotOnGrid, i, z, out[i-1].Zoom)
		}
		out = append(out, Level{Image: im, Zoom: z, PX0: int64(x0), PY0: int64(y0)})
	}
	return out, nil
}

// Bounds are the full resolution's extent in EPSG:3857 metres: west, south, east, north.
func (f *File) Bounds() [4]float64 {
	g, im := f.Geo, f.Images[0]
	return [4]float64{g.OriginX, g.OriginY - g.ResY*float64(im.Height), g.OriginX + g.ResX*float64(im.Width), g.OriginY}
}

// TileBounds is the extent of XYZ tile z/x/y in EPSG:3857 metres: west, south, east, north.
func TileBounds(z, x, y int) [4]float64 {
	span := worldSize / float64(int64(1)<<z)
	return [4]float64{-worldHalf + float64(x)*span, worldHalf - float64(y+1)*span, -worldHalf + float64(x+1)*span, worldHalf - float64(y)*span}
}

// MercatorToLonLat converts EPSG:3857 metres to WGS 84 degrees.
func MercatorToLonLat(x, y float64) (lon, lat float64) {
	lon = x / worldHalf * 180
	lat = math.Atan(math.Sinh(y/6378137)) * 180 / math.Pi
	return lon, lat
}
