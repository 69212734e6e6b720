package handlers

// The catalog itself as an OGC API Records collection (`/collections/datasets`): one metadata
// record per dataset the caller may see.

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	openapi_types "github.com/oapi-codegen/runtime/types"

	"meridian/gen"
	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/internal/catalog"
	"meridian/internal/cql2"
	"meridian/internal/export"
	"meridian/internal/features"
	"meridian/internal/web"
)

const recordsPath = "/collections/datasets"

// recordCatalog is what the records collection needs of the catalog.
type recordCatalog interface {
	Records(ctx context.Context, p auth.Principal, q catalog.RecordQuery) ([]catalog.Record, int, error)
	Facets(ctx context.Context, p auth.Principal, q catalog.RecordQuery, size int) (catalog.Facets, error)
	CatalogSummary(ctx context.Context, p auth.Principal) (catalog.Summary, error)
	MatchingCollections(ctx context.Context, p auth.Principal, text string, limit int) ([]catalog.Collection, error)
}

// recordCollection describes the catalog itself as an OGC API Records collection.
func (s *Server) recordCollection(ctx context.Context) gen.OgcCollection {
	title, itemType := "Datasets", "record"
	desc := "The catalog: one metadata record per dataset the caller may see."
	crs := []string{crs84}
	return gen.OgcCollection{Id: "datasets", Title: title, Description: desc, ItemType: &itemType, Crs: &crs,
		Links: []gen.Link{
			s.link(ctx, recordsPath, "self", "application/json", "This collection"),
			s.link(ctx, recordsPath+"/items", "items", geoJSON, "The records"),
			s.link(ctx, recordsPath+"/queryables", "http://www.opengis.net/def/rel/ogc/1.0/queryables", schemaJSON, "Queryables"),
			s.link(ctx, recordsPath+"/sortables", "http://www.opengis.net/def/rel/ogc/1.0/sortables", schemaJSON, "Sortables"),
			s.link(ctx, recordsPath+"/schema", "http://www.opengis.net/def/rel/ogc/1.0/schema", schemaJSON, "Record schema"),
		}}
}

// OgcGetCollectionMetadata: Get Collection Metadata (GET /collections/datasets). The catalog with
// the extent and the summaries of what the caller may see (the web UI's filter lists).
func (s *Server) OgcGetCollectionMetadata(ctx context.Context, request gen.OgcGetCollectionMetadataRequestObject) (gen.OgcGetCollectionMetadataResponseObject, error) {
	sum, err := s.records.CatalogSummary(ctx, auth.From(ctx))
	if err != nil {
		return nil, err
	}
	c := s.recordCollection(ctx)
	c.Extent = collectionExtent(sum.BBox, sum.Start, sum.End)
	c.Summaries = &map[string]any{"geometry_type": sum.GeometryTypes, "srid": sum.SRIDs, "record_type": sum.RecordTypes,
		"source_organization": sum.SourceOrganizations, "keywords": sum.Keywords, "keywords_truncated": sum.KeywordsCut}
	return gen.OgcGetCollectionMetadata200JSONResponse(c), nil
}

