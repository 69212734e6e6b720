package cql2

import (
	"reflect"
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
