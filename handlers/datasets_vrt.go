package handlers

// Operations of the Datasets - VRT tag.

import (
	"context"

	"meridian/gen"
)

// ListVRTSources: List VRT Sources (GET /datasets/{dataset_id}/vrt-sources/).
func (s *Server) ListVRTSources(ctx context.Context, request gen.ListVRTSourcesRequestObject) (gen.ListVRTSourcesResponseObject, error) {
	return nil, notImplemented("listVRTSources")
}

// ListVRTGenerations: List VRT Generations (GET /datasets/{dataset_id}/vrt/generations/).
func (s *Server) ListVRTGenerations(ctx context.Context, request gen.ListVRTGenerationsRequestObject) (gen.ListVRTGenerationsResponseObject, error) {
	return nil, notImplemented("listVRTGenerations")
}

// RegenerateVRT: Regenerate VRT (POST /datasets/{dataset_id}/vrt/regenerate/).
func (s *Server) RegenerateVRT(ctx context.Context, request gen.RegenerateVRTRequestObject) (gen.RegenerateVRTResponseObject, error) {
	return nil, notImplemented("regenerateVRT")
}

// GetVRTStatus: Get VRT Status (GET /datasets/{dataset_id}/vrt/status/).
func (s *Server) GetVRTStatus(ctx context.Context, request gen.GetVRTStatusRequestObject) (gen.GetVRTStatusResponseObject, error) {
	return nil, notImplemented("getVRTStatus")
}
