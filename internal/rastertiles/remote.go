package rastertiles

import (
	"context"
	"math"
	"os"
	"path/filepath"

	"meridian/internal/apperr"
	"meridian/internal/cog"
	"meridian/internal/remoteraster"
)

// A registered raster (STAC Import mode register) is a GeoTIFF left on its remote server, in
// any CRS. Its tile or quicklook is GDAL's warp of what the picture shows into a small GeoTIFF on
// the web-mercator grid at the picture's zoom (gdalwarp picks the remote's overview), which is
// then opened and painted like a stored COG with the record's statistics, so colour ramps,
// stretches, nodata and encodings draw as they do for an ingested raster.

// remoteTile draws XYZ tile z/x/y of a registered raster: empty, without a read, below its
// coarsest zoom or beyond its extent.
func (s *Service) remoteTile(ctx context.Context, loc Located, z, x, y int, draw func(*Raster) ([]byte, error)) ([]byte, error) {
	if z < loc.Grid.MinZoom || !remoteCovers(loc, z, x, y) {
		return []byte{}, nil
	}
	t := cog.TileBounds(z, x, y)
	return s.warped(ctx, loc, remoteraster.Window{Box: t, Width: TileSize, Height: TileSize, Resampling: resamplingOf(loc)}, draw)
}

// remoteCovers tells whether tile z/x/y meets a registered raster's extent (known without a
// read of the remote).
func remoteCovers(loc Located, z, x, y int) bool {
	t, e := cog.TileBounds(z, x, y), remoteExtent(loc)
	return t[0] < e[2] && t[2] > e[0] && t[1] < e[3] && t[3] > e[1]
}

// remoteQuicklook draws a registered raster's quicklook of size pixels: its extent warped at the
// first zoom where it spans size pixels, on that zoom's pixel grid, then drawn as a stored
// raster's quicklook is from the overview of that size.
func (s *Service) remoteQuicklook(ctx context.Context, loc Located, size int, draw func(*Raster) ([]byte, error)) ([]byte, error) {
	e := remoteExtent(loc)
	if e[2] <= e[0] || e[3] <= e[1] {
		return []byte{}, nil
	}
	z := 0
	for z < MaxZoom && math.Max(e[2]-e[0], e[3]-e[1])/cog.PixelSize(z) < float64(size) {
		z++
	}
	px := cog.PixelSize(z)
	x0, x1 := math.Floor((e[0]+cog.WorldHalf)/px), math.Ceil((e[2]+cog.WorldHalf)/px)
	y0, y1 := math.Floor((cog.WorldHalf-e[3])/px), math.Ceil((cog.WorldHalf-e[1])/px)
	w := remoteraster.Window{Box: [4]float64{x0*px - cog.WorldHalf, cog.WorldHalf - y1*px, x1*px - cog.WorldHalf, cog.WorldHalf - y0*px},
		Width: int(x1 - x0), Height: int(y1 - y0), Resampling: resamplingOf(loc)}
	return s.warped(ctx, loc, w, draw)
}

// warped warps w of the registered raster into a temporary file and draws it within the bound of
// renders at once (the warp itself has the warper's bound).
func (s *Service) warped(ctx context.Context, loc Located, w remoteraster.Window, draw func(*Raster) ([]byte, error)) ([]byte, error) {
	if s.Warper == nil {
		return nil, apperr.Conflict("this server does not read registered rasters")
	}
	dir, err := os.MkdirTemp("", "meridian-warp-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "window.tif")
	if err := s.Warper.Warp(ctx, *loc.Remote, loc.HasNoData, w, out); err != nil {
		return nil, err
	}
	f, err := os.Open(out)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	release, err := s.slot(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	rs, err := Open(f, st.Size(), loc.Meta, nil)
	if err != nil {
		return nil, err
	}
	return draw(rs)
}

// remoteExtent is a registered raster's extent in EPSG:3857: the record's box in WGS 84, else
// the grid's.
func remoteExtent(loc Located) [4]float64 {
	if b := loc.Meta.Bounds; b != nil {
		w, s := cog.LonLatToMercator(b[0], b[1])
		e, n := cog.LonLatToMercator(b[2], b[3])
		return [4]float64{w, s, e, n}
	}
	if b := loc.Grid.Bounds; len(b) == 4 {
		return [4]float64{b[0], b[1], b[2], b[3]}
	}
	return [4]float64{}
}

// remoteBounds is a registered raster's extent in WGS 84 (the tile token's bounds).
func remoteBounds(loc Located) [4]float64 {
	if b := loc.Meta.Bounds; b != nil {
		return *b
	}
	e := remoteExtent(loc)
	w, s := cog.MercatorToLonLat(e[0], e[1])
	east, n := cog.MercatorToLonLat(e[2], e[3])
	return [4]float64{w, s, east, n}
}

// resamplingOf is how a registered raster is warped: classes by nearest neighbour, as ingest
// resamples them, everything else bilinear.
func resamplingOf(loc Located) string {
	if loc.Meta.Categorical {
		return "nearest"
	}
	return "bilinear"
}
