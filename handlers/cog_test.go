package handlers

import (
	"reflect"
	"testing"
)

func TestParseRanges(t *testing.T) {
	cases := []struct {
		header          string
		want            []byteRange
		satisfiable, ok bool
	}{
		{"", nil, false, false},
		{"items=0-1", nil, false, false},
		{"bytes=0-99", []byteRange{{0, 100}}, true, true},
		{"bytes=990-2000", []byteRange{{990, 10}}, true, true},
		{"bytes=-10", []byteRange{{990, 10}}, true, true},
		{"bytes=-5000", []byteRange{{0, 1000}}, true, true},
		{"bytes=500-", []byteRange{{500, 500}}, true, true},
		{"bytes=1000-", nil, false, true},
		{"bytes=-0", nil, false, true},
		{"bytes=0-1, 1000-1001, 4-5", []byteRange{{0, 2}, {4, 2}}, true, true},
		{"bytes=5-1", nil, false, false},
		{"bytes=a-b", nil, false, false},
		{"bytes=1", nil, false, false},
	}
	for _, c := range cases {
		got, sat, ok := parseRanges(c.header, 1000)
		if !reflect.DeepEqual(got, c.want) || sat != c.satisfiable || ok != c.ok {
			t.Errorf("%q: %v %v %v, want %v %v %v", c.header, got, sat, ok, c.want, c.satisfiable, c.ok)
		}
	}
}

func TestETagMatches(t *testing.T) {
	etag := `"cog-x-v1"`
	for list, want := range map[string]bool{etag: true, `W/"cog-x-v1"`: true, `"a", "cog-x-v1"`: true, "*": true, `"cog-x-v2"`: false, "": false} {
		if etagMatches(list, etag) != want {
			t.Errorf("%q: want %v", list, want)
		}
	}
}