func (s *Server) record(ctx context.Context, r *catalog.Record) (gen.OgcRecord, error) {
	id := r.DatasetID.String()
	out := gen.OgcRecord{Id: id, Type: "Feature", Time: recordTime(*r), Properties: recordProperties(r), ConformsTo: &recordConformsTo,
		Links: []gen.Link{
			s.link(ctx, recordsPath+"/items/"+id, "self", geoJSON, "This record"),
			s.link(ctx, recordsPath, "collection", "application/json", "The catalog"),
			s.link(ctx, "/datasets/"+id, "describes", "application/json", "The dataset"),
		}}
	if featureRecordTypes[r.RecordType] {
		out.Links = append(out.Links, s.link(ctx, "/collections/"+id, "item", "application/json", "The dataset's features"))
	}
	quicklook := r.RecordType == "raster_dataset"
	if quicklook {
		out.Links = append(out.Links, s.link(ctx, "/datasets/"+id+"/quicklook", "preview", "image/png", "Quicklook"))
	}
	dist, assets, err := s.recordDistributions(ctx, r)
	if err != nil {
		return out, err
	}
	out.Properties.Distributions = &dist
	if quicklook {
		href := s.link(ctx, "/datasets/"+id+"/quicklook", "preview", "image/png", "Quicklook").Href
		assets["thumbnail"] = gen.OgcAsset{Href: href, Type: "image/png", Title: new("Quicklook"), Roles: &[]string{"thumbnail"}}
	}
	if len(assets) > 0 {
		out.Assets, out.Properties.Assets = &assets, &assets
	}
	if r.BBox != nil {
		out.Bbox = &r.BBox
	}
	if r.Extent != nil {
		// PostGIS wrote it: kept as it is, without a decoder's pass over it (the encoder
		// checks it once on the way out).
		var g gen.Geometry
		if err := g.UnmarshalJSON(r.Extent); err != nil {
			return out, err
		}
		out.Geometry = &g
	}
	return out, nil
}

// recordConformsTo are the OGC API Records classes every record conforms to.
var recordConformsTo = []string{
	"http://www.opengis.net/spec/ogcapi-records-1/1.0/conf/record-core",
	"http://www.opengis.net/spec/ogcapi-records-1/1.0/conf/json",
}

// recordDistributions are the record's distributions, generated first, with absolute URLs, and
// the assets the generated ones make: the default download and the vector tiles.
func (s *Server) recordDistributions(ctx context.Context, r *catalog.Record) ([]gen.OgcRecordDistribution, map[string]gen.OgcAsset, error) {
	generated := r.Generated()
	out := make([]gen.OgcRecordDistribution, 0, len(generated))
	assets := map[string]gen.OgcAsset{}
	for i := range generated {
		x := &generated[i] // the fields below point into generated, not into a copy per distribution
		x.URL = s.absolute(ctx, *x)
		out = append(out, gen.OgcRecordDistribution{Id: &x.ID, Type: x.Type, Format: &x.Format, Url: x.URL, Title: x.Title,
			MediaType: x.MediaType, AutoGenerated: true})
		if name := recordAssetName(*x); name != "" {
			if _, taken := assets[name]; !taken {
				assets[name] = gen.OgcAsset{Href: x.URL, Type: *x.MediaType, Title: x.Title, Roles: &[]string{name}}
			}
		}
	}
	if len(r.Distributions) == 0 || string(r.Distributions) == "[]" { // most records have none of their own
		return out, assets, nil
	}
	var own []gen.OgcRecordDistribution
	if err := json.Unmarshal(r.Distributions, &own); err != nil {
		return nil, nil, err
	}
	return append(out, own...), assets, nil
}

// recordAssetName names the asset a generated distribution makes: the first download (the
// default format) and the tiles; "" for the others.
func recordAssetName(x catalog.Distribution) string {
	switch x.Type {
	case "download":
		return "data"
	case "vector_tiles":
		return "tiles"
	}
	return ""
}

// recordContacts are the record's contacts as the query wrote them (OGC API Records contacts).
func recordContacts(raw []byte) []map[string]any {
	out := []map[string]any{}
	if len(raw) > 0 && string(raw) != "[]" {
		_ = json.Unmarshal(raw, &out)
	}
	return out
}

