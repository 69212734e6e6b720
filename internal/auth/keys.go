package auth

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"meridian/internal/apperr"
	"meridian/internal/audit"
	"meridian/store"
)

// NewKey is a request for an API key.
type NewKey struct {
	OwnerID   uuid.UUID
	Name      string
	Scope     string // "full" (default) or "read_only"
	ExpiresAt *time.Time
	Actor     Principal // who asks: the owner, or an admin for someone else
	Client    Client
}

// CreatedKey is the stored key plus its secret, which is never retrievable again.
type CreatedKey struct {
	ID                       uuid.UUID
	Name, Fingerprint, Scope string
	ExpiresAt                *time.Time
	CreatedAt                time.Time
	Secret                   string
}

// CreateKey stores a new API key for its owner. Only the hash of the secret is kept.
func (s *Service) CreateKey(ctx context.Context, nk NewKey) (CreatedKey, error) {
	if nk.Scope == "" {
		nk.Scope = "full"
	}
	if nk.ExpiresAt != nil && !nk.ExpiresAt.After(time.Now()) {
		return CreatedKey{}, apperr.Unprocessable("expires_at must be in the future")
	}
	secret := NewOpaqueToken()
	creator := nk.Actor.UserID
	k, err := s.Q.CreateAPIKey(ctx, store.CreateAPIKeyParams{
		UserID: nk.OwnerID, Name: nk.Name, KeyHash: HashToken(secret), Fingerprint: Fingerprint(secret),
		Scope: nk.Scope, ExpiresAt: nk.ExpiresAt, CreatedBy: &creator,
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return CreatedKey{}, apperr.NotFound("user %s not found", nk.OwnerID)
	}
	if err != nil {
		return CreatedKey{}, err
	}
	s.audit(ctx, audit.Entry{ActorID: nk.Actor.UserID, ActorDisplay: nk.Actor.Username, Action: "api_key.create",
		ResourceType: "api_key", ResourceID: k.ID.String(), IP: nk.Client.IP, UA: nk.Client.UserAgent,
		Detail: map[string]any{"owner_id": nk.OwnerID.String(), "scope": k.Scope, "fingerprint": k.Fingerprint}})
	return CreatedKey{ID: k.ID, Name: k.Name, Fingerprint: k.Fingerprint, Scope: k.Scope, ExpiresAt: k.ExpiresAt,
		CreatedAt: k.CreatedAt, Secret: secret}, nil
}

// RevokeKey revokes key id. ownerOnly restricts it to the actor's own keys; a key of someone else
// then answers 404, as if it did not exist.
func (s *Service) RevokeKey(ctx context.Context, id uuid.UUID, actor Principal, ownerOnly bool, c Client) error {
	var owner *uuid.UUID
	if ownerOnly {
		owner = &actor.UserID
	}
	k, err := s.Q.RevokeAPIKey(ctx, store.RevokeAPIKeyParams{ID: id, OwnerID: owner})
	if errors.Is(err, pgx.ErrNoRows) {
		return apperr.NotFound("API key %s not found", id)
	}
	if err != nil {
		return err
	}
	s.audit(ctx, audit.Entry{ActorID: actor.UserID, ActorDisplay: actor.Username, Action: "api_key.revoke",
		ResourceType: "api_key", ResourceID: k.ID.String(), IP: c.IP, UA: c.UserAgent,
		Detail: map[string]any{"owner_id": k.UserID.String(), "name": k.Name}})
	return nil
}
