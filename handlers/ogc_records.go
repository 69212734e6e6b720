package handlers

// The catalog itself as an OGC API Records collection (`/collections/datasets`): one metadata
// record per dataset the caller may see.

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/google/uuid"

	"meridian/gen"
	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/internal/catalog"
	"meridian/internal/cql2"
	"meridian/internal/features"
	"meridian/internal/web"
)

const recordsPath = "/collections/datasets"

// recordCollection describes the catalog itself as an OGC API Records collection.
func (s *Server) recordCollection() gen.OgcCollection {
	title, itemType := "Datasets", "record"
	desc := "The catalog: one metadata record per dataset the caller may see."
	crs := []string{crs84}
	return gen.OgcCollection{Id: "datasets", Title: &title, Description: &desc, ItemType: &itemType, Crs: &crs,
		Links: []gen.Link{
			s.link(recordsPath, "self", "application/json", "This collection"),
			s.link(recordsPath+"/items", "items", geoJSON, "The records"),
			s.link(recordsPath+"/queryables", "http://www.opengis.net/def/rel/ogc/1.0/queryables", schemaJSON, "Queryables"),
			s.link(recordsPath+"/sortables", "http://www.opengis.net/def/rel/ogc/1.0/sortables", schemaJSON, "Sortables"),
			s.link(recordsPath+"/schema", "http://www.opengis.net/def/rel/ogc/1.0/schema", schemaJSON, "Record schema"),
		}}
}

// OgcGetCollectionMetadata: Get Collection Metadata (GET /collections/datasets).
func (s *Server) OgcGetCollectionMetadata(ctx context.Context, request gen.OgcGetCollectionMetadataRequestObject) (gen.OgcGetCollectionMetadataResponseObject, error) {
	return gen.OgcGetCollectionMetadata200JSONResponse(s.recordCollection()), nil
}

func (s *Server) record(r catalog.Record) (gen.OgcRecord, error) {
	out := gen.OgcRecord{Id: r.ID.String(), Type: "Feature",
		Properties: gen.OgcRecordProperties{Type: r.RecordType, Title: r.Title, Description: r.Summary, Language: r.Language,
			License: r.License, Rights: r.Rights, GeometryType: r.GeometryType, Created: &r.Created, Updated: &r.Updated, DatasetId: &r.DatasetID},
		Links: []gen.Link{
			s.link(recordsPath+"/items/"+r.ID.String(), "self", geoJSON, "This record"),
			s.link(recordsPath, "collection", "application/json", "The catalog"),
			s.link("/datasets/"+r.DatasetID.String(), "describes", "application/json", "The dataset"),
		}}
	if featureRecordTypes[r.RecordType] {
		out.Links = append(out.Links, s.link("/collections/"+r.DatasetID.String(), "item", "application/json", "The dataset's features"))
	}
	if r.FeatureCount != nil {
		n := int(*r.FeatureCount)
		out.Properties.FeatureCount = &n
	}
	if len(r.Themes) > 0 {
		kw := r.Themes
		out.Properties.Keywords = &kw
	}
	if r.Extent != nil {
		var g gen.Geometry
		if err := json.Unmarshal(r.Extent, &g); err != nil {
			return out, err
		}
		out.Geometry = &g
	}
	if r.VintageStart.Valid || r.VintageEnd.Valid {
		end := func(d time.Time, ok bool) string {
			if !ok {
				return ".."
			}
			return d.Format(time.DateOnly)
		}
		iv := []string{end(r.VintageStart.Time, r.VintageStart.Valid), end(r.VintageEnd.Time, r.VintageEnd.Valid)}
		out.Time = &gen.OgcRecordTime{Interval: &iv}
	}
	return out, nil
}

// OgcCollectionItems: Collection Items (GET /collections/datasets/items).
func (s *Server) OgcCollectionItems(ctx context.Context, request gen.OgcCollectionItemsRequestObject) (gen.OgcCollectionItemsResponseObject, error) {
	p := request.Params
	q := catalog.RecordQuery{Limit: 10, Terms: val(p.Q), Types: val(p.Type)}
	if p.Limit != nil {
		q.Limit = min(*p.Limit, s.cfg.OGCMaxLimit)
	}
	if p.Offset != nil {
		q.Offset = *p.Offset
	}
	if p.Bbox != nil {
		box, err := recordBBox(*p.Bbox, val(p.BboxCrs))
		if err != nil {
			return nil, err
		}
		q.BBox = box
	}
	if p.Datetime != nil {
		tr, err := parseDatetime(*p.Datetime)
		if err != nil {
			return nil, err
		}
		q.Start, q.End = tr.Start, tr.End
	}
	for _, id := range val(p.Ids) {
		u, err := uuid.Parse(id)
		if err != nil {
			return nil, apperr.Invalid("ids: %q is not a record id", id)
		}
		q.IDs = append(q.IDs, u)
	}
	if p.Sortby != nil {
		for _, k := range parseSortby(*p.Sortby) {
			q.Sort = append(q.Sort, catalog.SortKey{Field: k.Column, Desc: k.Desc})
		}
	}
	for name, values := range web.MetaFrom(ctx).Query {
		if !recordItemParams[name] {
			if q.Equals == nil {
				q.Equals = map[string]string{}
			}
			q.Equals[name] = values[0]
		}
	}
	if p.Filter != nil {
		lang := "cql2-text"
		if p.FilterLang != nil {
			lang = string(*p.FilterLang)
		}
		if p.FilterCrs != nil && *p.FilterCrs != crs84 {
			return nil, apperr.Invalid("filter-crs: the record collection takes CRS84 only")
		}
		f, err := cql2.ParseFilter(lang, *p.Filter, 4326, false)
		if err != nil {
			return nil, err
		}
		q.Filter = f
	}
	records, total, err := s.catalog.Records(ctx, auth.From(ctx), q)
	if err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	out := gen.OgcCollectionItems200ApplicationGeoPlusJSONResponse{Type: "FeatureCollection", Features: []gen.OgcRecord{},
		NumberReturned: len(records), NumberMatched: &total, TimeStamp: &now}
	for _, r := range records {
		rec, err := s.record(r)
		if err != nil {
			return nil, err
		}
		out.Features = append(out.Features, rec)
	}
	out.Links = s.pageLinks(ctx, recordsPath+"/items", q.Offset, q.Limit, q.Offset+len(records) < total)
	return out, nil
}

