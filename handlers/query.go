package handlers

// Operations of the Query tag.

import (
	"context"

	"meridian/gen"
)

// RunAReadOnlySQLQuery: Run a read-only SQL query (POST /query/).
func (s *Server) RunAReadOnlySQLQuery(ctx context.Context, request gen.RunAReadOnlySQLQueryRequestObject) (gen.RunAReadOnlySQLQueryResponseObject, error) {
	return nil, notImplemented("runAReadOnlySQLQuery")
}
