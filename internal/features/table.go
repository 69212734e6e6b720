// Package features holds the SQL over dataset tables: rows, column statistics and values,
// geometry validation. It is the one place that builds SQL around user-chosen column names, and
// it only ever does so after finding the name among the table's real columns (information
// schema), quoting it with pgx.Identifier; every value travels as a parameter.
package features

import (
	"context"
	"encoding/json"
	"strings"

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
type Reader struct{ Pool *pgxpool.Pool }

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
}

// Rows returns one page of rows as JSON objects (gid first, no geometry) and the matching total.
func (r Reader) Rows(ctx context.Context, t Table, q RowsQuery) ([]map[string]any, int64, []Column, error) {
	cols := t.Columns
	if len(q.Columns) > 0 {
		cols = nil
		for _, name := range q.Columns {
			c, err := t.Column(name)
			if err != nil {
				return nil, 0, nil, apperr.Unprocessable("columns: the dataset has no column %q", name)
			}
			cols = append(cols, c)
		}
	}
	// jsonb_build_object keeps PostgreSQL types (numbers stay numbers) without a Go round trip
	// through interface{} per column.
	var b sqlbuild.Builder
	pairs := []string{b.Cast(t.ID, "text") + ", " + t.id()}
	for _, c := range cols {
		pairs = append(pairs, b.Cast(c.Name, "text")+", t."+pgx.Identifier{c.Name}.Sanitize())
	}
	order := t.id()
	if q.Sort != "" {
		name, desc := strings.CutPrefix(q.Sort, "-")
		if _, err := t.Column(name); err != nil && name != t.ID {
			return nil, 0, nil, apperr.Unprocessable("sort: the dataset has no column %q", name)
		}
		order = "t." + pgx.Identifier{name}.Sanitize()
		if desc {
			order += " DESC NULLS LAST"
		}
		order += ", " + t.id()
	}
	where := ""
	if q.Q != "" {
		pattern := b.Arg("%" + q.Q + "%")
		where = " WHERE (to_jsonb(t) - " + b.Cast(t.Geom, "text") + ")::text ILIKE " + pattern
	}
	sql := "SELECT jsonb_build_object(" + strings.Join(pairs, ", ") + "), count(*) OVER () FROM " + t.ident() + " t" + where +
		" ORDER BY " + order + " LIMIT " + b.Arg(q.Limit) + " OFFSET " + b.Arg(q.Skip)
	args := b.Args()
	rows, err := r.Pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, 0, nil, err
	}
	defer rows.Close()
	out := []map[string]any{}
	var total int64
	for rows.Next() {
		var raw []byte
		if err := rows.Scan(&raw, &total); err != nil {
			return nil, 0, nil, err
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, 0, nil, err
		}
		out = append(out, m)
	}
	return out, total, cols, rows.Err()
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
