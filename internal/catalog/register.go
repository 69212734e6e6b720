package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/internal/features"
	"meridian/store"
)

// Discovered is a table or view of a source schema that could be registered.
type Discovered struct {
	Schema, Table, Kind      string
	GeometryColumn, GeomType *string
	SRID                     *int32
	EstimatedRows            int64
	HasPrimaryKey            bool
	DatasetID                *uuid.UUID
}

// discoverSQL lists the tables and views of one schema with their first geometry column.
// Written here rather than in sql/ because it reads PostGIS's geometry_columns view, which the
// migrations do not define for sqlc.
const discoverSQL = `SELECT n.nspname, c.relname, CASE WHEN c.relkind IN ('v', 'm') THEN 'view' ELSE 'table' END,
	g.f_geometry_column, g.type, g.srid, greatest(c.reltuples, 0)::bigint,
	EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary),
	d.id, count(*) OVER ()
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN LATERAL (SELECT f_geometry_column::text, type::text, srid FROM geometry_columns gc
	WHERE gc.f_table_schema = n.nspname AND gc.f_table_name = c.relname ORDER BY 1 LIMIT 1) g ON true
LEFT JOIN catalog.datasets d ON d.table_schema = n.nspname AND d.table_name = c.relname
WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'v', 'm')
	AND ($2 = '' OR c.relname ILIKE '%' || $2 || '%') AND ($3 OR d.id IS NULL)
ORDER BY c.relname
LIMIT $4 OFFSET $5`

// Discover pages through a configured source schema. Admins only.
func (s *Service) Discover(ctx context.Context, p auth.Principal, schemas []string, schema, q string, includeRegistered bool, skip, limit int) ([]Discovered, int, error) {
	if !p.IsAdmin() {
		return nil, 0, apperr.Forbidden("discovering tables needs the admin role")
	}
	if schema == "" {
		schema = schemas[0]
	}
	if !slices.Contains(schemas, schema) {
		return nil, 0, apperr.Unprocessable("schema %q is not a configured source schema (%s)", schema, strings.Join(schemas, ", "))
	}
	rows, err := s.Pool.Query(ctx, discoverSQL, schema, q, includeRegistered, limit, skip)
	if err != nil {
		return nil, 0, err
	}
	var total int64
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Discovered, error) {
		var d Discovered
		err := r.Scan(&d.Schema, &d.Table, &d.Kind, &d.GeometryColumn, &d.GeomType, &d.SRID, &d.EstimatedRows, &d.HasPrimaryKey, &d.DatasetID, &total)
		return d, err
	})
	return out, int(total), err
}

// Registration asks to register one table.
type Registration struct {
	TablePath, GeometryColumn, IDColumn, Title, Summary, Visibility string
}

// Register records an existing table as a dataset without copying it. The geometry column
// defaults to the table's first one, the key to its single-column primary key.
func (s *Service) Register(ctx context.Context, p auth.Principal, schemas []string, r Registration) (uuid.UUID, error) {
	if !p.IsAdmin() {
		return uuid.Nil, apperr.Forbidden("registering tables needs the admin role")
	}
	schema, table, ok := strings.Cut(r.TablePath, ".")
	if !ok && len(schemas) > 0 {
		schema, table = schemas[0], r.TablePath // a bare name is looked up in the first source schema
		r.TablePath = schema + "." + table
	}
	if schema == "" || table == "" {
		return uuid.Nil, apperr.Unprocessable("table_name must be a table name or schema.table")
	}
	if !slices.Contains(schemas, schema) {
		return uuid.Nil, apperr.Unprocessable("schema %q is not a configured source schema (%s)", schema, strings.Join(schemas, ", "))
	}
	var geomCol, gtype string
	var srid int32
	var exists bool
	if err := s.Pool.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", pgx.Identifier{schema, table}.Sanitize()).Scan(&exists); err != nil {
		return uuid.Nil, err
	}
	if !exists {
		return uuid.Nil, apperr.NotFound("table %s does not exist", r.TablePath)
	}
	err := s.Pool.QueryRow(ctx, `SELECT f_geometry_column::text, type::text, srid FROM geometry_columns
		WHERE f_table_schema = $1 AND f_table_name = $2 AND ($3 = '' OR f_geometry_column = $3) ORDER BY 1 LIMIT 1`,
		schema, table, r.GeometryColumn).Scan(&geomCol, &gtype, &srid)
	if errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, apperr.Unprocessable("table %s has no geometry column %s", r.TablePath, r.GeometryColumn)
	}
	if err != nil {
		return uuid.Nil, err
	}
	idCol, err := s.keyColumn(ctx, schema, table, r.IDColumn)
	if err != nil {
		return uuid.Nil, err
	}
	st, err := s.tableStats(ctx, schema, table, idCol, geomCol, srid)
	if err != nil {
		return uuid.Nil, err
	}
	count, bbox, info := st.Count, st.BBox, st.ColumnInfo
	title := r.Title
	if title == "" {
		title = table
	}
	visibility := r.Visibility
	if visibility == "" {
		visibility = auth.VisibilityPrivate
	}
	origin := "registered"
	prm := store.InsertDatasetParams{TableSchema: schema, TableName: table, Title: title, Visibility: visibility,
		RecordType: "vector_dataset", Origin: &origin, Srid: &srid, OriginalSrid: &srid, GeometryType: &gtype,
		HasGenericGeometry: strings.EqualFold(gtype, "GEOMETRY"), FeatureCount: &count, ExtentBbox: bbox, ColumnInfo: info,
		CreatedBy: &p.UserID, Registered: true, IDColumn: &idCol, GeometryColumn: &geomCol}
	if r.Summary != "" {
		prm.Summary = &r.Summary
	}
	var id uuid.UUID
	err = pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		var err error
		id, err = AddRecord(ctx, s.Q.WithTx(tx), prm, p)
		return err
	})
	if uniqueViolation(err) {
		return uuid.Nil, apperr.Conflict("table %s is registered already", r.TablePath)
	}
	return id, err
}