// recordItemParams are the record items parameters the document declares; any other names a
// record queryable for an equality filter.
var recordItemParams = map[string]bool{"limit": true, "offset": true, "bbox": true, "bbox-crs": true, "datetime": true, "q": true, "ids": true,
	"type": true, "filter": true, "filter-lang": true, "filter-crs": true, "sortby": true, "f": true, "api_key": true}

// recordBBox reads a bbox for the record collection, which is kept in CRS84.
func recordBBox(box []float64, crs string) ([]float64, error) {
	if crs != "" && crs != crs84 {
		return nil, apperr.Invalid("bbox-crs: the record collection takes CRS84 only")
	}
	return footprint(box, false)
}

// parseSortby reads `-a,+b,c`.
func parseSortby(v string) []features.SortKey {
	var out []features.SortKey
	for _, key := range strings.Split(v, ",") {
		key = strings.TrimSpace(key)
		out = append(out, features.SortKey{Column: strings.TrimLeft(key, "+-"), Desc: strings.HasPrefix(key, "-")})
	}
	return out
}

// OgcGetCollectionItem: Get Collection Item (GET /collections/datasets/items/{record_id}).
func (s *Server) OgcGetCollectionItem(ctx context.Context, request gen.OgcGetCollectionItemRequestObject) (gen.OgcGetCollectionItemResponseObject, error) {
	id := request.RecordId
	records, _, err := s.catalog.Records(ctx, auth.From(ctx), catalog.RecordQuery{RecordID: &id, Limit: 1})
	if err != nil {
		return nil, err
	}
	if len(records) == 0 {
		return nil, apperr.NotFound("no record %s", request.RecordId)
	}
	rec, err := s.record(records[0])
	if err != nil {
		return nil, err
	}
	return gen.OgcGetCollectionItem200ApplicationGeoPlusJSONResponse(rec), nil
}

// recordSchemaProperty describes a record field in JSON Schema terms.
func recordSchemaProperty(f catalog.RecordField) gen.OgcJsonSchemaProperty {
	p := gen.OgcJsonSchemaProperty{Title: &f.Name}
	typ, format := "string", ""
	switch f.Type {
	case "integer":
		typ = "integer"
	case "timestamp":
		format = "date-time"
	case "geometry":
		typ, format = "", "geometry-any"
		role := gen.OgcJsonSchemaPropertyXOgcRolePrimaryGeometry
		p.XOgcRole = &role
	}
	if typ != "" {
		p.Type = &typ
	}
	if format != "" {
		p.Format = &format
	}
	return p
}

func (s *Server) recordSchema(path string, draft gen.OgcJsonSchemaSchema, keep func(catalog.RecordField) bool) gen.OgcJsonSchema {
	props := map[string]gen.OgcJsonSchemaProperty{}
	for _, f := range catalog.RecordFields {
		if keep(f) {
			props[f.Name] = recordSchemaProperty(f)
		}
	}
	return s.schemaDocument(path, "Datasets", draft, props)
}

// OgcGetQueryables: Get Queryables (GET /collections/datasets/queryables).
func (s *Server) OgcGetQueryables(ctx context.Context, request gen.OgcGetQueryablesRequestObject) (gen.OgcGetQueryablesResponseObject, error) {
	return gen.OgcGetQueryables200ApplicationSchemaPlusJSONResponse(s.recordSchema(recordsPath+"/queryables",
		gen.OgcJsonSchemaSchemaHttpsjsonSchemaOrgdraft201909schema, func(catalog.RecordField) bool { return true })), nil
}

// OgcGetSortables: Get Sortables (GET /collections/datasets/sortables).
func (s *Server) OgcGetSortables(ctx context.Context, request gen.OgcGetSortablesRequestObject) (gen.OgcGetSortablesResponseObject, error) {
	return gen.OgcGetSortables200ApplicationSchemaPlusJSONResponse(s.recordSchema(recordsPath+"/sortables",
		gen.OgcJsonSchemaSchemaHttpsjsonSchemaOrgdraft202012schema, func(f catalog.RecordField) bool { return f.Sortable })), nil
}

// OgcGetRecordSchema: Get Record Schema (GET /collections/datasets/schema).
func (s *Server) OgcGetRecordSchema(ctx context.Context, request gen.OgcGetRecordSchemaRequestObject) (gen.OgcGetRecordSchemaResponseObject, error) {
	return gen.OgcGetRecordSchema200ApplicationSchemaPlusJSONResponse(s.recordSchema(recordsPath+"/schema",
		gen.OgcJsonSchemaSchemaHttpsjsonSchemaOrgdraft202012schema, func(catalog.RecordField) bool { return true })), nil
}