// recordProperties maps a record's fields; what the catalog does not keep yet stays null or empty.
func recordProperties(r *catalog.Record) gen.OgcRecordProperties {
	p := gen.OgcRecordProperties{Type: new("dataset"), RecordType: &r.RecordType, Title: r.Title, Description: val(r.Summary),
		Keywords: r.Keywords, License: cmp.Or(val(r.License), "proprietary"), Themes: recordThemes(r.Themes),
		Contacts: recordContacts(r.Contacts), Time: recordInterval(*r), Datetime: recordDatetime(*r),
		Language: r.Language, Rights: r.Rights, GeometryType: r.GeometryType, Created: &r.Created, Updated: &r.Updated, DatasetId: &r.DatasetID,
		UpdatedByDisplay: r.UpdatedBy, NeverEdited: &r.NeverEdited, CrsIsGeographic: r.Geographic, ColumnCount: intp(r.ColumnCount),
		SourceOrganization: r.SourceOrganization, SourceFormat: r.SourceFormat, QualityStatement: r.QualityStatement,
		Lineage: r.Lineage, UpdateFrequency: r.UpdateFrequency, SourceHealth: &r.SourceHealth, RecordStatus: &r.RecordStatus,
		LastCheckedAt: r.LastCheckedAt, LastRefreshedAt: r.LastRefreshedAt, ExternalIds: &[]string{}, HasQuicklook: new(r.RecordType == "raster_dataset"),
		BandCount: intp(r.BandCount), Gsd: r.GSD()}
	fresh := r.Freshness(time.Now())
	p.SourceFreshness = &fresh
	p.FeatureCount, p.RowCount = int64p(r.FeatureCount), int64p(r.FeatureCount)
	if r.SRID != nil && *r.SRID > 0 {
		p.Crs = new("EPSG:" + strconv.Itoa(int(*r.SRID)))
	}
	if featureRecordTypes[r.RecordType] {
		formats := make([]string, len(export.FormatNames))
		for i, name := range export.FormatNames {
			formats[i] = export.Formats[name].MediaType
		}
		p.Formats = &formats
	}
	if r.RecordType == "raster_dataset" {
		p.Formats = &[]string{catalog.COGMediaType}
	}
	if r.AccessConstraints != nil || r.UsageConstraints != nil {
		p.Constraints = &map[string]any{"access": r.AccessConstraints, "usage": r.UsageConstraints}
	}
	var detail map[string]any
	if json.Unmarshal(r.QualityDetail, &detail) == nil && detail != nil {
		p.QualityDetail = &detail
	}
	return p
}

// vintageEnds are the record's data vintage as dates, nil for an open end; ok is false without
// any vintage.
func vintageEnds(r catalog.Record) (start, end *string, ok bool) {
	date := func(d time.Time, valid bool) *string {
		if !valid {
			return nil
		}
		return new(d.Format(time.DateOnly))
	}
	start, end = date(r.VintageStart.Time, r.VintageStart.Valid), date(r.VintageEnd.Time, r.VintageEnd.Valid)
	return start, end, start != nil || end != nil
}

// recordTime is the data vintage as an OGC Records interval (`..` for an open end); an empty
// object without one.
func recordTime(r catalog.Record) gen.OgcRecordTime {
	start, end, ok := vintageEnds(r)
	if !ok {
		return gen.OgcRecordTime{}
	}
	return gen.OgcRecordTime{Interval: &[]string{cmp.Or(val(start), ".."), cmp.Or(val(end), "..")}}
}

// recordInterval is the data vintage as the catalog's clients read it in the properties:
// {interval: [[start, end]]} with null for an open end.
func recordInterval(r catalog.Record) gen.OgcRecordPropertiesTime {
	start, end, ok := vintageEnds(r)
	if !ok {
		return gen.OgcRecordPropertiesTime{}
	}
	return gen.OgcRecordPropertiesTime{Interval: &[][]*string{{start, end}}}
}

// recordDatetime is the record's one instant: the end of its vintage, or the start without an end.
func recordDatetime(r catalog.Record) *time.Time {
	switch {
	case r.VintageEnd.Valid:
		return &r.VintageEnd.Time
	case r.VintageStart.Valid:
		return &r.VintageStart.Time
	}
	return nil
}

