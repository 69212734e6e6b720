package tiles

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"

	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/internal/catalog"
)

// Token signs the tile template of dataset id for p, who must be able to read it: 401 for a
// caller without credential, 404 for one whose credential does not open it.
func (s *Service) Token(ctx context.Context, p auth.Principal, id uuid.UUID, now time.Time) (Token, error) {
	t, _, err := s.TokenOf(ctx, p, id, now)
	return t, err
}

// TokenOf is Token with the dataset it signs (a vector or a raster dataset).
func (s *Service) TokenOf(ctx context.Context, p auth.Principal, id uuid.UUID, now time.Time) (Token, catalog.Dataset, error) {
	conf, err := s.config(ctx)
	if err != nil {
		return Token{}, catalog.Dataset{}, err
	}
	d, err := s.Catalog.Get(ctx, p, id, false)
	if apperr.KindOf(err) == apperr.KindNotFound && p.Anonymous() && (p.Via == "" || p.Via == auth.ViaAnonymous) {
		// A caller who sent no credential may only lack one (a map page whose session ran out):
		// 401 lets clients sign in or refresh and ask again. It is the answer for a dataset that
		// does not exist too, so it tells nothing of which ids exist.
		return Token{}, d, apperr.Unauthorized("dataset %s is not public, or does not exist: sign in to get its tile token", id)
	}
	if err != nil {
		return Token{}, d, err
	}
	if err := tokenable(d); err != nil {
		return Token{}, d, err
	}
	return s.Signer.IssueAbove(Scope(d), time.Duration(conf.TokenTTLSeconds)*time.Second, now, d.SignedTilesFloor()), d, nil
}

// Sign issues a template for scope to a caller already allowed to read its dataset by other
// means (the layers of a share link), with the configured lifetime.
func (s *Service) Sign(ctx context.Context, scope string, now time.Time) (Token, error) {
	conf, err := s.config(ctx)
	if err != nil {
		return Token{}, err
	}
	var floor int64
	if d, err := s.scoped(ctx, scope); err == nil {
		floor = d.SignedTilesFloor()
	} else if apperr.KindOf(err) != apperr.KindNotFound {
		return Token{}, err
	}
	return s.Signer.IssueAbove(scope, time.Duration(conf.TokenTTLSeconds)*time.Second, now, floor), nil
}

// scoped is the dataset a template scope names (a data-schema table by name, others qualified).
func (s *Service) scoped(ctx context.Context, scope string) (catalog.Dataset, error) {
	path := scope
	if !strings.Contains(scope, ".") {
		path = "data." + scope
	}
	id, err := s.resolve(ctx, path)
	if err != nil {
		return catalog.Dataset{}, err
	}
	return s.Catalog.Current(ctx, id)
}

// Issued is the outcome of one dataset of a batch: a token, or the problem that stands for it.
type Issued struct {
	Token   Token
	Dataset catalog.Dataset // the dataset signed, when Err is nil
	Err     *apperr.Error
}

// Tokens signs the templates of several datasets; each id is answered once, a failure of one
// (missing, invisible, not tileable) in its own entry. Only a failure of the whole (the database)
// is an error.
func (s *Service) Tokens(ctx context.Context, p auth.Principal, ids []uuid.UUID, now time.Time) (map[uuid.UUID]Issued, error) {
	out := make(map[uuid.UUID]Issued, len(ids))
	for _, id := range ids {
		if _, done := out[id]; done {
			continue
		}
		t, d, err := s.TokenOf(ctx, p, id, now)
		if err != nil {
			var e *apperr.Error
			if !errors.As(err, &e) {
				return nil, err
			}
			out[id] = Issued{Err: e}
			continue
		}
		out[id] = Issued{Token: t, Dataset: d}
	}
	return out, nil
}
