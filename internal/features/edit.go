package features

// Single features of a dataset table as GeoJSON (read by gid, paged, streamed) and their edits:
// geometry checked against the column and turned into the column's CRS, properties checked
// against the real columns, and the count and extent the catalog record keeps.

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"meridian/internal/apperr"
)

// Queryer runs SQL: the pool, or the transaction of an edit.
type Queryer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// GeoFeature is one feature in GeoJSON parts: the key, the geometry in WGS 84 (nil when the
// feature has none) and the attribute values with their database types (numbers stay numbers).
type GeoFeature struct {
	ID         int64
	Geometry   json.RawMessage
	Properties map[string]any
}

// Type is the GeoJSON type of the feature's geometry, "" without one.
func (f GeoFeature) Type() string {
	var g struct{ Type string }
	_ = json.Unmarshal(f.Geometry, &g)
	return g.Type
}

// wgs84 is geom in EPSG:4326. A geometry without SRID is
// taken to be in longitude/latitude already.
func wgs84(geom string) string {
	return "CASE WHEN ST_SRID(" + geom + ") IN (0, 4326) THEN " + geom + " ELSE ST_Transform(" + geom + ", 4326) END"
}

// decodeAttrs decodes an attribute object keeping numbers exact (a bigint above 2^53 stays intact).
func decodeAttrs(b []byte) (map[string]any, error) {
	m := map[string]any{}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		return nil, fmt.Errorf("features: attributes: %w", err)
	}
	return m, nil
}

// FeatureByID returns one feature by key; 404 when there is none.
func (r Reader) FeatureByID(ctx context.Context, t Table, gid int64) (GeoFeature, error) {
	f, _, err := readFeature(ctx, r.Pool, t, gid, false)
	return f, err
}

// readFeature reads one feature through the items query and its encoder, as every read
// operation does; lock holds the row until the transaction ends.
func readFeature(ctx context.Context, q Queryer, t Table, gid int64, lock bool) (GeoFeature, []byte, error) {
	id := strconv.FormatInt(gid, 10)
	sql, args, cols, err := itemsSQL(t, ItemsQuery{ID: &id})
	if err != nil {
		return GeoFeature{}, nil, err
	}
	if lock {
		sql += " FOR UPDATE OF t"
	}
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return GeoFeature{}, nil, err
	}
	c := &Cursor{limit: 1, idKind: kindOf(t.IDType)}
	if err := c.start(rows, cols); err != nil {
		return GeoFeature{}, nil, err
	}
	defer c.Close()
	body, ok, err := c.Append(nil)
	if err != nil || !ok {
		return GeoFeature{}, nil, cmp.Or(err, errNoFeature(gid))
	}
	var raw struct {
		Geometry   json.RawMessage
		Properties json.RawMessage
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return GeoFeature{}, nil, fmt.Errorf("features: %w", err)
	}
	f := GeoFeature{ID: gid}
	if string(raw.Geometry) != "null" {
		f.Geometry = raw.Geometry
	}
	f.Properties, err = decodeAttrs(raw.Properties)
	return f, raw.Properties, err
}

func errNoFeature(gid int64) error { return apperr.NotFound("feature %d not found", gid) }

// GeometrySpec is what a table's geometry column accepts, read from its type modifier.
type GeometrySpec struct {
	Type  string // upper-case base type: POINT, MULTIPOLYGON, GEOMETRY, ...
	SRID  int    // the column's CRS; 0 when it declares none
	Z, M  bool
	Typed bool // false for a bare geometry column, which takes any type and dimension
}

// Generic reports whether the column takes any geometry type (GeometryCollections included).
func (s GeometrySpec) Generic() bool { return s.Type == "GEOMETRY" }

// Label is the column's geometry type as people write it: Point, MultiPolygonZ, Geometry.
func (s GeometrySpec) Label() string {
	l := s.Type
	for _, n := range geoJSONNames {
		if strings.EqualFold(n, l) {
			l = n
		}
	}
	if l == "GEOMETRY" {
		l = "Geometry"
	}
	if s.Z {
		l += "Z"
	}
	if s.M {
		l += "M"
	}
	return l
}

