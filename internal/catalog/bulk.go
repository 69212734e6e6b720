package catalog

import (
	"context"
	"errors"

	"github.com/google/uuid"

	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/internal/db"
)

// Outcome is how one item of a bulk operation ended.
type Outcome struct {
	ID     uuid.UUID // the dataset deleted or registered
	Status string
	Err    error // why the item did not succeed; nil when it did
}

// Confirmed names a dataset to delete with the title the caller confirms it by.
type Confirmed struct {
	ID    uuid.UUID
	Title string
}

// BulkDelete deletes each dataset whose title is confirmed, item by item: deleted, detached (a
// registered table), title_mismatch, not_found, forbidden or error.
func (s *Service) BulkDelete(ctx context.Context, p auth.Principal, items []Confirmed) ([]Outcome, error) {
	out := make([]Outcome, 0, len(items))
	for _, it := range items {
		title := it.Title
		detached, err := s.Delete(ctx, p, it.ID, &title)
		ok := "deleted"
		if detached {
			ok = "detached"
		}
		if errors.Is(err, ErrTitleMismatch) {
			out = append(out, Outcome{ID: it.ID, Status: "title_mismatch", Err: err})
			continue
		}
		st, err := s.outcome(err, ok, map[apperr.Kind]string{apperr.KindNotFound: "not_found", apperr.KindForbidden: "forbidden"})
		if st == "" {
			return nil, err
		}
		out = append(out, Outcome{ID: it.ID, Status: st, Err: err})
	}
	return out, nil
}

// BulkRegister registers each table, item by item: registered, already_registered, not_found or
// error.
func (s *Service) BulkRegister(ctx context.Context, p auth.Principal, schemas []string, regs []Registration) ([]Outcome, error) {
	if !p.IsAdmin() {
		return nil, apperr.Forbidden("registering tables needs the admin role")
	}
	out := make([]Outcome, 0, len(regs))
	for _, r := range regs {
		id, err := s.Register(ctx, p, schemas, r)
		st, err := s.outcome(err, "registered", map[apperr.Kind]string{apperr.KindConflict: "already_registered", apperr.KindNotFound: "not_found"})
		if st == "" {
			return nil, err
		}
		out = append(out, Outcome{ID: id, Status: st, Err: err})
	}
	return out, nil
}

// outcome names an item's end: ok without an error, the status of the error's kind, or error.
// A database that cannot serve ends the whole request (empty status): nothing more could succeed,
// and the caller retries it whole.
func (s *Service) outcome(err error, ok string, byKind map[apperr.Kind]string) (string, error) {
	switch {
	case err == nil:
		return ok, nil
	case db.Unavailable(err):
		return "", err
	}
	if st, found := byKind[apperr.KindOf(err)]; found {
		return st, err
	}
	s.Log.Error("bulk item failed", "err", err)
	return "error", err
}
