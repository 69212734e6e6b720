package handlers

// OGC API Features over datasets: each dataset with a table is a collection whose id is its uuid.

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
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

const (
	crs84      = "http://www.opengis.net/def/crs/OGC/1.3/CRS84"
	epsgPrefix = "http://www.opengis.net/def/crs/EPSG/0/"
	geoJSON    = "application/geo+json"
	schemaJSON = "application/schema+json"
)

// featureRecordTypes are the record types served as feature collections.
var featureRecordTypes = map[string]bool{"vector_dataset": true, "table": true}

// collectionCRS lists the CRSs a collection serves: CRS84 first (the default), EPSG:4326 with its
// latitude-first axis order, Web Mercator, and the storage CRS when it is another one.
func collectionCRS(d catalog.Dataset) []string {
	out := []string{crs84, epsgPrefix + "4326", epsgPrefix + "3857"}
	if srid := storageSRID(d); srid != 4326 && srid != 3857 {
		out = append(out, epsgPrefix+strconv.Itoa(srid))
	}
	return out
}

func storageSRID(d catalog.Dataset) int {
	if d.Entry.Srid == nil || *d.Entry.Srid <= 0 {
		return 4326
	}
	return int(*d.Entry.Srid)
}

func storageCRS(d catalog.Dataset) string {
	if srid := storageSRID(d); srid != 4326 {
		return epsgPrefix + strconv.Itoa(srid)
	}
	return crs84
}

// parseCRS resolves a CRS URI among a collection's CRSs to an SRID, and whether coordinates in
// it are written latitude first.
func parseCRS(param, uri string, d catalog.Dataset) (srid int, latFirst bool, err error) {
	if uri == "" || uri == crs84 {
		return 4326, false, nil
	}
	for _, c := range collectionCRS(d) {
		if c == uri {
			code, _ := strconv.Atoi(strings.TrimPrefix(uri, epsgPrefix))
			return code, code == 4326, nil
		}
	}
	return 0, false, apperr.Invalid("%s: %q is not one of the collection's CRSs (%s)", param, uri, strings.Join(collectionCRS(d), ", "))
}

func (s *Server) collection(ctx context.Context, d catalog.Dataset) gen.OgcCollection {
	id := d.Entry.ID.String()
	base := "/collections/" + id
	itemType, storage, crs := "feature", storageCRS(d), collectionCRS(d)
	c := gen.OgcCollection{
		Id: id, Title: d.Entry.Title, Description: val(d.Entry.Summary), ItemType: &itemType, Crs: &crs, StorageCrs: &storage,
		Links: []gen.Link{
			s.link(ctx, base, "self", "application/json", "This collection"),
			s.link(ctx, base+"/items", "items", geoJSON, "The features"),
			s.link(ctx, base+"/queryables", "http://www.opengis.net/def/rel/ogc/1.0/queryables", schemaJSON, "Queryables"),
			s.link(ctx, base+"/sortables", "http://www.opengis.net/def/rel/ogc/1.0/sortables", schemaJSON, "Sortables"),
			s.link(ctx, base+"/schema", "http://www.opengis.net/def/rel/ogc/1.0/schema", schemaJSON, "Feature schema"),
		},
	}
	if len(d.Entry.ThemeCategory) > 0 {
		kw := d.Entry.ThemeCategory
		c.Keywords = &kw
	}
	start, end, _ := temporalExtent(d.Entry.ColumnInfo)
	c.Extent = collectionExtent(d.Entry.ExtentBbox, start, end)
	return c
}

// collectionExtent is an OGC extent of a WGS84 box and a time range, nil when neither is known.
func collectionExtent(bbox []float64, start, end *time.Time) *gen.OgcExtent {
	var ext gen.OgcExtent
	if len(bbox) == 4 {
		ext.Spatial = &struct {
			Bbox [][]float64 `json:"bbox"`
			Crs  *string     `json:"crs,omitempty"`
		}{Bbox: [][]float64{bbox}}
	}
	if start != nil || end != nil {
		ext.Temporal = &struct {
			Interval [][]*time.Time `json:"interval"`
			Trs      *string        `json:"trs,omitempty"`
		}{Interval: [][]*time.Time{{start, end}}}
	}
	if ext.Spatial == nil && ext.Temporal == nil {
		return nil
	}
	return &ext
}

