package catalog

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"

	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/internal/cql2"
	"meridian/internal/db"
	"meridian/internal/sqlbuild"
)

// The catalog as an OGC API Records collection: one record per visible dataset. Records are
// filtered with dynamic SQL because CQL2 filters name any of the record fields below; every
// value is a parameter and the SQL of each field is fixed here.

// RecordField is a record property that filters and sorting may name.
type RecordField struct {
	Name, SQL string
	Type      string // string, integer, timestamp, geometry (CQL2 and JSON Schema types)
	Sortable  bool
}

// recordExtent is the dataset extent as a geometry: two boxes when it crosses the antimeridian.
const recordExtent = `CASE WHEN d.extent_bbox IS NULL OR cardinality(d.extent_bbox) <> 4 THEN NULL
	WHEN d.extent_bbox[1] <= d.extent_bbox[3] THEN ST_MakeEnvelope(d.extent_bbox[1], d.extent_bbox[2], d.extent_bbox[3], d.extent_bbox[4], 4326)
	ELSE ST_Collect(ST_MakeEnvelope(d.extent_bbox[1], d.extent_bbox[2], 180, d.extent_bbox[4], 4326),
		ST_MakeEnvelope(-180, d.extent_bbox[2], d.extent_bbox[3], d.extent_bbox[4], 4326)) END`

// recordDatetime is the datetime queryable: a record's data vintage, else its creation.
const recordDatetime = "coalesce(d.data_vintage_start, d.data_vintage_end, d.created_at::date)::timestamptz"

// RecordFields are the queryables of the record collection.
var RecordFields = []RecordField{
	{Name: "title", SQL: "d.title", Type: "string", Sortable: true},
	{Name: "description", SQL: "d.summary", Type: "string"},
	{Name: "type", SQL: "'dataset'::text", Type: "string"}, // every record is a dataset; its kind is record_type
	{Name: "record_type", SQL: "d.record_type", Type: "string", Sortable: true},
	{Name: "dataset_id", SQL: "d.id::text", Type: "string"},
	{Name: "created", SQL: "d.created_at", Type: "timestamp", Sortable: true},
	{Name: "updated", SQL: "d.updated_at", Type: "timestamp", Sortable: true},
	{Name: "published", SQL: "d.published_at", Type: "timestamp", Sortable: true},
	{Name: "language", SQL: "d.language", Type: "string", Sortable: true},
	{Name: "license", SQL: "d.license", Type: "string", Sortable: true},
	{Name: "geometry_type", SQL: "d.geometry_type", Type: "string", Sortable: true},
	{Name: "feature_count", SQL: "d.feature_count", Type: "integer", Sortable: true},
	// The record's one instant, as STAC items give it: the start of its data vintage (or its end),
	// else when the record was created.
	{Name: "datetime", SQL: recordDatetime, Type: "timestamp", Sortable: true},
	{Name: "geometry", SQL: "(" + recordExtent + ")", Type: "geometry"},
}

func recordField(name string) (RecordField, bool) {
	for _, f := range RecordFields {
		if f.Name == name {
			return f, true
		}
	}
	return RecordField{}, false
}

