package handlers

// Operations of the Admin Embed Tokens tag.

import (
	"context"
	"time"

	"meridian/gen"
	"meridian/internal/auth"
	"meridian/internal/maps"
)

// ListAllEmbedTokens: List All Embed Tokens (GET /admin/embed-tokens/).
func (s *Server) ListAllEmbedTokens(ctx context.Context, request gen.ListAllEmbedTokensRequestObject) (gen.ListAllEmbedTokensResponseObject, error) {
	p := request.Params
	skip, limit := page(p.Skip, p.Limit, 50, 200)
	active := p.IsActive
	if active == nil && p.Status != nil {
		active = ptr(*p.Status == "active")
	}
	list, total, err := s.maps.ListAllEmbeds(ctx, auth.From(ctx), maps.EmbedFilter{MapID: p.MapId, Active: active, MapSearch: p.MapSearch,
		Skip: skip, Limit: limit}, time.Now())
	if err != nil {
		return nil, err
	}
	out := gen.ListAllEmbedTokens200JSONResponse{Tokens: make([]gen.AdminEmbedTokenResponse, len(list)), Total: total}
	for i, t := range list {
		e := embedOut(t)
		out.Tokens[i] = gen.AdminEmbedTokenResponse{Id: e.Id, MapId: e.MapId, Name: e.Name, TokenHint: e.TokenHint, ScopedDatasetIds: e.ScopedDatasetIds,
			AllowedOrigins: e.AllowedOrigins, ExpiresAt: e.ExpiresAt, IsActive: e.IsActive, UseCount: e.UseCount, LastUsedAt: e.LastUsedAt,
			CreatedAt: e.CreatedAt, MapName: t.MapName, CreatorUsername: t.Username}
	}
	return out, nil
}

// BulkRevokeEmbedTokens: Bulk Revoke Embed Tokens (POST /admin/embed-tokens/bulk-revoke/).
func (s *Server) BulkRevokeEmbedTokens(ctx context.Context, request gen.BulkRevokeEmbedTokensRequestObject) (gen.BulkRevokeEmbedTokensResponseObject, error) {
	n, err := s.maps.BulkRevokeEmbeds(ctx, auth.From(ctx), request.Body.TokenIds)
	if err != nil {
		return nil, err
	}
	return gen.BulkRevokeEmbedTokens200JSONResponse{RevokedCount: n}, nil
}
