package cql2

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"meridian/internal/apperr"
	"meridian/internal/sqlbuild"
)

func TestFilterNames(t *testing.T) {
	tests := []struct{ lang, src string }{
		{"cql2-text", `pop > 5 AND (name LIKE 'T%' OR pop < area) AND S_INTERSECTS(geom, BBOX(0,0,1,1))`},
		{"cql2-json", `{"op":"and","args":[{"op":">","args":[{"property":"pop"},5]},{"op":"or","args":[{"op":"like","args":[{"property":"name"},"T%"]},{"op":"<","args":[{"property":"pop"},{"property":"area"}]}]},{"op":"s_intersects","args":[{"property":"geom"},{"bbox":[0,0,1,1]}]}]}`},
	}
	for _, tt := range tests {
		f, err := ParseFilter(tt.lang, tt.src, 4326, false)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := f.Names(), []string{"pop", "name", "area", "geom"}; !reflect.DeepEqual(got, want) {
			t.Errorf("%s: names %v, want %v", tt.lang, got, want)
		}
	}
}

func TestFilterErrorsAreBadRequests(t *testing.T) {
	if _, err := ParseFilter("cql2-text", "pop >", 4326, false); apperr.KindOf(err) != apperr.KindInvalid {
		t.Fatalf("parse error %v is not a 400 problem", err)
	}
	f, err := ParseFilter("cql2-text", "nope = 1", 4326, false)
	if err != nil {
		t.Fatal(err)
	}
	var b sqlbuild.Builder
	if _, err := f.Render(&b, testProps, 4326); apperr.KindOf(err) != apperr.KindInvalid {
		t.Fatalf("render error %v is not a 400 problem", err)
	}
}

// orChain is a filter of n comparisons joined by OR, the shape of the attack that held a server's
// every connection: 3 terms each (property, literal, comparison).
func orChain(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(" OR ")
		}
		fmt.Fprintf(&b, "pop = %d", i)
	}
	return b.String()
}

func TestFilterLimits(t *testing.T) {
	in := "pop IN (" + strings.TrimSuffix(strings.Repeat("1,", 400), ",") + ")"
	limits := Limits{Bytes: 16 << 10, Terms: 1000}
	tests := []struct {
		name, src string
		terms     int
		refused   string // "" accepted; else a word of the refusal
	}{
		{"small", "pop > 5 AND NOT (name LIKE 'T%')", 6, ""},
		{"a 400-value IN list", in, 402, ""},
		{"a 300-comparison OR chain", orChain(300), 900, ""},
		{"a 3,000-comparison OR chain", orChain(3000), 9000, "bytes"},
		{"a 400-comparison OR chain", orChain(400), 1200, "terms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if f, err := ParseFilter("cql2-text", tt.src, 4326, false); err != nil || f.Terms() != tt.terms {
				t.Fatalf("terms %v (%v), want %d", f, err, tt.terms)
			}
			_, err := ParseFilterWithin("cql2-text", tt.src, 4326, false, limits)
			switch {
			case tt.refused == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.refused != "" && (apperr.KindOf(err) != apperr.KindInvalid || !strings.Contains(err.Error(), tt.refused)):
				t.Fatalf("want a 400 naming %s, got %v", tt.refused, err)
			}
		})
	}
	// No limits: only the parser's own bounds.
	if _, err := ParseFilterWithin("cql2-text", orChain(3000), 4326, false, Limits{}); err != nil {
		t.Fatalf("without limits: %v", err)
	}
}