// RecordQuery selects records.
type RecordQuery struct {
	RecordID      *uuid.UUID // the record of this dataset (a record's id is its dataset's)
	CatalogID     *uuid.UUID // the record whose own uuid (the dataset's record_id) this is
	Limit, Offset int
	BBox          []float64 // CRS84; minx > maxx crosses the antimeridian
	Start, End    *time.Time
	Terms         []string // any term in the title, summary or themes
	Text          string   // full-text query (web-search syntax), typo-tolerant on titles and keywords
	// Mode ranks a text's records by meaning: SearchSemantic keeps the records of Nearest (the
	// records nearest to the text's embedding, best first: internal/ai); SearchHybrid adds them to
	// the text's matches. Both order by reciprocal rank fusion (search.go, rankedFrom).
	Mode     string
	Nearest  []uuid.UUID
	typos    bool                      // the statement has the typo branch of Text (searchMatch)
	Language string                    // the caller's language (canonical BCP 47): texts come translated into it when they are
	Keywords []string                  // any of these keywords (theme categories), case-insensitive
	visible  func(alias string) string // the caller's visibility rule (set by visibleRecords)
	IDs      []uuid.UUID
	Types    []string
	Equals   map[string]string // record field = value
	Filters  []*cql2.Filter    // over RecordFields, CRS84 literals; all must hold
	Sort     []SortKey

	GeometryType, SourceOrganization *string // case-insensitive equality
	SRID                             *int
	CollectionID                     *uuid.UUID   // datasets in this catalog collection
	CollectionIDs                    []uuid.UUID  // datasets in any of these catalog collections
	TimeOrCreated                    bool         // Start/End test the vintage, else the creation date (STAC)
	After                            *RecordAfter // keyset paging: the records after this one in the order of Sort
	Keyed                            bool         // answer each record's SortValues, for the next page's After
	UpdatedFrom, UpdatedTo           *time.Time   // last update, by date
	ExternalIDs                      []string     // the catalog keeps none: naming any matches nothing
}

// AddFilter parses a CQL2 filter over the record fields and adds it to the query.
func (q *RecordQuery) AddFilter(lang, src string) error {
	f, err := cql2.ParseFilter(lang, src, 4326, false)
	if err == nil {
		q.Filters = append(q.Filters, f)
	}
	return err
}

// RecordAfter is where a keyset page starts: the sort values of the last record of the previous
// page (as Record.SortValues gave them) and its dataset id, which breaks ties.
type RecordAfter struct {
	Values []any
	ID     uuid.UUID
}

// SortKey orders records by a field.
type SortKey struct {
	Field string
	Desc  bool
}

// Record is a catalog record as OGC API Records serves it.
type Record struct {
	ID, DatasetID                      uuid.UUID
	Title, RecordType, RecordStatus    string
	Visibility                         string // public, internal, restricted, private (the feeds' access rights)
	Summary, Language, License, Rights *string
	GeometryType                       *string
	Themes                             []string // ISO 19115 topic categories
	Keywords                           []string // the topic categories, then the record's own keywords
	FeatureCount                       *int64
	Created, Updated                   time.Time
	VintageStart, VintageEnd           pgtype.Date
	Extent                             []byte    // GeoJSON, nil without an extent
	BBox                               []float64 // west, south, east, north; nil without an extent

	UpdatedBy                                   *string // the username of who changed the record last
	NeverEdited                                 bool    // the record never changed after the statement that made it
	SRID                                        *int32
	Geographic                                  *bool // the storage CRS is longitude/latitude
	ColumnCount                                 *int32
	SourceOrganization, SourceFormat            *string
	QualityStatement, Lineage, UpdateFrequency  *string
	AccessConstraints, UsageConstraints, Origin *string
	QualityDetail                               []byte
	SourceHealth                                string
	LastCheckedAt, LastRefreshedAt              *time.Time
	Contacts                                    []byte // JSON array of OGC API Records contacts
	TableSchema, TableName                      string
	Distributions                               []byte // JSON array of the record's own distributions
	SortValues                                  []any  // the values of the query's sort keys (RecordAfter)
	BandCount                                   *int32 // a raster's bands; nil for others
	RasterResX                                  *float64
	RasterGeographic                            *bool
}

// Generated are the distributions the service offers for the record's dataset.
func (r Record) Generated() []Distribution {
	return GeneratedDistributions(r.DatasetID, r.ID, r.RecordType, r.TableSchema, r.TableName)
}

// keywordList is the keyword list of the record alias (catalog.record_keyword_list), without
// calling the function for a record that has no keywords of its own, whose list is then its theme
// categories: the function is not inlined, and its executor cost a search's keyword facet about
// a third of its time at 100,000 records.
func keywordList(alias string) string {
	return "CASE WHEN EXISTS (SELECT FROM catalog.record_keywords r WHERE r.dataset_id = " + alias + ".id) THEN catalog.record_keyword_list(" +
		alias + ".id, " + alias + ".theme_category) ELSE coalesce(" + alias + ".theme_category, '{}') END"
}

