package stac

import (
	"fmt"
	"testing"

	"github.com/google/uuid"

	"meridian/internal/apperr"
	"meridian/internal/catalog"
	"meridian/internal/cql2"
)

func TestLicense(t *testing.T) {
	for in, want := range map[string]string{
		"": "proprietary", "CC BY 4.0": "CC-BY-4.0", "cc-by-4.0": "CC-BY-4.0", "ODbL": "ODbL-1.0", "CC0": "CC0-1.0",
		"MIT License": "MIT", "LicenseRef-internal": "LicenseRef-internal", "Use with attribution, see terms": "other",
	} {
		l := in
		if got := License(&l); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
	if got := License(nil); got != "proprietary" {
		t.Errorf("nil: %q", got)
	}
}

func TestFieldsKeepWhatSTACRequires(t *testing.T) {
	item := func() map[string]any {
		return map[string]any{"type": "Feature", "stac_version": Version, "id": "x", "geometry": nil, "links": []any{}, "assets": map[string]any{},
			"collection": "c", "stac_extensions": []string{}, "properties": map[string]any{"datetime": "t", "title": "T", "license": "MIT"}}
	}
	tests := []struct {
		fields Fields
		want   string // the properties and top-level members left, printed
	}{
		{Fields{}, "map[datetime:t license:MIT title:T] 9"},
		{Fields{Include: []string{"properties.title"}}, "map[datetime:t title:T] 8"},
		{Fields{Exclude: []string{"properties.license", "assets", "stac_extensions", "properties.datetime"}}, "map[datetime:t title:T] 8"},
		{Fields{Include: []string{"id"}, Exclude: []string{"geometry"}}, "map[datetime:t] 8"},
	}
	for _, tt := range tests {
		it := item()
		tt.fields.Apply(it)
		if got := fmt.Sprint(it["properties"], " ", len(it)); got != tt.want {
			t.Errorf("%+v: %s, want %s", tt.fields, got, tt.want)
		}
	}
}

// A token is taken by the search that made it, whatever its page size, and by no other.
func TestTokensBelongToTheirSearch(t *testing.T) {
	s := Search{Filter: "title LIKE 'a%'", SortBy: []Sort{{Field: "title"}}, Limit: 5}
	tok := NextToken(s, catalog.Record{DatasetID: uuid.New(), SortValues: []any{"Alpha"}})
	s.Token, s.Limit = tok, 50
	q, err := s.Query(noLimits)
	if err != nil || q.After == nil || fmt.Sprint(q.After.Values) != "[Alpha]" {
		t.Fatalf("the same search: %+v %v", q.After, err)
	}
	other := Search{Token: tok}
	if _, err := other.Query(noLimits); apperr.KindOf(err) != apperr.KindInvalid {
		t.Fatalf("another search took the token: %v", err)
	}
}

func TestParseSortByAndFields(t *testing.T) {
	if got := fmt.Sprint(ParseSortBy("-properties.datetime, +title,id")); got != "[{properties.datetime true} {title false} {id false}]" {
		t.Errorf("sortby %s", got)
	}
	if got := fmt.Sprint(ParseFields("id,-assets, properties.title")); got != "{[id properties.title] [assets]}" {
		t.Errorf("fields %s", got)
	}
	if _, err := (Search{SortBy: []Sort{{Field: "id"}}}).Query(noLimits); apperr.KindOf(err) != apperr.KindInvalid {
		t.Errorf("sortby id: %v", err)
	}
}

var noLimits = cql2.Limits{}
