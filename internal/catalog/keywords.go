package catalog

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/store"
)

// Keyword is a keyword of a catalog record, optionally from a controlled vocabulary.
type Keyword struct {
	ID, RecordID  uuid.UUID
	Keyword, Type string
	VocabularyURI *string
	CreatedAt     time.Time
}

// recordDataset is the dataset a record id (or the dataset's own id) names, for the caller:
// not found alike when it does not exist or the caller may not read it.
func (s *Service) recordDataset(ctx context.Context, q *store.Queries, p auth.Principal, recordID uuid.UUID, write bool) (Dataset, error) {
	id, err := q.DatasetOfRecord(ctx, recordID)
	if errors.Is(err, pgx.ErrNoRows) {
		return Dataset{}, errNotFound()
	}
	if err != nil {
		return Dataset{}, err
	}
	if write {
		return s.writable(ctx, q, p, id)
	}
	return s.get(ctx, q, p, id, false)
}

// changeRecord runs change in one transaction on the dataset a record names, for a caller who
// may change it: the frame of every change to a record's keywords, contacts, distributions and
// translations.
func (s *Service) changeRecord(ctx context.Context, p auth.Principal, recordID uuid.UUID, change func(q *store.Queries, d Dataset) error) error {
	return pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := s.Q.WithTx(tx)
		d, err := s.recordDataset(ctx, q, p, recordID, true)
		if err != nil {
			return err
		}
		return change(q, d)
	})
}

// listPage maps one page of list rows, each carrying the count of the whole list; a page past
// the end carries none, so count is asked then. Every paged list of a record's parts and of
// saved searches reads its total this way.
func listPage[R, T any](rows []R, skip int, total func(R) int64, count func() (int64, error), of func(R) T) ([]T, int, error) {
	out := make([]T, len(rows))
	for i, r := range rows {
		out[i] = of(r)
	}
	if len(rows) > 0 {
		return out, int(total(rows[0])), nil
	}
	if skip == 0 {
		return out, 0, nil
	}
	n, err := count()
	return out, int(n), err
}

// Keywords lists a record's keywords by vocabulary, then keyword.
func (s *Service) Keywords(ctx context.Context, p auth.Principal, recordID uuid.UUID, skip, limit int) ([]Keyword, int, error) {
	d, err := s.recordDataset(ctx, s.Q, p, recordID, false)
	if err != nil {
		return nil, 0, err
	}
	rows, err := s.Q.ListRecordKeywords(ctx, store.ListRecordKeywordsParams{DatasetID: d.row.ID, Off: int32(skip), Lim: int32(limit)})
	if err != nil {
		return nil, 0, err
	}
	return listPage(rows, skip, func(r store.ListRecordKeywordsRow) int64 { return r.Total },
		func() (int64, error) { return s.Q.CountRecordKeywords(ctx, d.row.ID) },
		func(r store.ListRecordKeywordsRow) Keyword { return keywordOf(r.CatalogRecordKeyword, d.row.RecordID) })
}

func keywordOf(r store.CatalogRecordKeyword, record uuid.UUID) Keyword {
	return Keyword{ID: r.ID, RecordID: record, Keyword: r.Keyword, Type: r.KeywordType, VocabularyURI: r.VocabularyUri, CreatedAt: r.CreatedAt}
}

// AddKeyword adds a keyword to a record the caller may change: the same keyword in the same
// vocabulary (case-insensitive) is a conflict. The record gets a new version and a history entry.
func (s *Service) AddKeyword(ctx context.Context, p auth.Principal, recordID uuid.UUID, k Keyword) (Keyword, error) {
	if k.Type == "" {
		k.Type = "theme"
	}
	if k.Keyword == "" {
		return Keyword{}, apperr.Unprocessable("keyword: 1 to 500 characters, not only spaces")
	}
	err := s.changeRecord(ctx, p, recordID, func(q *store.Queries, d Dataset) error {
		r, err := q.AddRecordKeyword(ctx, store.AddRecordKeywordParams{DatasetID: d.row.ID, Keyword: k.Keyword,
			VocabularyUri: k.VocabularyURI, KeywordType: k.Type})
		if uniqueViolation(err) {
			return apperr.Conflict("the record has the keyword %q in this vocabulary already", k.Keyword)
		}
		if err != nil {
			return err
		}
		k = keywordOf(r, d.row.RecordID)
		return touch(ctx, q, p, d.row.ID, ActionKeywordAdd, map[string]any{"keywords": change(nil, r.Keyword)})
	})
	return k, err
}

// DeleteKeyword removes a keyword from a record the caller may change.
func (s *Service) DeleteKeyword(ctx context.Context, p auth.Principal, recordID, keywordID uuid.UUID) error {
	return s.changeRecord(ctx, p, recordID, func(q *store.Queries, d Dataset) error {
		kw, err := q.DeleteRecordKeyword(ctx, store.DeleteRecordKeywordParams{ID: keywordID, DatasetID: d.row.ID})
		if errors.Is(err, pgx.ErrNoRows) {
			return apperr.NotFound("keyword %s not found on this record", keywordID)
		}
		if err != nil {
			return err
		}
		return touch(ctx, q, p, d.row.ID, ActionKeywordRemove, map[string]any{"keywords": change(kw, nil)})
	})
}

// touch records a change of the record's metadata kept outside its row: a new version of the
// record (so feature reads and caches see it), who and when, and the history entry.
func touch(ctx context.Context, q *store.Queries, p auth.Principal, id uuid.UUID, action string, changes map[string]any) error {
	v, err := q.TouchDatasetRecord(ctx, store.TouchDatasetRecordParams{ID: id, UpdatedBy: &p.UserID})
	if err != nil {
		return err
	}
	return history(ctx, q, id, v, action, p, changes)
}
