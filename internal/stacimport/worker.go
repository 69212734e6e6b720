package stacimport

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/internal/ingest"
	"meridian/internal/remote"
	"meridian/store"
)

// LaneName is the River queue of the downloads, apart from the imports': a slow remote never
// holds a slot an import of an upload waits for.
const LaneName = "stac"

// ItemArgs is the River job that downloads one item's data file into staging and commits it as
// an upload job of the item's owner.
type ItemArgs struct {
	Item uuid.UUID `json:"item"`
}

// Kind names the job type in River's tables.
func (ItemArgs) Kind() string { return "stac_item_download" }

// InsertOpts: a download whose server went away is run again by River (the item is taken once:
// a run that finds it past its download does nothing).
func (ItemArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: LaneName, MaxAttempts: 3}
}

type itemWorker struct {
	river.WorkerDefaults[ItemArgs]
	s *Service
}

func (w *itemWorker) Work(ctx context.Context, j *river.Job[ItemArgs]) error {
	return w.s.download(ctx, j.Args.Item)
}

// Timeout bounds one download and its commit (the download has REMOTE_ASSET_TIMEOUT of its own).
func (w *itemWorker) Timeout(*river.Job[ItemArgs]) time.Duration { return w.s.Timeout + 5*time.Minute }

// Lane is the River queue the service's downloads run on, workers at a time per server.
func (s *Service) Lane(workers int) ingest.Lane {
	return ingest.Lane{Name: LaneName, Workers: workers, Register: func(ws *river.Workers) { river.AddWorker(ws, &itemWorker{s: s}) }}
}

// download streams an item's data file into staging as an upload of the item's owner (the
// upload limits and staging quotas apply as to any upload), then commits that job, which the
// vector or raster ingest imports; the item follows its job from there (migration 90). Whatever
// goes wrong is the item's error, never another item's.
func (s *Service) download(ctx context.Context, id uuid.UUID) error {
	row, err := s.Q.GetStacImportItem(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	if row.Mode == "register" {
		return s.register(ctx, row)
	}
	it := row.CatalogStacImportItem
	// Once this item is past its download, the import's credential goes if no other needs it.
	defer func() {
		if err := s.Q.DropStacImportCredential(context.WithoutCancel(ctx), it.ImportID); err != nil {
			s.Log.Warn("STAC import: the credential could not be dropped", "import", it.ImportID, "err", err)
		}
	}()
	if n, err := s.Q.StartStacItemDownload(ctx, id); err != nil || n == 0 {
		return err
	}
	fail := func(msg string) error {
		err := s.Q.FailStacItem(context.WithoutCancel(ctx), store.FailStacItemParams{ID: id, Error: &msg})
		if err == nil {
			err = s.Q.TallyStacImport(context.WithoutCancel(ctx), it.ImportID)
		}
		return err
	}
	p, err := s.principal(ctx, row.OwnerID)
	if err != nil {
		return fail(detail(err))
	}
	ctx, err = s.unseal(ctx, row.Url, row.Credential)
	if err != nil {
		return fail(detail(err))
	}
	tooLarge := fmt.Sprintf("the asset %s is larger than the %d bytes this server downloads (REMOTE_ASSET_MAX_BYTES)", redact(it.AssetHref), s.AssetMax)
	dl, err := s.Remote.Open(ctx, it.AssetHref, nil, s.AssetMax)
	switch {
	case err != nil && ctx.Err() != nil:
		return err // the server is stopping: River runs the download again
	case errors.Is(err, remote.ErrTooLarge):
		return fail(tooLarge)
	case err != nil:
		return fail(detail(err))
	}
	defer dl.Body.Close()
	if dl.Status != 200 {
		return fail(fmt.Sprintf("the asset %s answered HTTP %d", redact(it.AssetHref), dl.Status))
	}
	job, err := s.Jobs.Upload(ctx, p, it.Filename, dl.Body)
	if err != nil {
		if errors.Is(err, remote.ErrTooLarge) {
			return fail(tooLarge)
		}
		return fail(detail(err))
	}
	if err := s.Q.SetStacItemJob(ctx, store.SetStacItemJobParams{ID: id, JobID: &job.ID}); err != nil {
		return err
	}
	meta, err := metadataOfItem(it)
	if err != nil {
		return fail(err.Error())
	}
	opts := ingest.Options{Title: meta.Title, Summary: meta.Summary, Visibility: meta.Visibility, VintageStart: meta.Start, VintageEnd: meta.End}
	// A commit looks at the file with GDAL under the preview slots; a busy server is waited for.
	for attempt := 0; ; attempt++ {
		_, err = s.Jobs.Commit(ctx, p, job.ID, opts)
		if apperr.KindOf(err) != apperr.KindUnavailable || attempt == 30 {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
	if err != nil {
		// A refused file failed its job, and the item with it; anything else fails the item here.
		return fail(detail(err))
	}
	return nil
}

// principal is the owner of an import as the upload path needs them: still able to sign in.
func (s *Service) principal(ctx context.Context, owner *uuid.UUID) (auth.Principal, error) {
	if owner == nil {
		return auth.Principal{}, apperr.Forbidden("the account that started the import is gone")
	}
	u, err := s.Q.GetUserByID(ctx, *owner)
	if err != nil || u.Status != "active" {
		return auth.Principal{}, apperr.Forbidden("the account that started the import can no longer sign in")
	}
	return auth.Principal{UserID: u.ID, Username: u.Username, Role: u.Role, Via: "stac_import"}, nil
}

// detail is an error as the item's error shows it: an application error's detail, else a
// plain statement (the cause goes to the log).
func detail(err error) string {
	var ae *apperr.Error
	if errors.As(err, &ae) {
		return ae.Detail
	}
	if errors.Is(err, remote.ErrTooLarge) || errors.Is(err, remote.ErrRefused) {
		return err.Error()
	}
	return "the download failed: " + err.Error()
}
