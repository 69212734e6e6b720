package handlers

// Operations of the Audit tag.

import (
	"context"

	"meridian/gen"
	"meridian/internal/auth"
)

// GetColumnDDLFeed: Get Column DDL Feed (GET /audit/datasets/{dataset_id}/column-ddl). Newest
// first, 50/200; `offset` is the older name of `skip`.
func (s *Server) GetColumnDDLFeed(ctx context.Context, request gen.GetColumnDDLFeedRequestObject) (gen.GetColumnDDLFeedResponseObject, error) {
	prm := request.Params
	if prm.Skip == nil {
		prm.Skip = prm.Offset
	}
	skip, limit := page(prm.Skip, prm.Limit, 50, 200)
	list, total, err := s.catalog.ColumnChanges(ctx, auth.From(ctx), request.DatasetId, prm.Since, skip, limit)
	if err != nil {
		return nil, err
	}
	out := gen.GetColumnDDLFeed200JSONResponse{Items: make([]gen.ColumnDdlEntry, len(list)), Total: total, Limit: limit, Offset: skip}
	for i, c := range list {
		e := gen.ColumnDdlEntry{Action: c.Action, CreatedAt: c.At, UserId: c.ActorID, Username: &c.ActorDisplay}
		if c.Details != nil {
			e.Details = &c.Details
		}
		out.Items[i] = e
	}
	return out, nil
}
