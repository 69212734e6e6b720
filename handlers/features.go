package handlers

// Operations of the Features tag.

import (
	"context"

	"meridian/gen"
)

// GetFeaturesGeoJSONZ: Get Features GeoJSON Z (GET /datasets/{dataset_id}/features.geojson).
func (s *Server) GetFeaturesGeoJSONZ(ctx context.Context, request gen.GetFeaturesGeoJSONZRequestObject) (gen.GetFeaturesGeoJSONZResponseObject, error) {
	return nil, notImplemented("getFeaturesGeoJSONZ")
}

// ListFeatures: List Features (GET /datasets/{dataset_id}/features/).
func (s *Server) ListFeatures(ctx context.Context, request gen.ListFeaturesRequestObject) (gen.ListFeaturesResponseObject, error) {
	return nil, notImplemented("listFeatures")
}

// CreateFeature: Create Feature (POST /datasets/{dataset_id}/features/).
func (s *Server) CreateFeature(ctx context.Context, request gen.CreateFeatureRequestObject) (gen.CreateFeatureResponseObject, error) {
	return nil, notImplemented("createFeature")
}

// DeleteSingleFeature: Delete Single Feature (DELETE /datasets/{dataset_id}/features/{gid}).
func (s *Server) DeleteSingleFeature(ctx context.Context, request gen.DeleteSingleFeatureRequestObject) (gen.DeleteSingleFeatureResponseObject, error) {
	return nil, notImplemented("deleteSingleFeature")
}

// GetSingleFeature: Get Single Feature (GET /datasets/{dataset_id}/features/{gid}).
func (s *Server) GetSingleFeature(ctx context.Context, request gen.GetSingleFeatureRequestObject) (gen.GetSingleFeatureResponseObject, error) {
	return nil, notImplemented("getSingleFeature")
}

// PatchSingleFeature: Patch Single Feature (PATCH /datasets/{dataset_id}/features/{gid}).
func (s *Server) PatchSingleFeature(ctx context.Context, request gen.PatchSingleFeatureRequestObject) (gen.PatchSingleFeatureResponseObject, error) {
	return nil, notImplemented("patchSingleFeature")
}

// ReplaceFeature: Replace Feature (PUT /datasets/{dataset_id}/features/{gid}).
func (s *Server) ReplaceFeature(ctx context.Context, request gen.ReplaceFeatureRequestObject) (gen.ReplaceFeatureResponseObject, error) {
	return nil, notImplemented("replaceFeature")
}
