package features

import (
	"context"
	"encoding/binary"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"meridian/internal/apperr"
	"meridian/internal/cql2"
	"meridian/internal/db"
	"meridian/internal/sqlbuild"
)

// kind is how a column's value travels and is written as JSON.
type kind uint8

const (
	kindString kind = iota
	kindInt
	kindFloat
	kindNumeric
	kindBool
	kindDate
	kindTimestamp
	kindTimestampTZ
	kindJSON
)

// kindOf maps an information_schema data_type to the way Items selects and writes it.
func kindOf(pgType string) kind {
	switch pgType {
	case "smallint", "integer", "bigint":
		return kindInt
	case "real", "double precision":
		return kindFloat
	case "numeric":
		return kindNumeric
	case "boolean":
		return kindBool
	case "date":
		return kindDate
	case "timestamp without time zone":
		return kindTimestamp
	case "timestamp with time zone":
		return kindTimestampTZ
	case "text", "character varying", "character", "uuid", "time without time zone", "time with time zone", "interval":
		return kindString
	}
	return kindJSON
}

// selectExpr is the select-list expression of a column: types whose binary form we decode are
// read as they are; the rest as text (numeric, strings) or as JSON text (arrays, json, others).
func selectExpr(col string, k kind) string {
	switch k {
	case kindNumeric, kindString:
		return col + "::text"
	case kindJSON:
		return "to_jsonb(" + col + ")::text"
	}
	return col
}

// Temporal reports the column that datetime filters and the temporal extent use: the first
// date or timestamp column.
func (t Table) Temporal() (Column, bool) {
	for _, c := range t.Columns {
		if k := kindOf(c.Type); k == kindDate || k == kindTimestamp || k == kindTimestampTZ {
			return c, true
		}
	}
	return Column{}, false
}

// Sortable reports whether a column can order features.
func Sortable(c Column) bool { return kindOf(c.Type) != kindJSON }

// TimeRange is a datetime filter: an instant (Start == End) or a closed interval with open ends
// as nil.
type TimeRange struct{ Start, End *time.Time }

// SortKey orders features by a column.
type SortKey struct {
	Column string
	Desc   bool
}

// ItemsQuery selects features of a table.
type ItemsQuery struct {
	ID            *string // one feature by key
	Limit, Offset int     // a Limit of 0 reads every feature (one stream, no page)
	AfterKey      *int64  // keyset paging: features whose integer key is greater, in key order

	BBox     []float64 // minx, miny, maxx, maxy in BBoxSRID; minx > maxx crosses the antimeridian
	BBoxSRID int

	Time   *TimeRange        // on Table.Temporal
	Equals map[string]string // property = value, values as sent in the query string
	Filter *cql2.Filter      // over Queryables(t)

	Sort       []SortKey
	Properties []string // nil for all

	StorageSRID int  // SRID of the geometry column; 0 is taken as 4326
	OutSRID     int  // SRID of the output; 0 is 4326
	SwapXY      bool // write latitude first (EPSG:4326 axis order)
	NoGeometry  bool // geometry null in every feature (include_geometry=false)
	ForceZ      bool // three ordinates per position, 0 where the data has no height

	// KnownCount is the table's maintained feature count (the catalog record's), which is the
	// number matched when nothing narrows the table; nil when unknown.
	KnownCount *int64

	// Guard, when set, makes the read conditional on the dataset's catalog record (see Guard).
	Guard *Guard

	// Count, when set, names the data version the number matched of a filtered page is kept
	// for (see Counts); nil counts every time.
	Count *CountKey

	countInPage bool // the page query counts the matches too (matched.go)
}

// Filtered reports whether the query narrows the table (so the record's feature count is not the
// number matched). A keyset cursor (AfterKey) pages; it does not narrow.
func (q ItemsQuery) Filtered() bool {
	return q.BBox != nil || q.Time != nil || len(q.Equals) > 0 || q.Filter != nil
}

