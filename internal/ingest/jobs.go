package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/store"
)

// Jobs is the ingestion workflow callers drive: upload, commit, status, retry.
type Jobs struct {
	Pool      *pgxpool.Pool
	Q         *store.Queries
	Queue     *Queue
	DataDir   string
	MaxUpload int64
}

// Upload stages a file for a new pending job owned by the caller.
func (j *Jobs) Upload(ctx context.Context, p auth.Principal, filename string, r io.Reader) (store.CatalogIngestJob, error) {
	if !p.Can(auth.CapUpload) {
		return store.CatalogIngestJob{}, apperr.Forbidden("uploading needs the upload capability")
	}
	id := uuid.New()
	path, _, err := Stage(j.DataDir, id, filename, r, j.MaxUpload)
	if err != nil {
		return store.CatalogIngestJob{}, err
	}
	job, err := j.Q.CreateIngestJob(ctx, store.CreateIngestJobParams{ID: id, SourceFilename: &filename, StagingPath: &path, CreatedBy: &p.UserID})
	if err != nil {
		_ = Discard(j.DataDir, id) // no orphaned files
	}
	return job, err
}

// Get returns a job to its creator or an admin; to anyone else it does not exist.
func (j *Jobs) Get(ctx context.Context, p auth.Principal, id uuid.UUID) (store.CatalogIngestJob, error) {
	job, err := j.Q.GetIngestJob(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && !p.IsAdmin() && (job.CreatedBy == nil || *job.CreatedBy != p.UserID)) {
		return store.CatalogIngestJob{}, apperr.NotFound("job %s not found", id)
	}
	return job, err
}

// Commit records the import options and queues the import, once.
func (j *Jobs) Commit(ctx context.Context, p auth.Principal, id uuid.UUID, opts Options) (store.CatalogIngestJob, error) {
	if _, err := j.Get(ctx, p, id); err != nil {
		return store.CatalogIngestJob{}, err
	}
	raw, _ := json.Marshal(opts)
	var job store.CatalogIngestJob
	err := pgx.BeginFunc(ctx, j.Pool, func(tx pgx.Tx) error {
		var err error
		job, err = j.Q.WithTx(tx).CommitIngestJob(ctx, store.CommitIngestJobParams{ID: id, Options: raw})
		if errors.Is(err, pgx.ErrNoRows) {
			return apperr.Conflict("job %s was committed already or is not pending", id)
		}
		if err != nil {
			return err
		}
		return j.Queue.Enqueue(ctx, tx, id)
	})
	return job, err
}

// Retry queues a failed job again with its kept staging file.
func (j *Jobs) Retry(ctx context.Context, p auth.Principal, id uuid.UUID) (store.CatalogIngestJob, error) {
	cur, err := j.Get(ctx, p, id)
	if err != nil {
		return cur, err
	}
	if cur.Status != "failed" {
		return cur, apperr.Conflict("only failed jobs can be retried; this one is %s", cur.Status)
	}
	if _, err := os.Stat(deref(cur.StagingPath)); err != nil {
		return cur, apperr.Conflict("the staging file of this job is gone; upload the file again")
	}
	var job store.CatalogIngestJob
	err = pgx.BeginFunc(ctx, j.Pool, func(tx pgx.Tx) error {
		var err error
		job, err = j.Q.WithTx(tx).RequeueIngestJob(ctx, id)
		if errors.Is(err, pgx.ErrNoRows) {
			return apperr.Conflict("only failed jobs can be retried")
		}
		if err != nil {
			return err
		}
		return j.Queue.Enqueue(ctx, tx, id)
	})
	return job, err
}

// staleJobs finds jobs that claim to run but have no live River job (the replica running them
// died and River gave up) and have not moved for a while. Written here rather than in sql/
// because River's tables come from River's own migrations, which sqlc does not read.
const staleJobs = `SELECT j.id FROM catalog.ingest_jobs j
WHERE j.status = 'running' AND j.updated_at < now() - make_interval(mins => $1)
  AND NOT EXISTS (SELECT 1 FROM river.river_job r
                  WHERE r.kind = 'ingest_import' AND r.args->>'job_id' = j.id::text
                    AND r.state IN ('available', 'running', 'retryable', 'scheduled'))`

// CleanupStale marks stale running jobs failed with can_retry (their staging files are kept), so
// no job is left running forever. dryRun only reports them.
func (j *Jobs) CleanupStale(ctx context.Context, olderThanMinutes int, dryRun bool) ([]uuid.UUID, error) {
	rows, err := j.Pool.Query(ctx, staleJobs, olderThanMinutes)
	if err != nil {
		return nil, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil || dryRun || len(ids) == 0 {
		return ids, err
	}
	return ids, j.Q.FailStaleJobs(ctx, ids)
}
