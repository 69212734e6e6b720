// Package features holds the SQL over dataset tables: rows, column statistics and values,
// geometry validation. It is the one place that builds SQL around user-chosen column names, and
// it only ever does so after finding the name among the table's real columns (information
// schema), quoting it with pgx.Identifier; every value travels as a parameter.
package features

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"meridian/internal/apperr"
	"meridian/internal/sqlbuild"
)

// Column is a column of a dataset table.
type Column struct{ Name, Type string }

// Table is a dataset table with its key and geometry columns (gid and geom for ingested and
// created datasets, the operator's own for registered tables) and its attribute columns.
type Table struct {
	Schema, Name string
	ID, Geom     string
	IDType       string // data type of the key column
	Columns      []Column

	// GeomType is the geometry type the catalog records for the column (POINT, MULTIPOLYGON,
	// GEOMETRY, CURVEPOLYGON, ...); "" when unknown. Only a column that may hold curves pays
	// for linearizing them.
	GeomType string

	memo *statements // the statements written for a kept table (Kept), shared by its copies
}

// Kept returns t with the statements written for it remembered, for a description kept and
// read many times: the lookups of single features reuse their statement's text. A kept Table
// must not be changed; a changed description is a new Table.
func (t Table) Kept() Table {
	t.memo = &statements{}
	return t
}

// statements are a kept table's statements by the shape of their query. Shapes come from
// request parameters (properties, crs), so only the first few are remembered.
type statements struct {
	lookups sync.Map // lookupShape -> lookupStatement
	n       atomic.Int32
}

const maxStatements = 16

// recall is the statement kept for shape; m may be nil.
func (m *statements) recall(shape lookupShape) (lookupStatement, bool) {
	if m == nil {
		return lookupStatement{}, false
	}
	v, ok := m.lookups.Load(shape)
	if !ok {
		return lookupStatement{}, false
	}
	return v.(lookupStatement), true
}

// remember keeps st for shape while fewer than maxStatements shapes are kept; m may be nil (a
// table not kept). Only a new shape counts: the lookups that miss together on a table just kept
// all write the same statement.
func (m *statements) remember(shape lookupShape, st lookupStatement) {
	if m == nil {
		return
	}
	if _, had := m.lookups.LoadOrStore(shape, st); !had && m.n.Add(1) > maxStatements {
		m.lookups.Delete(shape)
	}
}

func (t Table) id() string { return "t." + pgx.Identifier{t.ID}.Sanitize() }

// geom is the geometry column as SQL; a table without one (record_type table) reads as NULL,
// so its features have geometry null and its extent is none.
func (t Table) geom() string {
	if t.Geom == "" {
		return "NULL::geometry"
	}
	return "t." + pgx.Identifier{t.Geom}.Sanitize()
}

// linear is the geometry column with curves turned into lines (GeoJSON has no arcs); a column
// whose type holds no curves is read as it is.
func (t Table) linear() string {
	g := t.geom()
	switch strings.TrimRight(strings.ToUpper(t.GeomType), "ZM") {
	case "POINT", "LINESTRING", "POLYGON", "MULTIPOINT", "MULTILINESTRING", "MULTIPOLYGON", "":
		if t.GeomType != "" || t.Geom == "" {
			return g
		}
	}
	return "CASE WHEN ST_HasArc(" + g + ") THEN ST_CurveToLine(" + g + ") ELSE " + g + " END"
}

func (t Table) ident() string { return pgx.Identifier{t.Schema, t.Name}.Sanitize() }

// Column finds an attribute column by name; an unknown name is a 404 for that column.
func (t Table) Column(name string) (Column, error) {
	for _, c := range t.Columns {
		if c.Name == name {
			return c, nil
		}
	}
	return Column{}, apperr.NotFound("the dataset has no column %q", name)
}

// Reader runs the reads against the pool.
type Reader struct {
	Pool *pgxpool.Pool
	// Lookups, when set, lets single features read by key share statements (see Lookups).
	Lookups *Lookups
	// Counts, when set, keeps the numbers matched of queries that name their data version.
	Counts *Counts
	// CountPool, when set, is where numbers matched are counted (db.OpenCounts), apart from the
	// pages' connections; else Pool.
	CountPool *pgxpool.Pool
}