// Items runs the query and returns a cursor over its features, with the first row already read
// so that query errors surface before any byte of the response is written.
func (r Reader) Items(ctx context.Context, t Table, q ItemsQuery) (*Cursor, error) {
	c := &Cursor{limit: q.Limit, swap: q.SwapXY, forceZ: q.ForceZ, idKind: kindOf(t.IDType), offset: q.Offset, keyset: q.AfterKey != nil,
		guarded: q.Guard != nil, pageMatched: -1}
	if q.Limit <= 0 {
		c.limit = -1
	}
	if r.Lookups != nil {
		if held, cols, ok, err := r.Lookups.read(ctx, r.Pool, t, q); ok {
			if err == nil {
				err = c.start(held, cols)
			}
			if err != nil {
				return nil, err
			}
			return c, nil
		}
	}
	q.countInPage = r.countsInPage(q)
	sql, args, cols, err := itemsSQL(t, q)
	if err != nil {
		return nil, err
	}
	rows, err := r.Pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, db.QueryValueError(err)
	}
	// Counted on a second connection while the page streams: started once the page holds its
	// own, which it gives back before it waits for the count (Matched).
	c.matched = r.countMatched(ctx, t, q)
	if err := c.start(rows, cols); err != nil {
		c.stopCount()
		return nil, db.QueryValueError(err)
	}
	return c, nil
}

func itemsSQL(t Table, q ItemsQuery) (string, []any, []Column, error) {
	var b sqlbuild.Builder
	sql, cols, err := pageSQL(&b, t, q)
	if err != nil || q.Guard == nil {
		return sql, b.Args(), cols, err
	}
	return q.Guard.wrap(&b, sql), b.Args(), cols, nil
}

// pageSQL is the query of one page of features (or one feature, or all of them).
func pageSQL(b *sqlbuild.Builder, t Table, q ItemsQuery) (string, []Column, error) {
	list, cols, err := selectList(t, q)
	if err != nil {
		return "", nil, err
	}
	list = "SELECT " + guardColumn(q) + list
	where, err := conditions(b, t, q, storageOf(q))
	if err != nil {
		return "", nil, err
	}
	cond := ""
	if len(where) > 0 {
		cond = " WHERE " + strings.Join(where, " AND ")
	}
	var order []string
	byID, keyDesc := false, false
	for _, k := range q.Sort {
		col := t.id()
		if k.Column != t.ID {
			c, err := t.Column(k.Column)
			if err != nil || !Sortable(c) {
				return "", nil, apperr.Invalid("sortby: %q is not a sortable of the collection", k.Column)
			}
			col = "t." + pgx.Identifier{c.Name}.Sanitize()
		} else {
			byID, keyDesc = true, k.Desc
		}
		if k.Desc {
			col += " DESC NULLS LAST"
		}
		order = append(order, col)
	}
	if !byID {
		// The key breaks ties, so offsets page through a stable order.
		order = append(order, t.id())
	}
	orderBy := " ORDER BY " + strings.Join(order, ", ")
	from := " FROM " + t.ident() + " t"
	if q.ID != nil && q.Offset == 0 {
		// The key is unique: no order or page to cut. Without LIMIT and OFFSET parameters the
		// prepared statement gets a generic plan after five runs; with them PostgreSQL plans
		// every run anew (a LIMIT of unknown size makes the generic plan look dear), which cost
		// as much database CPU as the lookup itself.
		return list + from + cond, cols, nil
	}
	if q.Limit <= 0 {
		return list + from + cond + orderBy, cols, nil
	}
	// One row beyond the page tells whether a next page exists without counting.
	page := " LIMIT " + b.Arg(q.Limit+1) + " OFFSET " + b.Arg(q.Offset)
	switch {
	case q.countInPage && q.BBox != nil:
		return countedPageSQL(list, from, cond, orderBy, page), cols, nil
	case q.countInPage:
		// Counted apart in the same statement (run once, before the page): the page can stop
		// early along an index in key order while the count picks its own plan.
		list += ", (SELECT count(*)" + from + cond + ")"
	}
	switch {
	case q.Offset == 0:
		return list + from + cond + orderBy + page, cols, nil
	case len(order) == 1 && len(where) == 0: // in key order only (the key ends every order)
		// A page deep in key order: the skipped rows are counted on the key's index alone (an
		// index-only scan once the table is vacuumed) and only the page's rows are read from the
		// table. Read in one pass, every skipped row would be fetched from the heap, a page
		// each when rows are not stored in key order, and its geometry converted to WKB:
		// at offset 50,000 of a million points that is 40 ms instead of 3 ms of the database.
		// The key is unique; a row whose key is NULL (possible when a nullable unique column was
		// chosen as the key of a registered table) is not reached this way.
		dir := ""
		if keyDesc {
			dir = " DESC NULLS LAST"
		}
		// The lateral lookup (LIMIT 1 keeps it from being flattened into a join the planner may
		// hash over the whole table) is a nested loop over the page's keys, in their order.
		return list + " FROM (SELECT " + t.id() + " AS k" + from + orderBy + page + ") p CROSS JOIN LATERAL (SELECT *" + from +
			" WHERE " + t.id() + " = p.k LIMIT 1) t ORDER BY p.k" + dir, cols, nil
	default:
		// The page is cut before the select list is evaluated, so that skipped rows are not
		// converted to WKB and text; the outer ORDER BY keeps the subquery's order at no cost.
		return list + " FROM (SELECT t.*" + from + cond + orderBy + page + ") t" + orderBy, cols, nil
	}
}

