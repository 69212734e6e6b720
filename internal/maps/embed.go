package maps

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/store"
)

// Embed tokens (open-points.md): emb_ + 32 random bytes in URL-safe base64, shown once, kept as
// SHA-256; name 1..255, expiry 1..365 days (default 30), up to 50 allowed origins.

// EmbedToken is an embed token as its map's editors see it (never the secret).
type EmbedToken struct {
	store.CatalogEmbedToken
	Active   bool
	Raw      string  // the secret, on creation only
	MapName  *string // admin list
	Username *string // admin list: who made it
}

func embedOf(t store.CatalogEmbedToken, now time.Time) EmbedToken {
	return EmbedToken{CatalogEmbedToken: t, Active: t.RevokedAt == nil && t.ExpiresAt.After(now)}
}

// EmbedRequest is Create's input.
type EmbedRequest struct {
	Name           *string
	ExpiresInDays  int
	AllowedOrigins []string
}

// checkOrigins accepts origins as browsers send them: scheme://host[:port], nothing more.
func checkOrigins(origins []string) error {
	if len(origins) > 50 {
		return apperr.Unprocessable("allowed_origins: at most 50")
	}
	for _, o := range origins {
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.User != nil {
			return apperr.Unprocessable("allowed_origins: %q is not an origin (scheme://host[:port])", o)
		}
	}
	return nil
}

// shareable checks that p may manage the share links and embed tokens of map id.
func (s *Service) shareable(ctx context.Context, p auth.Principal, id uuid.UUID) error {
	m, err := s.record(ctx, s.Q, p, id)
	if err != nil {
		return err
	}
	return auth.AuthorizeManage(p, resource(m), "map", "manage its embed tokens")
}