// temporalExtent is the range of the temporal column as profiled at import (sampled above 100k
// rows, so an approximation for large tables), read from the record rather than the table so
// that listing collections stays one query.
func temporalExtent(columnInfo []byte) (start, end *time.Time, ok bool) {
	var cols []features.ColumnProfile
	if json.Unmarshal(columnInfo, &cols) != nil {
		return nil, nil, false
	}
	for _, c := range cols {
		if !features.IsTemporal(c.Type) {
			continue
		}
		parse := func(v any) *time.Time {
			s, _ := v.(string)
			for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999", time.DateOnly} {
				if t, err := time.Parse(layout, s); err == nil {
					return &t
				}
			}
			return nil
		}
		start, end = parse(c.Stats["min"]), parse(c.Stats["max"])
		return start, end, start != nil || end != nil
	}
	return nil, nil, false
}

// OgcListCollections: List Collections (GET /collections). The catalog's record collection
// first, then every feature dataset the caller may see.
func (s *Server) OgcListCollections(ctx context.Context, request gen.OgcListCollectionsRequestObject) (gen.OgcListCollectionsResponseObject, error) {
	all := []gen.OgcCollection{s.recordCollection(ctx)}
	const pageSize = 1000
	for skip := 0; ; skip += pageSize {
		list, total, err := s.featureCatalog.List(ctx, auth.From(ctx), catalog.Filter{Sort: "title", Skip: skip, Limit: pageSize})
		if err != nil {
			return nil, err
		}
		for _, d := range list {
			if featureRecordTypes[d.Entry.RecordType] {
				all = append(all, s.collection(ctx, d))
			}
		}
		if skip+pageSize >= total {
			break
		}
	}
	p := request.Params
	out := gen.OgcListCollections200JSONResponse{Collections: all,
		Links: []gen.Link{s.link(ctx, "/collections", "self", "application/json", "This document"), s.link(ctx, "/", "root", "application/json", "The landing page")}}
	if p.Limit == nil && p.Offset == nil {
		return out, nil
	}
	offset, limit := min(val(p.Offset), len(all)), cmp.Or(val(p.Limit), 50)
	out.Collections = all[offset:min(offset+limit, len(all))]
	out.Links = append(s.pageLinks(ctx, "/collections", "application/json", offset, limit, offset+limit < len(all))[1:], out.Links...)
	return out, nil
}

// featureDataset is a dataset the caller may read that is served as a feature collection; any
// other record is no collection (404).
func (s *Server) featureDataset(ctx context.Context, id uuid.UUID) (catalog.Dataset, features.Table, error) {
	return s.featureTable(ctx, id, apperr.NotFound)
}

// OgcGetDatasetCollection: Get Dataset Collection (GET /collections/{dataset_id}).
func (s *Server) OgcGetDatasetCollection(ctx context.Context, request gen.OgcGetDatasetCollectionRequestObject) (gen.OgcGetDatasetCollectionResponseObject, error) {
	d, _, err := s.featureDataset(ctx, request.DatasetId)
	if err != nil {
		return nil, err
	}
	return gen.OgcGetDatasetCollection200JSONResponse(s.collection(ctx, d)), nil
}

// jsonSchemaProperty describes a column in JSON Schema terms.
func jsonSchemaProperty(c features.Column) gen.OgcJsonSchemaProperty {
	p := gen.OgcJsonSchemaProperty{Title: &c.Name}
	typ, format := features.JSONSchemaType(c.Type)
	if typ != "" {
		p.Type = &typ
	}
	if format != "" {
		p.Format = &format
	}
	return p
}