func (r Reader) countPool() *pgxpool.Pool {
	if r.CountPool != nil {
		return r.CountPool
	}
	return r.Pool
}

// Describe reads a table's attribute columns (all but the key and geometry columns) and the type
// of its key from the system catalog.
func (r Reader) Describe(ctx context.Context, schema, name, idColumn, geomColumn string) (Table, error) {
	// pg_attribute, not information_schema.columns: the view costs 5 to 30 ms a call here, the
	// catalog a fraction of a millisecond. format_type without a modifier gives the type names
	// information_schema uses for built-in types ("character varying", "timestamp with time
	// zone"); others keep their own name. The catalog's GetDatasetRecord reads the same list.
	rows, err := r.Pool.Query(ctx, `SELECT a.attname, format_type(a.atttypid, NULL) FROM pg_attribute a
		WHERE a.attrelid = to_regclass(format('%I.%I', $1::text, $2::text)) AND a.attnum > 0 AND NOT a.attisdropped
		ORDER BY a.attnum`, schema, name)
	if err != nil {
		return Table{}, err
	}
	cols, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Column, error) {
		var c Column
		return c, row.Scan(&c.Name, &c.Type)
	})
	if err != nil {
		return Table{}, err
	}
	return split(schema, name, idColumn, geomColumn, cols), nil
}

// TableOf builds a table from the [[name, type], ...] column list the catalog reads with a
// dataset record, saving the round trip of Describe.
func TableOf(schema, name, idColumn, geomColumn string, columns []byte) (Table, error) {
	var pairs [][2]string
	if err := json.Unmarshal(columns, &pairs); err != nil {
		return Table{}, err
	}
	cols := make([]Column, len(pairs))
	for i, p := range pairs {
		cols[i] = Column{Name: p[0], Type: p[1]}
	}
	return split(schema, name, idColumn, geomColumn, cols), nil
}

// split sets the key and geometry columns apart from the attribute columns.
func split(schema, name, idColumn, geomColumn string, cols []Column) Table {
	t := Table{Schema: schema, Name: name, ID: idColumn, Geom: geomColumn}
	for _, c := range cols {
		switch c.Name {
		case idColumn:
			t.IDType = c.Type
		case geomColumn:
		default:
			t.Columns = append(t.Columns, c)
		}
	}
	return t
}

// RowsQuery pages through a table's attributes.
type RowsQuery struct {
	Sort        string   // column, "-column" for descending; default gid
	Q           string   // case-insensitive text match over the whole row
	Columns     []string // projection; all when empty
	Skip, Limit int
	After       *int64 // keyset cursor: rows whose (integer) key is greater; only with the default sort
	KnownCount  *int64 // the table's maintained row count, the total when Q is empty; nil when unknown
	// Equal keeps the rows whose column holds the value (a relationship followed from a feature).
	Equal *ColumnValue
	// Contains keeps the rows whose column (the key or an attribute) holds the text, without
	// regard to case: the rows page's filter[<column>].
	Contains map[string]string
}

// ColumnValue is a column and a value of it.
type ColumnValue struct {
	Column string
	Value  any
}

// RowsPage is one page of rows as JSON objects (key first, no geometry).
type RowsPage struct {
	Key     string // the key column, first in every row
	Rows    []map[string]any
	Total   int64    // rows matching Q
	Columns []Column // the columns in the rows, after the key
	Next    *int64   // After of the next page, when sorted by key and more rows follow
}

