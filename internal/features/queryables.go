package features

import (
	"github.com/jackc/pgx/v5"

	"meridian/internal/cql2"
)

// GeometryQueryable is the name filters and schemas give the primary geometry, whatever the
// column is called, so clients can write S_INTERSECTS(geometry, ...) on every collection.
const GeometryQueryable = "geometry"

// IsTemporal reports whether a column of this data type is a date or timestamp.
func IsTemporal(pgType string) bool {
	k := kindOf(pgType)
	return k == kindDate || k == kindTimestamp || k == kindTimestampTZ
}

// Queryable reports whether filters may name a column: everything with a scalar type.
func Queryable(c Column) bool { return kindOf(c.Type) != kindJSON }

// JSONSchemaType is the JSON Schema type and format of a column's values.
func JSONSchemaType(pgType string) (typ, format string) {
	switch kindOf(pgType) {
	case kindInt:
		return "integer", ""
	case kindFloat, kindNumeric:
		return "number", ""
	case kindBool:
		return "boolean", ""
	case kindDate:
		return "string", "date"
	case kindTimestamp, kindTimestampTZ:
		return "string", "date-time"
	case kindString:
		if pgType == "uuid" {
			return "string", "uuid"
		}
		return "string", ""
	}
	return "", ""
}

// cql2Types maps column kinds to CQL2 types.
var cql2Types = map[kind]cql2.Type{
	kindString: cql2.String, kindInt: cql2.Integer, kindFloat: cql2.Number, kindNumeric: cql2.Number,
	kindBool: cql2.Boolean, kindDate: cql2.Date, kindTimestamp: cql2.Timestamp, kindTimestampTZ: cql2.Timestamp,
}

// Queryables are the properties a CQL2 filter over the table may name: every scalar column and
// the geometry, as "geometry" and under its column name.
func Queryables(t Table) map[string]cql2.Property {
	out := make(map[string]cql2.Property, len(t.Columns)+2)
	if t.Geom != "" {
		out[t.Geom] = cql2.Property{Name: t.Geom, SQL: t.geom(), Type: cql2.Geometry}
		out[GeometryQueryable] = cql2.Property{Name: GeometryQueryable, SQL: t.geom(), Type: cql2.Geometry}
	}
	for _, c := range t.Columns {
		if typ, ok := cql2Types[kindOf(c.Type)]; ok {
			out[c.Name] = cql2.Property{Name: c.Name, SQL: "t." + pgx.Identifier{c.Name}.Sanitize(), Type: typ}
		}
	}
	return out
}