func geometrySchemaProperty(d catalog.Dataset) gen.OgcJsonSchemaProperty {
	format := "geometry-any"
	if gt := d.Entry.GeometryType; gt != nil && !d.Entry.HasGenericGeometry {
		format = "geometry-" + strings.ToLower(strings.TrimSuffix(strings.TrimSuffix(*gt, "Z"), " Z"))
	}
	role := gen.OgcJsonSchemaPropertyXOgcRolePrimaryGeometry
	title := "geometry"
	return gen.OgcJsonSchemaProperty{Title: &title, Format: &format, XOgcRole: &role}
}

// schemaDocument builds a JSON Schema document about a collection.
func (s *Server) schemaDocument(path, title string, draft gen.OgcJsonSchemaSchema, props map[string]gen.OgcJsonSchemaProperty) gen.OgcJsonSchema {
	id := s.cfg.BaseURL + "/api" + path
	return gen.OgcJsonSchema{Id: &id, Schema: &draft, Title: &title, Type: gen.OgcJsonSchemaTypeObject, Properties: props,
		AdditionalProperties: map[string]any{"additionalProperties": false}}
}

// OgcGetDatasetQueryables: Get Dataset Queryables (GET /collections/{dataset_id}/queryables).
func (s *Server) OgcGetDatasetQueryables(ctx context.Context, request gen.OgcGetDatasetQueryablesRequestObject) (gen.OgcGetDatasetQueryablesResponseObject, error) {
	d, t, err := s.featureDataset(ctx, request.DatasetId)
	if err != nil {
		return nil, err
	}
	props := map[string]gen.OgcJsonSchemaProperty{}
	if t.Geom != "" {
		props[features.GeometryQueryable] = geometrySchemaProperty(d)
	}
	for _, c := range t.Columns {
		if features.Queryable(c) {
			props[c.Name] = jsonSchemaProperty(c)
		}
	}
	return gen.OgcGetDatasetQueryables200ApplicationSchemaPlusJSONResponse(s.schemaDocument("/collections/"+d.Entry.ID.String()+"/queryables",
		d.Entry.Title, gen.OgcJsonSchemaSchemaHttpsjsonSchemaOrgdraft201909schema, props)), nil
}

// OgcGetDatasetSortables: Get Dataset Sortables (GET /collections/{dataset_id}/sortables).
func (s *Server) OgcGetDatasetSortables(ctx context.Context, request gen.OgcGetDatasetSortablesRequestObject) (gen.OgcGetDatasetSortablesResponseObject, error) {
	d, t, err := s.featureDataset(ctx, request.DatasetId)
	if err != nil {
		return nil, err
	}
	props := map[string]gen.OgcJsonSchemaProperty{t.ID: jsonSchemaProperty(features.Column{Name: t.ID, Type: t.IDType})}
	for _, c := range t.Columns {
		if features.Sortable(c) {
			props[c.Name] = jsonSchemaProperty(c)
		}
	}
	return gen.OgcGetDatasetSortables200ApplicationSchemaPlusJSONResponse(s.schemaDocument("/collections/"+d.Entry.ID.String()+"/sortables",
		d.Entry.Title, gen.OgcJsonSchemaSchemaHttpsjsonSchemaOrgdraft202012schema, props)), nil
}

// OgcGetDatasetSchema: Get Dataset Schema (GET /collections/{dataset_id}/schema). The feature
// schema of OGC API Features Part 5, with the id, primary geometry and primary instant roles.
func (s *Server) OgcGetDatasetSchema(ctx context.Context, request gen.OgcGetDatasetSchemaRequestObject) (gen.OgcGetDatasetSchemaResponseObject, error) {
	d, t, err := s.featureDataset(ctx, request.DatasetId)
	if err != nil {
		return nil, err
	}
	idProp := jsonSchemaProperty(features.Column{Name: t.ID, Type: t.IDType})
	idRole := gen.OgcJsonSchemaPropertyXOgcRoleId
	idProp.XOgcRole = &idRole
	props := map[string]gen.OgcJsonSchemaProperty{t.ID: idProp}
	if t.Geom != "" {
		props[features.GeometryQueryable] = geometrySchemaProperty(d)
	}
	temporal, hasTemporal := t.Temporal()
	for _, c := range t.Columns {
		p := jsonSchemaProperty(c)
		if hasTemporal && c.Name == temporal.Name {
			role := gen.OgcJsonSchemaPropertyXOgcRolePrimaryInstant
			p.XOgcRole = &role
		}
		props[c.Name] = p
	}
	return gen.OgcGetDatasetSchema200ApplicationSchemaPlusJSONResponse(s.schemaDocument("/collections/"+d.Entry.ID.String()+"/schema",
		d.Entry.Title, gen.OgcJsonSchemaSchemaHttpsjsonSchemaOrgdraft202012schema, props)), nil
}

