package handlers

// Operations of the Datasets - Data tag.

import (
	"context"

	"meridian/gen"
	"meridian/internal/auth"
)

// DatasetMaps: Dataset Maps (GET /datasets/{dataset_id}/maps/).
func (s *Server) DatasetMaps(ctx context.Context, request gen.DatasetMapsRequestObject) (gen.DatasetMapsResponseObject, error) {
	return nil, notImplemented("datasetMaps")
}

// ListRelatedDatasets: List Related Datasets (GET /datasets/{dataset_id}/related/).
func (s *Server) ListRelatedDatasets(ctx context.Context, request gen.ListRelatedDatasetsRequestObject) (gen.ListRelatedDatasetsResponseObject, error) {
	return nil, notImplemented("listRelatedDatasets")
}

// GetDatasetRows: Get Dataset Rows (GET /datasets/{dataset_id}/rows/).
func (s *Server) GetDatasetRows(ctx context.Context, request gen.GetDatasetRowsRequestObject) (gen.GetDatasetRowsResponseObject, error) {
	return nil, notImplemented("getDatasetRows")
}

// ValidateDataset: Validate Dataset (GET /datasets/{dataset_id}/validate/).
func (s *Server) ValidateDataset(ctx context.Context, request gen.ValidateDatasetRequestObject) (gen.ValidateDatasetResponseObject, error) {
	return nil, notImplemented("validateDataset")
}

// UpdatePublicationStatus: Update Publication Status (PATCH /datasets/{dataset_id}/status/). One
// step of the workflow draft, ready, internal, published; other moves answer 409.
func (s *Server) UpdatePublicationStatus(ctx context.Context, request gen.UpdatePublicationStatusRequestObject) (gen.UpdatePublicationStatusResponseObject, error) {
	status, warnings, err := s.catalog.SetStatus(ctx, auth.From(ctx), request.DatasetId, request.Body.Status)
	if err != nil {
		return nil, err
	}
	out := gen.UpdatePublicationStatus200JSONResponse{Id: request.DatasetId.String(), RecordStatus: status}
	if len(warnings) > 0 {
		out.MetadataWarnings = &warnings
	}
	return out, nil
}

// SetTargetStatus: Set Target Status (PATCH /datasets/{dataset_id}/target-status/). Walks the
// workflow to the target, every step checked and recorded, all or nothing.
func (s *Server) SetTargetStatus(ctx context.Context, request gen.SetTargetStatusRequestObject) (gen.SetTargetStatusResponseObject, error) {
	status, warnings, err := s.catalog.WalkToStatus(ctx, auth.From(ctx), request.DatasetId, request.Body.Status)
	if err != nil {
		return nil, err
	}
	out := gen.SetTargetStatus200JSONResponse{Id: request.DatasetId.String(), RecordStatus: status}
	if len(warnings) > 0 {
		out.MetadataWarnings = &warnings
	}
	return out, nil
}
