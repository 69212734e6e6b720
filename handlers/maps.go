package handlers

// Operations of the Maps tag.

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"path"
	"strings"
	"time"

	"meridian/gen"
	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/internal/catalog"
	"meridian/internal/maps"
)

// CreateLayer: Create Layer (POST /layers/).
func (s *Server) CreateLayer(ctx context.Context, request gen.CreateLayerRequestObject) (gen.CreateLayerResponseObject, error) {
	b := request.Body
	nd := catalog.NewDataset{Title: b.Title, Summary: b.Summary, GeometryType: b.GeometryType}
	for _, c := range val(b.Columns) {
		nd.Columns = append(nd.Columns, catalog.Column{Name: c.Name, Type: c.Type})
	}
	d, layer, err := s.maps.CreateLayer(ctx, auth.From(ctx), nd, b.MapId)
	if err != nil {
		return nil, err
	}
	out := gen.CreateLayer201JSONResponse{Id: d.Entry.ID, Title: d.Entry.Title, TableName: d.Entry.TableName, GeometryType: val(d.Entry.GeometryType),
		FeatureCount: 0, Visibility: d.Entry.Visibility, CreatedAt: d.Entry.CreatedAt, Layer: decoded[gen.MapLayerResponse](layer)}
	return out, nil
}

// AddColumn: Add Column (POST /layers/{dataset_id}/columns/).
func (s *Server) AddColumn(ctx context.Context, request gen.AddColumnRequestObject) (gen.AddColumnResponseObject, error) {
	r, err := s.catalog.AddColumn(ctx, auth.From(ctx), request.DatasetId, request.Body.Column.Name, request.Body.Column.Type)
	if err != nil {
		return nil, err
	}
	return gen.AddColumn201JSONResponse{Columns: r.Columns}, nil
}

// DropColumn: Drop Column (DELETE /layers/{dataset_id}/columns/{column_name}).
func (s *Server) DropColumn(ctx context.Context, request gen.DropColumnRequestObject) (gen.DropColumnResponseObject, error) {
	r, err := s.catalog.DropColumn(ctx, auth.From(ctx), request.DatasetId, request.ColumnName, val(request.Params.Force))
	if err != nil {
		return nil, err
	}
	return gen.DropColumn200JSONResponse{Columns: r.Columns}, nil
}

// RenameColumn: Rename Column (PATCH /layers/{dataset_id}/columns/{column_name}/name).
func (s *Server) RenameColumn(ctx context.Context, request gen.RenameColumnRequestObject) (gen.RenameColumnResponseObject, error) {
	r, err := s.catalog.RenameColumn(ctx, auth.From(ctx), request.DatasetId, request.ColumnName, request.Body.NewName)
	if err != nil {
		return nil, err
	}
	cols, err := merged[[]gen.ColumnInfo](r.Columns)
	return gen.RenameColumn200JSONResponse{DatasetId: request.DatasetId, Columns: cols, CurrentVersion: int(r.Version),
		UpdatedReferences: &r.UpdatedReferences}, err
}

// ColumnReferences: Column References (GET /layers/{dataset_id}/columns/{column_name}/references).
func (s *Server) ColumnReferences(ctx context.Context, request gen.ColumnReferencesRequestObject) (gen.ColumnReferencesResponseObject, error) {
	n, err := s.catalog.ColumnReferences(ctx, auth.From(ctx), request.DatasetId, request.ColumnName)
	if err != nil {
		return nil, err
	}
	return gen.ColumnReferences200JSONResponse{MapCount: n}, nil
}

// AlterColumnType: Alter Column Type (PATCH /layers/{dataset_id}/columns/{column_name}/type).
func (s *Server) AlterColumnType(ctx context.Context, request gen.AlterColumnTypeRequestObject) (gen.AlterColumnTypeResponseObject, error) {
	using := string(val(request.Body.Using))
	r, err := s.catalog.RetypeColumn(ctx, auth.From(ctx), request.DatasetId, request.ColumnName, request.Body.NewType, using == "null_on_error")
	if err != nil {
		return nil, err
	}
	return gen.AlterColumnType200JSONResponse{Columns: r.Columns, NulledValues: &r.NulledValues}, nil
}

