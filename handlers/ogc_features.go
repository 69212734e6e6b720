package handlers

// Operations of the OGC Features tag.

import (
	"context"

	"meridian/gen"
)

// OgcLandingPage: Landing Page (GET /).
func (s *Server) OgcLandingPage(ctx context.Context, request gen.OgcLandingPageRequestObject) (gen.OgcLandingPageResponseObject, error) {
	title, desc := "Meridian", "Spatial data catalog: OGC API Features, STAC and DCAT over the catalog's datasets."
	return gen.OgcLandingPage200JSONResponse{
		Title:       &title,
		Description: &desc,
		Links: []gen.Link{
			s.link("/", "self", "application/json", "This document"),
			s.link("/?f=json", "alternate", "application/json", "This document as JSON"),
			s.link("/openapi.json", "service-desc", "application/vnd.oai.openapi+json;version=3.0", "The API definition"),
			s.link("/docs", "service-doc", "text/html", "The API documentation"),
			s.link("/conformance", "conformance", "application/json", "Conformance classes implemented"),
			s.link("/collections", "data", "application/json", "Collections"),
		},
	}, nil
}

// OgcListCollections: List Collections (GET /collections).
func (s *Server) OgcListCollections(ctx context.Context, request gen.OgcListCollectionsRequestObject) (gen.OgcListCollectionsResponseObject, error) {
	return nil, notImplemented("ogcListCollections")
}

// OgcGetCollectionMetadata: Get Collection Metadata (GET /collections/datasets).
func (s *Server) OgcGetCollectionMetadata(ctx context.Context, request gen.OgcGetCollectionMetadataRequestObject) (gen.OgcGetCollectionMetadataResponseObject, error) {
	return nil, notImplemented("ogcGetCollectionMetadata")
}

// OgcCollectionItems: Collection Items (GET /collections/datasets/items).
func (s *Server) OgcCollectionItems(ctx context.Context, request gen.OgcCollectionItemsRequestObject) (gen.OgcCollectionItemsResponseObject, error) {
	return nil, notImplemented("ogcCollectionItems")
}

// OgcGetCollectionItem: Get Collection Item (GET /collections/datasets/items/{record_id}).
func (s *Server) OgcGetCollectionItem(ctx context.Context, request gen.OgcGetCollectionItemRequestObject) (gen.OgcGetCollectionItemResponseObject, error) {
	return nil, notImplemented("ogcGetCollectionItem")
}

// OgcGetQueryables: Get Queryables (GET /collections/datasets/queryables).
func (s *Server) OgcGetQueryables(ctx context.Context, request gen.OgcGetQueryablesRequestObject) (gen.OgcGetQueryablesResponseObject, error) {
	return nil, notImplemented("ogcGetQueryables")
}

// OgcGetRecordSchema: Get Record Schema (GET /collections/datasets/schema).
func (s *Server) OgcGetRecordSchema(ctx context.Context, request gen.OgcGetRecordSchemaRequestObject) (gen.OgcGetRecordSchemaResponseObject, error) {
	return nil, notImplemented("ogcGetRecordSchema")
}

// OgcGetSortables: Get Sortables (GET /collections/datasets/sortables).
func (s *Server) OgcGetSortables(ctx context.Context, request gen.OgcGetSortablesRequestObject) (gen.OgcGetSortablesResponseObject, error) {
	return nil, notImplemented("ogcGetSortables")
}

// OgcGetDatasetCollection: Get Dataset Collection (GET /collections/{dataset_id}).
func (s *Server) OgcGetDatasetCollection(ctx context.Context, request gen.OgcGetDatasetCollectionRequestObject) (gen.OgcGetDatasetCollectionResponseObject, error) {
	return nil, notImplemented("ogcGetDatasetCollection")
}

// OgcGetCollectionItems: Get Collection Items (GET /collections/{dataset_id}/items).
func (s *Server) OgcGetCollectionItems(ctx context.Context, request gen.OgcGetCollectionItemsRequestObject) (gen.OgcGetCollectionItemsResponseObject, error) {
	return nil, notImplemented("ogcGetCollectionItems")
}

// OgcGetCollectionItemFeature: Get Collection Item Feature (GET /collections/{dataset_id}/items/{feature_id}).
func (s *Server) OgcGetCollectionItemFeature(ctx context.Context, request gen.OgcGetCollectionItemFeatureRequestObject) (gen.OgcGetCollectionItemFeatureResponseObject, error) {
	return nil, notImplemented("ogcGetCollectionItemFeature")
}

// OgcGetDatasetQueryables: Get Dataset Queryables (GET /collections/{dataset_id}/queryables).
func (s *Server) OgcGetDatasetQueryables(ctx context.Context, request gen.OgcGetDatasetQueryablesRequestObject) (gen.OgcGetDatasetQueryablesResponseObject, error) {
	return nil, notImplemented("ogcGetDatasetQueryables")
}

// OgcGetDatasetSchema: Get Dataset Schema (GET /collections/{dataset_id}/schema).
func (s *Server) OgcGetDatasetSchema(ctx context.Context, request gen.OgcGetDatasetSchemaRequestObject) (gen.OgcGetDatasetSchemaResponseObject, error) {
	return nil, notImplemented("ogcGetDatasetSchema")
}

// OgcGetDatasetSortables: Get Dataset Sortables (GET /collections/{dataset_id}/sortables).
func (s *Server) OgcGetDatasetSortables(ctx context.Context, request gen.OgcGetDatasetSortablesRequestObject) (gen.OgcGetDatasetSortablesResponseObject, error) {
	return nil, notImplemented("ogcGetDatasetSortables")
}

// OgcConformance: Conformance (GET /conformance).
func (s *Server) OgcConformance(ctx context.Context, request gen.OgcConformanceRequestObject) (gen.OgcConformanceResponseObject, error) {
	return gen.OgcConformance200JSONResponse{ConformsTo: conformanceClasses}, nil
}

// conformanceClasses lists only the classes the server passes today; each capability adds its
// classes when its tests pass (OGC API Features Part 1 and Part 3 with the features issue).
var conformanceClasses = []string{
	"http://www.opengis.net/spec/ogcapi-common-1/1.0/conf/core",
	"http://www.opengis.net/spec/ogcapi-common-1/1.0/conf/landing-page",
	"http://www.opengis.net/spec/ogcapi-common-1/1.0/conf/json",
	"http://www.opengis.net/spec/ogcapi-common-1/1.0/conf/oas30",
}
