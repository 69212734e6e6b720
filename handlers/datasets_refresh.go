package handlers

// Operations of the Datasets - Refresh tag.

import (
	"context"

	"meridian/gen"
)

// RefreshDataset: Refresh Dataset (POST /datasets/{dataset_id}/refresh).
func (s *Server) RefreshDataset(ctx context.Context, request gen.RefreshDatasetRequestObject) (gen.RefreshDatasetResponseObject, error) {
	return nil, notImplemented("refreshDataset")
}