// recordContacts are a record's contacts as OGC API Records contacts, in their order.
const recordContacts = `(SELECT coalesce(jsonb_agg(jsonb_strip_nulls(jsonb_build_object('name', c.name, 'organization', c.organization,
		'email', c.email, 'emails', CASE WHEN c.email IS NOT NULL THEN jsonb_build_array(jsonb_build_object('value', c.email)) END,
		'phones', CASE WHEN c.phone IS NOT NULL THEN jsonb_build_array(jsonb_build_object('value', c.phone)) END,
		'roles', jsonb_build_array(c.role))) ORDER BY c.sort_order, c.created_at), '[]')
	FROM catalog.record_contacts c WHERE c.dataset_id = d.id)`

// recordDistributions are a record's own distributions as record properties carry them.
const recordDistributions = `(SELECT coalesce(jsonb_agg(jsonb_build_object('id', x.id, 'type', x.distribution_type, 'format', x.format,
		'url', x.url, 'title', x.title, 'media_type', x.media_type, 'is_primary', x.is_primary, 'auto_generated', false)
		ORDER BY x.created_at, x.id), '[]')
	FROM catalog.record_distributions x WHERE x.dataset_id = d.id)`

// GSD is a raster's ground sample distance in metres: its pixel size, converted from degrees at
// the middle of its extent for a geographic CRS; nil for others.
func (r Record) GSD() *float64 {
	if r.RasterResX == nil || *r.RasterResX <= 0 {
		return nil
	}
	gsd := *r.RasterResX
	if r.RasterGeographic != nil && *r.RasterGeographic {
		lat := 0.0
		if len(r.BBox) == 4 {
			lat = (r.BBox[1] + r.BBox[3]) / 2
		}
		gsd *= 111320 * math.Cos(lat*math.Pi/180)
	}
	return &gsd
}

// Freshness is the record's source freshness now (spec section 2.5).
func (r Record) Freshness(now time.Time) string {
	return Freshness(deref(r.Origin), r.UpdateFrequency, r.LastRefreshedAt, now)
}

// Records returns one page of the records the caller may see and how many match.
func (s *Service) Records(ctx context.Context, p auth.Principal, q RecordQuery) ([]Record, int, error) {
	out, total, err := s.records(ctx, p, q)
	if err == nil && len(out) == 0 && retryForTypos(&q) {
		return s.records(ctx, p, q)
	}
	return out, total, err
}