var geoJSONNames = []string{"Point", "MultiPoint", "LineString", "MultiLineString", "Polygon", "MultiPolygon", "GeometryCollection"}

// GeometryOf reads the geometry column's type, dimensions and CRS.
func (r Reader) GeometryOf(ctx context.Context, t Table) (GeometrySpec, error) {
	var s GeometrySpec
	var kind string
	var typmod, dims *int
	err := r.Pool.QueryRow(ctx, `SELECT postgis_typmod_type(a.atttypmod), postgis_typmod_srid(a.atttypmod), postgis_typmod_dims(a.atttypmod), a.atttypmod
		FROM pg_attribute a WHERE a.attrelid = to_regclass($1) AND a.attname = $2 AND NOT a.attisdropped`,
		t.ident(), t.Geom).Scan(&kind, &s.SRID, &dims, &typmod)
	if errors.Is(err, pgx.ErrNoRows) {
		return s, apperr.Conflict("the dataset's table has no geometry column %q", t.Geom)
	}
	if err != nil {
		return s, err
	}
	s.Typed = typmod != nil && *typmod >= 0
	kind = strings.ToUpper(kind)
	if s.Typed {
		if strings.HasSuffix(kind, "ZM") {
			s.Z, s.M, kind = true, true, strings.TrimSuffix(kind, "ZM")
		} else if strings.HasSuffix(kind, "Z") {
			s.Z, kind = true, strings.TrimSuffix(kind, "Z")
		} else if strings.HasSuffix(kind, "M") && kind != "GEOMETRY" {
			s.M, kind = true, strings.TrimSuffix(kind, "M")
		}
	}
	s.Type = kind
	if !s.Typed {
		s.Type = "GEOMETRY"
	}
	return s, nil
}

// geoJSONGeometry is the part of a GeoJSON geometry checked before PostGIS reads it.
type geoJSONGeometry struct {
	Type        string            `json:"type"`
	Coordinates json.RawMessage   `json:"coordinates"`
	Geometries  []json.RawMessage `json:"geometries"`
}

