package stacimport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"meridian/internal/auth"
	"meridian/internal/catalog"
	"meridian/internal/ingest"
	"meridian/internal/rangeproxy"
	"meridian/internal/rastertiles"
	"meridian/internal/remote"
	"meridian/internal/remoteraster"
	"meridian/store"
)

// Bounds of a registration: the bytes of the remote file GDAL may read to describe it (its
// header and the overview its statistics are computed on) and how long its grant lives.
const (
	registerBudget = 256 << 20
	registerGrant  = 5 * time.Minute
)

// register describes an item's remote GeoTIFF where it is, through the range proxy, and writes
// its dataset: the raster description the ingest would store (bands, statistics, nodata, grid,
// extent, the DEM flag) with the remote address instead of a stored file, and the item's
// metadata; a re-import of the item (its self link) updates the earlier dataset in place. No
// byte of the file is kept. Whatever goes wrong is the item's error: only a stopping server
// hands the item back to River, so an item never waits on retries that cannot succeed.
func (s *Service) register(ctx context.Context, row store.GetStacImportItemRow) (err error) {
	it := row.CatalogStacImportItem
	defer s.dropCredential(ctx, it.ImportID) // once the item ended, if nothing else needs it
	defer func() {
		if p := recover(); p != nil {
			s.Log.Error("STAC import: a registration panicked", "item", it.ID, "panic", p, "stack", string(debug.Stack()))
			err = fmt.Errorf("panic: %v", p)
		}
		if err != nil && ctx.Err() == nil {
			s.Log.Warn("STAC import: a registration failed", "item", it.ID, "err", err)
			err = s.failItem(ctx, it, "the registration failed: "+detail(err))
		}
	}()
	return s.registerItem(ctx, row)
}

func (s *Service) registerItem(ctx context.Context, row store.GetStacImportItemRow) error {
	it := row.CatalogStacImportItem
	if n, err := s.Q.StartStacItemDownload(ctx, it.ID); err != nil || n == 0 {
		return err
	}
	fail := func(msg string) error { return s.failItem(ctx, it, msg) }
	p, err := s.principal(ctx, row.OwnerID)
	if err != nil {
		return fail(detail(err))
	}
	cred, err := s.credential(row.Url, row.Credential)
	if err != nil {
		return fail(detail(err))
	}
	f, err := s.Remote.OpenFile(ctx, it.AssetHref, cred)
	switch {
	case err != nil && ctx.Err() != nil:
		return err // the server is stopping: River runs the registration again
	case err != nil:
		return fail(detail(err))
	}
	g, err := s.Proxy.Issue(f, registerBudget, registerGrant)
	if err != nil {
		return err
	}
	defer g.Close()
	r, box, err := ingest.DescribeRemoteRaster(ctx, s.GDAL, remoteraster.Env(s.ReadTimeout), g.VSIPath(), redact(it.AssetHref), s.Bounds)
	if err != nil {
		var ie *ingest.ImportError
		switch cause := g.Err(); {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(cause, rangeproxy.ErrBudget):
			return fail(redact(it.AssetHref) + ": describing it would read more than 256 MB of it (it has no overview of about 1024 pixels): " +
				"import it with mode copy")
		case cause != nil:
			return fail(redact(it.AssetHref) + ": " + detail(cause))
		case errors.As(err, &ie):
			return fail(ie.Msg)
		}
		return fail(detail(err))
	}
	r.SizeBytes = f.Size()
	// A COG on the tile grid already is read as a stored one (its tiles cut, not warped) when
	// the tile reader can open it.
	if _, err := rastertiles.Open(f, f.Size(), rastertiles.Meta{}, nil); err == nil {
		r.COG.Direct = true
	}
	r.Remote = &catalog.RemoteRaster{Href: it.AssetHref}
	// The credential goes with the reads only where the import sent it: to its catalog's origin.
	if cred != nil && remote.OriginOf(it.AssetHref) == cred.Origin {
		r.Remote.CredentialImport = &it.ImportID
	}
	return s.commitRegistered(ctx, p, it, r, box)
}

