package handlers

// Operations of the OGC Features tag.

import (
	"context"

	"meridian/gen"
	"meridian/internal/cql2"
)

// OgcLandingPage: Landing Page (GET /).
func (s *Server) OgcLandingPage(ctx context.Context, request gen.OgcLandingPageRequestObject) (gen.OgcLandingPageResponseObject, error) {
	title, desc := "Meridian", "Spatial data catalog: OGC API Features, STAC and DCAT over the catalog's datasets."
	return gen.OgcLandingPage200JSONResponse{
		Title:       title,
		Description: desc,
		Links: []gen.Link{
			s.link(ctx, "/", "self", "application/json", "This document"),
			s.link(ctx, "/?f=json", "alternate", "application/json", "This document as JSON"),
			s.link(ctx, "/openapi.json", "service-desc", "application/vnd.oai.openapi+json;version=3.0", "The API definition"),
			s.link(ctx, "/docs", "service-doc", "text/html", "The API documentation"),
			s.link(ctx, "/conformance", "conformance", "application/json", "Conformance classes implemented"),
			s.link(ctx, "/collections", "data", "application/json", "Collections"),
		},
	}, nil
}

// OgcConformance: Conformance (GET /conformance).
func (s *Server) OgcConformance(ctx context.Context, request gen.OgcConformanceRequestObject) (gen.OgcConformanceResponseObject, error) {
	return gen.OgcConformance200JSONResponse{ConformsTo: conformanceClasses}, nil
}

// conformanceClasses lists only the classes the conformance suite shows the server passes.
var conformanceClasses = append([]string{
	"http://www.opengis.net/spec/ogcapi-common-1/1.0/conf/core",
	"http://www.opengis.net/spec/ogcapi-common-1/1.0/conf/landing-page",
	"http://www.opengis.net/spec/ogcapi-common-1/1.0/conf/json",
	"http://www.opengis.net/spec/ogcapi-common-1/1.0/conf/oas30",
	"http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/core",
	"http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/geojson",
	"http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/oas30",
	"http://www.opengis.net/spec/ogcapi-features-2/1.0/conf/crs",
	"http://www.opengis.net/spec/ogcapi-features-3/1.0/conf/queryables",
	"http://www.opengis.net/spec/ogcapi-features-3/1.0/conf/queryables-query-parameters",
	"http://www.opengis.net/spec/ogcapi-features-3/1.0/conf/filter",
	"http://www.opengis.net/spec/ogcapi-features-3/1.0/conf/features-filter",
	// The catalog collection (/collections/datasets) as OGC API Records.
	"http://www.opengis.net/spec/ogcapi-records-1/1.0/conf/record-core",
	"http://www.opengis.net/spec/ogcapi-records-1/1.0/conf/record-collection",
	"http://www.opengis.net/spec/ogcapi-records-1/1.0/conf/record-api",
	"http://www.opengis.net/spec/ogcapi-records-1/1.0/conf/sorting",
	"http://www.opengis.net/spec/ogcapi-records-1/1.0/conf/json",
}, cql2.Classes...)