// PrepareGeometry checks a GeoJSON geometry (WGS 84 longitude/latitude, RFC 7946) against the
// column and returns it as EWKB in the column's CRS, ready for InsertFeature and UpdateFeature; a
// nil result is no geometry (JSON null). What does not fit answers 422:
//   - a type the column does not take: Point, LineString and Polygon are promoted to their Multi
//     type for a Multi column; a GeometryCollection fits only a generic column (or a
//     GeometryCollection one), never inside another collection;
//   - a position outside longitude -180..180 or latitude -90..90;
//   - an empty geometry (send null instead), or one PostGIS finds invalid (ST_IsValidReason);
//   - a geometry the column's CRS cannot represent (the transformation fails).
//
// Dimensions follow the column: a Z given to a 2D column is dropped, a 3D column gets Z 0 where
// none is given (ST_Force2D, ST_Force3DZ); a bare geometry column keeps what was sent, in WGS 84.
func (r Reader) PrepareGeometry(ctx context.Context, spec GeometrySpec, raw json.RawMessage) ([]byte, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var g geoJSONGeometry
	if err := json.Unmarshal(raw, &g); err != nil {
		return nil, apperr.Unprocessable("geometry: not a GeoJSON geometry object: %v", err)
	}
	promote := false
	switch {
	case g.Type == "GeometryCollection":
		if !spec.Generic() && spec.Type != "GEOMETRYCOLLECTION" {
			return nil, apperr.Unprocessable("geometry: a GeometryCollection is accepted only by datasets with a generic geometry column; this dataset's geometry type is %s", spec.Label())
		}
		for i, m := range g.Geometries {
			var member geoJSONGeometry
			if err := json.Unmarshal(m, &member); err != nil {
				return nil, apperr.Unprocessable("geometry.geometries[%d]: not a GeoJSON geometry object", i)
			}
			if member.Type == "GeometryCollection" {
				return nil, apperr.Unprocessable("geometry.geometries[%d]: nested GeometryCollections are not accepted", i)
			}
			if !slices.Contains(geoJSONNames, member.Type) {
				return nil, apperr.Unprocessable("geometry.geometries[%d]: unknown geometry type %q", i, member.Type)
			}
			if err := checkPositions(member.Coordinates, fmt.Sprintf("geometry.geometries[%d].coordinates", i)); err != nil {
				return nil, err
			}
		}
	case !slices.Contains(geoJSONNames, g.Type):
		return nil, apperr.Unprocessable("geometry: unknown geometry type %q", g.Type)
	default:
		upper := strings.ToUpper(g.Type)
		switch {
		case spec.Generic() || spec.Type == upper:
		case spec.Type == "MULTI"+upper:
			promote = true
		default:
			return nil, apperr.Unprocessable("geometry: a %s does not fit this dataset, whose geometry type is %s", g.Type, spec.Label())
		}
		if err := checkPositions(g.Coordinates, "geometry.coordinates"); err != nil {
			return nil, err
		}
	}
	expr := "ST_GeomFromGeoJSON($1::text)"
	if promote {
		expr = "ST_Multi(" + expr + ")"
	}
	if spec.Typed {
		switch {
		case spec.Z && spec.M:
			expr = "ST_Force4D(" + expr + ")"
		case spec.Z:
			expr = "ST_Force3DZ(" + expr + ")"
		case spec.M:
			expr = "ST_Force3DM(" + expr + ")"
		default:
			expr = "ST_Force2D(" + expr + ")"
		}
	}
	stored := "ST_SetSRID(g, 4326)"
	switch {
	case !spec.Typed || spec.SRID == 4326:
	case spec.SRID == 0:
		stored = "ST_SetSRID(g, 0)"
	default:
		stored = "ST_Transform(ST_SetSRID(g, 4326), " + strconv.Itoa(spec.SRID) + ")"
	}
	var empty, valid bool
	var reason *string
	var ewkb []byte
	err := r.Pool.QueryRow(ctx, `SELECT ST_IsEmpty(g), ST_IsValid(g), ST_IsValidReason(g), ST_AsEWKB(`+stored+`)
		FROM (SELECT `+expr+` AS g) s`, string(raw)).Scan(&empty, &valid, &reason, &ewkb)
	if err != nil {
		if dataError(err) {
			return nil, apperr.Unprocessable("geometry: %s", pgMessage(err))
		}
		return nil, err
	}
	if empty {
		return nil, apperr.Unprocessable("geometry: the geometry is empty; send null for a feature without geometry")
	}
	if !valid {
		return nil, apperr.Unprocessable("geometry: the geometry is invalid: %s", editDeref(reason))
	}
	return ewkb, nil
}

