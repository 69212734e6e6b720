package handlers

// Operations of the Search tag.

import (
	"context"
	"slices"
	"strings"

	openapi_types "github.com/oapi-codegen/runtime/types"

	"meridian/gen"
	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/internal/catalog"
)

// SearchDatasets: Search Datasets (GET /search/datasets/). The records query with a full-text
// `q` ranked by relevance; the answer is the records collection's (OGC API Records items).
func (s *Server) SearchDatasets(ctx context.Context, request gen.SearchDatasetsRequestObject) (gen.SearchDatasetsResponseObject, error) {
	q, err := s.searchQuery(searchOf(request.Params, request.Body))
	if err != nil {
		return nil, err
	}
	if q, err = s.byMeaning(ctx, q, request.Params.Mode); err != nil {
		return nil, err
	}
	out, err := s.recordPage(ctx, q, "/search/datasets/", "application/json")
	if err != nil || q.Text == "" || q.Offset > 0 {
		return searchPage(out), err
	}
	cols, err := s.records.MatchingCollections(ctx, auth.From(ctx), q.Text, 5)
	for _, c := range cols {
		out.Features = append(out.Features, s.collectionRecord(ctx, c))
	}
	out.NumberReturned = len(out.Features)
	return searchPage(out), err
}

// byMeaning makes a semantic or hybrid search of q: the records nearest to its text's embedding
// (internal/ai) become its candidates.
func (s *Server) byMeaning(ctx context.Context, q catalog.RecordQuery, mode *gen.SearchDatasetsParamsMode) (catalog.RecordQuery, error) {
	if mode == nil || *mode == gen.SearchDatasetsParamsModeText {
		return q, nil
	}
	if q.Text == "" {
		return q, apperr.Unprocessable("mode=%s searches by the meaning of q: send q", *mode)
	}
	near, err := s.ai.Nearest(ctx, q.Text)
	q.Mode, q.Nearest = string(*mode), near
	return q, err
}

// collectionRecord is a catalog collection as a record of kind collection (a text search's first
// page shows matching collections after the datasets).
func (s *Server) collectionRecord(ctx context.Context, c catalog.Collection) gen.OgcRecord {
	id, kind := c.ID.String(), "collection"
	return gen.OgcRecord{Id: id, Type: "Feature", ConformsTo: &recordConformsTo,
		Properties: gen.OgcRecordProperties{Type: &kind, RecordType: &kind, Title: c.Name, Description: val(c.Description),
			Keywords: []string{}, License: "proprietary", Themes: []gen.OgcRecordTheme{}, Contacts: []map[string]any{},
			DatasetCount: &c.DatasetCount, Updated: &c.UpdatedAt},
		Links: []gen.Link{
			s.link(ctx, "/catalog/collections/"+id, "self", "application/json", "This collection"),
			s.link(ctx, "/catalog/collections/"+id+"/datasets/", "items", "application/json", "Its datasets"),
			s.link(ctx, "/search/datasets/?collection_id="+id, "search", "application/json", "Search its datasets"),
		}}
}

// SearchFacets: Search Facets (GET /search/facets/). Counts over the same visible match.
func (s *Server) SearchFacets(ctx context.Context, request gen.SearchFacetsRequestObject) (gen.SearchFacetsResponseObject, error) {
	p := request.Params
	q, err := s.searchQuery(search{records: gen.OgcCollectionItemsParams{Bbox: p.Bbox, Datetime: p.Datetime, GeometryType: p.GeometryType,
		Srid: p.Srid, SourceOrganization: p.SourceOrganization, ExcludeSynthetic: p.ExcludeSynthetic, Geometry: p.Geometry,
		SpatialPredicate: (*gen.OgcCollectionItemsParamsSpatialPredicate)(p.SpatialPredicate), CollectionId: p.CollectionId},
		text: val(p.Q), types: val(p.RecordType), keywords: append(val(p.Theme), val(p.Keywords)...), collection: p.Collection})
	if err != nil {
		return nil, err
	}
	size := 20
	if p.Size != nil {
		size = min(max(*p.Size, 1), 100)
	}
	f, err := s.records.Facets(ctx, auth.From(ctx), q, size)
	if err != nil {
		return nil, err
	}
	return facetsOut(f, val(p.Fields)), nil
}

// search is a search request in the records query's terms, plus what only search has.
type search struct {
	records    gen.OgcCollectionItemsParams
	text       string
	types      []string
	keywords   []string
	collection *openapi_types.UUID
	sort       string // the `sort` parameter: a sortable, `-` first for descending
}

// searchOf reads Search Datasets' parameters; a body, when sent, lists record types.
func searchOf(p gen.SearchDatasetsParams, body *gen.SearchDatasetsJSONRequestBody) search {
	s := search{records: gen.OgcCollectionItemsParams{Limit: p.Limit, Offset: p.Offset, Bbox: p.Bbox, Datetime: p.Datetime,
		GeometryType: p.GeometryType, Srid: p.Srid, SourceOrganization: p.SourceOrganization, DateFrom: p.DateFrom, DateTo: p.DateTo,
		VintageStart: p.VintageStart, VintageEnd: p.VintageEnd, SortBy: p.SortBy, SortDesc: p.SortDesc, Filter: p.Filter,
		Cql2FilterLang: p.Cql2FilterLang, ExcludeSynthetic: p.ExcludeSynthetic, Geometry: p.Geometry, CollectionId: p.CollectionId,
		SpatialPredicate: (*gen.OgcCollectionItemsParamsSpatialPredicate)(p.SpatialPredicate)},
		text: val(p.Q), types: val(p.RecordType), keywords: append(val(p.Theme), val(p.Keywords)...), collection: p.Collection}
	if body != nil && *body != nil {
		s.types = append(s.types, (*body)...)
	}
	if p.Sort != nil {
		s.sort = string(*p.Sort)
	}
	return s
}