// ListMaps: List Maps (GET /maps/).
func (s *Server) ListMaps(ctx context.Context, request gen.ListMapsRequestObject) (gen.ListMapsResponseObject, error) {
	p := request.Params
	skip, limit := page(p.Skip, p.Limit, 50, 200)
	f := maps.Filter{Q: cmp.Or(p.Q, p.Search), Visibility: (*string)(p.Visibility), Mine: val(p.Mine), Sort: "-updated_at", Skip: skip, Limit: limit}
	switch {
	case p.Sort != nil:
		f.Sort = string(*p.Sort)
	case p.SortBy != nil || p.SortDir != nil:
		f.Sort = string(cmp.Or(val(p.SortBy), "updated_at"))
		if cmp.Or(val(p.SortDir), "desc") == "desc" {
			f.Sort = "-" + f.Sort
		}
	}
	list, total, err := s.maps.List(ctx, auth.From(ctx), f)
	if err != nil {
		return nil, err
	}
	return gen.ListMaps200JSONResponse(mapListOut(list, total)), nil
}

// CreateMap: Create Map (POST /maps/).
func (s *Server) CreateMap(ctx context.Context, request gen.CreateMapRequestObject) (gen.CreateMapResponseObject, error) {
	in, err := merged[maps.Settings](request.Body)
	if err != nil {
		return nil, err
	}
	doc, err := s.maps.Create(ctx, auth.From(ctx), in)
	return mapDoc{status: http.StatusCreated, body: doc}, err
}

// ListMapIcons: List Map Icons (GET /maps/icons).
func (s *Server) ListMapIcons(ctx context.Context, request gen.ListMapIconsRequestObject) (gen.ListMapIconsResponseObject, error) {
	skip, limit := page(request.Params.Skip, request.Params.Limit, 100, 500)
	list, _, err := s.maps.Icons(ctx, auth.From(ctx), request.Params.Q, skip, limit)
	if err != nil {
		return nil, err
	}
	out := gen.ListMapIcons200JSONResponse{Icons: make([]gen.MapIconResponse, len(list))}
	for i, ic := range list {
		out.Icons[i] = iconOut(ic)
	}
	return out, nil
}

// UploadMapIcon: Upload Map Icon (POST /maps/icons).
func (s *Server) UploadMapIcon(ctx context.Context, request gen.UploadMapIconRequestObject) (gen.UploadMapIconResponseObject, error) {
	name, data, err := iconForm(request.Body)
	if err != nil {
		return nil, err
	}
	ic, err := s.maps.UploadIcon(ctx, auth.From(ctx), name, data)
	if err != nil {
		return nil, err
	}
	return gen.UploadMapIcon201JSONResponse(iconOut(ic)), nil
}

// GetMapIconAsset: Get Map Icon Asset (GET /maps/icons/{icon_id}/asset).
func (s *Server) GetMapIconAsset(ctx context.Context, request gen.GetMapIconAssetRequestObject) (gen.GetMapIconAssetResponseObject, error) {
	mediaType, data, err := s.maps.IconAsset(ctx, request.IconId)
	return binary{mediaType: mediaType, body: data, cache: "public, max-age=31536000, immutable",
		etag: `"` + request.IconId.String() + `"`}, err
}

// DeleteMapIcon: Delete Map Icon (DELETE /maps/icons/{icon_id}), an extension beyond
// operations.tsv: its uploader or an admin.
func (s *Server) DeleteMapIcon(ctx context.Context, request gen.DeleteMapIconRequestObject) (gen.DeleteMapIconResponseObject, error) {
	if err := s.maps.DeleteIcon(ctx, auth.From(ctx), request.IconId); err != nil {
		return nil, err
	}
	return gen.DeleteMapIcon204Response{}, nil
}

// ImportMapStyle: Import Map Style (POST /maps/import).
func (s *Server) ImportMapStyle(ctx context.Context, request gen.ImportMapStyleRequestObject) (gen.ImportMapStyleResponseObject, error) {
	st, err := merged[maps.Style](request.Body)
	if err != nil {
		return nil, err
	}
	doc, sum, err := s.maps.ImportStyle(ctx, auth.From(ctx), st, request.Params.Name, (*string)(request.Params.Visibility))
	if err != nil {
		return nil, err
	}
	summary, err := json.Marshal(sum)
	body := append(append(append([]byte(`{"map":`), doc...), `,"summary":`...), summary...)
	return mapDoc{status: http.StatusCreated, body: append(body, '}')}, err
}