// selectList is the select list of q's features over the table aliased t: the key, the geometry
// as WKB, then the properties asked for.
func selectList(t Table, q ItemsQuery) (string, []Column, error) {
	storage, out := storageOf(q), q.OutSRID
	if out == 0 {
		out = 4326
	}
	geom := t.linear()
	switch {
	case t.Geom == "":
		if q.BBox != nil {
			return "", nil, apperr.Invalid("bbox: the collection has no geometry")
		}
	case q.NoGeometry:
		geom = "NULL::geometry"
	case q.StorageSRID == 0 && q.OutSRID == 0:
		geom = wgs84(geom) // the caller does not know the CRS: each row says its own
	case out != storage && storage > 0:
		geom = "ST_Transform(" + geom + ", " + strconv.Itoa(out) + ")"
	}
	cols := t.Columns
	if q.Properties != nil {
		cols = make([]Column, 0, len(q.Properties))
		for _, name := range q.Properties {
			c, err := t.Column(name)
			if err != nil {
				return "", nil, apperr.Invalid("properties: the collection has no property %q", name)
			}
			cols = append(cols, c)
		}
	}
	var sb strings.Builder
	sb.WriteString(selectExpr(t.id(), kindOf(t.IDType)) + ", ST_AsBinary(" + geom + ")")
	for _, c := range cols {
		sb.WriteString(", " + selectExpr("t."+pgx.Identifier{c.Name}.Sanitize(), kindOf(c.Type)))
	}
	return sb.String(), cols, nil
}

// guardColumn leads a guarded query's rows: present in every row of a page, NULL in the row of
// an empty one (Guard.wrap).
func guardColumn(q ItemsQuery) string {
	if q.Guard != nil {
		return "true, "
	}
	return ""
}

// countedPageSQL is a page filtered by a bbox that also counts every match, in the same scan:
// the window is computed over all matching rows before the page is cut, and rides on each row
// of the page. Matches found through the spatial index are all read and sorted to cut a page in
// key order anyway, so the count costs a pass over rows already in memory. (Other filters may
// let the page stop early along the key's index; a window would make it read the whole table
// in key order, so they are counted by a subquery of their own instead.)
func countedPageSQL(list, from, cond, orderBy, page string) string {
	return list + ", t." + matchedColumn + " FROM (SELECT t.*, count(*) OVER () AS " + matchedColumn + from + cond + orderBy + page + ") t" + orderBy
}

// matchedColumn names the count in countedPageSQL; a space keeps it apart from table columns.
const matchedColumn = `"meridian matched"`

