package catalog

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"meridian/internal/apperr"
	"meridian/internal/audit"
	"meridian/internal/auth"
	"meridian/store"
)

// Collection is a catalog collection with the count of members the caller may read.
type Collection struct {
	ID                   uuid.UUID
	Name                 string
	Description          *string
	Visibility           string
	CreatedBy            *uuid.UUID
	CreatedAt, UpdatedAt time.Time
	DatasetCount         int
	Extent               []float64     // WGS84 box of the readable members; nil when none has one
	Temporal             [2]*time.Time // earliest vintage start and latest vintage end of the readable members
	// License is the licence the readable members share ("" for none, or without members); nil
	// when they differ.
	License *string
}

func collectionOf(r store.CatalogCollection) Collection {
	return Collection{ID: r.ID, Name: r.Name, Description: r.Description, Visibility: r.Visibility, CreatedBy: r.CreatedBy,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
}

// who returns the caller parameters every visibility-aware query takes.
func who(p auth.Principal) (*uuid.UUID, *string) {
	if p.Anonymous() {
		return nil, nil
	}
	return &p.UserID, &p.Role
}

// Collections lists one page of the collections: every caller sees every collection (they have
// no visibility of their own), and counts, extents and periods of the members the caller may read.
func (s *Service) Collections(ctx context.Context, p auth.Principal, q *string, onlyID *uuid.UUID, skip, limit int) ([]Collection, int, error) {
	caller, role := who(p)
	rows, err := s.Q.ListCollections(ctx, store.ListCollectionsParams{CallerID: caller, CallerRole: role, IsAdmin: p.IsAdmin(),
		Q: q, OnlyID: onlyID, Off: int32(skip), Lim: int32(limit)})
	if err != nil {
		return nil, 0, err
	}
	out := make([]Collection, len(rows))
	total := 0
	for i, r := range rows {
		out[i] = collectionOf(r.CatalogCollection)
		out[i].DatasetCount, out[i].Extent = int(r.DatasetCount), r.ExtentBbox
		out[i].Temporal = [2]*time.Time{dateOf(r.TemporalStart), dateOf(r.TemporalEnd)}
		if r.LicenseCount <= 1 {
			out[i].License = &r.License
		}
		total = int(r.Total)
	}
	return out, total, nil
}

// Collection returns one collection or 404.
func (s *Service) Collection(ctx context.Context, p auth.Principal, id uuid.UUID) (Collection, error) {
	list, _, err := s.Collections(ctx, p, nil, &id, 0, 1)
	if err != nil {
		return Collection{}, err
	}
	if len(list) == 0 {
		return Collection{}, apperr.NotFound("collection %s not found", id)
	}
	return list[0], nil
}

// ownCollection checks that the caller may change the collection: manage_collections and owner
// (admins may change any).
func (s *Service) ownCollection(ctx context.Context, p auth.Principal, id uuid.UUID) (Collection, error) {
	c, err := s.Collection(ctx, p, id)
	if err != nil {
		return c, err
	}
	if !p.Can(auth.CapManageCollections) {
		return c, apperr.Forbidden("changing collections needs the manage_collections capability")
	}
	if !p.IsAdmin() && (c.CreatedBy == nil || *c.CreatedBy != p.UserID) {
		return c, apperr.Forbidden("only the collection's owner or an admin may change it")
	}
	return c, nil
}

// CreateCollection makes an empty collection owned by the caller.
func (s *Service) CreateCollection(ctx context.Context, p auth.Principal, name string, description *string, visibility string) (Collection, error) {
	if !p.Can(auth.CapManageCollections) {
		return Collection{}, apperr.Forbidden("creating collections needs the manage_collections capability")
	}
	if visibility == "" {
		visibility = auth.VisibilityPrivate
	}
	row, err := s.Q.CreateCollection(ctx, store.CreateCollectionParams{Name: name, Description: description, Visibility: visibility, CreatedBy: &p.UserID})
	if err != nil {
		return Collection{}, nameConflict(err, name, true)
	}
	s.collections.forget()
	s.auditCollection(ctx, p, "collection.create", row.ID, map[string]any{"name": name})
	return collectionOf(row), nil
}

// UpdateCollection renames, redescribes or changes the visibility of a collection.
func (s *Service) UpdateCollection(ctx context.Context, p auth.Principal, id uuid.UUID, name, description, visibility *string) (Collection, error) {
	c, err := s.ownCollection(ctx, p, id)
	if err != nil {
		return Collection{}, err
	}
	if _, err := s.Q.UpdateCollection(ctx, store.UpdateCollectionParams{ID: id, Name: name, Description: description, Visibility: visibility}); err != nil {
		return Collection{}, nameConflict(err, deref(name), c.CreatedBy != nil && *c.CreatedBy == p.UserID)
	}
	s.collections.forget()
	s.auditCollection(ctx, p, "collection.update", id, map[string]any{"name": c.Name, "changes": map[string]any{"name": name,
		"description": description, "visibility": visibility}})
	return s.Collection(ctx, p, id)
}

// DeleteCollection removes a collection; its datasets only lose the membership.
func (s *Service) DeleteCollection(ctx context.Context, p auth.Principal, id uuid.UUID) error {
	c, err := s.ownCollection(ctx, p, id)
	if err != nil {
		return err
	}
	if err := s.Q.DeleteCollection(ctx, id); err != nil {
		return err
	}
	s.auditCollection(ctx, p, "collection.delete", id, map[string]any{"name": c.Name})
	return nil
}

// AddToCollection adds datasets the caller can read, all or nothing.
func (s *Service) AddToCollection(ctx context.Context, p auth.Principal, id uuid.UUID, datasets []uuid.UUID) (Collection, int, error) {
	if _, err := s.ownCollection(ctx, p, id); err != nil {
		return Collection{}, 0, err
	}
	var added int64
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := s.Q.WithTx(tx)
		for _, d := range datasets {
			if _, err := s.get(ctx, q, p, d, false); err != nil {
				return err
			}
		}
		var err error
		added, err = q.AddCollectionDatasets(ctx, store.AddCollectionDatasetsParams{CollectionID: id, DatasetIds: datasets})
		return err
	})
	if err != nil {
		return Collection{}, 0, err
	}
	s.auditCollection(ctx, p, "collection.add_dataset", id, map[string]any{"dataset_ids": datasets, "added": added})
	c, err := s.Collection(ctx, p, id)
	return c, int(added), err
}