// Rows returns one page of rows and the matching total in one statement. The total is the known
// count when nothing narrows the table; otherwise a window count on offset pages, or a count
// subquery on keyset pages (where the window would only count the rows after the cursor).
func (r Reader) Rows(ctx context.Context, t Table, q RowsQuery) (RowsPage, error) {
	if q.Limit < 1 {
		// A page needs a row to say where the next one starts (and to carry the window count).
		return RowsPage{}, apperr.Invalid("limit: at least 1 row per page")
	}
	cols, err := t.projection(q.Columns)
	if err != nil {
		return RowsPage{}, err
	}
	byKey := q.Sort == "" || q.Sort == t.ID
	if q.After != nil && (!byKey || kindOf(t.IDType) != kindInt) {
		return RowsPage{}, apperr.Unprocessable("after pages by the integer key: it cannot be combined with sort, nor used on a table keyed by %s", t.IDType)
	}
	// jsonb_build_object keeps PostgreSQL types (numbers stay numbers) without a Go round trip
	// through interface{} per column.
	var b sqlbuild.Builder
	pairs := []string{b.Cast(t.ID, "text") + ", " + t.id()}
	for _, c := range cols {
		pairs = append(pairs, b.Cast(c.Name, "text")+", t."+pgx.Identifier{c.Name}.Sanitize())
	}
	order, err := t.rowOrder(q.Sort)
	if err != nil {
		return RowsPage{}, err
	}
	match, err := t.rowsWhere(&b, q)
	if err != nil {
		return RowsPage{}, err
	}
	var total string
	switch {
	case q.unfiltered() && q.KnownCount != nil:
		total = b.Arg(*q.KnownCount) + "::bigint"
	case q.After != nil:
		total = "(SELECT count(*) FROM " + t.ident() + " t WHERE " + match + ")"
	default:
		total = "count(*) OVER ()"
	}
	where, offset := match, "0"
	if q.After != nil {
		where += " AND " + t.id() + " > " + b.Arg(*q.After)
	} else {
		offset = b.Arg(q.Skip)
	}
	sql := "SELECT jsonb_build_object(" + strings.Join(pairs, ", ") + "), " + total + " FROM " + t.ident() + " t WHERE " + where +
		" ORDER BY " + order + " LIMIT " + b.Arg(q.Limit+1) + " OFFSET " + offset
	rows, err := r.Pool.Query(ctx, sql, b.Args()...)
	if err != nil {
		return RowsPage{}, err
	}
	defer rows.Close()
	page := RowsPage{Key: t.ID, Rows: []map[string]any{}, Columns: cols, Total: -1}
	more := false
	for rows.Next() {
		if len(page.Rows) == q.Limit {
			more = true
			break
		}
		var raw []byte
		if err := rows.Scan(&raw, &page.Total); err != nil {
			return RowsPage{}, err
		}
		// Numbers stay exact (json.Number): keys and bigint columns beyond 2^53 included.
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			return RowsPage{}, err
		}
		page.Rows = append(page.Rows, m)
	}
	rows.Close() // the connection goes back before any count below takes one
	if err := rows.Err(); err != nil {
		return RowsPage{}, err
	}
	if more && byKey && kindOf(t.IDType) == kindInt {
		last, _ := page.Rows[len(page.Rows)-1][t.ID].(json.Number)
		next, err := last.Int64()
		if err != nil {
			return RowsPage{}, fmt.Errorf("rows: key %q: %w", last, err)
		}
		page.Next = &next
	}
	if page.Total < 0 { // an empty page counts nothing: count the matches on their own
		page.Total, err = r.countRows(ctx, t, q)
	}
	return page, err
}

// countRows counts the rows matching q.Q, for a page past the end.
func (r Reader) countRows(ctx context.Context, t Table, q RowsQuery) (int64, error) {
	if q.unfiltered() && q.KnownCount != nil {
		return *q.KnownCount, nil
	}
	var b sqlbuild.Builder
	where, err := t.rowsWhere(&b, q)
	if err != nil {
		return 0, err
	}
	var n int64
	err = r.Pool.QueryRow(ctx, "SELECT count(*) FROM "+t.ident()+" t WHERE "+where, b.Args()...).Scan(&n)
	return n, err
}

// unfiltered tells a query that keeps every row (its total is the table's count).
func (q RowsQuery) unfiltered() bool { return q.Q == "" && q.Equal == nil && len(q.Contains) == 0 }