// commitRegistered writes a registered item's dataset, completes the item and tallies its
// import in one transaction. A dataset an earlier import of the item made takes the new
// description (a new version; a COG it stored is removed after the commit, a table dropped).
func (s *Service) commitRegistered(ctx context.Context, p auth.Principal, it store.CatalogStacImportItem, r catalog.Raster, box []float64) error {
	meta, err := metadataOfItem(it)
	if err != nil {
		return s.failItem(ctx, it, err.Error())
	}
	raw, err := json.Marshal(r)
	if err != nil {
		return err
	}
	// The id follows from the item: a run River repeats after a crash finds its own record.
	id := uuid.NewSHA1(it.ID, []byte("registered-raster"))
	var after func(context.Context)
	var oldImport *uuid.UUID
	err = pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := s.Q.WithTx(tx)
		if _, err := catalog.AddRecord(ctx, q, registeredRecord(id, p, it, meta, r, raw, box), p); err != nil {
			return err
		}
		final := id
		target, err := s.target(ctx, q, it, p, meta, id)
		if err != nil {
			return err
		}
		if target != nil {
			if old, err := q.LockStacTarget(ctx, *target); err == nil {
				oldImport = credentialImportOf(old.Raster)
			}
			moved, cleanup, err := s.move(ctx, q, tx, id, *target, &p.UserID, meta)
			if err != nil {
				return err
			}
			if moved {
				final, after = *target, cleanup
			}
		}
		if n, err := q.CompleteStacItem(ctx, store.CompleteStacItemParams{ID: it.ID, DatasetID: &final}); err != nil || n == 0 {
			return cmpErr(err, errItemTaken)
		}
		if err := s.describe(ctx, q, final, meta, it.CollectionID); err != nil {
			return err
		}
		return q.TallyStacImport(ctx, it.ImportID)
	})
	if errors.Is(err, errItemTaken) {
		return nil // another run of the item finished it
	}
	if err != nil {
		return s.failItem(ctx, it, "the registration could not be written: "+detail(err))
	}
	if after != nil {
		after(ctx)
	}
	if oldImport != nil && *oldImport != it.ImportID {
		s.dropCredential(ctx, *oldImport) // the earlier import's credential, if nothing reads with it now
	}
	return nil
}

var errItemTaken = errors.New("stacimport: the item is no longer this run's")

func cmpErr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}

// target is the dataset an earlier import of the item made, if any (not the one just written).
func (s *Service) target(ctx context.Context, q *store.Queries, it store.CatalogStacImportItem, p auth.Principal, meta Metadata, id uuid.UUID) (*uuid.UUID, error) {
	if it.DatasetID != nil && *it.DatasetID != id {
		return it.DatasetID, nil
	}
	prev, err := q.StacDatasetOfItem(ctx, store.StacDatasetOfItemParams{OwnerID: &p.UserID, SourceUrl: &meta.SelfHref})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, err
	case prev.ID == id:
		return nil, nil
	}
	return &prev.ID, nil
}

// registeredRecord is a registered raster's new record, published like an ingested one; the
// item's metadata is put on it by describe.
func registeredRecord(id uuid.UUID, p auth.Principal, it store.CatalogStacImportItem, meta Metadata, r catalog.Raster, raw []byte,
	box []float64) store.InsertDatasetParams {
	status, empty := catalog.StatusPublished, ""
	prm := store.InsertDatasetParams{ID: &id, TableSchema: "data", TableName: "raster_" + strings.ReplaceAll(id.String(), "-", ""),
		Title: meta.Title, Visibility: cmpOr(meta.Visibility, auth.VisibilityPrivate), RecordStatus: &status, RecordType: "raster_dataset",
		Origin: ptr("stac"), SourceFormat: ptr("GTiff"), SourceFilename: &it.Filename, ColumnInfo: []byte("[]"), CreatedBy: &p.UserID,
		GeometryColumn: &empty, Raster: raw, ExtentBbox: box}
	if r.EPSG > 0 {
		// The data served (Download COG) is the remote file, in its own CRS.
		prm.Srid, prm.OriginalSrid = ptr(int32(r.EPSG)), ptr(int32(r.EPSG))
	}
	if meta.Start != nil {
		prm.DataVintageStart = pgtype.Date{Time: *meta.Start, Valid: true}
	}
	if meta.End != nil {
		prm.DataVintageEnd = pgtype.Date{Time: *meta.End, Valid: true}
	}
	return prm
}

// credentialImportOf reads the import a registered raster's reads take their credential from.
func credentialImportOf(raw []byte) *uuid.UUID {
	var r catalog.Raster
	if json.Unmarshal(raw, &r) != nil || r.Remote == nil {
		return nil
	}
	return r.Remote.CredentialImport
}

// failItem fails an item with msg and tallies its import.
func (s *Service) failItem(ctx context.Context, it store.CatalogStacImportItem, msg string) error {
	err := s.Q.FailStacItem(context.WithoutCancel(ctx), store.FailStacItemParams{ID: it.ID, Error: &msg})
	if err == nil {
		err = s.Q.TallyStacImport(context.WithoutCancel(ctx), it.ImportID)
	}
	return err
}

// dropCredential drops an import's credential once nothing needs it (DropStacImportCredential).
func (s *Service) dropCredential(ctx context.Context, job uuid.UUID) {
	if err := s.Q.DropStacImportCredential(context.WithoutCancel(ctx), job); err != nil {
		s.Log.Warn("STAC import: the credential could not be dropped", "import", job, "err", err)
	}
}

func ptr[T any](v T) *T { return &v }