// searchQuery turns a search into the records query: the records parameters as the records
// collection reads them, the text, the keyword and type lists, the collection and the sort.
func (s *Server) searchQuery(in search) (catalog.RecordQuery, error) {
	if in.collection != nil && in.records.CollectionId != nil && *in.collection != *in.records.CollectionId {
		return catalog.RecordQuery{}, apperr.Invalid("collection and collection_id name different collections; send one")
	}
	if in.records.CollectionId == nil {
		in.records.CollectionId = in.collection
	}
	if in.sort != "" && in.sort != "relevance" {
		field, desc := strings.CutPrefix(in.sort, "-")
		in.records.SortBy, in.records.SortDesc = &field, &desc
	}
	q, err := s.recordParams(in.records)
	if err != nil {
		return q, err
	}
	q.Limit = min(q.Limit, 200)
	q.Text, q.Keywords, q.Types = strings.TrimSpace(in.text), in.keywords, append(q.Types, in.types...)
	return q, nil
}

// facetsOut maps the counts; a facet not among fields (when fields are named) answers empty.
func facetsOut(f catalog.Facets, fields []gen.SearchFacetsParamsFields) gen.SearchFacets200JSONResponse {
	want := func(name gen.SearchFacetsParamsFields) bool { return len(fields) == 0 || slices.Contains(fields, name) }
	buckets := func(name gen.SearchFacetsParamsFields, bs []catalog.Bucket) []gen.FacetValueCount {
		out := []gen.FacetValueCount{}
		for _, b := range bs {
			if want(name) {
				out = append(out, gen.FacetValueCount{Value: b.Value, Count: b.Count})
			}
		}
		return out
	}
	out := gen.SearchFacets200JSONResponse{RecordType: map[string]int{},
		Keywords:           buckets(gen.SearchFacetsParamsFieldsKeywords, f.Keywords),
		SourceOrganization: buckets(gen.SearchFacetsParamsFieldsSourceOrganization, f.SourceOrganization),
		Srid:               buckets(gen.SearchFacetsParamsFieldsSrid, f.SRID),
		GeometryType:       buckets(gen.SearchFacetsParamsFieldsGeometryType, f.GeometryType)}
	if want(gen.SearchFacetsParamsFieldsRecordType) {
		out.RecordType = f.RecordType
	}
	cols := []gen.CollectionFacetItem{}
	for _, c := range f.Collections {
		if want(gen.SearchFacetsParamsFieldsCollections) {
			cols = append(cols, gen.CollectionFacetItem{Id: c.ID, Name: c.Name, DatasetCount: c.Count})
		}
	}
	out.Collections = cols
	return out
}

// ListSavedSearches: List Saved Searches (GET /search/saved/). The caller's own, 50/200.
func (s *Server) ListSavedSearches(ctx context.Context, request gen.ListSavedSearchesRequestObject) (gen.ListSavedSearchesResponseObject, error) {
	skip, limit := page(request.Params.Skip, request.Params.Limit, 50, 200)
	list, total, err := s.catalog.SavedSearches(ctx, auth.From(ctx), skip, limit)
	if err != nil {
		return nil, err
	}
	out := gen.ListSavedSearches200JSONResponse{Searches: make([]gen.SavedSearchResponse, len(list)), Total: total, Skip: skip, Limit: limit}
	for i, ss := range list {
		out.Searches[i] = savedSearchOut(ss)
	}
	return out, nil
}

// CreateSavedSearch: Create Saved Search (POST /search/saved/).
func (s *Server) CreateSavedSearch(ctx context.Context, request gen.CreateSavedSearchRequestObject) (gen.CreateSavedSearchResponseObject, error) {
	ss, err := s.catalog.SaveSearch(ctx, auth.From(ctx), request.Body.Name, request.Body.Params)
	if err != nil {
		return nil, err
	}
	return gen.CreateSavedSearch201JSONResponse(savedSearchOut(ss)), nil
}

// DeleteSavedSearch: Delete Saved Search (DELETE /search/saved/{search_id}).
func (s *Server) DeleteSavedSearch(ctx context.Context, request gen.DeleteSavedSearchRequestObject) (gen.DeleteSavedSearchResponseObject, error) {
	if err := s.catalog.DeleteSavedSearch(ctx, auth.From(ctx), request.SearchId); err != nil {
		return nil, err
	}
	return gen.DeleteSavedSearch204Response{}, nil
}

// GetSavedSearch: Get Saved Search (GET /search/saved/{search_id}).
func (s *Server) GetSavedSearch(ctx context.Context, request gen.GetSavedSearchRequestObject) (gen.GetSavedSearchResponseObject, error) {
	ss, err := s.catalog.SavedSearch(ctx, auth.From(ctx), request.SearchId)
	if err != nil {
		return nil, err
	}
	return gen.GetSavedSearch200JSONResponse(savedSearchOut(ss)), nil
}

func savedSearchOut(ss catalog.SavedSearch) gen.SavedSearchResponse {
	return gen.SavedSearchResponse{Id: ss.ID, Name: ss.Name, Params: ss.Params, CreatedAt: ss.CreatedAt, UpdatedAt: ss.UpdatedAt}
}