// GetSharedMap: Get Shared Map (GET /maps/shared/{token}).
func (s *Server) GetSharedMap(ctx context.Context, request gen.GetSharedMapRequestObject) (gen.GetSharedMapResponseObject, error) {
	m, err := s.maps.SharedMap(ctx, request.Token, time.Now(), s.tiles)
	if err != nil {
		return nil, err
	}
	out, err := merged[gen.GetSharedMap200JSONResponse](m)
	return out, err
}

// SpriteIndex: Sprite index (GET /maps/sprites/service.json).
func (s *Server) SpriteIndex(ctx context.Context, request gen.SpriteIndexRequestObject) (gen.SpriteIndexResponseObject, error) {
	sp, err := s.maps.Sprite(ctx)
	if err != nil {
		return nil, err
	}
	out := gen.SpriteIndex200JSONResponse{}
	for name, e := range sp.Index {
		out[name] = gen.MapSpriteIndexEntry{Width: e.Width, Height: e.Height, X: e.X, Y: e.Y, PixelRatio: float64(e.PixelRatio)}
	}
	return out, nil
}

// SpriteImage: Sprite image (GET /maps/sprites/service.png).
func (s *Server) SpriteImage(ctx context.Context, request gen.SpriteImageRequestObject) (gen.SpriteImageResponseObject, error) {
	sp, err := s.maps.Sprite(ctx)
	return binary{mediaType: "image/png", body: sp.PNG, cache: "public, no-cache", etag: sp.ETag}, err
}

// DeleteMap: Delete Map (DELETE /maps/{map_id}).
func (s *Server) DeleteMap(ctx context.Context, request gen.DeleteMapRequestObject) (gen.DeleteMapResponseObject, error) {
	if err := s.maps.Delete(ctx, auth.From(ctx), request.MapId); err != nil {
		return nil, err
	}
	return gen.DeleteMap204Response{}, nil
}

// GetMap: Get Map (GET /maps/{map_id}).
func (s *Server) GetMap(ctx context.Context, request gen.GetMapRequestObject) (gen.GetMapResponseObject, error) {
	doc, err := s.maps.Get(ctx, auth.From(ctx), request.MapId)
	return mapDoc{status: http.StatusOK, body: doc}, err
}

// UpdateMap: Update Map (PUT /maps/{map_id}).
func (s *Server) UpdateMap(ctx context.Context, request gen.UpdateMapRequestObject) (gen.UpdateMapResponseObject, error) {
	in, err := merged[maps.Settings](request.Body)
	if err != nil {
		return nil, err
	}
	doc, err := s.maps.Update(ctx, auth.From(ctx), request.MapId, in)
	return mapDoc{status: http.StatusOK, body: doc}, err
}

// GetMapAccess: Get Map Access (GET /maps/{map_id}/access/).
func (s *Server) GetMapAccess(ctx context.Context, request gen.GetMapAccessRequestObject) (gen.GetMapAccessResponseObject, error) {
	a, err := s.maps.Access(ctx, auth.From(ctx), request.MapId)
	if err != nil {
		return nil, err
	}
	return gen.GetMapAccess200JSONResponse{CanView: a.View, CanEdit: a.Edit, CanShare: a.Share,
		Reason: gen.MapAccessResponseReason(a.Reason)}, nil
}

// DuplicateMap: Duplicate Map (POST /maps/{map_id}/duplicate/).
func (s *Server) DuplicateMap(ctx context.Context, request gen.DuplicateMapRequestObject) (gen.DuplicateMapResponseObject, error) {
	doc, err := s.maps.Duplicate(ctx, auth.From(ctx), request.MapId)
	return mapDoc{status: http.StatusOK, body: doc}, err
}

// GetMapHistory: Get Map History (GET /maps/{map_id}/history).
func (s *Server) GetMapHistory(ctx context.Context, request gen.GetMapHistoryRequestObject) (gen.GetMapHistoryResponseObject, error) {
	skip, limit := page(request.Params.Skip, request.Params.Limit, 50, 100)
	events, total, err := s.maps.History(ctx, auth.From(ctx), request.MapId, skip, limit)
	if err != nil {
		return nil, err
	}
	out := gen.GetMapHistory200JSONResponse{Events: make([]gen.MapHistoryEventResponse, len(events)), Total: total, Skip: skip, Limit: limit}
	for i, e := range events {
		details := decoded[map[string]any](e.Details)
		out.Events[i] = gen.MapHistoryEventResponse{Id: e.ID, MapId: e.MapID, ActorId: e.ActorID, ActorUsername: e.ActorUsername,
			TargetType: e.TargetType, TargetId: e.TargetID, TargetName: e.TargetName, Action: e.Action, Summary: e.Summary,
			Details: details, CreatedAt: e.CreatedAt}
	}
	return out, nil
}

