package handlers

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/uuid"

	"meridian/gen"
	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/internal/catalog"
	"meridian/internal/config"
)

// fakeRecords answers the records collection from memory and keeps the last query it was asked.
type fakeRecords struct {
	asked catalog.RecordQuery
	out   []catalog.Record
}

func (f *fakeRecords) Records(_ context.Context, _ auth.Principal, q catalog.RecordQuery) ([]catalog.Record, int, error) {
	f.asked = q
	return f.out, len(f.out), nil
}

func (f *fakeRecords) Facets(_ context.Context, _ auth.Principal, q catalog.RecordQuery, _ int) (catalog.Facets, error) {
	f.asked = q
	return catalog.Facets{RecordType: map[string]int{}}, nil
}

func (f *fakeRecords) CatalogSummary(context.Context, auth.Principal) (catalog.Summary, error) {
	return catalog.Summary{}, nil
}

func (f *fakeRecords) MatchingCollections(context.Context, auth.Principal, string, int) ([]catalog.Collection, error) {
	return nil, nil
}

// Search's own names (q, theme, keywords, collection, sort, a body of types) map onto the
// records query; the rest is read as the records collection reads it.
func TestSearchParameters(t *testing.T) {
	q, theme, kw, sort, limit := "hydro rhine", []string{"Water"}, []string{"rivers"}, gen.SearchDatasetsParamsSort("-title"), 500
	col, other := uuid.New(), uuid.New()
	types := gen.SearchDatasetsJSONRequestBody{"table"}
	f := &fakeRecords{}
	s := &Server{records: f, cfg: config.Config{OGCMaxLimit: 10000}}
	_, err := s.SearchDatasets(context.Background(), gen.SearchDatasetsRequestObject{Body: &types, Params: gen.SearchDatasetsParams{
		Q: &q, Theme: &theme, Keywords: &kw, Sort: &sort, Limit: &limit, Collection: &col, RecordType: &[]string{"vector_dataset"}}})
	if err != nil {
		t.Fatal(err)
	}
	a := f.asked
	if a.Text != q || fmt.Sprint(a.Keywords) != "[Water rivers]" || fmt.Sprint(a.Types) != "[vector_dataset table]" || a.Limit != 200 ||
		a.CollectionID == nil || *a.CollectionID != col || len(a.Sort) != 1 || a.Sort[0] != (catalog.SortKey{Field: "title", Desc: true}) {
		t.Fatalf("asked %+v", a)
	}
	// Relevance is the records order of a text: no sort key.
	rel := gen.SearchDatasetsParamsSort("relevance")
	if _, err := s.SearchDatasets(context.Background(), gen.SearchDatasetsRequestObject{Params: gen.SearchDatasetsParams{Q: &q, Sort: &rel}}); err != nil || len(f.asked.Sort) != 0 || f.asked.Limit != 10 {
		t.Fatalf("relevance: %v %+v", err, f.asked)
	}
	_, err = s.SearchDatasets(context.Background(), gen.SearchDatasetsRequestObject{Params: gen.SearchDatasetsParams{Collection: &col, CollectionId: &other}})
	if apperr.KindOf(err) != apperr.KindInvalid {
		t.Fatalf("collection and collection_id disagreeing: %v", err)
	}
}

// The catalog's own parameter names map onto the record query as their names say.
func TestRecordItemsParameters(t *testing.T) {
	within, desc, rt, title := gen.OgcCollectionItemsParamsSpatialPredicateWithin, true, "table", "title"
	box := []float64{170, -10, -170, 10}
	tests := []struct {
		name   string
		params gen.OgcCollectionItemsParams
		check  func(q catalog.RecordQuery) bool
	}{
		{"sort_by and sort_desc", gen.OgcCollectionItemsParams{SortBy: &title, SortDesc: &desc},
			func(q catalog.RecordQuery) bool {
				return len(q.Sort) == 1 && q.Sort[0] == catalog.SortKey{Field: "title", Desc: true}
			}},
		{"record_type adds to type", gen.OgcCollectionItemsParams{RecordType: &rt},
			func(q catalog.RecordQuery) bool { return len(q.Types) == 1 && q.Types[0] == "table" }},
		{"bbox intersects by default", gen.OgcCollectionItemsParams{Bbox: &box},
			func(q catalog.RecordQuery) bool { return len(q.BBox) == 4 && len(q.Filters) == 0 }},
		{"bbox within is a filter", gen.OgcCollectionItemsParams{Bbox: &box, SpatialPredicate: &within},
			func(q catalog.RecordQuery) bool { return q.BBox == nil && len(q.Filters) == 1 }},
		{"no limit is 10", gen.OgcCollectionItemsParams{},
			func(q catalog.RecordQuery) bool { return q.Limit == 10 && q.Offset == 0 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeRecords{}
			s := &Server{records: f, cfg: config.Config{OGCMaxLimit: 1000}}
			if _, err := s.OgcCollectionItems(context.Background(), gen.OgcCollectionItemsRequestObject{Params: tt.params}); err != nil {
				t.Fatal(err)
			}
			if !tt.check(f.asked) {
				t.Fatalf("query %+v", f.asked)
			}
		})
	}
}

// A record id that matches nothing is a 404 problem.
func TestRecordNotFound(t *testing.T) {
	s := &Server{records: &fakeRecords{}}
	_, err := s.OgcGetCollectionItem(context.Background(), gen.OgcGetCollectionItemRequestObject{RecordId: uuid.New()})
	if apperr.KindOf(err) != apperr.KindNotFound {
		t.Fatalf("err %v", err)
	}
}
