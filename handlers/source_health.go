package handlers

// Operations of the Source Health tag.

import (
	"context"

	"meridian/gen"
)

// CheckSourceHealth: Check Source Health (POST /datasets/{dataset_id}/source-health/).
func (s *Server) CheckSourceHealth(ctx context.Context, request gen.CheckSourceHealthRequestObject) (gen.CheckSourceHealthResponseObject, error) {
	return nil, notImplemented("checkSourceHealth")
}
