package handlers

// Operations of the Search tag.

import (
	"context"

	"meridian/gen"
)

// SearchDatasets: Search Datasets (GET /search/datasets/).
func (s *Server) SearchDatasets(ctx context.Context, request gen.SearchDatasetsRequestObject) (gen.SearchDatasetsResponseObject, error) {
	return nil, notImplemented("searchDatasets")
}

// SearchFacets: Search Facets (GET /search/facets/).
func (s *Server) SearchFacets(ctx context.Context, request gen.SearchFacetsRequestObject) (gen.SearchFacetsResponseObject, error) {
	return nil, notImplemented("searchFacets")
}

// ListSavedSearches: List Saved Searches (GET /search/saved/).
func (s *Server) ListSavedSearches(ctx context.Context, request gen.ListSavedSearchesRequestObject) (gen.ListSavedSearchesResponseObject, error) {
	return nil, notImplemented("listSavedSearches")
}

// CreateSavedSearch: Create Saved Search (POST /search/saved/).
func (s *Server) CreateSavedSearch(ctx context.Context, request gen.CreateSavedSearchRequestObject) (gen.CreateSavedSearchResponseObject, error) {
	return nil, notImplemented("createSavedSearch")
}

// DeleteSavedSearch: Delete Saved Search (DELETE /search/saved/{search_id}).
func (s *Server) DeleteSavedSearch(ctx context.Context, request gen.DeleteSavedSearchRequestObject) (gen.DeleteSavedSearchResponseObject, error) {
	return nil, notImplemented("deleteSavedSearch")
}

// GetSavedSearch: Get Saved Search (GET /search/saved/{search_id}).
func (s *Server) GetSavedSearch(ctx context.Context, request gen.GetSavedSearchRequestObject) (gen.GetSavedSearchResponseObject, error) {
	return nil, notImplemented("getSavedSearch")
}
