package handlers

// Operations of the Features tag: single features of a vector dataset by gid, as GeoJSON in
// WGS 84. Reads follow the dataset's visibility; writes need write access, the edit_metadata
// capability and the enable_dataset_editing flag, and keep the record's count, extent, version
// and history in step (internal/catalog/edits.go).

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"io"
	"strconv"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"meridian/gen"
	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/internal/catalog"
	"meridian/internal/features"
)

// featureCatalog is what the Features and OGC Features handlers need of the catalog: feature
// reads under the record's version and visibility, the records themselves, and feature edits.
type featureCatalog interface {
	ReadFeatures(ctx context.Context, p auth.Principal, id uuid.UUID, plan catalog.ReadPlan) (catalog.Dataset, *features.Cursor, error)
	Get(ctx context.Context, p auth.Principal, id uuid.UUID, write bool) (catalog.Dataset, error)
	List(ctx context.Context, p auth.Principal, f catalog.Filter) ([]catalog.Dataset, int, error)
	CreateFeature(ctx context.Context, p auth.Principal, id uuid.UUID, w catalog.FeatureWrite) (features.GeoFeature, error)
	UpdateFeature(ctx context.Context, p auth.Principal, id uuid.UUID, gid int64, w catalog.FeatureWrite, replace bool) (features.GeoFeature, error)
	DeleteFeature(ctx context.Context, p auth.Principal, id uuid.UUID, gid int64) error
}

// featureTable is the table of a vector dataset the caller may read. A record without features
// (raster, VRT, ...) answers notVector's kind.
func (s *Server) featureTable(ctx context.Context, id uuid.UUID, notVector func(format string, args ...any) *apperr.Error) (catalog.Dataset, features.Table, error) {
	d, err := s.featureCatalog.Get(ctx, auth.From(ctx), id, false)
	if err != nil {
		return d, features.Table{}, err
	}
	if !featureRecordTypes[d.Entry.RecordType] {
		return d, features.Table{}, notVector("a %s has no features", d.Entry.RecordType)
	}
	t, err := d.Table()
	return d, t, err
}

func featureOut(f features.GeoFeature) gen.GeoJSONFeature {
	out := gen.GeoJSONFeature{Type: gen.GeoJSONFeatureTypeFeature, Id: f.ID, Properties: f.Properties}
	if f.Geometry != nil {
		var g gen.Geometry
		_ = g.UnmarshalJSON(f.Geometry)
		out.Geometry = &g
	}
	if out.Properties == nil {
		out.Properties = map[string]any{}
	}
	return out
}

// GetFeaturesGeoJSONZ: Get Features GeoJSON Z (GET /datasets/{dataset_id}/features.geojson). The
// whole dataset as one FeatureCollection, streamed row by row, every position with a Z (0 for 2D
// data).
func (s *Server) GetFeaturesGeoJSONZ(ctx context.Context, request gen.GetFeaturesGeoJSONZRequestObject) (gen.GetFeaturesGeoJSONZResponseObject, error) {
	_, _, cur, err := s.readFeatures(ctx, request.DatasetId, apperr.Conflict, func(d catalog.Dataset, _ features.Table) (features.ItemsQuery, error) {
		return features.ItemsQuery{StorageSRID: storageSRID(d), ForceZ: true}, nil
	})
	if err != nil {
		return nil, err
	}
	closing := func(dst []byte) ([]byte, error) { return append(dst, "}\n"...), nil }
	return featureStream{ctx: ctx, cur: cur, crs: crs84, tail: closing, log: s.log, flush: true}, nil
}

// ListFeatures: List Features (GET /datasets/{dataset_id}/features/). The OGC items read path in
// key order: offset (or skip) and limit 10/200, a WGS 84 bbox, include_geometry.
func (s *Server) ListFeatures(ctx context.Context, request gen.ListFeaturesRequestObject) (gen.ListFeaturesResponseObject, error) {
	prm := request.Params
	d, q, cur, err := s.readFeatures(ctx, request.DatasetId, apperr.Unprocessable, func(d catalog.Dataset, _ features.Table) (q features.ItemsQuery, err error) {
		q = features.ItemsQuery{Limit: min(max(val(prm.Limit), 1), 200), Offset: cmp.Or(val(prm.Offset), val(prm.Skip)),
			StorageSRID: storageSRID(d), NoGeometry: prm.IncludeGeometry != nil && !*prm.IncludeGeometry, KnownCount: d.Entry.FeatureCount}
		if prm.Limit == nil {
			q.Limit = 10
		}
		if prm.Bbox != nil {
			q.BBox, err = footprint(*prm.Bbox, false)
		}
		return q, err
	})
	if err != nil {
		return nil, err
	}
	path := "/datasets/" + d.Entry.ID.String() + "/features/"
	return featureStream{ctx: ctx, cur: cur, crs: crs84, tail: s.pageTail(ctx, cur, path, q, nil), log: s.log}, nil
}