// itemsQuery turns the OGC query parameters into a features query. A limit over the largest page
// (ogc_items_max_page_size, within OGC_MAX_LIMIT) is clamped to it.
func (s *Server) itemsQuery(ctx context.Context, d catalog.Dataset, t features.Table, p gen.OgcGetCollectionItemsParams) (features.ItemsQuery, string, error) {
	q := features.ItemsQuery{Limit: min(val(p.Limit), s.pageMax.Get(ctx)), Offset: val(p.Offset), AfterKey: p.AfterGid,
		StorageSRID: storageSRID(d), KnownCount: d.Entry.FeatureCount, NoGeometry: p.IncludeGeometry != nil && !*p.IncludeGeometry,
		Properties: val(p.Properties)}
	if p.Limit == nil {
		q.Limit = 10
	}
	if p.Sortby != nil {
		q.Sort = parseSortby(*p.Sortby)
	}
	var err error
	if q.OutSRID, q.SwapXY, err = parseCRS("crs", val(p.Crs), d); err != nil {
		return q, "", err
	}
	steps := []func() error{
		func() error { return itemsBBox(p, d, &q) },
		func() error { return itemsDatetime(p, &q) },
		func() error { return itemsEquals(ctx, t, &q) },
		func() error { return itemsFilter(p, d, &q, s.filterLimits()) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return q, "", err
		}
	}
	crs := crs84
	if q.OutSRID != 4326 || q.SwapXY {
		crs = epsgPrefix + strconv.Itoa(q.OutSRID)
	}
	return q, crs, nil
}

func itemsBBox(p gen.OgcGetCollectionItemsParams, d catalog.Dataset, q *features.ItemsQuery) error {
	if p.Bbox == nil {
		return nil
	}
	srid, latFirst, err := parseCRS("bbox-crs", val(p.BboxCrs), d)
	if err != nil {
		return err
	}
	box, err := footprint(*p.Bbox, latFirst)
	q.BBox, q.BBoxSRID = box, srid
	return err
}

func itemsDatetime(p gen.OgcGetCollectionItemsParams, q *features.ItemsQuery) (err error) {
	if p.Datetime != nil {
		q.Time, err = parseDatetime(*p.Datetime)
	}
	return err
}

// itemsEquals reads any other query parameter named after a queryable as an equality filter
// (Part 1, 7.15.5).
func itemsEquals(ctx context.Context, t features.Table, q *features.ItemsQuery) error {
	for name, values := range web.MetaFrom(ctx).Query {
		if ogcItemParams[name] {
			continue
		}
		c, err := t.Column(name)
		if err != nil || !features.Queryable(c) {
			return apperr.Invalid("unknown query parameter %q: neither an items parameter nor a queryable of the collection", name)
		}
		if q.Equals == nil {
			q.Equals = map[string]string{}
		}
		q.Equals[name] = values[0]
	}
	return nil
}

func itemsFilter(p gen.OgcGetCollectionItemsParams, d catalog.Dataset, q *features.ItemsQuery, limits cql2.Limits) error {
	if p.Filter == nil {
		return nil
	}
	srid, latFirst, err := parseCRS("filter-crs", val(p.FilterCrs), d)
	if err != nil {
		return err
	}
	q.Filter, err = cql2.ParseFilterWithin(cmp.Or(string(val(p.FilterLang)), "cql2-text"), *p.Filter, srid, latFirst, limits)
	return err
}