func (s *Service) records(ctx context.Context, p auth.Principal, q RecordQuery) ([]Record, int, error) {
	var b sqlbuild.Builder
	where, err := visibleRecords(&b, p, q)
	if err != nil {
		return nil, 0, err
	}
	keys, err := sortFields(q.Sort)
	if err != nil {
		return nil, 0, err
	}
	order := make([]string, 0, len(keys)+1)
	for _, k := range keys {
		order = append(order, k.order())
	}
	if len(order) == 0 && q.Text != "" && q.Mode == "" {
		order = append(order, searchRank(&b, q)+" DESC")
	}
	if len(order) == 0 {
		order = append(order, "d.updated_at DESC")
	}
	_, id := matchedRecord(q)
	order = append(order, id)
	from, match := recordsFrom(q), strings.Join(where, " AND ")
	if q.Mode != "" {
		if q.After != nil {
			return nil, 0, apperr.Invalid("semantic and hybrid search page with offset, not with a token")
		}
		from, match = rankedFrom(&b, q, where), "true"
		if len(keys) == 0 {
			order = []string{"s.score DESC", id}
		}
	}
	// A keyset page starts after the previous page's last record; its count is of the whole match.
	counted, page := "count(*) OVER ()", match
	if q.After != nil {
		after, err := afterRecord(&b, keys, id, *q.After)
		if err != nil {
			return nil, 0, err
		}
		counted, page = "(SELECT count(*) FROM "+from+" WHERE "+match+")", match+" AND "+after
	}
	values := "NULL::jsonb"
	if q.Keyed {
		exprs := make([]string, len(keys))
		for i, k := range keys {
			exprs[i] = k.SQL
		}
		values = "jsonb_build_array(" + strings.Join(exprs, ", ") + ")"
	}
	lang := b.Cast(q.Language, "text")
	// The page is chosen first (keys, order and the count of the whole match), and only its rows
	// are then read in full: the extent's GeoJSON and the lookups are not computed for every
	// matching record, which a search over thousands would otherwise pay.
	sql := `WITH page AS (SELECT ` + id + ` AS id, row_number() OVER (ORDER BY ` + strings.Join(order, ", ") + `) AS n, ` + counted + ` AS total,
			` + values + ` AS sort_values
			FROM ` + from + ` WHERE ` + page + `
			ORDER BY n LIMIT ` + b.Arg(q.Limit) + ` OFFSET ` + b.Arg(q.Offset) + `)
		SELECT d.record_id, d.id, coalesce(tr.title, d.title), d.record_type, d.record_status, coalesce(tr.summary, d.summary),
		coalesce(tr.language, d.language), d.license,
		nullif(concat_ws('; ', d.attribution, d.usage_constraints), ''), d.geometry_type, coalesce(d.theme_category, '{}'),
		` + keywordList("d") + `,
		d.feature_count, d.created_at, d.updated_at, d.data_vintage_start, d.data_vintage_end,
		ST_AsGeoJSON(` + recordExtent + `)::bytea, CASE WHEN cardinality(d.extent_bbox) = 4 THEN d.extent_bbox END,
		(SELECT u.username FROM catalog.users u WHERE u.id = coalesce(d.updated_by, d.created_by)), d.updated_at = d.created_at,
		d.srid, (SELECT r.proj4text LIKE '%+proj=longlat%' FROM spatial_ref_sys r WHERE r.srid = d.srid),
		CASE WHEN jsonb_typeof(d.column_info) = 'array' THEN jsonb_array_length(d.column_info) END,
		d.source_organization, d.source_format, d.quality_statement, d.lineage_summary, d.update_frequency,
		d.access_constraints, d.usage_constraints, d.origin, d.quality_detail, d.source_health,
		d.last_checked_at, d.last_refreshed_at, ` + recordContacts + `, d.table_schema, d.table_name, ` + recordDistributions + `,
		(d.raster->>'band_count')::int, (d.raster->>'res_x')::float8, (d.raster->>'crs_is_geographic')::boolean, page.sort_values, page.total, d.visibility
		FROM page JOIN catalog.datasets d ON d.id = page.id
		LEFT JOIN LATERAL (SELECT t.language, t.title, t.summary FROM catalog.record_translations t
			WHERE t.dataset_id = d.id AND split_part(t.language, '-', 1) = split_part(` + lang + `, '-', 1)
			ORDER BY t.language = ` + lang + ` DESC, t.language LIMIT 1) tr ON true
		ORDER BY page.n`
	// The typo branch's statement stays on custom plans: its trigram test, planned for the text
	// at hand, took a third of the time its generic plan does.
	pool := s.Pool
	if q.Text != "" && !q.typos {
		pool = s.searchPool()
	}
	rows, err := pool.Query(ctx, sql, b.Args()...)
	if err != nil {
		return nil, 0, db.QueryValueError(err)
	}
	defer rows.Close()
	out := make([]Record, 0, min(q.Limit, 100))
	total := 0
	for rows.Next() {
		out = append(out, Record{})
		r := &out[len(out)-1]
		if err := rows.Scan(&r.ID, &r.DatasetID, &r.Title, &r.RecordType, &r.RecordStatus, &r.Summary, &r.Language, &r.License, &r.Rights,
			&r.GeometryType, &r.Themes, &r.Keywords, &r.FeatureCount, &r.Created, &r.Updated, &r.VintageStart, &r.VintageEnd, &r.Extent, &r.BBox,
			&r.UpdatedBy, &r.NeverEdited, &r.SRID, &r.Geographic, &r.ColumnCount,
			&r.SourceOrganization, &r.SourceFormat, &r.QualityStatement, &r.Lineage, &r.UpdateFrequency,
			&r.AccessConstraints, &r.UsageConstraints, &r.Origin, &r.QualityDetail, &r.SourceHealth,
			&r.LastCheckedAt, &r.LastRefreshedAt, &r.Contacts, &r.TableSchema, &r.TableName, &r.Distributions,
			&r.BandCount, &r.RasterResX, &r.RasterGeographic, &r.SortValues, &total, &r.Visibility); err != nil {
			return nil, 0, err
		}
	}
	return out, total, db.QueryValueError(rows.Err())
}

