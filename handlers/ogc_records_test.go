package handlers

import (
	"context"
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
