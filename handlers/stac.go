package handlers

// Operations of the STAC tag.

import (
	"context"

	"meridian/gen"
)

// StacLandingPage: Landing Page (GET /stac/).
func (s *Server) StacLandingPage(ctx context.Context, request gen.StacLandingPageRequestObject) (gen.StacLandingPageResponseObject, error) {
	return nil, notImplemented("stacLandingPage")
}

// StacGetCollections: Get Collections (GET /stac/collections).
func (s *Server) StacGetCollections(ctx context.Context, request gen.StacGetCollectionsRequestObject) (gen.StacGetCollectionsResponseObject, error) {
	return nil, notImplemented("stacGetCollections")
}

// StacGetCollection: Get Collection (GET /stac/collections/{collection_id}).
func (s *Server) StacGetCollection(ctx context.Context, request gen.StacGetCollectionRequestObject) (gen.StacGetCollectionResponseObject, error) {
	return nil, notImplemented("stacGetCollection")
}

// StacGetCollectionItems: Get Collection Items (GET /stac/collections/{collection_id}/items).
func (s *Server) StacGetCollectionItems(ctx context.Context, request gen.StacGetCollectionItemsRequestObject) (gen.StacGetCollectionItemsResponseObject, error) {
	return nil, notImplemented("stacGetCollectionItems")
}

// StacGetCollectionItem: Get Collection Item (GET /stac/collections/{collection_id}/items/{item_id}).
func (s *Server) StacGetCollectionItem(ctx context.Context, request gen.StacGetCollectionItemRequestObject) (gen.StacGetCollectionItemResponseObject, error) {
	return nil, notImplemented("stacGetCollectionItem")
}

// StacConformance: Conformance (GET /stac/conformance).
func (s *Server) StacConformance(ctx context.Context, request gen.StacConformanceRequestObject) (gen.StacConformanceResponseObject, error) {
	return nil, notImplemented("stacConformance")
}

// StacGetItem: Get Item (GET /stac/items/{item_id}).
func (s *Server) StacGetItem(ctx context.Context, request gen.StacGetItemRequestObject) (gen.StacGetItemResponseObject, error) {
	return nil, notImplemented("stacGetItem")
}

// StacSearchGet: Search Get (GET /stac/search).
func (s *Server) StacSearchGet(ctx context.Context, request gen.StacSearchGetRequestObject) (gen.StacSearchGetResponseObject, error) {
	return nil, notImplemented("stacSearchGet")
}

// StacSearchPost: Search Post (POST /stac/search).
func (s *Server) StacSearchPost(ctx context.Context, request gen.StacSearchPostRequestObject) (gen.StacSearchPostResponseObject, error) {
	return nil, notImplemented("stacSearchPost")
}