// visibleRecords are the predicates of the records the caller may see that match q.
func visibleRecords(b *sqlbuild.Builder, p auth.Principal, q RecordQuery) ([]string, error) {
	caller, role := who(p)
	callerArgs := b.Arg(caller) + ", " + b.Arg(role) + ", " + b.Arg(p.IsAdmin())
	// visible is the rule for any alias of catalog.datasets: a condition of the query that looks
	// at other records (the typo gate of a search) must see only what the caller may see.
	visible := func(alias, id string) string {
		return "catalog.dataset_visible(" + id + ", " + alias + ".visibility, " + alias + ".record_status, " + alias +
			".created_by, " + callerArgs + ")"
	}
	q.visible = func(alias string) string { return visible(alias, alias+".id") }
	more, err := recordConditions(b, q)
	return append([]string{visible(matchedRecord(q))}, more...), err
}

// sortKey is a sortable record field in a direction.
type sortKey struct {
	RecordField
	desc bool
}

// order is the key as an ORDER BY item: nulls last either way, as the keyset test assumes.
func (k sortKey) order() string {
	if k.desc {
		return k.SQL + " DESC NULLS LAST"
	}
	return k.SQL + " ASC NULLS LAST"
}

func sortFields(sort []SortKey) ([]sortKey, error) {
	keys := make([]sortKey, len(sort))
	for i, k := range sort {
		f, ok := recordField(k.Field)
		if !ok || !f.Sortable {
			return nil, apperr.Invalid("sortby: %q is not a sortable of the record collection", k.Field)
		}
		keys[i] = sortKey{f, k.Desc}
	}
	return keys, nil
}

// afterRecord is the keyset test of the records that follow a.Values (then a.ID, which breaks
// ties) in the order of keys, nulls last: some key beyond its value, every key before it equal.
func afterRecord(b *sqlbuild.Builder, keys []sortKey, id string, a RecordAfter) (string, error) {
	if len(a.Values) != len(keys) {
		return "", apperr.Invalid("token: it was made for another order; start again without it")
	}
	types := map[string]string{"string": "text", "integer": "bigint", "timestamp": "timestamptz"}
	var alternatives, equal []string
	for i, k := range keys {
		v := a.Values[i]
		if v != nil {
			beyond := ">"
			if k.desc {
				beyond = "<"
			}
			// Token values come as JSON wrote them (numbers and instants as text): typed by SQL.
			val := b.Cast(fmt.Sprint(v), "text") + "::" + types[k.Type]
			alternatives = append(alternatives, "("+strings.Join(append(slices.Clone(equal), "("+k.SQL+" "+beyond+" "+val+" OR "+k.SQL+" IS NULL)"), " AND ")+")")
			equal = append(equal, k.SQL+" = "+val)
		} else {
			equal = append(equal, k.SQL+" IS NULL")
		}
	}
	alternatives = append(alternatives, "("+strings.Join(append(equal, id+" > "+b.Cast(a.ID, "uuid")), " AND ")+")")
	return "(" + strings.Join(alternatives, " OR ") + ")", nil
}

