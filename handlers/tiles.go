package handlers

// Operations of the Tiles tag.

import (
	"cmp"
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"meridian/gen"
	"meridian/internal/auth"
	"meridian/internal/cql2"
	"meridian/internal/rastertiles"
	"meridian/internal/tiles"
	"meridian/internal/web"
)

// tileSignature is the capability of a signed tile template: a valid, unexpired signature of its
// scope authorizes the tiles of that scope, whatever else the request carries (spec section 5,
// rule 4b). Anything less is no capability, and the request is judged by its credential.
func (s *Server) tileSignature(c echo.Context) (auth.Principal, bool, error) {
	q := c.QueryParams()
	sig, scope := q.Get("sig"), q.Get("scope")
	exp, err := strconv.ParseInt(q.Get("exp"), 10, 64)
	if sig == "" || scope == "" || err != nil || !s.tiles.Signer.Valid(scope, sig, exp, time.Now()) {
		return auth.Principal{}, false, nil
	}
	return auth.Principal{Via: auth.ViaTileSignature, Scope: scope, Exp: exp}, true, nil
}

// tileRequest is the part of a tile request both tile operations share.
func tileRequest(path string, z, x, y int, cols, filter, ifNoneMatch *string, limits cql2.Limits) (tiles.Request, error) {
	r := tiles.Request{Path: path, Z: z, X: x, Y: y, Cols: cols, IfNoneMatch: val(ifNoneMatch)}
	if filter != nil {
		f, err := cql2.ParseFilterWithin("cql2-text", *filter, 0, false, limits)
		if err != nil {
			return r, err
		}
		r.Filter, r.FilterText = f, *filter
	}
	return r, nil
}

// tileResponse writes a tile, an empty tile (204) or 304, with its cache headers; mediaType is
// the body's (vector tiles when empty).
type tileResponse struct {
	tiles.Tile
	mediaType string
}