// footprint reads a bbox of 4 or 6 numbers as minx, miny, maxx, maxy: heights are not filtered
// on (the 2D footprint decides) and a latitude-first CRS is put in x, y order.
func footprint(box []float64, latFirst bool) ([]float64, error) {
	if len(box) != 4 && len(box) != 6 {
		return nil, apperr.Invalid("bbox: expected 4 or 6 numbers, got %d", len(box))
	}
	for _, v := range box {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, apperr.Invalid("bbox: the numbers must be finite")
		}
	}
	if len(box) == 6 {
		box = []float64{box[0], box[1], box[3], box[4]}
	}
	if latFirst {
		box = []float64{box[1], box[0], box[3], box[2]}
	}
	if box[1] > box[3] {
		return nil, apperr.Invalid("bbox: the lower corner is above the upper corner")
	}
	return box, nil
}

// ogcItemParams are the items parameters the document declares; any other is a property filter.
var ogcItemParams = map[string]bool{"limit": true, "offset": true, "bbox": true, "bbox-crs": true, "datetime": true, "filter": true,
	"filter-lang": true, "filter-crs": true, "sortby": true, "properties": true, "crs": true, "f": true, "api_key": true,
	"after_gid": true, "include_geometry": true}

// parseDatetime reads an RFC 3339 instant or date, or an interval with `..` or empty open ends.
func parseDatetime(v string) (*features.TimeRange, error) {
	parse := func(s string) (*time.Time, error) {
		if s == "" || s == ".." {
			return nil, nil
		}
		for _, layout := range []string{time.RFC3339Nano, time.DateOnly} {
			if t, err := time.Parse(layout, s); err == nil {
				return &t, nil
			}
		}
		return nil, apperr.Invalid("datetime: %q is neither an RFC 3339 date-time nor a date", s)
	}
	start, end, interval := strings.Cut(v, "/")
	a, err := parse(start)
	if err != nil {
		return nil, err
	}
	if !interval {
		if a == nil {
			return nil, apperr.Invalid("datetime: expected an instant or an interval, got %q", v)
		}
		return &features.TimeRange{Start: a, End: a}, nil
	}
	b, err := parse(end)
	if err != nil {
		return nil, err
	}
	if a != nil && b != nil && b.Before(*a) {
		return nil, apperr.Invalid("datetime: the interval ends before it starts")
	}
	return &features.TimeRange{Start: a, End: b}, nil
}

// OgcGetCollectionItems: Get Collection Items (GET /collections/{dataset_id}/items). The page is
// streamed: features are written as rows arrive, and the members that depend on the whole page
// (numberReturned, links) come after the features array.
func (s *Server) OgcGetCollectionItems(ctx context.Context, request gen.OgcGetCollectionItemsRequestObject) (gen.OgcGetCollectionItemsResponseObject, error) {
	var crs string
	d, q, cur, err := s.readFeatures(ctx, request.DatasetId, apperr.NotFound, func(d catalog.Dataset, t features.Table) (q features.ItemsQuery, err error) {
		q, crs, err = s.itemsQuery(ctx, d, t, request.Params)
		return q, err
	})
	if err != nil {
		return nil, err
	}
	base := "/collections/" + d.Entry.ID.String()
	collection := s.link(ctx, base, "collection", "application/json", "The collection")
	return featureStream{ctx: ctx, cur: cur, crs: crs, tail: s.pageTail(ctx, cur, base+"/items", q, &collection), log: s.log}, nil
}

