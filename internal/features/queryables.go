package features

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