// PatchMapLayers: Patch Map Layers (PATCH /maps/{map_id}/layers).
func (s *Server) PatchMapLayers(ctx context.Context, request gen.PatchMapLayersRequestObject) (gen.PatchMapLayersResponseObject, error) {
	d, err := merged[maps.LayerDiff](request.Body)
	if err != nil {
		return nil, err
	}
	doc, err := s.maps.PatchLayers(ctx, auth.From(ctx), request.MapId, d)
	return mapDoc{status: http.StatusOK, body: doc}, err
}

// AddLayer: Add Layer (POST /maps/{map_id}/layers).
func (s *Server) AddLayer(ctx context.Context, request gen.AddLayerRequestObject) (gen.AddLayerResponseObject, error) {
	in, err := merged[maps.LayerInput](request.Body)
	if err != nil {
		return nil, err
	}
	layer, err := s.maps.AddLayer(ctx, auth.From(ctx), request.MapId, in)
	return mapDoc{status: http.StatusCreated, body: layer}, err
}

// BulkDeleteLayers: Bulk Delete Layers (POST /maps/{map_id}/layers/bulk-delete).
func (s *Server) BulkDeleteLayers(ctx context.Context, request gen.BulkDeleteLayersRequestObject) (gen.BulkDeleteLayersResponseObject, error) {
	deleted, missing, err := s.maps.BulkDeleteLayers(ctx, auth.From(ctx), request.MapId, request.Body.LayerIds)
	if err != nil {
		return nil, err
	}
	out := gen.BulkDeleteLayers200JSONResponse{Deleted: make([]string, len(deleted)), Failed: make([]gen.BulkDeleteLayersFailure, len(missing))}
	for i, id := range deleted {
		out.Deleted[i] = id.String()
	}
	for i, id := range missing {
		out.Failed[i] = gen.BulkDeleteLayersFailure{Id: id.String(), Reason: "the map has no such layer"}
	}
	return out, nil
}

// RemoveLayer: Remove Layer (DELETE /maps/{map_id}/layers/{layer_id}).
func (s *Server) RemoveLayer(ctx context.Context, request gen.RemoveLayerRequestObject) (gen.RemoveLayerResponseObject, error) {
	if err := s.maps.RemoveLayer(ctx, auth.From(ctx), request.MapId, request.LayerId); err != nil {
		return nil, err
	}
	return gen.RemoveLayer204Response{}, nil
}

// GetOGImage: Get OG Image (GET /maps/{map_id}/og-image/).
func (s *Server) GetOGImage(ctx context.Context, request gen.GetOGImageRequestObject) (gen.GetOGImageResponseObject, error) {
	pic, err := s.maps.Image(ctx, auth.From(ctx), request.MapId, maps.ImageOG)
	return pictureOut(pic), err
}

// UploadOGImage: Upload OG Image (PUT /maps/{map_id}/og-image/).
func (s *Server) UploadOGImage(ctx context.Context, request gen.UploadOGImageRequestObject) (gen.UploadOGImageResponseObject, error) {
	if err := s.maps.PutImage(ctx, auth.From(ctx), request.MapId, maps.ImageOG, request.Body.DataUri); err != nil {
		return nil, err
	}
	return gen.UploadOGImage204Response{}, nil
}

// RevokeMapShare: Revoke Map Share (DELETE /maps/{map_id}/share/).
func (s *Server) RevokeMapShare(ctx context.Context, request gen.RevokeMapShareRequestObject) (gen.RevokeMapShareResponseObject, error) {
	if err := s.maps.RevokeShare(ctx, auth.From(ctx), request.MapId); err != nil {
		return nil, err
	}
	return gen.RevokeMapShare204Response{}, nil
}

