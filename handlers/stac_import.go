package handlers

// Operations of the STAC Import tag.

import (
	"context"

	"meridian/gen"
)

// StacImportStacCollections: STAC Collections (POST /services/stac/collections).
func (s *Server) StacImportStacCollections(ctx context.Context, request gen.StacImportStacCollectionsRequestObject) (gen.StacImportStacCollectionsResponseObject, error) {
	return nil, notImplemented("stacImportStacCollections")
}

// StacImportStacConnect: STAC Connect (POST /services/stac/connect).
func (s *Server) StacImportStacConnect(ctx context.Context, request gen.StacImportStacConnectRequestObject) (gen.StacImportStacConnectResponseObject, error) {
	return nil, notImplemented("stacImportStacConnect")
}

// StacImport: STAC Import (POST /services/stac/import).
func (s *Server) StacImport(ctx context.Context, request gen.StacImportRequestObject) (gen.StacImportResponseObject, error) {
	return nil, notImplemented("stacImport")
}

// StacImportStacSearch: STAC Search (POST /services/stac/search).
func (s *Server) StacImportStacSearch(ctx context.Context, request gen.StacImportStacSearchRequestObject) (gen.StacImportStacSearchResponseObject, error) {
	return nil, notImplemented("stacImportStacSearch")
}