// CreateFeature: Create Feature (POST /datasets/{dataset_id}/features/). 201 with the stored
// feature and its Location; an id member of the body is ignored.
func (s *Server) CreateFeature(ctx context.Context, request gen.CreateFeatureRequestObject) (gen.CreateFeatureResponseObject, error) {
	b := request.Body
	w := catalog.FeatureWrite{Properties: val(b.Properties)}
	if b.Geometry != nil {
		w.Geometry, _ = b.Geometry.MarshalJSON()
	}
	f, err := s.featureCatalog.CreateFeature(ctx, auth.From(ctx), request.DatasetId, w)
	if err != nil {
		return nil, err
	}
	loc := s.base(ctx) + "/api/datasets/" + request.DatasetId.String() + "/features/" + strconv.FormatInt(f.ID, 10)
	return gen.CreateFeature201JSONResponse{Body: featureOut(f), Headers: gen.CreateFeature201ResponseHeaders{Location: &loc}}, nil
}

// DeleteSingleFeature: Delete Single Feature (DELETE /datasets/{dataset_id}/features/{gid}).
func (s *Server) DeleteSingleFeature(ctx context.Context, request gen.DeleteSingleFeatureRequestObject) (gen.DeleteSingleFeatureResponseObject, error) {
	if err := s.featureCatalog.DeleteFeature(ctx, auth.From(ctx), request.DatasetId, request.Gid); err != nil {
		return nil, err
	}
	return gen.DeleteSingleFeature204Response{}, nil
}

// GetSingleFeature: Get Single Feature (GET /datasets/{dataset_id}/features/{gid}).
func (s *Server) GetSingleFeature(ctx context.Context, request gen.GetSingleFeatureRequestObject) (gen.GetSingleFeatureResponseObject, error) {
	key := strconv.FormatInt(request.Gid, 10)
	_, body, err := s.oneFeature(ctx, request.DatasetId, apperr.Unprocessable, key, func(d catalog.Dataset, _ features.Table) (features.ItemsQuery, error) {
		return features.ItemsQuery{StorageSRID: storageSRID(d)}, nil
	})
	if err != nil {
		return nil, err
	}
	return rawFeature{body: body, crs: crs84}, nil
}

// PatchSingleFeature: Patch Single Feature (PATCH /datasets/{dataset_id}/features/{gid}). Named
// properties change, others stay; a geometry member replaces the geometry, null clears it.
func (s *Server) PatchSingleFeature(ctx context.Context, request gen.PatchSingleFeatureRequestObject) (gen.PatchSingleFeatureResponseObject, error) {
	b := request.Body
	w := catalog.FeatureWrite{Properties: val(b.Properties)}
	if members, ok := patchMembersOf(ctx); ok {
		w.Geometry, w.SetGeometry = members["geometry"]
	} else if b.Geometry != nil {
		w.Geometry, _ = b.Geometry.MarshalJSON()
		w.SetGeometry = true
	}
	f, err := s.featureCatalog.UpdateFeature(ctx, auth.From(ctx), request.DatasetId, request.Gid, w, false)
	if err != nil {
		return nil, err
	}
	return gen.PatchSingleFeature200JSONResponse(featureOut(f)), nil
}

// ReplaceFeature: Replace Feature (PUT /datasets/{dataset_id}/features/{gid}). Properties not
// named are set to null.
func (s *Server) ReplaceFeature(ctx context.Context, request gen.ReplaceFeatureRequestObject) (gen.ReplaceFeatureResponseObject, error) {
	b := request.Body
	w := catalog.FeatureWrite{Properties: b.Properties}
	w.Geometry, _ = b.Geometry.MarshalJSON()
	f, err := s.featureCatalog.UpdateFeature(ctx, auth.From(ctx), request.DatasetId, request.Gid, w, true)
	if err != nil {
		return nil, err
	}
	return gen.ReplaceFeature200JSONResponse(featureOut(f)), nil
}

// patchMembers are the top-level members of a patch body as sent: the generated binding decodes
// `"x": null` (clear x) and no member x (keep x) to the same nil, so patches that clear fields
// read the body once more to tell the two apart.
type patchMembers map[string]json.RawMessage

type patchMembersKey struct{}

func patchMembersOf(ctx context.Context) (patchMembers, bool) {
	m, ok := ctx.Value(patchMembersKey{}).(patchMembers)
	return m, ok
}

// names are the members the patch body sent (null ones included).
func (m patchMembers) names() map[string]bool {
	out := make(map[string]bool, len(m))
	for name := range m {
		out[name] = true
	}
	return out
}

// nulls are the members the patch body sent as null: the fields it clears.
func (m patchMembers) nulls() map[string]bool {
	out := map[string]bool{}
	for name, raw := range m {
		if string(bytes.TrimSpace(raw)) == "null" {
			out[name] = true
		}
	}
	return out
}

// keepPatchMembers reads the (validated, size-limited) body of a patch once more, keeps its
// members in the context and hands the body on unchanged. Mount installs it for the patches
// where null clears.
func keepPatchMembers(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return err
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		var members patchMembers
		if json.Unmarshal(body, &members) == nil {
			req = req.WithContext(context.WithValue(req.Context(), patchMembersKey{}, members))
		}
		c.SetRequest(req)
		return next(c)
	}
}
