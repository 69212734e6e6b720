package handlers

// Operations of the Audit tag.

import (
	"context"

	"meridian/gen"
)

// GetColumnDDLFeed: Get Column DDL Feed (GET /audit/datasets/{dataset_id}/column-ddl).
func (s *Server) GetColumnDDLFeed(ctx context.Context, request gen.GetColumnDDLFeedRequestObject) (gen.GetColumnDDLFeedResponseObject, error) {
	return nil, notImplemented("getColumnDDLFeed")
}
