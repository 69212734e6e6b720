package stacimport

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"meridian/internal/catalog"
	"meridian/store"
)

// metadataOfItem reads what an import item keeps for its record.
func metadataOfItem(it store.CatalogStacImportItem) (Metadata, error) {
	var m Metadata
	err := json.Unmarshal(it.Metadata, &m)
	return m, err
}

// Finish runs in the transaction that writes the record of an upload job's new dataset
// (ingest.Importer.Finish). For the job of a STAC item it keeps the item's metadata on the
// record and puts it in the item's catalog collection; and when an earlier import of the same
// item (same self link, same owner) made a dataset, the new data moves into that dataset, which
// keeps its id, grants, links and history (a new version, action dataset.refresh), and the new
// record goes. The replaced table is dropped with the commit; a replaced COG is removed after it.
func (s *Service) Finish(ctx context.Context, tx pgx.Tx, job, dataset uuid.UUID) (func(context.Context), error) {
	q := store.New(tx)
	row, err := q.StacImportItemOfJob(ctx, &job)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	it := row.CatalogStacImportItem
	meta, err := metadataOfItem(it)
	if err != nil {
		return nil, err
	}
	target := it.DatasetID
	if target != nil && *target == dataset {
		target = nil
	}
	if target == nil && row.OwnerID != nil {
		// Another import of the item may have finished first: it is updated, not doubled.
		prev, err := q.StacDatasetOfItem(ctx, store.StacDatasetOfItemParams{OwnerID: row.OwnerID, SourceUrl: &meta.SelfHref})
		switch {
		case err == nil && prev.ID != dataset:
			target = &prev.ID
		case err != nil && !errors.Is(err, pgx.ErrNoRows):
			return nil, err
		}
	}
	final := dataset
	var after func(context.Context)
	if target != nil {
		moved, cleanup, err := s.move(ctx, q, tx, dataset, *target, row.OwnerID, meta)
		if err != nil {
			return nil, err
		}
		if moved {
			final, after = *target, cleanup
			if err := q.PointJobAtDataset(ctx, store.PointJobAtDatasetParams{ID: job, DatasetID: &final}); err != nil {
				return nil, err
			}
		}
	}
	if err := q.SetStacItemDataset(ctx, store.SetStacItemDatasetParams{ID: it.ID, DatasetID: &final}); err != nil {
		return nil, err
	}
	return after, s.describe(ctx, q, final, meta, it.CollectionID)
}

// move puts the data of the new dataset source into target and removes source's record. It
// reports false when target is gone (deleted since the import started): source then stays.
func (s *Service) move(ctx context.Context, q *store.Queries, tx pgx.Tx, source, target uuid.UUID, owner *uuid.UUID, meta Metadata) (bool, func(context.Context), error) {
	old, err := q.LockStacTarget(ctx, target)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil, nil
	}
	if err != nil {
		return false, nil, err
	}
	if n, err := q.MoveStacData(ctx, store.MoveStacDataParams{Source: source, Target: target}); err != nil || n == 0 {
		return false, nil, err
	}
	var cleanup func(context.Context)
	switch {
	case old.Registered:
	case catalog.IsRaster(old.RecordType):
		var r catalog.Raster
		if json.Unmarshal(old.Raster, &r) == nil && r.StorageKey != "" && s.Objects != nil {
			key := r.StorageKey
			cleanup = func(ctx context.Context) {
				if err := s.Objects.Delete(context.WithoutCancel(ctx), key); err != nil {
					s.Log.Warn("STAC re-import: the replaced COG could not be removed", "key", key, "err", err)
				}
			}
		}
	case old.TableSchema == "data":
		if _, err := tx.Exec(ctx, "DROP TABLE IF EXISTS "+pgx.Identifier{old.TableSchema, old.TableName}.Sanitize()); err != nil {
			return false, nil, err
		}
	}
	changes, _ := json.Marshal(map[string]any{"source_url": meta.SelfHref, "asset": meta.AssetHref, "reason": "STAC re-import"})
	err = q.RecordDatasetHistory(ctx, store.RecordDatasetHistoryParams{DatasetID: target, Version: old.CurrentVersion + 1,
		Action: catalog.ActionDatasetRefresh, ActorID: owner, Changes: changes})
	return err == nil, cleanup, err
}

// describe gives a record what the item says of it: title, description, licence, source
// organization, data vintage, the item's self link (source_url and origin_uri, origin stac),
// keywords and providers (replacing those an earlier import gave it), and its collection.
func (s *Service) describe(ctx context.Context, q *store.Queries, dataset uuid.UUID, m Metadata, collection *uuid.UUID) error {
	ref, err := json.Marshal(map[string]any{"stac": m})
	if err != nil {
		return err
	}
	if err := q.DeleteStacKeywords(ctx, dataset); err != nil {
		return err
	}
	if err := q.DeleteStacContacts(ctx, dataset); err != nil {
		return err
	}
	self := m.SelfHref
	prm := store.SetStacRecordParams{ID: dataset, Title: m.Title, Summary: nonEmpty(m.Summary), License: nonEmpty(m.License),
		SourceOrganization: nonEmpty(m.Organization), SourceUrl: &self, OriginRef: ref}
	if m.Start != nil {
		prm.DataVintageStart = pgtype.Date{Time: *m.Start, Valid: true}
	}
	if m.End != nil {
		prm.DataVintageEnd = pgtype.Date{Time: *m.End, Valid: true}
	}
	if err := q.SetStacRecord(ctx, prm); err != nil {
		return err
	}
	if len(m.Keywords) > 0 {
		if err := q.AddStacKeywords(ctx, store.AddStacKeywordsParams{DatasetID: dataset, Keywords: m.Keywords}); err != nil {
			return err
		}
	}
	for i, pv := range m.Providers {
		if pv.Name == "" || i == 20 {
			continue
		}
		extra, _ := json.Marshal(map[string]any{"stac_provider": true, "roles": pv.Roles, "url": pv.URL})
		name := pv.Name
		if len(name) > 500 {
			name = name[:500]
		}
		if _, err := q.AddRecordContact(ctx, store.AddRecordContactParams{DatasetID: dataset, Role: contactRole(pv.Roles),
			Organization: &name, ExtraJson: extra, SortOrder: int32(i)}); err != nil {
			return err
		}
	}
	if collection != nil {
		if _, err := q.AddCollectionDatasets(ctx, store.AddCollectionDatasetsParams{CollectionID: *collection, DatasetIds: []uuid.UUID{dataset}}); err != nil {
			return err
		}
	}
	return nil
}

// contactRole is the ISO 19115 role of a STAC provider: that of its first role STAC and ISO share.
func contactRole(roles []string) string {
	iso := map[string]string{"producer": "originator", "licensor": "rightsHolder", "processor": "processor", "host": "distributor"}
	for _, r := range roles {
		if v, ok := iso[r]; ok {
			return v
		}
	}
	return "resourceProvider"
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