// recordConditions are the query's predicates over catalog.datasets d (a search tests the stored
// box on its documents' copy: see matchedRecord).
func recordConditions(b *sqlbuild.Builder, q RecordQuery) ([]string, error) {
	var where []string
	if q.RecordID != nil {
		where = append(where, "d.id = "+b.Arg(*q.RecordID))
	}
	if q.CatalogID != nil {
		where = append(where, "d.record_id = "+b.Arg(*q.CatalogID))
	}
	if q.BBox != nil {
		// Interval tests on the stored box, no geometry built per record: latitudes overlap, and
		// the longitudes of one of the query's spans overlap the record's (an extent crossing the
		// antimeridian is [west, 180] and [-180, east]: either may meet the span).
		// A search also narrows its documents by their extent's index (migration 32) before any
		// record is read.
		var spans, boxes []string
		alias, _ := matchedRecord(q)
		box := func(i int) string { return alias + ".extent_bbox[" + strconv.Itoa(i) + "]" }
		south, north := b.Cast(q.BBox[1], "float8"), b.Cast(q.BBox[3], "float8")
		for _, span := range sqlbuild.Spans(q.BBox[0], q.BBox[2]) {
			w, e := b.Cast(span[0], "float8"), b.Cast(span[1], "float8")
			spans = append(spans, "(CASE WHEN "+box(1)+" <= "+box(3)+" THEN "+box(1)+" <= "+e+" AND "+box(3)+" >= "+w+
				" ELSE "+box(1)+" <= "+e+" OR "+box(3)+" >= "+w+" END)")
			boxes = append(boxes, "s.extent && ST_MakeEnvelope("+w+", "+south+", "+e+", "+north+", 4326)")
		}
		where = append(where, "cardinality("+alias+".extent_bbox) = 4 AND "+box(2)+" <= "+north+
			" AND "+box(4)+" >= "+south+" AND ("+strings.Join(spans, " OR ")+")")
		if q.onDocuments() {
			where = append(where, "("+strings.Join(boxes, " OR ")+")")
		}
	}
	// A record matches a datetime when its data vintage overlaps it; records without a vintage
	// have no time to match.
	ends, starts := "coalesce(d.data_vintage_end, d.data_vintage_start", "coalesce(d.data_vintage_start, d.data_vintage_end"
	if q.TimeOrCreated {
		ends, starts = ends+", d.created_at::date", starts+", d.created_at::date"
	}
	if q.Start != nil {
		where = append(where, ends+") >= "+b.Cast(*q.Start, "date"))
	}
	if q.End != nil {
		where = append(where, starts+") <= "+b.Cast(*q.End, "date"))
	}
	if (q.Start != nil || q.End != nil) && q.onDocuments() {
		// The documents' copy of the record's time (migration 135) is a superset of both kinds of
		// match: it narrows the candidates in the extent's index; the tests above decide.
		where = append(where, "s.record_time && daterange("+b.Cast(q.Start, "date")+", "+b.Cast(q.End, "date")+", '[]')")
	}
	if len(q.Terms) > 0 {
		var terms []string
		for _, term := range q.Terms {
			pat := b.Arg("%" + likeEscaper.Replace(term) + "%")
			terms = append(terms, "d.title ILIKE "+pat, "d.summary ILIKE "+pat, "array_to_string(d.theme_category, ' ') ILIKE "+pat)
		}
		where = append(where, "("+strings.Join(terms, " OR ")+")")
	}
	if q.Text != "" && q.Mode == "" {
		where = append(where, searchMatch(b, q, q.visible))
	}
	if len(q.Keywords) > 0 {
		lower := make([]string, len(q.Keywords))
		for i, k := range q.Keywords {
			lower[i] = strings.ToLower(k)
		}
		where = append(where, "EXISTS (SELECT FROM unnest("+keywordList("d")+") k WHERE lower(k) = ANY("+b.Cast(lower, "text[]")+"))")
	}
	if len(q.IDs) > 0 {
		where = append(where, "d.id = ANY("+b.Cast(q.IDs, "uuid[]")+")")
	}
	if kinds := recordKinds(q.Types); len(kinds) > 0 {
		where = append(where, "d.record_type = ANY("+b.Cast(kinds, "text[]")+")")
	}
	for name, v := range q.Equals {
		f, ok := recordField(name)
		if !ok || f.Type == "geometry" {
			return nil, apperr.Invalid("unknown query parameter %q: neither an items parameter nor a queryable of the record collection", name)
		}
		val, err := recordValue(f, v)
		if err != nil {
			return nil, err
		}
		where = append(where, f.SQL+" = "+b.Arg(val))
	}
	for _, f := range q.Filters {
		sql, err := f.Render(b, recordQueryables, 4326)
		if err != nil {
			return nil, err
		}
		where = append(where, "("+sql+")")
	}
	return append(where, recordAttributes(b, q)...), nil
}

