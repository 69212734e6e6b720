package handlers

// Operations of the Datasets - Refresh tag.

import (
	"context"

	"meridian/gen"
	"meridian/internal/auth"
	"meridian/internal/sources"
)

// RefreshDataset: Refresh Dataset (POST /datasets/{dataset_id}/refresh). A service layer is
// fetched again and its import queued (202 with the run and the job); a registered table's
// statistics are read again at once (its job is complete).
func (s *Server) RefreshDataset(ctx context.Context, request gen.RefreshDatasetRequestObject) (gen.RefreshDatasetResponseObject, error) {
	var token string
	if b := request.Body; b != nil {
		token = val(b.Token)
	}
	r, err := s.sources.Refresh(ctx, auth.From(ctx), request.DatasetId, token, sources.TriggerManual)
	if err != nil {
		return nil, err
	}
	return gen.RefreshDataset202JSONResponse{RunId: r.RunID, JobId: r.JobID, DatasetId: r.DatasetID, OriginKind: r.OriginKind,
		Trigger: r.Trigger, Status: &r.Status, Message: r.Message}, nil
}
