package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/store"
)

// SavedSearch is a user's named search filters (spec 2.9), private to the user: replayed by
// sending Params to Search Datasets.
type SavedSearch struct {
	ID                   uuid.UUID
	Name                 string
	Params               map[string]any
	CreatedAt, UpdatedAt time.Time
}

func savedOf(id uuid.UUID, name string, params []byte, created, updated time.Time) (SavedSearch, error) {
	s := SavedSearch{ID: id, Name: name, CreatedAt: created, UpdatedAt: updated}
	return s, json.Unmarshal(params, &s.Params)
}

// signedIn refuses anonymous callers: saved searches belong to a user.
func signedIn(p auth.Principal) error {
	if p.Anonymous() {
		return apperr.Unauthorized("saved searches belong to a signed-in user")
	}
	return nil
}

// SaveSearch stores a search of the caller under a name (1..255 characters; need not be unique).
func (s *Service) SaveSearch(ctx context.Context, p auth.Principal, name string, params map[string]any) (SavedSearch, error) {
	if err := signedIn(p); err != nil {
		return SavedSearch{}, err
	}
	if n := utf8.RuneCountInString(name); n < 1 || n > 255 {
		return SavedSearch{}, apperr.Unprocessable("name: 1 to 255 characters, got %d", n)
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return SavedSearch{}, err
	}
	r, err := s.Q.CreateSavedSearch(ctx, store.CreateSavedSearchParams{UserID: p.UserID, Name: name, Params: raw})
	if err != nil {
		return SavedSearch{}, err
	}
	return savedOf(r.ID, r.Name, r.Params, r.CreatedAt, r.UpdatedAt)
}

// SavedSearches lists the caller's saved searches, most recently updated first.
func (s *Service) SavedSearches(ctx context.Context, p auth.Principal, skip, limit int) ([]SavedSearch, int, error) {
	if err := signedIn(p); err != nil {
		return nil, 0, err
	}
	rows, err := s.Q.ListSavedSearches(ctx, store.ListSavedSearchesParams{UserID: p.UserID, Off: int32(skip), Lim: int32(limit)})
	if err != nil {
		return nil, 0, err
	}
	out := make([]SavedSearch, len(rows))
	total := 0
	for i, r := range rows {
		if out[i], err = savedOf(r.ID, r.Name, r.Params, r.CreatedAt, r.UpdatedAt); err != nil {
			return nil, 0, err
		}
		total = int(r.Total)
	}
	if len(rows) == 0 && skip > 0 { // past the last page: the total still counts
		n, err := s.Q.CountSavedSearches(ctx, p.UserID)
		return out, int(n), err
	}
	return out, total, nil
}

// SavedSearch returns one saved search of the caller; another user's is not found.
func (s *Service) SavedSearch(ctx context.Context, p auth.Principal, id uuid.UUID) (SavedSearch, error) {
	if err := signedIn(p); err != nil {
		return SavedSearch{}, err
	}
	r, err := s.Q.GetSavedSearch(ctx, store.GetSavedSearchParams{ID: id, UserID: p.UserID})
	if errors.Is(err, pgx.ErrNoRows) {
		return SavedSearch{}, apperr.NotFound("saved search %s not found", id)
	}
	if err != nil {
		return SavedSearch{}, err
	}
	return savedOf(r.ID, r.Name, r.Params, r.CreatedAt, r.UpdatedAt)
}

// DeleteSavedSearch deletes one saved search of the caller; another user's is not found.
func (s *Service) DeleteSavedSearch(ctx context.Context, p auth.Principal, id uuid.UUID) error {
	if err := signedIn(p); err != nil {
		return err
	}
	n, err := s.Q.DeleteSavedSearch(ctx, store.DeleteSavedSearchParams{ID: id, UserID: p.UserID})
	if err == nil && n == 0 {
		return apperr.NotFound("saved search %s not found", id)
	}
	return err
}