// rowsWhere is the condition of a rows page: q's text, the columns' texts, and the column value
// it follows.
func (t Table) rowsWhere(b *sqlbuild.Builder, q RowsQuery) (string, error) {
	match := t.rowMatch(b, q.Q)
	// In the order of the table's columns, so one filter always writes one statement.
	for _, c := range append([]Column{{Name: t.ID, Type: t.IDType}}, t.Columns...) {
		text, ok := q.Contains[c.Name]
		if !ok {
			continue
		}
		match += " AND t." + pgx.Identifier{c.Name}.Sanitize() + "::text ILIKE " + b.Arg(sqlbuild.Contains(text)) + ` ESCAPE '\'`
	}
	for name := range q.Contains {
		if _, err := t.Column(name); err != nil && name != t.ID {
			return "", apperr.Unprocessable("filter[%s]: the dataset has no column %q", name, name)
		}
	}
	if q.Equal == nil {
		return match, nil
	}
	c, err := t.KeyColumn(q.Equal.Column)
	if err != nil {
		return "", err
	}
	// The value comes from another table's column (Comparable): read as this column's type.
	return match + " AND t." + pgx.Identifier{c.Name}.Sanitize() + " = " + b.Cast(fmt.Sprint(q.Equal.Value), "text") +
		"::" + c.Type, nil
}

// rowMatch is the condition of the rows page's q: a case-insensitive match anywhere in the row
// but its geometry.
func (t Table) rowMatch(b *sqlbuild.Builder, q string) string {
	if q == "" {
		return "true"
	}
	return "(to_jsonb(t) - " + b.Cast(t.Geom, "text") + ")::text ILIKE " + b.Arg(sqlbuild.Contains(q)) + ` ESCAPE '\'`
}

// projection is the named columns of the table, all when none are named.
func (t Table) projection(names []string) ([]Column, error) {
	if len(names) == 0 {
		return t.Columns, nil
	}
	cols := make([]Column, 0, len(names))
	for _, name := range names {
		c, err := t.Column(name)
		if err != nil {
			return nil, apperr.Unprocessable("columns: the dataset has no column %q", name)
		}
		cols = append(cols, c)
	}
	return cols, nil
}

// rowOrder is the ORDER BY of a rows page: the sort column (descending with a leading "-"),
// then the key, so that pages never overlap.
func (t Table) rowOrder(sort string) (string, error) {
	if sort == "" {
		return t.id(), nil
	}
	name, desc := strings.CutPrefix(sort, "-")
	if _, err := t.Column(name); err != nil && name != t.ID {
		return "", apperr.Unprocessable("sort: the dataset has no column %q", name)
	}
	order := "t." + pgx.Identifier{name}.Sanitize()
	if desc {
		order += " DESC NULLS LAST"
	}
	return order + ", " + t.id(), nil
}

// ValueCount is one distinct value and how often it occurs.
type ValueCount struct {
	Value any
	Count int64
}

// Values lists a column's distinct values with their counts, most frequent first (or by value).
func (r Reader) Values(ctx context.Context, t Table, column, q string, byValue bool, skip, limit int) ([]ValueCount, int64, error) {
	c, err := t.Column(column)
	if err != nil {
		return nil, 0, err
	}
	col := "t." + pgx.Identifier{c.Name}.Sanitize()
	args := []any{limit, skip}
	where := ""
	if q != "" {
		args = append(args, "%"+q+"%")
		where = " WHERE " + col + "::text ILIKE $3"
	}
	order := "count(*) DESC, 1"
	if byValue {
		order = "1"
	}
	sql := "SELECT to_jsonb(" + col + "), count(*), count(*) OVER () FROM " + t.ident() + " t" + where +
		" GROUP BY " + col + " ORDER BY " + order + " LIMIT $1 OFFSET $2"
	rows, err := r.Pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	out := []ValueCount{}
	var total int64
	for rows.Next() {
		var raw []byte
		var vc ValueCount
		if err := rows.Scan(&raw, &vc.Count, &total); err != nil {
			return nil, 0, err
		}
		_ = json.Unmarshal(raw, &vc.Value)
		out = append(out, vc)
	}
	return out, total, rows.Err()
}