// GetMapShareToken: Get Map Share Token (GET /maps/{map_id}/share/).
func (s *Server) GetMapShareToken(ctx context.Context, request gen.GetMapShareTokenRequestObject) (gen.GetMapShareTokenResponseObject, error) {
	sh, err := s.maps.GetShare(ctx, auth.From(ctx), request.MapId, time.Now())
	if err != nil || sh == nil {
		return shareLink{}, err
	}
	out := shareOut(*sh)
	return shareLink{&out}, nil
}

// shareLink is the map's active share link, or JSON null when it has none (clients test for
// null, not for a 404).
type shareLink struct{ link *gen.ShareToken }

func (l shareLink) VisitGetMapShareTokenResponse(w http.ResponseWriter) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	return json.NewEncoder(w).Encode(l.link)
}

// UpdateMapShareToken: Update Map Share Token (PATCH /maps/{map_id}/share/).
func (s *Server) UpdateMapShareToken(ctx context.Context, request gen.UpdateMapShareTokenRequestObject) (gen.UpdateMapShareTokenResponseObject, error) {
	sh, err := s.maps.UpdateShare(ctx, auth.From(ctx), request.MapId, maps.Expiry{At: request.Body.ExpiresAt,
		Days: (*int)(request.Body.ExpiresInDays)}, time.Now())
	if err != nil {
		return nil, err
	}
	return gen.UpdateMapShareToken200JSONResponse(shareOut(sh)), nil
}

// ShareMap: Share Map (POST /maps/{map_id}/share/).
func (s *Server) ShareMap(ctx context.Context, request gen.ShareMapRequestObject) (gen.ShareMapResponseObject, error) {
	var e maps.Expiry
	if b := request.Body; b != nil {
		e = maps.Expiry{At: b.ExpiresAt, Days: (*int)(b.ExpiresInDays)}
	}
	sh, err := s.maps.Share(ctx, auth.From(ctx), request.MapId, e, time.Now())
	if err != nil {
		return nil, err
	}
	return gen.ShareMap200JSONResponse{Token: sh.Token, ShareUrl: &sh.URL, ExpiresAt: sh.ExpiresAt, IsActive: &sh.Active}, nil
}

// ExportMapStyle: Export Map Style (GET /maps/{map_id}/style.json).
func (s *Server) ExportMapStyle(ctx context.Context, request gen.ExportMapStyleRequestObject) (gen.ExportMapStyleResponseObject, error) {
	style, err := s.maps.ExportStyle(ctx, auth.From(ctx), request.MapId, time.Now(), s.tiles)
	if err != nil {
		return nil, err
	}
	out, err := merged[gen.ExportMapStyle200JSONResponse](style)
	return out, err
}

// GetThumbnail: Get Thumbnail (GET /maps/{map_id}/thumbnail/).
func (s *Server) GetThumbnail(ctx context.Context, request gen.GetThumbnailRequestObject) (gen.GetThumbnailResponseObject, error) {
	pic, err := s.maps.Image(ctx, auth.From(ctx), request.MapId, maps.ImageThumbnail)
	return pictureOut(pic), err
}

// UploadThumbnail: Upload Thumbnail (PUT /maps/{map_id}/thumbnail/).
func (s *Server) UploadThumbnail(ctx context.Context, request gen.UploadThumbnailRequestObject) (gen.UploadThumbnailResponseObject, error) {
	if err := s.maps.PutImage(ctx, auth.From(ctx), request.MapId, maps.ImageThumbnail, request.Body.DataUri); err != nil {
		return nil, err
	}
	return gen.UploadThumbnail204Response{}, nil
}

// VisibilityCheck: Visibility Check (GET /maps/{map_id}/visibility-check/).
func (s *Server) VisibilityCheck(ctx context.Context, request gen.VisibilityCheckRequestObject) (gen.VisibilityCheckResponseObject, error) {
	names, err := s.maps.VisibilityCheck(ctx, auth.From(ctx), request.MapId, (*string)(request.Params.TargetVisibility))
	if err != nil {
		return nil, err
	}
	return gen.VisibilityCheck200JSONResponse{NonPublicDatasets: names, HasNonPublic: len(names) > 0}, nil
}

// mapDoc is a map document (or one of its layers) as internal/maps built it.
type mapDoc struct {
	status int
	body   []byte
}

func (m mapDoc) write(w http.ResponseWriter) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(m.status)
	_, err := w.Write(m.body)
	return err
}