// conditions are the query's predicates over the table t.
func conditions(b *sqlbuild.Builder, t Table, q ItemsQuery, storage int) ([]string, error) {
	var where []string
	if q.ID != nil {
		where = append(where, idSQL(b, t, *q.ID))
	}
	if q.AfterKey != nil {
		if kindOf(t.IDType) != kindInt {
			return nil, apperr.Invalid("after_gid: the collection's key %q is not an integer", t.ID)
		}
		if len(q.Sort) > 0 {
			return nil, apperr.Invalid("after_gid: pages in key order; it cannot be combined with sortby")
		}
		where = append(where, t.id()+" > "+b.Cast(*q.AfterKey, "bigint"))
	}
	if q.BBox != nil {
		where = append(where, bboxSQL(b, t.geom(), q.BBox, q.BBoxSRID, storage))
	}
	if q.Time != nil {
		c, ok := t.Temporal()
		if !ok {
			return nil, apperr.Invalid("datetime: the collection has no temporal property")
		}
		col := "t." + pgx.Identifier{c.Name}.Sanitize()
		switch {
		case q.Time.Start != nil && q.Time.End != nil && q.Time.Start.Equal(*q.Time.End):
			where = append(where, col+" = "+b.Arg(*q.Time.Start))
		default:
			if q.Time.Start != nil {
				where = append(where, col+" >= "+b.Arg(*q.Time.Start))
			}
			if q.Time.End != nil {
				where = append(where, col+" <= "+b.Arg(*q.Time.End))
			}
			if q.Time.Start == nil && q.Time.End == nil {
				where = append(where, col+" IS NOT NULL")
			}
		}
	}
	for _, name := range sortedKeys(q.Equals) {
		c, err := t.Column(name)
		if err != nil {
			return nil, apperr.Invalid("the collection has no property %q", name)
		}
		v, err := parseValue(c, q.Equals[name])
		if err != nil {
			return nil, err
		}
		col := "t." + pgx.Identifier{c.Name}.Sanitize()
		if kindOf(c.Type) == kindString && c.Type != "text" && c.Type != "character varying" || kindOf(c.Type) == kindJSON {
			col += "::text"
		}
		where = append(where, col+" = "+b.Arg(v))
	}
	if q.Filter != nil {
		sql, err := q.Filter.Render(b, Queryables(t), storage)
		if err != nil {
			return nil, err
		}
		where = append(where, "("+sql+")")
	}
	return where, nil
}

// idSQL is the predicate of one feature by key. An integer key is compared as an integer, so its
// index finds the row (a text comparison reads the whole table); an id that is not the canonical
// text of an integer matches nothing, as its text comparison would.
func idSQL(b *sqlbuild.Builder, t Table, id string) string {
	if kindOf(t.IDType) == kindInt {
		n, err := strconv.ParseInt(id, 10, 64)
		if err != nil || strconv.FormatInt(n, 10) != id {
			return "false"
		}
		return t.id() + " = " + b.Arg(n) + "::bigint"
	}
	return t.id() + "::text = " + b.Arg(id)
}

