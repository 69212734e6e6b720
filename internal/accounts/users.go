package accounts

import (
	"context"
	"time"

	"github.com/google/uuid"

	"meridian/store"
)

// User is an account as callers see it: whether it has a password, never its hash.
type User struct {
	ID                         uuid.UUID
	Username, Email            string
	Role, Status               string
	EmailVerified, HasPassword bool
	LastLoginAt                *time.Time
	CreatedAt                  time.Time
}

func userOf(u store.CatalogUser) User {
	return User{ID: u.ID, Username: u.Username, Email: u.Email, Role: u.Role, Status: u.Status, EmailVerified: u.EmailVerified,
		HasPassword: u.PasswordHash != nil, LastLoginAt: u.LastLoginAt, CreatedAt: u.CreatedAt}
}

// Filter selects users in the admin lists; nil fields select all.
type Filter struct {
	Role, Status, Q *string
	Sort            string // username (default), email, role, status, created_at, last_login_at
	Descending      bool
}

// List is a page of the users filter selects and how many it selects in all.
func (s *Service) List(ctx context.Context, f Filter, skip, limit int) ([]User, int, error) {
	rows, err := s.Q.ListUsers(ctx, store.ListUsersParams{Role: f.Role, Status: f.Status, Q: f.Q, Sort: f.Sort, Descending: f.Descending,
		Off: int32(skip), Lim: int32(limit)})
	if err != nil {
		return nil, 0, err
	}
	out := make([]User, len(rows))
	total := 0
	for i, r := range rows {
		total = int(r.Total)
		out[i] = userOf(store.CatalogUser{ID: r.ID, Username: r.Username, Email: r.Email, PasswordHash: r.PasswordHash, Role: r.Role,
			Status: r.Status, EmailVerified: r.EmailVerified, LastLoginAt: r.LastLoginAt, CreatedAt: r.CreatedAt})
	}
	return out, total, nil
}

// ExportPage is how many users Each reads at a time.
const ExportPage = 500

// Each calls fn for every user filter selects from the skip-th on, reading them page by page, so
// a large export never holds them all.
func (s *Service) Each(ctx context.Context, f Filter, skip int, fn func(User) error) error {
	const size = ExportPage
	for ; ; skip += size {
		users, _, err := s.List(ctx, f, skip, size)
		if err != nil {
			return err
		}
		for _, u := range users {
			if err := fn(u); err != nil {
				return err
			}
		}
		if len(users) < size {
			return nil
		}
	}
}

// Name is a user's id and name, for pickers.
type Name struct {
	ID       uuid.UUID
	Username string
}

// Names lists users by name (active ones unless includeInactive), filtered by q.
func (s *Service) Names(ctx context.Context, includeInactive bool, q *string, skip, limit int) ([]Name, error) {
	rows, err := s.Q.ListUserNames(ctx, store.ListUserNamesParams{IncludeInactive: includeInactive, Q: q, Off: int32(skip), Lim: int32(limit)})
	if err != nil {
		return nil, err
	}
	out := make([]Name, len(rows))
	for i, r := range rows {
		out[i] = Name{ID: r.ID, Username: r.Username}
	}
	return out, nil
}

// Usage is what a user owns.
type Usage struct {
	Datasets, APIKeys int
	StorageBytes      int64
}

// UsageOf counts a user's datasets, API keys and the bytes of their tables.
func (s *Service) UsageOf(ctx context.Context, id uuid.UUID) (Usage, error) {
	u, err := s.Q.UsageOfUser(ctx, &id)
	return Usage{Datasets: int(u.DatasetCount), APIKeys: int(u.ApiKeyCount), StorageBytes: u.StorageBytes}, err
}