// RemoveFromCollection drops one membership.
func (s *Service) RemoveFromCollection(ctx context.Context, p auth.Principal, id, dataset uuid.UUID) error {
	if _, err := s.ownCollection(ctx, p, id); err != nil {
		return err
	}
	n, err := s.Q.RemoveCollectionDataset(ctx, store.RemoveCollectionDatasetParams{CollectionID: id, DatasetID: dataset})
	if err == nil && n == 0 {
		return apperr.NotFound("dataset %s is not in this collection", dataset)
	}
	if err == nil {
		s.auditCollection(ctx, p, "collection.remove_dataset", id, map[string]any{"dataset_id": dataset})
	}
	return err
}

// auditCollection writes a collection change to the admin audit log.
func (s *Service) auditCollection(ctx context.Context, p auth.Principal, action string, id uuid.UUID, detail map[string]any) {
	audit.Record(ctx, s.Q, s.Log, audit.Entry{ActorID: p.UserID, ActorDisplay: p.Username, Action: action,
		ResourceType: "collection", ResourceID: id.String(), Detail: detail})
}

// CollectionDatasets lists the members the caller may read.
func (s *Service) CollectionDatasets(ctx context.Context, p auth.Principal, id uuid.UUID, skip, limit int) ([]Dataset, int, error) {
	if _, err := s.Collection(ctx, p, id); err != nil {
		return nil, 0, err
	}
	caller, role := who(p)
	rows, err := s.Q.ListCollectionDatasets(ctx, store.ListCollectionDatasetsParams{CollectionID: id, CallerID: caller,
		CallerRole: role, IsAdmin: p.IsAdmin(), Off: int32(skip), Lim: int32(limit)})
	if err != nil {
		return nil, 0, err
	}
	out := make([]Dataset, len(rows))
	total := 0
	for i, r := range rows {
		out[i] = Dataset{row: r.CatalogDataset, Entry: entryOf(r.CatalogDataset), CreatedByDisplay: r.CreatedByDisplay, LastEditedByDisplay: r.LastEditedByDisplay}
		total = int(r.Total)
	}
	return out, total, nil
}

// CollectionsOf lists the collections of a dataset (the caller read it already).
func (s *Service) CollectionsOf(ctx context.Context, p auth.Principal, dataset uuid.UUID) ([]CollectionRef, error) {
	rows, err := s.Q.CollectionsOfDataset(ctx, dataset)
	out := make([]CollectionRef, len(rows))
	for i, r := range rows {
		out[i] = CollectionRef{ID: r.ID, Name: r.Name}
	}
	return out, err
}

// CollectionRef names a collection.
type CollectionRef struct {
	ID   uuid.UUID
	Name string
}

// nameConflict turns the per-owner unique name index's violation into a 409. Names are unique per
// owner only, so the conflicting collection is always the owner's own: the message says so and
// names nothing else (another user's private collection must not show through).
func nameConflict(err error, name string, callerOwns bool) error {
	if !uniqueViolation(err) {
		return err
	}
	if callerOwns {
		return apperr.Conflict("you already have a collection named %q", name)
	}
	return apperr.Conflict("the collection's owner already has a collection named %q", name)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func uniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}

// MatchingCollections are up to limit collections whose name or description hold every word of
// a search text (its negated words and OR left out), with the members the caller may read.
func (s *Service) MatchingCollections(ctx context.Context, p auth.Principal, text string, limit int) ([]Collection, error) {
	var words, patterns []string
	for _, w := range strings.Fields(text) {
		w = strings.Trim(w, `"()`)
		if w == "" || strings.HasPrefix(w, "-") || strings.EqualFold(w, "or") {
			continue
		}
		words, patterns = append(words, w), append(patterns, "%"+likeEscaper.Replace(w)+"%")
	}
	if len(patterns) == 0 {
		return nil, nil
	}
	if may, err := s.anyCollectionMayMatch(ctx, words); !may || err != nil {
		return nil, err
	}
	caller, role := who(p)
	rows, err := store.New(s.searchPool()).SearchCollections(ctx, store.SearchCollectionsParams{CallerID: caller, CallerRole: role, IsAdmin: p.IsAdmin(),
		Patterns: patterns, Lim: int32(limit)})
	out := make([]Collection, len(rows))
	for i, r := range rows {
		out[i] = Collection{ID: r.ID, Name: r.Name, Description: r.Description, UpdatedAt: r.UpdatedAt, DatasetCount: int(r.DatasetCount)}
	}
	return out, err
}