func (m mapDoc) VisitCreateMapResponse(w http.ResponseWriter) error      { return m.write(w) }
func (m mapDoc) VisitGetMapResponse(w http.ResponseWriter) error         { return m.write(w) }
func (m mapDoc) VisitUpdateMapResponse(w http.ResponseWriter) error      { return m.write(w) }
func (m mapDoc) VisitDuplicateMapResponse(w http.ResponseWriter) error   { return m.write(w) }
func (m mapDoc) VisitPatchMapLayersResponse(w http.ResponseWriter) error { return m.write(w) }
func (m mapDoc) VisitAddLayerResponse(w http.ResponseWriter) error       { return m.write(w) }
func (m mapDoc) VisitImportMapStyleResponse(w http.ResponseWriter) error { return m.write(w) }

func mapListOut(list []maps.Summary, total int) gen.MapListResponse {
	out := gen.MapListResponse{Maps: make([]gen.MapSummaryResponse, len(list)), Total: total}
	for i, m := range list {
		out.Maps[i] = gen.MapSummaryResponse{Id: m.ID, Name: m.Name, Description: m.Description, MapVisibilitySchema: gen.MapVisibilitySchema(m.Visibility),
			LayerCount: m.LayerCount, CreatedByUsername: m.CreatedByUsername, CreatedAt: m.CreatedAt, UpdatedAt: m.UpdatedAt}
	}
	return out
}

func shareOut(sh maps.Share) gen.ShareToken {
	return gen.ShareToken{Id: &sh.ID, MapId: &sh.MapID, Token: sh.Token, ShareUrl: sh.URL, ExpiresAt: sh.ExpiresAt,
		IsActive: sh.Active, CreatedAt: &sh.CreatedAt}
}

// binary is a file answer: bytes of a media type with their cache headers.
type binary struct {
	mediaType, cache, etag string
	body                   []byte
}

func (b binary) write(w http.ResponseWriter) error {
	w.Header().Set("Content-Type", b.mediaType)
	w.Header().Set("Cache-Control", b.cache)
	w.Header().Set("ETag", b.etag)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if b.mediaType == "image/svg+xml" {
		// An SVG opened on its own runs nothing, whatever it holds.
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; sandbox")
	}
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(b.body)
	return err
}

func (b binary) VisitGetThumbnailResponse(w http.ResponseWriter) error    { return b.write(w) }
func (b binary) VisitGetOGImageResponse(w http.ResponseWriter) error      { return b.write(w) }
func (b binary) VisitGetMapIconAssetResponse(w http.ResponseWriter) error { return b.write(w) }
func (b binary) VisitSpriteImageResponse(w http.ResponseWriter) error     { return b.write(w) }

func pictureOut(p maps.Picture) binary {
	cache := "private, max-age=300"
	if p.Public {
		cache = "public, max-age=300"
	}
	return binary{mediaType: p.MediaType, body: p.Data, cache: cache, etag: fmt.Sprintf(`"%x"`, p.Updated.UnixNano())}
}

func iconOut(ic maps.Icon) gen.MapIconResponse {
	size := ic.SizeBytes
	return gen.MapIconResponse{Id: ic.ID.String(), Name: ic.Name, Slug: ic.Slug, MediaType: ic.MediaType, SizeBytes: &size,
		Url: "/api/maps/icons/" + ic.ID.String() + "/asset", SpriteId: "icon-" + ic.ID.String(), Builtin: ptr(false)}
}

// iconForm reads the icon upload form: the file (at most 1 MB and a byte, so a larger one is
// told apart) and the optional name, else the file's name.
func iconForm(r *multipart.Reader) (string, []byte, error) {
	var name, filename string
	var data []byte
	for {
		part, err := r.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", nil, apperr.Invalid("the form does not parse: %v", err)
		}
		switch part.FormName() {
		case "file":
			filename = part.FileName()
			if data, err = io.ReadAll(io.LimitReader(part, 1<<20+1)); err != nil {
				return "", nil, err
			}
		case "name":
			b, _ := io.ReadAll(io.LimitReader(part, 1024))
			name = string(b)
		}
	}
	if data == nil {
		return "", nil, apperr.Unprocessable("the form has no file")
	}
	return cmp.Or(strings.TrimSpace(name), strings.TrimSuffix(filename, path.Ext(filename)), "icon"), data, nil
}