// bboxSQL is the predicate of a bounding box; a box crossing the antimeridian is two boxes. The
// box is transformed to the storage CRS (so the spatial index serves); a negative storage SRID
// marks a table without a CRS, whose coordinates are compared as they are.
func bboxSQL(b *sqlbuild.Builder, geom string, box []float64, boxSRID, storage int) string {
	if boxSRID == 0 {
		boxSRID = 4326
	}
	one := func(minx, miny, maxx, maxy float64) string {
		if storage == 3857 && boxSRID == 4326 {
			// Web Mercator ends short of the poles; a box reaching them would not transform.
			miny, maxy = max(miny, -85.06), min(maxy, 85.06)
		}
		srid := boxSRID
		if storage < 0 {
			srid = 0 // a table without a CRS: the box is taken in its coordinates
		}
		env := "ST_MakeEnvelope(" + b.Arg(minx) + "::float8, " + b.Arg(miny) + "::float8, " + b.Arg(maxx) + "::float8, " + b.Arg(maxy) + "::float8, " + strconv.Itoa(srid) + ")"
		if boxSRID != storage && storage >= 0 {
			env = "ST_Transform(" + env + ", " + strconv.Itoa(storage) + ")"
		}
		return "ST_Intersects(" + geom + ", " + env + ")"
	}
	if boxSRID != 4326 {
		return one(box[0], box[1], box[2], box[3])
	}
	var parts []string
	for _, span := range sqlbuild.Spans(box[0], box[2]) {
		parts = append(parts, one(span[0], box[1], span[1], box[3]))
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return "(" + strings.Join(parts, " OR ") + ")"
}

// parseValue turns a query-string value into a parameter of the column's type.
func parseValue(c Column, s string) (any, error) {
	var v any
	var err error
	switch kindOf(c.Type) {
	case kindInt:
		v, err = strconv.ParseInt(s, 10, 64)
	case kindFloat, kindNumeric:
		v, err = strconv.ParseFloat(s, 64)
	case kindBool:
		v, err = strconv.ParseBool(s)
	case kindDate:
		v, err = time.Parse(time.DateOnly, s)
	case kindTimestamp, kindTimestampTZ:
		v, err = time.Parse(time.RFC3339Nano, s)
	default:
		return s, nil
	}
	if err != nil {
		return nil, apperr.Invalid("%s: %q is not a valid %s value", c.Name, s, c.Type)
	}
	return v, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// rows are what a Cursor reads: a query's pgx.Rows, or a row held for one read of a batch.
type rows interface {
	Next() bool
	Err() error
	RawValues() [][]byte
	FieldDescriptions() []pgconn.FieldDescription
	Close()
}

// Cursor streams the features of one page.
type Cursor struct {
	rows    rows
	keys    [][]byte // property names, JSON-quoted
	kinds   []kind
	idKind  kind
	swap    bool
	forceZ  bool
	limit   int // -1: no page, every row
	offset  int
	n       int
	pending bool // the current row has been read but not written
	more    bool
	keyset  bool // paged by AfterKey: a page does not know what came before it
	guarded bool // rows lead with the guard's presence column

	pageMatched int64 // the count the page query carried (countInPage), -1 without one

	matched *matchCount
}

// start reads the first row, so that query errors surface before any byte of a response is
// written.
func (c *Cursor) start(rows rows, cols []Column) error {
	c.rows = rows
	for _, col := range cols {
		c.keys = append(c.keys, appendString(nil, []byte(col.Name)))
		c.kinds = append(c.kinds, kindOf(col.Type))
	}
	c.pending = rows.Next()
	if !c.pending {
		err := rows.Err()
		if err == nil && c.guarded {
			err = ErrStale // no row at all: the guard did not hold
		}
		if err != nil {
			c.Close()
			return err
		}
	}
	if c.guarded && c.pending && rows.RawValues()[0] == nil {
		c.pending = false // the guard held over an empty page
	}
	if c.pending && c.matched != nil && c.matched.inPage {
		raw := rows.RawValues()
		if v := raw[len(raw)-1]; len(v) == 8 {
			c.pageMatched = int64(binary.BigEndian.Uint64(v))
		}
	}
	return nil
}

// Append appends the next feature of the page to dst; ok is false when the page is complete.
func (c *Cursor) Append(dst []byte) (out []byte, ok bool, err error) {
	if !c.pending {
		return dst, false, nil
	}
	if c.n == c.limit {
		c.more = true
		c.pending = false
		return dst, false, nil
	}
	raw := c.rows.RawValues()
	fds := c.rows.FieldDescriptions()
	if c.guarded {
		raw, fds = raw[1:], fds[1:]
	}
	dst = append(dst, `{"type":"Feature","id":`...)
	dst = appendValue(dst, c.idKind, fds[0].Format == pgx.BinaryFormatCode, raw[0])
	dst = append(dst, `,"geometry":`...)
	if dst, err = appendGeometry(dst, raw[1], c.swap, c.forceZ); err != nil {
		return dst, false, err
	}
	dst = append(dst, `,"properties":{`...)
	for i, k := range c.kinds {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, c.keys[i]...)
		dst = append(dst, ':')
		dst = appendValue(dst, k, fds[i+2].Format == pgx.BinaryFormatCode, raw[i+2])
	}
	dst = append(dst, "}}"...)
	c.n++
	c.pending = c.rows.Next()
	if !c.pending {
		if err := c.rows.Err(); err != nil {
			return dst, false, err
		}
	}
	return dst, true, nil
}

// Returned is how many features were appended.
func (c *Cursor) Returned() int { return c.n }

// More reports whether a feature beyond the page exists (known once Append said the page ended).
func (c *Cursor) More() bool { return c.more }

// Close releases the connection (and stops a count still running).
func (c *Cursor) Close() {
	c.rows.Close()
	c.stopCount()
}