// recordThemes are the ISO 19115 topic categories of a record as one OGC Records theme.
func recordThemes(categories []string) []gen.OgcRecordTheme {
	if len(categories) == 0 {
		return []gen.OgcRecordTheme{}
	}
	t := gen.OgcRecordTheme{Scheme: "https://standards.iso.org/iso/19139/resources/gmxCodelists.xml#MD_TopicCategoryCode"}
	for _, c := range categories {
		t.Concepts = append(t.Concepts, struct {
			Id    string  `json:"id"`
			Title *string `json:"title,omitempty"`
			Url   *string `json:"url,omitempty"`
		}{Id: c})
	}
	return []gen.OgcRecordTheme{t}
}

// OgcCollectionItems: Collection Items (GET /collections/datasets/items).
func (s *Server) OgcCollectionItems(ctx context.Context, request gen.OgcCollectionItemsRequestObject) (gen.OgcCollectionItemsResponseObject, error) {
	q, err := s.recordQuery(ctx, request.Params)
	if err != nil {
		return nil, err
	}
	out, err := s.recordPage(ctx, q, recordsPath+"/items", geoJSON)
	return recordItems(out), err
}

// callerLanguage is the caller's Accept-Language choice as a canonical tag, "" for none (or one
// that is no language tag): records come in their translation into it when they have one.
func callerLanguage(ctx context.Context) string {
	tag, err := catalog.CanonicalLanguage(web.MetaFrom(ctx).Language)
	if err != nil {
		return ""
	}
	return tag
}

// recordPage runs a records query for the caller and answers the page as a FeatureCollection of
// record features with paging links to path.
func (s *Server) recordPage(ctx context.Context, q catalog.RecordQuery, path, mediaType string) (gen.OgcRecordCollection, error) {
	q.Language = callerLanguage(ctx)
	records, total, err := s.records.Records(ctx, auth.From(ctx), q)
	if err != nil {
		return gen.OgcRecordCollection{}, err
	}
	now := time.Now().UTC()
	out := gen.OgcRecordCollection{Type: "FeatureCollection", Features: make([]gen.OgcRecord, 0, len(records)),
		NumberReturned: len(records), NumberMatched: total, TimeStamp: &now}
	// Each record is read in place: the page's fields point into records, not into copies.
	for i := range records {
		rec, err := s.record(ctx, &records[i])
		if err != nil {
			return out, err
		}
		out.Features = append(out.Features, rec)
	}
	out.Links = s.pageLinks(ctx, path, mediaType, q.Offset, q.Limit, q.Offset+len(records) < total)
	return out, nil
}

// recordQuery reads the items parameters: OGC API Records' own, the catalog's (the names the web
// UI and desktop plugin send), and any other as an equality filter on a record queryable.
func (s *Server) recordQuery(ctx context.Context, p gen.OgcCollectionItemsParams) (catalog.RecordQuery, error) {
	q, err := s.recordParams(p)
	if err != nil {
		return q, err
	}
	for name, values := range web.MetaFrom(ctx).Query {
		if !recordItemParams[name] {
			if q.Equals == nil {
				q.Equals = map[string]string{}
			}
			q.Equals[name] = values[0]
		}
	}
	return q, nil
}

// recordParams reads the declared record parameters (shared by the records items and search).
func (s *Server) recordParams(p gen.OgcCollectionItemsParams) (catalog.RecordQuery, error) {
	q := catalog.RecordQuery{Limit: min(val(p.Limit), s.cfg.OGCMaxLimit), Offset: val(p.Offset), Terms: val(p.Q), Types: val(p.Type),
		GeometryType: p.GeometryType, SRID: p.Srid, SourceOrganization: p.SourceOrganization, CollectionID: p.CollectionId,
		ExternalIDs: val(p.ExternalIds)}
	if p.Limit == nil {
		q.Limit = 10
	}
	if p.ExternalId != nil {
		q.ExternalIDs = append(q.ExternalIDs, *p.ExternalId)
	}
	if p.RecordType != nil {
		q.Types = append(q.Types, *p.RecordType)
	}
	q.UpdatedFrom, q.UpdatedTo = dateOf(p.DateFrom), dateOf(p.DateTo)
	steps := []func() error{
		func() error { return recordVintage(p, &q) },
		func() error { return recordSpatial(p, &q) },
		func() error { return recordIDs(p, &q) },
		func() error { return recordOrder(p, &q) },
		func() error { return recordFilters(p, &q, s.filterLimits()) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return q, err
		}
	}
	return q, nil
}

