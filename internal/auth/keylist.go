package auth

import (
	"context"
	"time"

	"github.com/google/uuid"

	"meridian/store"
)

// KeyInfo is an API key as listings show it: never its secret or its hash.
type KeyInfo struct {
	ID, UserID                  uuid.UUID
	Username, Name, Fingerprint string
	Scope                       string
	IsActive                    bool
	ExpiresAt, LastUsedAt       *time.Time
	CreatedAt                   time.Time
}

// KeyFilter selects keys in the admin list; nil fields select all.
type KeyFilter struct {
	UserID   *uuid.UUID
	IsActive *bool
	Scope    *string
}

// ListKeys is a page of every key filter selects, and how many it selects in all.
func (s *Service) ListKeys(ctx context.Context, f KeyFilter, skip, limit int) ([]KeyInfo, int, error) {
	prm := store.ListAPIKeysParams{UserID: f.UserID, IsActive: f.IsActive, Scope: f.Scope, Off: int32(skip), Lim: int32(limit)}
	rows, err := s.Q.ListAPIKeys(ctx, prm)
	if err != nil {
		return nil, 0, err
	}
	out := make([]KeyInfo, len(rows))
	total := 0
	for i, r := range rows {
		total = int(r.Total)
		out[i] = KeyInfo{ID: r.ID, UserID: r.UserID, Username: r.Username, Name: r.Name, Fingerprint: r.Fingerprint, Scope: r.Scope,
			IsActive: r.IsActive, ExpiresAt: r.ExpiresAt, LastUsedAt: r.LastUsedAt, CreatedAt: r.CreatedAt}
	}
	if len(rows) == 0 && skip > 0 {
		// Past the last page the window count is not there; ask once for the total.
		prm.Off, prm.Lim = 0, 1
		all, err := s.Q.ListAPIKeys(ctx, prm)
		if err != nil {
			return nil, 0, err
		}
		if len(all) > 0 {
			total = int(all[0].Total)
		}
	}
	return out, total, nil
}

// KeysOf lists a user's own keys.
func (s *Service) KeysOf(ctx context.Context, userID uuid.UUID) ([]KeyInfo, error) {
	rows, err := s.Q.ListAPIKeysOfUser(ctx, userID)
	if err != nil {
		return nil, err
	}
	out := make([]KeyInfo, len(rows))
	for i, r := range rows {
		out[i] = KeyInfo{ID: r.ID, UserID: r.UserID, Username: r.Username, Name: r.Name, Fingerprint: r.Fingerprint, Scope: r.Scope,
			IsActive: r.IsActive, ExpiresAt: r.ExpiresAt, LastUsedAt: r.LastUsedAt, CreatedAt: r.CreatedAt}
	}
	return out, nil
}
