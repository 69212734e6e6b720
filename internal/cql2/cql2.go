// Package cql2 parses OGC CQL2 (OGC 21-065) filters, in both the cql2-text and the cql2-json
// encodings, into one syntax tree, and translates that tree into a parameterised PostgreSQL /
// PostGIS predicate for the `filter` parameter of OGC API Features Part 3.
//
// Parsing is purely syntactic; property names, types and the SQL they stand for are only known
// to SQL, which type-checks while it translates. Every failure a client can cause is an *Error
// carrying the byte offset it concerns, so the HTTP layer can answer 400 with a useful message.
//
// Choices the standard leaves open, or that PostgreSQL forces:
//
//   - LIKE is case-sensitive, with the wildcards % and _ and the escape character \, which
//     PostgreSQL shares; CASEI is lower(), ACCENTI strips combining marks after NFD
//     normalisation (built-in functions, no unaccent extension; the database must be UTF8).
//   - A DATE meeting a TIMESTAMP stands for its midnight UTC, whatever the session time zone.
//     The T_ functions take instants and intervals on either side (see temporal.go).
//   - "/" is real division even between integers and "div" integer division; dividing by zero
//     gives NULL instead of a query error. Overflow, or power() of a negative number to a
//     fractional exponent, still fails in PostgreSQL (SQLSTATE class 22), which the caller
//     should report as a client error.
//   - A BBOX with minx > maxx in a geographic CRS crosses the antimeridian and is split at
//     ±180 (see spatial.go). With SwapXY a BBOX is reordered here, geometries are flipped with
//     ST_FlipCoordinates. The heights of a 6-number BBOX are not used.
//   - Array functions (A_*) and custom functions parse where the grammar allows them but do
//     not translate: SQL answers an *Error saying so. EMPTY geometries are refused when parsed.
package cql2

import (
	"strconv"
)

// Limits that keep hostile filters cheap: both are checked before any real work is done.
const (
	MaxLength = 64 << 10 // bytes of filter text or JSON
	MaxDepth  = 100      // nesting of the syntax tree
)

// Classes are the CQL2 conformance classes this package implements, for /conformance.
var Classes = []string{
	"http://www.opengis.net/spec/cql2/1.0/conf/cql2-text",
	"http://www.opengis.net/spec/cql2/1.0/conf/cql2-json",
	"http://www.opengis.net/spec/cql2/1.0/conf/basic-cql2",
	"http://www.opengis.net/spec/cql2/1.0/conf/advanced-comparison-operators",
	"http://www.opengis.net/spec/cql2/1.0/conf/case-insensitive-comparison",
	"http://www.opengis.net/spec/cql2/1.0/conf/accent-insensitive-comparison",
	"http://www.opengis.net/spec/cql2/1.0/conf/basic-spatial-functions",
	"http://www.opengis.net/spec/cql2/1.0/conf/basic-spatial-functions-plus",
	"http://www.opengis.net/spec/cql2/1.0/conf/spatial-functions",
	"http://www.opengis.net/spec/cql2/1.0/conf/temporal-functions",
	"http://www.opengis.net/spec/cql2/1.0/conf/property-property",
	"http://www.opengis.net/spec/cql2/1.0/conf/arithmetic",
}

// Error is what every parse, name and type failure returns. Pos is a byte offset into the
// filter as the client sent it (text or JSON).
type Error struct {
	Pos int
	Msg string
}

func (e *Error) Error() string {
	return "cql2: at position " + strconv.Itoa(e.Pos) + ": " + e.Msg
}

// Type is the CQL2 type of a queryable.
type Type int

// The queryable types. Integer and Number compare with each other; Date and Timestamp too.
const (
	String Type = iota + 1
	Number
	Integer
	Boolean
	Timestamp
	Date
	Geometry
)

var typeNames = [...]string{"", "String", "Number", "Integer", "Boolean", "Timestamp", "Date", "Geometry"}

func (t Type) String() string {
	if t > 0 && int(t) < len(typeNames) {
		return typeNames[t]
	}
	return "Type(" + strconv.Itoa(int(t)) + ")"
}

// Property is a queryable: Name as clients write it, SQL an already-quoted SQL expression for
// it (e.g. `t."population"`), Type its CQL2 type.
type Property struct {
	Name, SQL string
	Type      Type
}

// Options say what a filter may refer to and how its literals relate to the stored data.
type Options struct {
	Properties  map[string]Property // the queryables; any other property name is an error
	FilterSRID  int                 // SRID of geometry literals (default 4326)
	StorageSRID int                 // SRID of the geometry columns; literals are transformed to it when different
	SwapXY      bool                // literals are in lat/lon axis order and must be flipped
}

// Parse parses a filter in "cql2-text" or "cql2-json" (lang), returning one AST.
func Parse(lang, src string) (Expr, error) {
	switch lang {
	case "cql2-text", "":
		return ParseText(src)
	case "cql2-json":
		return ParseJSON([]byte(src))
	}
	return nil, &Error{Msg: "unknown filter-lang " + strconv.Quote(lang) + " (use cql2-text or cql2-json)"}
}

// fail aborts parsing or translation; the exported entry points recover it into an error.
// Panicking keeps the recursive descent readable, and only *Error values are ever recovered.
func fail(pos int, msg string) {
	panic(&Error{Pos: pos, Msg: msg})
}

func recoverError(err *error) {
	if r := recover(); r != nil {
		e, ok := r.(*Error)
		if !ok {
			panic(r)
		}
		*err = e
	}
}