func (t tileResponse) write(w http.ResponseWriter) error {
	w.Header().Set("ETag", t.ETag)
	w.Header().Set("Cache-Control", t.CacheControl)
	switch {
	case t.NotModified:
		w.WriteHeader(http.StatusNotModified)
		return nil
	case len(t.Body) == 0:
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	w.Header().Set("Content-Type", cmp.Or(t.mediaType, "application/vnd.mapbox-vector-tile"))
	w.Header().Set("Content-Length", strconv.Itoa(len(t.Body)))
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(t.Body)
	return err
}

func (t tileResponse) VisitTileResponse(w http.ResponseWriter) error        { return t.write(w) }
func (t tileResponse) VisitClusterTileResponse(w http.ResponseWriter) error { return t.write(w) }
func (t tileResponse) VisitRasterTileProxyResponse(w http.ResponseWriter) error {
	return t.write(w)
}

// Tile: Tile (GET /tiles/{table_path}/{z}/{x}/{y}.pbf).
func (s *Server) Tile(ctx context.Context, request gen.TileRequestObject) (gen.TileResponseObject, error) {
	p := request.Params
	r, err := tileRequest(request.TablePath, request.Z, request.X, request.Y, p.Cols, p.Filter, p.IfNoneMatch, s.filterLimits())
	if err != nil {
		return nil, err
	}
	t, err := s.tiles.Tile(ctx, auth.From(ctx), r, time.Now())
	if err != nil {
		return nil, err
	}
	return tileResponse{Tile: t}, nil
}

// ClusterTile: Cluster Tile (GET /tiles/clusters/{table_path}/{z}/{x}/{y}.pbf).
func (s *Server) ClusterTile(ctx context.Context, request gen.ClusterTileRequestObject) (gen.ClusterTileResponseObject, error) {
	p := request.Params
	r, err := tileRequest(request.TablePath, request.Z, request.X, request.Y, p.Cols, p.Filter, p.IfNoneMatch, s.filterLimits())
	if err != nil {
		return nil, err
	}
	r.Cluster = &tiles.Cluster{Radius: 48, MaxZoom: 14}
	if p.ClusterRadius != nil {
		r.Cluster.Radius = *p.ClusterRadius
	}
	if p.ClusterMaxZoom != nil {
		r.Cluster.MaxZoom = *p.ClusterMaxZoom
	}
	t, err := s.tiles.Tile(ctx, auth.From(ctx), r, time.Now())
	if err != nil {
		return nil, err
	}
	return tileResponse{Tile: t}, nil
}

// RasterTileProxy: Raster Tile Proxy (GET /tiles/raster-proxy/{dataset_id}/{z}/{x}/{y}.{fmt}).
// Signed like Tile; rendered from the dataset's COG and kept in the tile cache by its version.
func (s *Server) RasterTileProxy(ctx context.Context, request gen.RasterTileProxyRequestObject) (gen.RasterTileProxyResponseObject, error) {
	p := request.Params
	r := rastertiles.TileRequest{ID: request.DatasetId, Z: request.Z, X: request.X, Y: request.Y, Format: string(request.ImageFormat),
		IfNoneMatch: val(p.IfNoneMatch), Params: rastertiles.Params{Colormap: string(val(p.ColormapName)),
			Stretch: string(val(p.Stretch)), Encoding: string(val(p.Encoding)),
			PMin: float64p(p.Pmin), PMax: float64p(p.Pmax), Sigma: float64p(p.Sigma)}}
	t, err := s.rasters.Tile(ctx, auth.From(ctx), r, time.Now())
	if err != nil {
		return nil, err
	}
	return tileResponse{Tile: t, mediaType: rastertiles.MediaTypes[r.Format]}, nil
}

func float64p(v *float32) *float64 {
	if v == nil {
		return nil
	}
	f := float64(*v)
	return &f
}

// GetTileToken: Get Tile Token (GET /tiles/token/{dataset_id}/).
func (s *Server) GetTileToken(ctx context.Context, request gen.GetTileTokenRequestObject) (gen.GetTileTokenResponseObject, error) {
	format := string(cmp.Or(val(request.Params.Format), gen.GetTileTokenParamsFormatPng))
	t, rt, err := s.rasters.Token(ctx, auth.From(ctx), request.DatasetId, format, s.base(ctx), time.Now())
	if err != nil {
		return nil, err
	}
	var out gen.TileToken
	if rt != nil {
		err = out.FromTileRasterToken(gen.TileRasterToken{Sig: t.Sig, Exp: t.Exp, Scope: t.Scope, ExpiresIn: int(t.ExpiresIn),
			TileUrl: rt.TileURL, Bounds: rt.Bounds[:], Minzoom: rt.MinZoom, Maxzoom: rt.MaxZoom, TileSize: rt.TileSize,
			Format: gen.TileRasterTokenFormat(rt.Format)})
	} else {
		err = out.FromTileVectorToken(gen.TileVectorToken{Sig: t.Sig, Exp: t.Exp, Scope: t.Scope, ExpiresIn: int(t.ExpiresIn)})
	}
	return gen.GetTileToken200JSONResponse(out), err
}

// GetTileTokensBatch: Get Tile Tokens Batch (POST /tiles/tokens/). Every id is a key of tokens:
// its token, or why it has none (the map client reads the reason there); errors repeats those.
func (s *Server) GetTileTokensBatch(ctx context.Context, request gen.GetTileTokensBatchRequestObject) (gen.GetTileTokensBatchResponseObject, error) {
	issued, err := s.rasters.Tokens(ctx, auth.From(ctx), request.Body.DatasetIds, s.base(ctx), time.Now())
	if err != nil {
		return nil, err
	}
	out := gen.GetTileTokensBatch200JSONResponse{Tokens: map[string]gen.TileTokenBatchResponse_Tokens_AdditionalProperties{},
		Errors: map[string]gen.TileTokenError{}}
	for id, is := range issued {
		var tok gen.TileTokenBatchResponse_Tokens_AdditionalProperties
		if is.Err != nil {
			status := web.StatusOf(is.Err)
			out.Errors[id.String()] = gen.TileTokenError{Status: status, Detail: is.Err.Detail}
			err = tok.FromTileTokenFailure(gen.TileTokenFailure{Error: is.Err.Detail, Status: status})
		} else if rt := is.Raster; rt != nil {
			bounds := []float32{float32(rt.Bounds[0]), float32(rt.Bounds[1]), float32(rt.Bounds[2]), float32(rt.Bounds[3])}
			err = tok.FromRasterTileToken(gen.RasterTileToken{Kind: gen.RasterTileTokenKindRaster, Sig: rt.Sig, Exp: int(rt.Exp),
				Scope: rt.Scope, ExpiresIn: int(rt.ExpiresIn), TileUrl: rt.TileURL, Bounds: &bounds, Minzoom: rt.MinZoom,
				Maxzoom: rt.MaxZoom, TileSize: rt.TileSize, Format: rt.Format})
		} else {
			err = tok.FromVectorTileToken(gen.VectorTileToken{Kind: gen.VectorTileTokenKindVector, Sig: is.Token.Sig,
				Exp: int(is.Token.Exp), Scope: is.Token.Scope, ExpiresIn: int(is.Token.ExpiresIn)})
		}
		if err != nil {
			return nil, err
		}
		out.Tokens[id.String()] = tok
	}
	return out, nil
}
