package sqlbuild

import (
	"reflect"
	"testing"
)

func TestArgNumbersInOrder(t *testing.T) {
	var b Builder
	got := []string{b.Arg("a"), b.Cast(2.5, "float8"), b.Arg(7)}
	want := []string{"$1", "$2::float8", "$3"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("placeholders %v, want %v", got, want)
	}
	if !reflect.DeepEqual(b.Args(), []any{"a", 2.5, 7}) || b.Len() != 3 {
		t.Fatalf("args %v (len %d)", b.Args(), b.Len())
	}
}

func TestSpans(t *testing.T) {
	tests := []struct {
		name       string
		west, east float64
		want       [][2]float64
	}{
		{"plain", -10, 20, [][2]float64{{-10, 20}}},
		{"a line", 5, 5, [][2]float64{{5, 5}}},
		{"across the antimeridian", 170, -170, [][2]float64{{170, 180}, {-180, -170}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Spans(tt.west, tt.east); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Spans(%v, %v) = %v, want %v", tt.west, tt.east, got, tt.want)
			}
		})
	}
}

func TestContainsTakesWildcardsLiterally(t *testing.T) {
	for in, want := range map[string]string{"abc": "%abc%", "50%": `%50\%%`, "a_b": `%a\_b%`, `c:\x`: `%c:\\x%`, "": "%%"} {
		if got := Contains(in); got != want {
			t.Errorf("Contains(%q) = %q, want %q", in, got, want)
		}
	}
}
