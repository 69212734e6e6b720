package handlers

// Operations of the Embed Tokens tag.

import (
	"context"
	"time"

	"meridian/gen"
	"meridian/internal/auth"
	"meridian/internal/maps"
)

// EmbedTokenList: List (GET /maps/{map_id}/embed-tokens/).
func (s *Server) EmbedTokenList(ctx context.Context, request gen.EmbedTokenListRequestObject) (gen.EmbedTokenListResponseObject, error) {
	skip, limit := page(request.Params.Skip, request.Params.Limit, 50, 200)
	list, total, err := s.maps.ListEmbeds(ctx, auth.From(ctx), request.MapId, skip, limit, time.Now())
	if err != nil {
		return nil, err
	}
	out := gen.EmbedTokenList200JSONResponse{Tokens: make([]gen.EmbedTokenResponse, len(list)), Total: total}
	for i, t := range list {
		out.Tokens[i] = embedOut(t)
	}
	return out, nil
}

// EmbedTokenCreate: Create (POST /maps/{map_id}/embed-tokens/).
func (s *Server) EmbedTokenCreate(ctx context.Context, request gen.EmbedTokenCreateRequestObject) (gen.EmbedTokenCreateResponseObject, error) {
	b := request.Body
	t, err := s.maps.CreateEmbed(ctx, auth.From(ctx), request.MapId, maps.EmbedRequest{Name: b.Name, ExpiresInDays: val(b.ExpiresInDays),
		AllowedOrigins: val(b.AllowedOrigins)}, time.Now())
	if err != nil {
		return nil, err
	}
	out, err := merged[gen.EmbedTokenCreate201JSONResponse](embedOut(t), map[string]string{"raw_token": t.Raw})
	return out, err
}

// EmbedTokenRevoke: Revoke (DELETE /maps/{map_id}/embed-tokens/{token_id}/).
func (s *Server) EmbedTokenRevoke(ctx context.Context, request gen.EmbedTokenRevokeRequestObject) (gen.EmbedTokenRevokeResponseObject, error) {
	t, err := s.maps.RevokeEmbed(ctx, auth.From(ctx), request.MapId, request.TokenId, time.Now())
	if err != nil {
		return nil, err
	}
	return gen.EmbedTokenRevoke200JSONResponse(embedOut(t)), nil
}

// EmbedTokenUpdate: Update (PATCH /maps/{map_id}/embed-tokens/{token_id}/).
func (s *Server) EmbedTokenUpdate(ctx context.Context, request gen.EmbedTokenUpdateRequestObject) (gen.EmbedTokenUpdateResponseObject, error) {
	t, err := s.maps.UpdateEmbed(ctx, auth.From(ctx), request.MapId, request.TokenId, val(request.Body.AllowedOrigins), time.Now())
	if err != nil {
		return nil, err
	}
	return gen.EmbedTokenUpdate200JSONResponse(embedOut(t)), nil
}

func embedOut(t maps.EmbedToken) gen.EmbedTokenResponse {
	ids := make([]string, len(t.ScopedDatasetIds))
	for i, id := range t.ScopedDatasetIds {
		ids[i] = id.String()
	}
	uses := int(t.UseCount)
	return gen.EmbedTokenResponse{Id: t.ID, MapId: t.MapID, Name: t.Name, TokenHint: t.TokenHint, ScopedDatasetIds: ids,
		AllowedOrigins: &t.AllowedOrigins, ExpiresAt: t.ExpiresAt, IsActive: t.Active, UseCount: &uses, LastUsedAt: t.LastUsedAt,
		CreatedAt: t.CreatedAt}
}
