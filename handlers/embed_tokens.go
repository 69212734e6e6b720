package handlers

// Operations of the Embed Tokens tag.

import (
	"context"

	"meridian/gen"
)

// EmbedTokenList: List (GET /maps/{map_id}/embed-tokens/).
func (s *Server) EmbedTokenList(ctx context.Context, request gen.EmbedTokenListRequestObject) (gen.EmbedTokenListResponseObject, error) {
	return nil, notImplemented("embedTokenList")
}

// EmbedTokenCreate: Create (POST /maps/{map_id}/embed-tokens/).
func (s *Server) EmbedTokenCreate(ctx context.Context, request gen.EmbedTokenCreateRequestObject) (gen.EmbedTokenCreateResponseObject, error) {
	return nil, notImplemented("embedTokenCreate")
}

// EmbedTokenRevoke: Revoke (DELETE /maps/{map_id}/embed-tokens/{token_id}/).
func (s *Server) EmbedTokenRevoke(ctx context.Context, request gen.EmbedTokenRevokeRequestObject) (gen.EmbedTokenRevokeResponseObject, error) {
	return nil, notImplemented("embedTokenRevoke")
}

// EmbedTokenUpdate: Update (PATCH /maps/{map_id}/embed-tokens/{token_id}/).
func (s *Server) EmbedTokenUpdate(ctx context.Context, request gen.EmbedTokenUpdateRequestObject) (gen.EmbedTokenUpdateResponseObject, error) {
	return nil, notImplemented("embedTokenUpdate")
}