// likeEscaper makes a text a literal inside a LIKE pattern.
var likeEscaper = strings.NewReplacer(`\`, `\\`, "%", `\%`, "_", `\_`)

// recordKinds are the record types a type list keeps: `dataset` (a record's type) names every
// dataset, so a list naming it keeps every kind (nil); otherwise the kinds named.
func recordKinds(types []string) []string {
	for _, t := range types {
		if t == "dataset" {
			return nil
		}
	}
	return types
}

// recordAttributes are the predicates of the catalog's own record parameters.
func recordAttributes(b *sqlbuild.Builder, q RecordQuery) []string {
	var where []string
	if q.GeometryType != nil {
		where = append(where, "lower(d.geometry_type) = lower("+b.Arg(*q.GeometryType)+")")
	}
	if q.SourceOrganization != nil {
		where = append(where, "lower(d.source_organization) = lower("+b.Arg(*q.SourceOrganization)+")")
	}
	if q.SRID != nil {
		where = append(where, "d.srid = "+b.Cast(*q.SRID, "int"))
	}
	if q.CollectionID != nil {
		where = append(where, "EXISTS (SELECT FROM catalog.collection_datasets cd WHERE cd.collection_id = "+b.Arg(*q.CollectionID)+" AND cd.dataset_id = d.id)")
	}
	if len(q.CollectionIDs) > 0 {
		where = append(where, "EXISTS (SELECT FROM catalog.collection_datasets cd WHERE cd.collection_id = ANY("+
			b.Cast(q.CollectionIDs, "uuid[]")+") AND cd.dataset_id = d.id)")
	}
	if q.UpdatedFrom != nil {
		where = append(where, "d.updated_at >= "+b.Cast(*q.UpdatedFrom, "date"))
	}
	if q.UpdatedTo != nil {
		where = append(where, "d.updated_at < "+b.Cast(*q.UpdatedTo, "date")+" + 1")
	}
	if len(q.ExternalIDs) > 0 {
		where = append(where, "false")
	}
	return where
}

// recordValue reads a query-string value as the field's type.
func recordValue(f RecordField, v string) (any, error) {
	switch f.Type {
	case "integer":
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, apperr.Invalid("%s: %q is not an integer", f.Name, v)
		}
		return n, nil
	case "timestamp":
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return nil, apperr.Invalid("%s: %q is not an RFC 3339 date-time", f.Name, v)
		}
		return t, nil
	}
	return v, nil
}

// recordQueryables are the record fields as CQL2 properties.
var recordQueryables = func() map[string]cql2.Property {
	types := map[string]cql2.Type{"string": cql2.String, "integer": cql2.Integer, "timestamp": cql2.Timestamp, "geometry": cql2.Geometry}
	props := make(map[string]cql2.Property, len(RecordFields))
	for _, f := range RecordFields {
		props[f.Name] = cql2.Property{Name: f.Name, SQL: f.SQL, Type: types[f.Type]}
	}
	return props
}()