// readFeatures runs a feature read of a dataset served as features, planned by plan once the
// record is known (internal/catalog.ReadFeatures); notVector answers a record without features.
func (s *Server) readFeatures(ctx context.Context, id uuid.UUID, notVector func(string, ...any) *apperr.Error,
	plan catalog.ReadPlan) (catalog.Dataset, features.ItemsQuery, *features.Cursor, error) {
	var planned features.ItemsQuery
	d, cur, err := s.featureCatalog.ReadFeatures(ctx, auth.From(ctx), id, func(d catalog.Dataset, t features.Table) (features.ItemsQuery, error) {
		if !featureRecordTypes[d.Entry.RecordType] {
			return planned, notVector("a %s has no features", d.Entry.RecordType)
		}
		q, err := plan(d, t)
		planned = q
		return q, err
	})
	return d, planned, cur, err
}

// pageTail writes the members of a page of features that follow the features: numberReturned,
// numberMatched (exact: see features.Cursor.Matched), timeStamp and the page links, plus extra.
func (s *Server) pageTail(ctx context.Context, cur *features.Cursor, path string, q features.ItemsQuery, extra *gen.Link) func([]byte) ([]byte, error) {
	return func(dst []byte) ([]byte, error) {
		matched, err := cur.Matched()
		if err != nil {
			return dst, err
		}
		dst = append(dst, `,"numberReturned":`...)
		dst = strconv.AppendInt(dst, int64(cur.Returned()), 10)
		dst = append(dst, `,"numberMatched":`...)
		dst = strconv.AppendInt(dst, matched, 10)
		dst = append(dst, `,"timeStamp":"`...)
		dst = time.Now().UTC().AppendFormat(dst, time.RFC3339)
		links := s.pageLinks(ctx, path, geoJSON, q.Offset, q.Limit, cur.More())
		if extra != nil {
			links = append(links, *extra)
		}
		raw, _ := json.Marshal(links)
		dst = append(dst, `","links":`...)
		dst = append(dst, raw...)
		return append(dst, '}'), nil
	}
}

// pageLinks are the self, next and prev links of a page of items at path.
func (s *Server) pageLinks(ctx context.Context, path, mediaType string, offset, limit int, more bool) []gen.Link {
	raw := web.MetaFrom(ctx).RawQuery
	self := path
	if raw != "" {
		self += "?" + raw
	}
	links := []gen.Link{s.link(ctx, self, "self", mediaType, "This page")}
	if more {
		links = append(links, s.link(ctx, path+withPage(raw, offset+limit, limit), "next", mediaType, "Next page"))
	}
	if offset > 0 {
		links = append(links, s.link(ctx, path+withPage(raw, max(0, offset-limit), limit), "prev", mediaType, "Previous page"))
	}
	return links
}

// withPage is the request's query string with offset and limit replaced. Everything else stays
// as the client sent it, so clients that append their own parameters to every URL (GDAL does)
// recognise them in the links and do not add them twice.
func withPage(raw string, offset, limit int) string {
	var keep []string
	for _, pair := range strings.Split(raw, "&") {
		name, _, _ := strings.Cut(pair, "=")
		if pair != "" && name != "offset" && name != "limit" {
			keep = append(keep, pair)
		}
	}
	keep = append(keep, "limit="+strconv.Itoa(limit), "offset="+strconv.Itoa(offset))
	return "?" + strings.Join(keep, "&")
}

// featureStream writes a FeatureCollection as its rows arrive (internal/features encodes it),
// for every operation that answers one.
type featureStream struct {
	ctx  context.Context
	cur  *features.Cursor
	crs  string
	tail func([]byte) ([]byte, error)
	log  *slog.Logger
	// flush sends the header at once, committing the answer to chunked transfer however small
	// it is (a download that should not wait for its first buffer).
	flush bool
}

func (f featureStream) write(w http.ResponseWriter) error {
	w.Header().Set("Content-Type", geoJSON)
	w.Header().Set("Content-Crs", "<"+f.crs+">")
	w.WriteHeader(http.StatusOK)
	if f.flush {
		_ = http.NewResponseController(w).Flush()
	}
	err := features.WriteCollection(w, f.cur, f.tail)
	switch {
	case err == nil || !errors.Is(err, features.ErrRead):
		return nil // written, or the client went away
	case f.ctx.Err() != nil:
		// The client went away while the rows were read: nothing failed on our side.
		f.log.Debug("feature stream ended by the client", "err", err)
	default:
		f.log.Error("feature stream failed", "err", err)
	}
	// The status is sent; cutting the connection is the only honest way to say the body is
	// incomplete (the client sees a truncated chunked transfer, not a short page).
	panic(http.ErrAbortHandler)
}