func dateOf(d *openapi_types.Date) *time.Time {
	if d == nil {
		return nil
	}
	return &d.Time
}

// recordVintage reads datetime, or the vintage bounds that say the same thing.
func recordVintage(p gen.OgcCollectionItemsParams, q *catalog.RecordQuery) error {
	if p.Datetime != nil {
		tr, err := parseDatetime(*p.Datetime)
		if err != nil {
			return err
		}
		q.Start, q.End = tr.Start, tr.End
	}
	if v := dateOf(p.VintageStart); v != nil {
		q.Start = v
	}
	if v := dateOf(p.VintageEnd); v != nil {
		q.End = v
	}
	if q.Start != nil && q.End != nil && q.End.Before(*q.Start) {
		return apperr.Invalid("datetime: the interval ends before it starts")
	}
	return nil
}

// recordSpatial reads bbox and geometry with spatial_predicate. Within-tests and geometries are
// CQL2 filters (S_WITHIN, S_INTERSECTS), so they are parsed, checked and rendered as filters are.
func recordSpatial(p gen.OgcCollectionItemsParams, q *catalog.RecordQuery) error {
	within := p.SpatialPredicate != nil && *p.SpatialPredicate == gen.OgcCollectionItemsParamsSpatialPredicateWithin
	if p.Bbox != nil {
		box, err := recordBBox(*p.Bbox, val(p.BboxCrs))
		if err != nil {
			return err
		}
		if !within {
			q.BBox = box
		} else if err := q.AddFilter("cql2-text", fmt.Sprintf("S_WITHIN(geometry, BBOX(%g,%g,%g,%g))", box[0], box[1], box[2], box[3])); err != nil {
			return err
		}
	}
	if p.Geometry == nil {
		return nil
	}
	op, lang, g := "S_INTERSECTS", "cql2-text", strings.TrimSpace(*p.Geometry)
	if within {
		op = "S_WITHIN"
	}
	src := op + "(geometry, " + g + ")"
	if strings.HasPrefix(g, "{") {
		lang, src = "cql2-json", `{"op":"`+strings.ToLower(op)+`","args":[{"property":"geometry"},`+g+`]}`
	}
	if err := q.AddFilter(lang, src); err != nil {
		return apperr.Invalid("geometry: give one WKT or GeoJSON geometry in CRS84 (%s)", err)
	}
	return nil
}

func recordIDs(p gen.OgcCollectionItemsParams, q *catalog.RecordQuery) error {
	for _, id := range val(p.Ids) {
		u, err := uuid.Parse(id)
		if err != nil {
			return apperr.Invalid("ids: %q is not a record id", id)
		}
		q.IDs = append(q.IDs, u)
	}
	return nil
}

// recordSortBy maps the catalog's sort_by names onto record sortables, with the order each takes
// unless sort_desc says otherwise: the web UI's sort menu sends date_added and last_updated
// meaning newest first, and name for the title.
var recordSortBy = map[string]catalog.SortKey{"title": {Field: "title"}, "name": {Field: "title"},
	"created": {Field: "created"}, "created_at": {Field: "created"}, "date_added": {Field: "created", Desc: true},
	"updated": {Field: "updated"}, "updated_at": {Field: "updated"}, "last_updated": {Field: "updated", Desc: true},
	"published": {Field: "published"}, "published_at": {Field: "published"}, "type": {Field: "record_type"},
	"record_type": {Field: "record_type"}, "language": {Field: "language"}, "license": {Field: "license"},
	"geometry_type": {Field: "geometry_type"}, "feature_count": {Field: "feature_count"}}

