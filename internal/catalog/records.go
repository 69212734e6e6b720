package catalog

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"

	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/internal/db"
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

// RecordFields are the queryables of the record collection.
var RecordFields = []RecordField{
	{Name: "title", SQL: "d.title", Type: "string", Sortable: true},
	{Name: "description", SQL: "d.summary", Type: "string"},
	{Name: "type", SQL: "d.record_type", Type: "string", Sortable: true},
	{Name: "dataset_id", SQL: "d.id::text", Type: "string"},
	{Name: "created", SQL: "d.created_at", Type: "timestamp", Sortable: true},
	{Name: "updated", SQL: "d.updated_at", Type: "timestamp", Sortable: true},
	{Name: "language", SQL: "d.language", Type: "string", Sortable: true},
	{Name: "license", SQL: "d.license", Type: "string", Sortable: true},
	{Name: "geometry_type", SQL: "d.geometry_type", Type: "string", Sortable: true},
	{Name: "feature_count", SQL: "d.feature_count", Type: "integer", Sortable: true},
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
	RecordID      *uuid.UUID
	Limit, Offset int
	BBox          []float64 // CRS84; minx > maxx crosses the antimeridian
	Start, End    *time.Time
	Terms         []string // any term in the title, summary or themes
	IDs           []uuid.UUID
	Types         []string
	Equals        map[string]string // record field = value
	Filter        func(next int) (string, []any, error)
	Sort          []SortKey
}

// SortKey orders records by a field.
type SortKey struct {
	Field string
	Desc  bool
}

// Record is a catalog record as OGC API Records serves it.
type Record struct {
	ID, DatasetID                      uuid.UUID
	Title, RecordType                  string
	Summary, Language, License, Rights *string
	GeometryType                       *string
	Themes                             []string
	FeatureCount                       *int64
	Created, Updated                   time.Time
	VintageStart, VintageEnd           pgtype.Date
	Extent                             []byte // GeoJSON, nil without an extent
}

// Records returns one page of the records the caller may see and how many match.
func (s *Service) Records(ctx context.Context, p auth.Principal, q RecordQuery) ([]Record, int, error) {
	caller, role := who(p)
	args := []any{caller, role, p.IsAdmin()}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	where := []string{"catalog.dataset_visible(d.id, d.visibility, d.record_status, d.created_by, $1, $2, $3)"}
	if q.RecordID != nil {
		where = append(where, "d.record_id = "+arg(*q.RecordID))
	}
	if q.BBox != nil {
		env := func(a, b, c, e float64) string {
			return "ST_MakeEnvelope(" + arg(a) + "::float8, " + arg(b) + "::float8, " + arg(c) + "::float8, " + arg(e) + "::float8, 4326)"
		}
		box := env(q.BBox[0], q.BBox[1], q.BBox[2], q.BBox[3])
		if q.BBox[0] > q.BBox[2] {
			box = "ST_Collect(" + env(q.BBox[0], q.BBox[1], 180, q.BBox[3]) + ", " + env(-180, q.BBox[1], q.BBox[2], q.BBox[3]) + ")"
		}
		where = append(where, "ST_Intersects(("+recordExtent+"), "+box+")")
	}
	// A record matches a datetime when its data vintage overlaps it; records without a vintage
	// have no time to match.
	if q.Start != nil {
		where = append(where, "coalesce(d.data_vintage_end, d.data_vintage_start) >= "+arg(*q.Start)+"::date")
	}
	if q.End != nil {
		where = append(where, "coalesce(d.data_vintage_start, d.data_vintage_end) <= "+arg(*q.End)+"::date")
	}
	if len(q.Terms) > 0 {
		var terms []string
		for _, term := range q.Terms {
			pat := arg("%" + strings.NewReplacer(`\`, `\\`, "%", `\%`, "_", `\_`).Replace(term) + "%")
			terms = append(terms, "d.title ILIKE "+pat, "d.summary ILIKE "+pat, "array_to_string(d.theme_category, ' ') ILIKE "+pat)
		}
		where = append(where, "("+strings.Join(terms, " OR ")+")")
	}
	if len(q.IDs) > 0 {
		where = append(where, "d.record_id = ANY("+arg(q.IDs)+"::uuid[])")
	}
	if len(q.Types) > 0 {
		where = append(where, "d.record_type = ANY("+arg(q.Types)+"::text[])")
	}
	for name, v := range q.Equals {
		f, ok := recordField(name)
		if !ok || f.Type == "geometry" {
			return nil, 0, apperr.Invalid("unknown query parameter %q: neither an items parameter nor a queryable of the record collection", name)
		}
		var val any = v
		switch f.Type {
		case "integer":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil, 0, apperr.Invalid("%s: %q is not an integer", name, v)
			}
			val = n
		case "timestamp":
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return nil, 0, apperr.Invalid("%s: %q is not an RFC 3339 date-time", name, v)
			}
			val = t
		}
		where = append(where, f.SQL+" = "+arg(val))
	}
	if q.Filter != nil {
		sql, fargs, err := q.Filter(len(args) + 1)
		if err != nil {
			return nil, 0, err
		}
		args = append(args, fargs...)
		where = append(where, "("+sql+")")
	}
	order := make([]string, 0, len(q.Sort)+1)
	for _, k := range q.Sort {
		f, ok := recordField(k.Field)
		if !ok || !f.Sortable {
			return nil, 0, apperr.Invalid("sortby: %q is not a sortable of the record collection", k.Field)
		}
		if k.Desc {
			order = append(order, f.SQL+" DESC NULLS LAST")
		} else {
			order = append(order, f.SQL)
		}
	}
	if len(order) == 0 {
		order = append(order, "d.updated_at DESC")
	}
	order = append(order, "d.id")
	sql := `SELECT d.record_id, d.id, d.title, d.record_type, d.summary, d.language, d.license,
		nullif(concat_ws('; ', d.attribution, d.usage_constraints), ''), d.geometry_type, coalesce(d.theme_category, '{}'),
		d.feature_count, d.created_at, d.updated_at, d.data_vintage_start, d.data_vintage_end,
		ST_AsGeoJSON(` + recordExtent + `)::bytea, count(*) OVER ()
		FROM catalog.datasets d WHERE ` + strings.Join(where, " AND ") + ` ORDER BY ` + strings.Join(order, ", ") +
		` LIMIT ` + arg(q.Limit) + ` OFFSET ` + arg(q.Offset)
	rows, err := s.Pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, 0, db.QueryValueError(err)
	}
	defer rows.Close()
	out := []Record{}
	total := 0
	for rows.Next() {
		var r Record
		if err := rows.Scan(&r.ID, &r.DatasetID, &r.Title, &r.RecordType, &r.Summary, &r.Language, &r.License, &r.Rights, &r.GeometryType,
			&r.Themes, &r.FeatureCount, &r.Created, &r.Updated, &r.VintageStart, &r.VintageEnd, &r.Extent, &total); err != nil {
			return nil, 0, err
		}
		out = append(out, r)
	}
	return out, total, db.QueryValueError(rows.Err())
}