// keyColumn returns the given column when a unique index covers exactly it, or else the table's
// single-column primary key.
func (s *Service) keyColumn(ctx context.Context, schema, table, want string) (string, error) {
	rows, err := s.Pool.Query(ctx, `SELECT a.attname::text, i.indisprimary FROM pg_index i
		JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
		WHERE i.indrelid = to_regclass($1) AND i.indisunique AND i.indnkeyatts = 1 ORDER BY i.indisprimary DESC`,
		pgx.Identifier{schema, table}.Sanitize())
	if err != nil {
		return "", err
	}
	defer rows.Close()
	for rows.Next() {
		var col string
		var primary bool
		if err := rows.Scan(&col, &primary); err != nil {
			return "", err
		}
		if col == want || (want == "" && primary) {
			return col, nil
		}
	}
	if want != "" {
		return "", apperr.Unprocessable("column %s is not a unique key of %s.%s", want, schema, table)
	}
	return "", apperr.Unprocessable("%s.%s has no single-column primary key; name a unique id_column", schema, table)
}

// TableStats are what a registered table's record says of its data.
type TableStats struct {
	Count      int64
	BBox       []float64 // WGS 84; nil for a table without geometries
	ColumnInfo []byte    // the column profile, as column_info stores it
}

// tableStats counts a table, measures its extent in WGS 84 and profiles its columns.
func (s *Service) tableStats(ctx context.Context, schema, table, idCol, geomCol string, srid int32) (TableStats, error) {
	t, err := features.Reader{Pool: s.Pool}.Describe(ctx, schema, table, idCol, geomCol)
	if err != nil {
		return TableStats{}, err
	}
	ident := pgx.Identifier{schema, table}.Sanitize()
	g := pgx.Identifier{geomCol}.Sanitize()
	var st TableStats
	err = s.Pool.QueryRow(ctx, `SELECT count(*), (SELECT ARRAY[ST_XMin(e), ST_YMin(e), ST_XMax(e), ST_YMax(e)]
		FROM (SELECT ST_Transform(ST_SetSRID(ST_Extent(`+g+`)::geometry, $1), 4326) AS e FROM `+ident+`) x WHERE e IS NOT NULL)
		FROM `+ident, srid).Scan(&st.Count, &st.BBox)
	if err != nil {
		return st, err
	}
	cols, err := features.Reader{Pool: s.Pool}.Profile(ctx, t, st.Count)
	if err != nil {
		return st, err
	}
	st.ColumnInfo, _ = json.Marshal(cols)
	return st, nil
}

// RegisteredStats re-reads a registered table's statistics as registering it did (no copy);
// a table that was dropped or renamed behind the catalog is an error naming it.
func (s *Service) RegisteredStats(ctx context.Context, e Entry) (TableStats, error) {
	if !e.Registered {
		return TableStats{}, apperr.Conflict("the dataset is no registered table")
	}
	var exists bool
	if err := s.Pool.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", pgx.Identifier{e.TableSchema, e.TableName}.Sanitize()).Scan(&exists); err != nil {
		return TableStats{}, err
	}
	if !exists {
		return TableStats{}, apperr.Unprocessable("the registered table %s.%s no longer exists", e.TableSchema, e.TableName)
	}
	var srid int32
	if e.Srid != nil {
		srid = *e.Srid
	}
	return s.tableStats(ctx, e.TableSchema, e.TableName, e.IDColumn, e.GeometryColumn, srid)
}

// RecordRefresh writes the history entry of a refresh that made data version version.
func RecordRefresh(ctx context.Context, q *store.Queries, id uuid.UUID, version int32, p auth.Principal, changes map[string]any) error {
	return history(ctx, q, id, version, ActionDatasetRefresh, p, changes)
}