// recordOrder reads sortby (OGC) or sort_by/sort_desc (the catalog's names); relevance is the
// default order.
func recordOrder(p gen.OgcCollectionItemsParams, q *catalog.RecordQuery) error {
	if p.Sortby != nil {
		for _, k := range parseSortby(*p.Sortby) {
			q.Sort = append(q.Sort, catalog.SortKey{Field: k.Column, Desc: k.Desc})
		}
		return nil
	}
	by := val(p.SortBy)
	if by == "" || by == "relevance" {
		return nil
	}
	key, ok := recordSortBy[by]
	if !ok {
		return apperr.Invalid("sort_by: %q is not one of relevance, date_added, name, title, last_updated, created, updated, published, "+
			"type, language, license, geometry_type, feature_count", by)
	}
	if p.SortDesc != nil {
		key.Desc = *p.SortDesc
	}
	q.Sort = []catalog.SortKey{key}
	return nil
}

func recordFilters(p gen.OgcCollectionItemsParams, q *catalog.RecordQuery, limits cql2.Limits) error {
	if p.Filter == nil {
		return nil
	}
	lang := cmp.Or(string(val(p.FilterLang)), val(p.Cql2FilterLang), "cql2-text")
	if p.FilterCrs != nil && *p.FilterCrs != crs84 {
		return apperr.Invalid("filter-crs: the record collection takes CRS84 only")
	}
	f, err := cql2.ParseFilterWithin(lang, *p.Filter, 4326, false, limits)
	if err == nil {
		q.Filters = append(q.Filters, f)
	}
	return err
}

// recordItemParams are the record items parameters the document declares; any other names a
// record queryable for an equality filter.
var recordItemParams = map[string]bool{"limit": true, "offset": true, "bbox": true, "bbox-crs": true, "datetime": true, "q": true, "ids": true,
	"type": true, "filter": true, "filter-lang": true, "filter-crs": true, "sortby": true, "f": true, "api_key": true,
	"externalIds": true, "externalId": true, "geometry_type": true, "srid": true, "source_organization": true, "record_type": true,
	"date_from": true, "date_to": true, "vintage_start": true, "vintage_end": true, "sort_by": true, "sort_desc": true,
	"cql2_filter_lang": true, "exclude_synthetic": true, "spatial_predicate": true, "geometry": true, "collection_id": true}

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

// OgcGetCollectionItem: Get Collection Item (GET /collections/datasets/items/{record_id}). The id
// is the dataset's; a dataset's record_id (the address of records before) is sent there.
func (s *Server) OgcGetCollectionItem(ctx context.Context, request gen.OgcGetCollectionItemRequestObject) (gen.OgcGetCollectionItemResponseObject, error) {
	id := request.RecordId
	q := catalog.RecordQuery{RecordID: &id, Limit: 1, Language: callerLanguage(ctx)}
	records, _, err := s.records.Records(ctx, auth.From(ctx), q)
	if err == nil && len(records) == 0 {
		q.RecordID, q.CatalogID = nil, &id
		if records, _, err = s.records.Records(ctx, auth.From(ctx), q); err == nil && len(records) == 1 {
			to := s.link(ctx, recordsPath+"/items/"+records[0].DatasetID.String(), "", "", "").Href
			return gen.OgcGetCollectionItem301Response{Headers: gen.OgcGetCollectionItem301ResponseHeaders{Location: &to}}, nil
		}
	}
	if err != nil {
		return nil, err
	}
	if len(records) == 0 {
		return nil, apperr.NotFound("no record %s", request.RecordId)
	}
	rec, err := s.record(ctx, &records[0])
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