func (f featureStream) VisitOgcGetCollectionItemsResponse(w http.ResponseWriter) error {
	return f.write(w)
}
func (f featureStream) VisitListFeaturesResponse(w http.ResponseWriter) error { return f.write(w) }
func (f featureStream) VisitGetFeaturesGeoJSONZResponse(w http.ResponseWriter) error {
	return f.write(w)
}

// oneFeature reads one feature by key through readFeatures; 404 when there is none.
func (s *Server) oneFeature(ctx context.Context, id uuid.UUID, notVector func(string, ...any) *apperr.Error, key string,
	plan catalog.ReadPlan) (catalog.Dataset, []byte, error) {
	d, _, cur, err := s.readFeatures(ctx, id, notVector, func(d catalog.Dataset, t features.Table) (features.ItemsQuery, error) {
		q, err := plan(d, t)
		q.ID, q.Limit = &key, 1
		return q, err
	})
	if err != nil {
		return d, nil, err
	}
	defer cur.Close()
	body, ok, err := cur.Append(featureBuffer())
	if err == nil && !ok {
		err = apperr.NotFound("feature %q not found", key)
	}
	return d, body, err
}

// OgcGetCollectionItemFeature: Get Collection Item Feature (GET /collections/{dataset_id}/items/{feature_id}).
func (s *Server) OgcGetCollectionItemFeature(ctx context.Context, request gen.OgcGetCollectionItemFeatureRequestObject) (gen.OgcGetCollectionItemFeatureResponseObject, error) {
	var crs string
	params := gen.OgcGetCollectionItemsParams{Properties: request.Params.Properties, Crs: request.Params.Crs}
	d, body, err := s.oneFeature(ctx, request.DatasetId, apperr.NotFound, request.FeatureId, func(d catalog.Dataset, t features.Table) (q features.ItemsQuery, err error) {
		q, crs, err = s.itemsQuery(ctx, d, t, params)
		return q, err
	})
	if err != nil {
		return nil, err
	}
	base := "/collections/" + d.Entry.ID.String()
	links, _ := json.Marshal([]gen.Link{
		s.link(ctx, base+"/items/"+url.PathEscape(request.FeatureId), "self", geoJSON, "This feature"),
		s.link(ctx, base, "collection", "application/json", "The collection"),
	})
	body = append(body[:len(body)-1], `,"links":`...)
	body = append(append(body, links...), '}')
	return rawFeature{body: body, crs: crs}, nil
}

// rawFeature is a feature encoded by internal/features, in a buffer of featureBuffers.
type rawFeature struct {
	body []byte
	crs  string
}

func (f rawFeature) write(w http.ResponseWriter) error {
	w.Header().Set("Content-Type", geoJSON)
	w.Header().Set("Content-Crs", "<"+f.crs+">")
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(f.body)
	if cap(f.body) <= maxFeatureBuffer { // written out: the writer keeps none of it
		buf := f.body[:0]
		featureBuffers.Put(&buf)
	}
	return err
}

// featureBuffers hold single features while they are encoded and written, so that the most
// frequent small response allocates no body (it was the largest allocation of the request).
var featureBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// maxFeatureBuffer keeps the buffer of an unusually large feature out of the pool.
const maxFeatureBuffer = 64 << 10

func featureBuffer() []byte { return (*featureBuffers.Get().(*[]byte))[:0] }

func (f rawFeature) VisitOgcGetCollectionItemFeatureResponse(w http.ResponseWriter) error {
	return f.write(w)
}
func (f rawFeature) VisitGetSingleFeatureResponse(w http.ResponseWriter) error { return f.write(w) }
