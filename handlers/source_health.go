package handlers

// Operations of the Source Health tag.

import (
	"context"

	"meridian/gen"
	"meridian/internal/auth"
)

// CheckSourceHealth: Check Source Health (POST /datasets/{dataset_id}/source-health/).
func (s *Server) CheckSourceHealth(ctx context.Context, request gen.CheckSourceHealthRequestObject) (gen.CheckSourceHealthResponseObject, error) {
	h, err := s.sources.Check(ctx, auth.From(ctx), request.DatasetId)
	if err != nil {
		return nil, err
	}
	return gen.CheckSourceHealth200JSONResponse{DatasetId: h.DatasetID, Origin: h.Origin,
		SourceHealth: gen.SourceHealthResponseSourceHealth(h.Status), SourceHealthDetail: &h.Detail, LastCheckedAt: h.CheckedAt}, nil
}
