package handlers

// Operations of the Admin Embed Tokens tag.

import (
	"context"

	"meridian/gen"
)

// ListAllEmbedTokens: List All Embed Tokens (GET /admin/embed-tokens/).
func (s *Server) ListAllEmbedTokens(ctx context.Context, request gen.ListAllEmbedTokensRequestObject) (gen.ListAllEmbedTokensResponseObject, error) {
	return nil, notImplemented("listAllEmbedTokens")
}

// BulkRevokeEmbedTokens: Bulk Revoke Embed Tokens (POST /admin/embed-tokens/bulk-revoke/).
func (s *Server) BulkRevokeEmbedTokens(ctx context.Context, request gen.BulkRevokeEmbedTokensRequestObject) (gen.BulkRevokeEmbedTokensResponseObject, error) {
	return nil, notImplemented("bulkRevokeEmbedTokens")
}