// checkPositions walks GeoJSON coordinates (nested arrays of positions) and refuses a position
// outside WGS 84 longitude/latitude.
func checkPositions(raw json.RawMessage, where string) error {
	var v any
	if len(raw) == 0 {
		return apperr.Unprocessable("%s: missing", where)
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return apperr.Unprocessable("%s: %v", where, err)
	}
	var walk func(v any) error
	walk = func(v any) error {
		arr, ok := v.([]any)
		if !ok {
			return apperr.Unprocessable("%s: expected arrays of positions", where)
		}
		if len(arr) > 0 {
			if _, isNum := arr[0].(float64); isNum {
				return checkPosition(arr, where)
			}
		}
		for _, item := range arr {
			if err := walk(item); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(v)
}

func checkPosition(pos []any, where string) error {
	if len(pos) < 2 || len(pos) > 3 {
		return apperr.Unprocessable("%s: a position has 2 or 3 numbers (longitude, latitude, height), not %d", where, len(pos))
	}
	nums := make([]float64, len(pos))
	for i, p := range pos {
		f, ok := p.(float64)
		if !ok {
			return apperr.Unprocessable("%s: positions hold numbers only", where)
		}
		nums[i] = f
	}
	if nums[0] < -180 || nums[0] > 180 || nums[1] < -90 || nums[1] > 90 {
		return apperr.Unprocessable("%s: position %s is outside the coordinate range of WGS 84 (longitude -180..180, latitude -90..90; GeoJSON gives longitude first)",
			where, strings.Join(strings.Fields(fmt.Sprint(nums)), ", "))
	}
	return nil
}

// CheckProperties checks properties against the table's columns and returns them as the JSON object the
// write functions take. Unknown names answer 422 naming them all; so do values that cannot become
// their column's type (a structural check first, then PostgreSQL's own conversion, column by column
// to name the culprits). The key column is not a property: the database assigns it.
func (r Reader) CheckProperties(ctx context.Context, t Table, props map[string]any) ([]byte, []string, error) {
	if props == nil {
		props = map[string]any{}
	}
	var unknown, wrong []string
	names := make([]string, 0, len(props))
	for name, v := range props {
		c, err := t.Column(name)
		if err != nil {
			unknown = append(unknown, name)
			continue
		}
		names = append(names, name)
		if msg := fitsKind(c, v); msg != "" {
			wrong = append(wrong, name+": "+msg)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		cols := make([]string, len(t.Columns))
		for i, c := range t.Columns {
			cols[i] = c.Name
		}
		return nil, nil, apperr.Unprocessable("properties: unknown %s %s (the dataset's columns: %s)",
			editPlural(len(unknown), "property", "properties"), strings.Join(unknown, ", "), strings.Join(cols, ", "))
	}
	sort.Strings(names)
	if len(wrong) > 0 {
		sort.Strings(wrong)
		return nil, nil, apperr.Unprocessable("properties: values that do not fit their column: %s", strings.Join(wrong, "; "))
	}
	b, err := json.Marshal(props)
	if err != nil {
		return nil, nil, apperr.Unprocessable("properties: %v", err)
	}
	if len(names) == 0 {
		return b, names, nil
	}
	rowType := "NULL::" + t.ident()
	if _, err := r.Pool.Exec(ctx, "SELECT FROM jsonb_populate_record("+rowType+", $1::jsonb)", b); err == nil {
		return b, names, nil
	} else if !dataError(err) {
		return nil, nil, err
	}
	for _, name := range names {
		one, _ := json.Marshal(map[string]any{name: props[name]})
		if _, err := r.Pool.Exec(ctx, "SELECT FROM jsonb_populate_record("+rowType+", $1::jsonb)", one); err != nil {
			if !dataError(err) {
				return nil, nil, err
			}
			wrong = append(wrong, name+": "+pgMessage(err))
		}
	}
	if len(wrong) == 0 {
		wrong = []string{"the values together do not fit the table"}
	}
	return nil, nil, apperr.Unprocessable("properties: values that do not fit their column: %s", strings.Join(wrong, "; "))
}

// fitsKind is what is wrong with the JSON kind of v for column c ("" when it may fit; PostgreSQL
// decides the rest). null fits every column as far as JSON goes.
func fitsKind(c Column, v any) string {
	if v == nil {
		return ""
	}
	t := strings.ToLower(c.Type)
	switch v.(type) {
	case map[string]any:
		if t != "json" && t != "jsonb" {
			return "an object does not fit a " + c.Type + " column"
		}
	case []any:
		if t != "json" && t != "jsonb" && t != "array" {
			return "an array does not fit a " + c.Type + " column"
		}
	case bool:
		switch t {
		case "boolean", "json", "jsonb", "text", "character varying", "character":
		default:
			return "true/false does not fit a " + c.Type + " column"
		}
	case float64, json.Number:
		switch t {
		case "smallint", "integer", "bigint":
			f, _ := strconv.ParseFloat(fmt.Sprint(v), 64)
			if f != math.Trunc(f) {
				return fmt.Sprint(v) + " is not a whole number"
			}
		case "boolean", "date", "array", "uuid",
			"timestamp without time zone", "timestamp with time zone", "time without time zone", "time with time zone":
			return "a number does not fit a " + c.Type + " column"
		}
	case string:
		switch t {
		case "smallint", "integer", "bigint", "real", "double precision", "numeric", "boolean", "array":
			return "a string does not fit a " + c.Type + " column"
		}
	}
	return ""
}

// InsertFeature adds a row with the named columns of values (others get their defaults) and the
// geometry (EWKB from PrepareGeometry, nil for none); it returns the new key.
func InsertFeature(ctx context.Context, q Queryer, t Table, values []byte, names []string, ewkb []byte) (int64, error) {
	cols := []string{pgx.Identifier{t.Geom}.Sanitize()}
	exprs := []string{"ST_GeomFromEWKB($2::bytea)"}
	for _, n := range names {
		cols = append(cols, pgx.Identifier{n}.Sanitize())
		exprs = append(exprs, "r."+pgx.Identifier{n}.Sanitize())
	}
	var gid int64
	err := q.QueryRow(ctx, "INSERT INTO "+t.ident()+" ("+strings.Join(cols, ", ")+") SELECT "+strings.Join(exprs, ", ")+
		" FROM jsonb_populate_record(NULL::"+t.ident()+", $1::jsonb) r RETURNING "+pgx.Identifier{t.ID}.Sanitize()+"::bigint",
		values, ewkb).Scan(&gid)
	return gid, writeError(err)
}

// Before is a feature as it was before an edit, for the history.
type Before struct {
	Feature GeoFeature
	attrs   []byte
}

// LockFeature reads a feature for an edit and holds its row until the transaction ends; 404 when
// there is none.
func LockFeature(ctx context.Context, q Queryer, t Table, gid int64) (Before, error) {
	f, attrs, err := readFeature(ctx, q, t, gid, true)
	return Before{Feature: f, attrs: attrs}, err
}

// UpdateFeature sets the named columns from values and, when setGeometry, the geometry (nil
// clears it). replace sets every other attribute column to null (a full replacement). It returns
// the feature after the change and the fields that changed, old and new values, keyed
// "properties.<column>" and "geometry" (the geometry by its type).
func UpdateFeature(ctx context.Context, q Queryer, t Table, before Before, values []byte, names []string, setGeometry bool, ewkb []byte, replace bool) (GeoFeature, map[string][2]any, error) {
	gid := before.Feature.ID
	var sets []string
	for _, c := range t.Columns {
		col := pgx.Identifier{c.Name}.Sanitize()
		if replace || slices.Contains(names, c.Name) {
			sets = append(sets, col+" = r."+col)
		}
	}
	if setGeometry {
		sets = append(sets, pgx.Identifier{t.Geom}.Sanitize()+" = ST_GeomFromEWKB($3::bytea)")
	}
	geomChanged := false
	if len(sets) > 0 {
		args := []any{values, gid}
		if setGeometry {
			args = append(args, ewkb)
		}
		var same bool
		err := q.QueryRow(ctx, "WITH old AS (SELECT ST_AsEWKB("+t.geom()+") AS g FROM "+t.ident()+" t WHERE "+t.id()+" = $2) "+
			"UPDATE "+t.ident()+" AS t SET "+strings.Join(sets, ", ")+
			" FROM jsonb_populate_record(NULL::"+t.ident()+", $1::jsonb) r WHERE "+t.id()+" = $2"+
			" RETURNING ST_AsEWKB("+t.geom()+") IS NOT DISTINCT FROM (SELECT g FROM old)",
			args...).Scan(&same)
		if errors.Is(err, pgx.ErrNoRows) {
			return GeoFeature{}, nil, errNoFeature(gid)
		}
		if err != nil {
			return GeoFeature{}, nil, writeError(err)
		}
		geomChanged = !same
	}
	after, attrs, err := readFeature(ctx, q, t, gid, false)
	if err != nil {
		return after, nil, err
	}
	changes := map[string][2]any{}
	var old, cur map[string]json.RawMessage
	_ = json.Unmarshal(before.attrs, &old)
	_ = json.Unmarshal(attrs, &cur)
	for _, c := range t.Columns {
		o, n := old[c.Name], cur[c.Name]
		if !bytes.Equal(o, n) {
			changes["properties."+c.Name] = [2]any{o, n}
		}
	}
	if geomChanged {
		changes["geometry"] = [2]any{typeOrNil(before.Feature), typeOrNil(after)}
	}
	return after, changes, nil
}

func typeOrNil(f GeoFeature) any {
	if t := f.Type(); t != "" {
		return t
	}
	return nil
}

// DeleteFeature removes a feature; 404 when there is none.
func DeleteFeature(ctx context.Context, q Queryer, t Table, gid int64) error {
	tag, err := q.Exec(ctx, "DELETE FROM "+t.ident()+" t WHERE "+t.id()+" = $1", gid)
	if err != nil {
		return writeError(err)
	}
	if tag.RowsAffected() == 0 {
		return errNoFeature(gid)
	}
	return nil
}

// Extent is what the catalog record keeps of a table's content: its row count, its WGS 84 box
// (west, south, east, north; west greater than east when the data crosses the antimeridian; nil
// without geometries) and its height range (meaningful for 3D data).
type Extent struct {
	Count      int64
	BBox       []float64
	ZMin, ZMax *float64
}

// TableExtent measures a table whose geometry column is in srid (0 when unknown: taken as
// longitude/latitude). When the plain box is wider than 180 degrees and shifting longitudes to
// 0..360 makes it narrower, the data sits across the antimeridian and the box is given the
// RFC 7946 way.
func TableExtent(ctx context.Context, q Queryer, t Table, srid int) (Extent, error) {
	g := t.geom()
	if srid != 4326 && srid != 0 {
		g = "ST_Transform(" + g + ", 4326)"
	}
	var e Extent
	var xmin, ymin, xmax, ymax *float64
	err := q.QueryRow(ctx, `SELECT n, ST_XMin(e), ST_YMin(e), ST_XMax(e), ST_YMax(e), ST_ZMin(e), ST_ZMax(e)
		FROM (SELECT count(*) AS n, ST_3DExtent(`+g+`) AS e FROM `+t.ident()+` t) x`).Scan(&e.Count, &xmin, &ymin, &xmax, &ymax, &e.ZMin, &e.ZMax)
	if err != nil || xmin == nil {
		return e, err
	}
	e.BBox = []float64{*xmin, *ymin, *xmax, *ymax}
	if *xmax-*xmin > 180 {
		var sxmin, sxmax float64
		if err := q.QueryRow(ctx, `SELECT ST_XMin(e), ST_XMax(e) FROM (SELECT ST_Extent(ST_ShiftLongitude(`+g+`)) AS e FROM `+t.ident()+` t) x`).
			Scan(&sxmin, &sxmax); err != nil {
			return e, err
		}
		if sxmax-sxmin < *xmax-*xmin {
			e.BBox[0], e.BBox[2] = wrapLongitude(sxmin), wrapLongitude(sxmax)
		}
	}
	return e, nil
}

// wrapLongitude brings a shifted longitude (0..360) back into -180..180.
func wrapLongitude(lon float64) float64 {
	if lon > 180 {
		return lon - 360
	}
	return lon
}

// dataError reports whether err is PostgreSQL refusing a value (data exceptions, integrity
// constraints, PostGIS's own errors) rather than failing to serve the request.
func dataError(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	return strings.HasPrefix(pgErr.Code, "22") || strings.HasPrefix(pgErr.Code, "23") || pgErr.Code == "XX000"
}

// pgMessage is the server's message of a PostgreSQL error, without the driver's decorations.
func pgMessage(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Message
	}
	return err.Error()
}

// writeError turns what PostgreSQL refuses in a row write into a 422 naming the column or rule.
func writeError(err error) error {
	if err == nil || !dataError(err) {
		return err
	}
	var pgErr *pgconn.PgError
	errors.As(err, &pgErr)
	switch pgErr.Code {
	case "23502":
		return apperr.Unprocessable("the column %s may not be null", pgErr.ColumnName)
	case "23505":
		return apperr.Unprocessable("the values conflict with another feature (unique constraint %s): %s", pgErr.ConstraintName, pgErr.Detail)
	case "23514", "23P01":
		return apperr.Unprocessable("the values break the table's rule %s", pgErr.ConstraintName)
	case "23503":
		return apperr.Unprocessable("the values refer to something that does not exist (constraint %s)", pgErr.ConstraintName)
	}
	return apperr.Unprocessable("the feature does not fit the table: %s", pgErr.Message)
}

func editDeref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func editPlural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
