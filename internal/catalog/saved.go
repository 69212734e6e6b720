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

// savedOf is a stored saved search; its params are a JSON object (the table checks it).
func savedOf(r store.CatalogSavedSearch) SavedSearch {
	s := SavedSearch{ID: r.ID, Name: r.Name, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	_ = json.Unmarshal(r.Params, &s.Params)
	return s
}

// signedIn refuses anonymous callers: saved searches belong to a user.
func signedIn(p auth.Principal) error {
	if p.Anonymous() {
		return apperr.Unauthorized("saved searches belong to a signed-in user")
	}
	return nil
}

// SaveSearch stores a search of the caller under a name (1..255 characters; need not be unique),
// within the quotas (settings saved_searches.*): params of at most max_params_bytes as JSON (422),
// at most max_per_user saved searches (409). A refusal leaves the stored ones as they are.
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
	quotas, err := s.Settings.SavedSearchQuotas(ctx)
	if err != nil {
		return SavedSearch{}, err
	}
	if int64(len(raw)) > quotas.ParamsBytes {
		return SavedSearch{}, apperr.Unprocessable("params: %d bytes as JSON, at most %d (setting saved_searches.max_params_bytes)",
			len(raw), quotas.ParamsBytes)
	}
	var r store.CatalogSavedSearch
	err = pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := s.Q.WithTx(tx)
		if err := q.LockUserSavedSearches(ctx, p.UserID); err != nil {
			return err
		}
		n, err := q.CountSavedSearches(ctx, p.UserID)
		if err != nil {
			return err
		}
		if n >= quotas.PerUser {
			return apperr.Conflict("saved search quota reached: you have %d saved searches, at most %d (setting saved_searches.max_per_user); delete one first",
				n, quotas.PerUser)
		}
		r, err = q.CreateSavedSearch(ctx, store.CreateSavedSearchParams{UserID: p.UserID, Name: name, Params: raw})
		return err
	})
	if err != nil {
		return SavedSearch{}, err
	}
	return savedOf(r), nil
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
	return listPage(rows, skip, func(r store.ListSavedSearchesRow) int64 { return r.Total },
		func() (int64, error) { return s.Q.CountSavedSearches(ctx, p.UserID) },
		func(r store.ListSavedSearchesRow) SavedSearch { return savedOf(r.CatalogSavedSearch) })
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
	return savedOf(r), nil
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