// CreateEmbed issues an embed token of map id, scoped to the datasets its layers show now that p
// may lend (catalog.dataset_lendable): a grant or internal visibility lets p read a dataset, never
// hand it to the anonymous visitors of a page.
func (s *Service) CreateEmbed(ctx context.Context, p auth.Principal, id uuid.UUID, in EmbedRequest, now time.Time) (EmbedToken, error) {
	if err := s.shareable(ctx, p, id); err != nil {
		return EmbedToken{}, err
	}
	days := in.ExpiresInDays
	if days == 0 {
		days = 30
	}
	if days < 1 || days > 365 {
		return EmbedToken{}, apperr.Unprocessable("expires_in_days must be 1 to 365")
	}
	if err := checkOrigins(in.AllowedOrigins); err != nil {
		return EmbedToken{}, err
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return EmbedToken{}, err
	}
	token := "emb_" + base64.RawURLEncoding.EncodeToString(raw)
	row, err := s.Q.InsertEmbedToken(ctx, store.InsertEmbedTokenParams{MapID: id, Name: in.Name, TokenSha256: tokenHash(token),
		TokenHint: "emb_…" + token[len(token)-4:], AllowedOrigins: nonNil(in.AllowedOrigins),
		ExpiresAt: now.Add(time.Duration(days) * 24 * time.Hour), CreatedBy: &p.UserID, CreatorIsAdmin: p.IsAdmin()})
	if err != nil {
		return EmbedToken{}, err
	}
	s.audit(ctx, s.Q, p, AuditEmbedCreate, "embed_token", row.ID, map[string]any{"map_id": id, "allowed_origins": row.AllowedOrigins,
		"expires_at": row.ExpiresAt})
	out := embedOf(row, now)
	out.Raw = token
	return out, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// ListEmbeds pages through map id's embed tokens, newest first.
func (s *Service) ListEmbeds(ctx context.Context, p auth.Principal, id uuid.UUID, skip, limit int, now time.Time) ([]EmbedToken, int, error) {
	if err := s.shareable(ctx, p, id); err != nil {
		return nil, 0, err
	}
	rows, err := s.Q.ListEmbedTokens(ctx, store.ListEmbedTokensParams{MapID: id, Lim: int32(limit), Off: int32(skip)})
	out := make([]EmbedToken, len(rows))
	total := 0
	for i, r := range rows {
		out[i], total = embedOf(r.CatalogEmbedToken, now), int(r.Total)
	}
	return out, total, err
}

// UpdateEmbed replaces an embed token's allowed origins; a revoked token answers 409.
func (s *Service) UpdateEmbed(ctx context.Context, p auth.Principal, id, tokenID uuid.UUID, origins []string, now time.Time) (EmbedToken, error) {
	if err := s.shareable(ctx, p, id); err != nil {
		return EmbedToken{}, err
	}
	if err := checkOrigins(origins); err != nil {
		return EmbedToken{}, err
	}
	t, err := s.Q.GetEmbedToken(ctx, store.GetEmbedTokenParams{ID: tokenID, MapID: id})
	if errors.Is(err, pgx.ErrNoRows) {
		return EmbedToken{}, apperr.NotFound("embed token %s not found", tokenID)
	}
	if err != nil {
		return EmbedToken{}, err
	}
	if t.RevokedAt != nil {
		return EmbedToken{}, apperr.Conflict("embed token %s is revoked", tokenID)
	}
	t, err = s.Q.SetEmbedTokenOrigins(ctx, store.SetEmbedTokenOriginsParams{ID: tokenID, MapID: id, AllowedOrigins: nonNil(origins)})
	if err == nil {
		s.audit(ctx, s.Q, p, AuditEmbedUpdate, "embed_token", tokenID, map[string]any{"map_id": id, "allowed_origins": t.AllowedOrigins})
	}
	return embedOf(t, now), err
}

// RevokeEmbed ends an embed token at once (again: no change).
func (s *Service) RevokeEmbed(ctx context.Context, p auth.Principal, id, tokenID uuid.UUID, now time.Time) (EmbedToken, error) {
	if err := s.shareable(ctx, p, id); err != nil {
		return EmbedToken{}, err
	}
	t, err := s.Q.RevokeEmbedToken(ctx, store.RevokeEmbedTokenParams{ID: tokenID, MapID: id})
	if errors.Is(err, pgx.ErrNoRows) {
		return EmbedToken{}, apperr.NotFound("embed token %s not found", tokenID)
	}
	if err == nil {
		s.audit(ctx, s.Q, p, AuditEmbedRevoke, "embed_token", tokenID, map[string]any{"map_id": id})
	}
	return embedOf(t, now), err
}

// EmbedFilter narrows the admin's list of embed tokens.
type EmbedFilter struct {
	MapID       *uuid.UUID
	Active      *bool
	MapSearch   *string
	Skip, Limit int
}

// ListAllEmbeds lists every embed token (admins).
func (s *Service) ListAllEmbeds(ctx context.Context, p auth.Principal, f EmbedFilter, now time.Time) ([]EmbedToken, int, error) {
	if !p.Can(auth.CapManageSettings) {
		return nil, 0, apperr.Forbidden("listing embed tokens is for admins")
	}
	rows, err := s.Q.ListAllEmbedTokens(ctx, store.ListAllEmbedTokensParams{MapID: f.MapID, Active: f.Active, MapSearch: f.MapSearch,
		Lim: int32(f.Limit), Off: int32(f.Skip)})
	out := make([]EmbedToken, len(rows))
	total := 0
	for i, r := range rows {
		out[i], total = embedOf(r.CatalogEmbedToken, now), int(r.Total)
		out[i].MapName, out[i].Username = &r.MapName, r.CreatedByUsername
	}
	return out, total, err
}

// BulkRevokeEmbeds revokes up to 100 embed tokens (admins) and counts those it revoked.
func (s *Service) BulkRevokeEmbeds(ctx context.Context, p auth.Principal, ids []string) (int, error) {
	if !p.Can(auth.CapManageSettings) {
		return 0, apperr.Forbidden("revoking embed tokens is for admins")
	}
	var valid []uuid.UUID
	for _, s := range ids {
		if id, err := uuid.Parse(s); err == nil {
			valid = append(valid, id) // an id that is no uuid names no token: skipped
		}
	}
	rows, err := s.Q.BulkRevokeEmbedTokens(ctx, valid)
	for _, r := range rows {
		s.audit(ctx, s.Q, p, AuditEmbedRevoke, "embed_token", r.ID, map[string]any{"map_id": r.MapID, "bulk": true})
	}
	return len(rows), err
}

// Embedded resolves an embed token sent from origin (the request's Origin, else its Referer):
// the principal it makes, or ok=false for a token that is unknown, revoked, expired or used
// from an origin it does not allow. Each accepted use is counted.
func (s *Service) Embedded(ctx context.Context, token, origin string) (auth.Principal, bool, error) {
	if !strings.HasPrefix(token, "emb_") {
		return auth.Principal{}, false, nil
	}
	row, err := s.Q.UseEmbedToken(ctx, store.UseEmbedTokenParams{TokenSha256: tokenHash(token), Origin: originOf(origin)})
	if errors.Is(err, pgx.ErrNoRows) {
		return auth.Principal{}, false, nil
	}
	if err != nil {
		return auth.Principal{}, false, err
	}
	return auth.Principal{Via: auth.ViaEmbedToken, Scope: row.MapID.String(), Exp: row.ExpiresAt.Unix(),
		Lent: append([]uuid.UUID{row.MapID}, row.ScopedDatasetIds...)}, true, nil
}

// originOf is the scheme://host[:port] of an Origin or Referer header.
func originOf(h string) string {
	u, err := url.Parse(h)
	if err != nil || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}
