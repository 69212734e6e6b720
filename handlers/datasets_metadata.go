package handlers

// Operations of the Datasets - Metadata tag.

import (
	"context"

	"meridian/gen"
)

// DeleteDatasetRelationship: Delete Dataset Relationship (DELETE /datasets/relationships/{relationship_id}/).
func (s *Server) DeleteDatasetRelationship(ctx context.Context, request gen.DeleteDatasetRelationshipRequestObject) (gen.DeleteDatasetRelationshipResponseObject, error) {
	return nil, notImplemented("deleteDatasetRelationship")
}

// ListAttributes: List Attributes (GET /datasets/{dataset_id}/attributes/).
func (s *Server) ListAttributes(ctx context.Context, request gen.ListAttributesRequestObject) (gen.ListAttributesResponseObject, error) {
	return nil, notImplemented("listAttributes")
}

// GetAttribute: Get Attribute (GET /datasets/{dataset_id}/attributes/{attribute_id}/).
func (s *Server) GetAttribute(ctx context.Context, request gen.GetAttributeRequestObject) (gen.GetAttributeResponseObject, error) {
	return nil, notImplemented("getAttribute")
}

// UpdateAttribute: Update Attribute (PATCH /datasets/{dataset_id}/attributes/{attribute_id}/).
func (s *Server) UpdateAttribute(ctx context.Context, request gen.UpdateAttributeRequestObject) (gen.UpdateAttributeResponseObject, error) {
	return nil, notImplemented("updateAttribute")
}

// ResetAttribute: Reset Attribute (POST /datasets/{dataset_id}/attributes/{attribute_id}/reset/).
func (s *Server) ResetAttribute(ctx context.Context, request gen.ResetAttributeRequestObject) (gen.ResetAttributeResponseObject, error) {
	return nil, notImplemented("resetAttribute")
}

// GetColumnStats: Get Column Stats (GET /datasets/{dataset_id}/columns/{column_name}/stats/).
func (s *Server) GetColumnStats(ctx context.Context, request gen.GetColumnStatsRequestObject) (gen.GetColumnStatsResponseObject, error) {
	return nil, notImplemented("getColumnStats")
}

// GetColumnValues: Get Column Values (GET /datasets/{dataset_id}/columns/{column_name}/values/).
func (s *Server) GetColumnValues(ctx context.Context, request gen.GetColumnValuesRequestObject) (gen.GetColumnValuesResponseObject, error) {
	return nil, notImplemented("getColumnValues")
}

// GetFeatureRelatedRecords: Get Feature Related Records (GET /datasets/{dataset_id}/features/{gid}/related/{relationship_id}/).
func (s *Server) GetFeatureRelatedRecords(ctx context.Context, request gen.GetFeatureRelatedRecordsRequestObject) (gen.GetFeatureRelatedRecordsResponseObject, error) {
	return nil, notImplemented("getFeatureRelatedRecords")
}

// ListDatasetRelationships: List Dataset Relationships (GET /datasets/{dataset_id}/relationships/).
func (s *Server) ListDatasetRelationships(ctx context.Context, request gen.ListDatasetRelationshipsRequestObject) (gen.ListDatasetRelationshipsResponseObject, error) {
	return nil, notImplemented("listDatasetRelationships")
}

// CreateDatasetRelationship: Create Dataset Relationship (POST /datasets/{dataset_id}/relationships/).
func (s *Server) CreateDatasetRelationship(ctx context.Context, request gen.CreateDatasetRelationshipRequestObject) (gen.CreateDatasetRelationshipResponseObject, error) {
	return nil, notImplemented("createDatasetRelationship")
}

// GetDatasetVersions: Get Dataset Versions (GET /datasets/{dataset_id}/versions/).
func (s *Server) GetDatasetVersions(ctx context.Context, request gen.GetDatasetVersionsRequestObject) (gen.GetDatasetVersionsResponseObject, error) {
	return nil, notImplemented("getDatasetVersions")
}
