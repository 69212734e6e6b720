package ingest

import (
	"fmt"
	"testing"
)

func TestDiffColumns(t *testing.T) {
	col := func(name, typ string) ColumnType { return ColumnType{Name: name, Type: typ} }
	cases := []struct {
		name                    string
		old, new                []ColumnType
		added, removed, retyped string
	}{
		{"same", []ColumnType{col("a", "text")}, []ColumnType{col("a", "text")}, "[]", "[]", "[]"},
		{"added", []ColumnType{col("a", "text")}, []ColumnType{col("a", "text"), col("b", "integer")}, "[{b integer}]", "[]", "[]"},
		{"removed", []ColumnType{col("a", "text"), col("b", "integer")}, []ColumnType{col("b", "integer")}, "[]", "[{a text}]", "[]"},
		{"retyped", []ColumnType{col("a", "integer")}, []ColumnType{col("a", "text")}, "[]", "[]", "[{a integer text}]"},
		{"all at once", []ColumnType{col("a", "integer"), col("b", "text")}, []ColumnType{col("c", "date"), col("a", "bigint")},
			"[{c date}]", "[{b text}]", "[{a integer bigint}]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, r, ch := DiffColumns(c.old, c.new)
			if got := fmt.Sprint(a, r, ch); got != fmt.Sprint(c.added, " ", c.removed, " ", c.retyped) {
				t.Fatalf("diff: %s, want %s %s %s", got, c.added, c.removed, c.retyped)
			}
		})
	}
}

func TestStoredGeometryAndTypes(t *testing.T) {
	for in, want := range map[string]string{"Point": "MULTIPOINT", "3D Multi Polygon": "MULTIPOLYGON", "Line String": "MULTILINESTRING",
		"Unknown (any)": "GEOMETRY", "None": "", "": "", "Measured Point": "MULTIPOINT", "Geometry Collection": "GEOMETRY"} {
		if got := storedGeometry(in); got != want {
			t.Errorf("storedGeometry(%q) = %q, want %q", in, got, want)
		}
	}
	// A created dataset's text column and an imported one's character varying are one type.
	for in, want := range map[string]string{"character varying": "text", "text": "text", "character varying[]": "text[]", "integer": "integer"} {
		if got := pgType(in); got != want {
			t.Errorf("pgType(%q) = %q, want %q", in, got, want)
		}
	}
}
