package ingest

import (
	"context"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"meridian/internal/blob"
	"meridian/store"
)

// riverSchema keeps River's tables apart from the catalog's.
const riverSchema = "river"

// ImportArgs is the River job that imports one staged upload.
type ImportArgs struct {
	JobID uuid.UUID `json:"job_id"`
}

// Kind names the job type in River's tables.
func (ImportArgs) Kind() string { return "ingest_import" }

// InsertOpts: one attempt. A run whose replica died is found by its silent heartbeat, not by
// River: River's rescue reads only that a job has been running for longer than its timeout (it
// cannot tell a dead replica from a long import, so it waits hours). The stall sweep hands the
// job back to the queue with a River job of its own (rescueStalled), or fails it once its
// rescues are used up; River's rescue of the dead run's River job, hours later, discards it.
func (ImportArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{MaxAttempts: 1} }

type importWorker struct {
	river.WorkerDefaults[ImportArgs]
	im *Importer
}

// Work runs the import; River's record of the job is completed in the import's own finalize
// transaction, so the two cannot disagree after a crash.
func (w *importWorker) Work(ctx context.Context, j *river.Job[ImportArgs]) error {
	return w.im.Run(ctx, j.Args.JobID, func(ctx context.Context, tx pgx.Tx) error {
		_, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, j)
		return err
	})
}

// Timeout bounds one import (the ogr2ogr run has its own, shorter limit).
func (w *importWorker) Timeout(*river.Job[ImportArgs]) time.Duration {
	return importTime + 10*time.Minute
}

// Queue runs imports on River, so every replica shares the work through PostgreSQL.
type Queue struct {
	client *river.Client[pgx.Tx]
	im     *Importer
}

// MigrateRiver brings River's own tables up to date (its migration line is separate from ours).
func MigrateRiver(ctx context.Context, pool *pgxpool.Pool) error {
	m, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Schema: riverSchema})
	if err != nil {
		return err
	}
	_, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil)
	return err
}

// Lane is a queue of other work that shares the imports' River client (a STAC import's
// downloads): its name, how many of its jobs run at once per replica, and its workers.
type Lane struct {
	Name     string
	Workers  int
	Register func(*river.Workers)
}

// Config adds the lane to a River configuration (one of NewQueue's more).
func (l Lane) Config(cfg *river.Config) {
	l.Register(cfg.Workers)
	cfg.Queues[l.Name] = river.QueueConfig{MaxWorkers: l.Workers}
}

// NewQueue prepares the River client; workers run after Start. more adds other packages' jobs
// (their workers, queues and periodic jobs) to the same client, so one client and one leader
// run every job of the server.
func NewQueue(pool *pgxpool.Pool, im *Importer, log *slog.Logger, workers int, more ...func(*river.Config)) (*Queue, error) {
	ws := river.NewWorkers()
	river.AddWorker(ws, &importWorker{im: im})
	river.AddWorker(ws, &vrtWorker{im: im})
	queues := map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: workers}}
	cfg := &river.Config{
		Schema:  riverSchema,
		Queues:  queues,
		Workers: ws,
		Logger:  log,
		// Only tidies River's own record of a run whose replica died: the import itself was
		// handed to another replica by the stall sweep within about IMPORT_STALL_TIMEOUT.
		RescueStuckJobsAfter: 2*time.Hour + 5*time.Minute,
	}
	for _, f := range more {
		f(cfg)
	}
	c, err := river.NewClient(riverpgxv5.New(pool), cfg)
	if err != nil {
		return nil, err
	}
	im.requeue = func(ctx context.Context, tx pgx.Tx, job uuid.UUID) error {
		_, err := c.InsertTx(ctx, tx, ImportArgs{JobID: job}, nil)
		return err
	}
	return &Queue{client: c, im: im}, nil
}

// SoftStop lets running jobs go on for d once the server is told to stop (NewQueue's more);
// past it their contexts are cancelled, and an import so interrupted is handed back to the
// queue for another replica (Importer.handBack). Without it a stop cancels them at once.
func SoftStop(d time.Duration) func(*river.Config) {
	return func(cfg *river.Config) { cfg.SoftStopTimeout = d }
}

// Start runs the workers until Stop, and the sweeper of stalled imports until ctx ends.
func (q *Queue) Start(ctx context.Context) error {
	go q.sweep(ctx)
	go q.sweepVRT(ctx)
	if q.im.Staging != nil {
		go q.sweepStaging(ctx)
	}
	return q.client.Start(ctx)
}

// sweepStaging expires staging nobody will use (Staging.Sweep), at start-up and then every
// quarter of the staging TTL (between a second and ten minutes), on every server: each removes
// what lies on its own disk.
func (q *Queue) sweepStaging(ctx context.Context) {
	t := time.NewTicker(min(max(q.im.Staging.TTL/4, time.Second), 10*time.Minute))
	defer t.Stop()
	for {
		n, err := q.im.Staging.Sweep(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			q.im.Log.Warn("sweeping expired staging failed", "err", err)
		case n > 0:
			q.im.Log.Info("removed expired staging", "directories", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sweep finds, on every replica, imports whose run has been silent for the stall time (their
// server was killed or hangs), drops their partial tables and queues them again for any replica
// (rescueStalled) or, once a job's rescues are used up, fails it retryably; at start-up and then
// every third of the stall time: a killed import runs again within about 1.3 stall times.
func (q *Queue) sweep(ctx context.Context) {
	t := time.NewTicker(max(q.im.Stall/3, time.Second))
	defer t.Stop()
	for {
		ids, err := q.rescueStalled(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			q.im.Log.Warn("rescuing stalled imports failed", "err", err)
		case len(ids) > 0:
			q.im.Log.Warn("queued again imports whose run went silent", "job_ids", ids)
		}
		ids, err = failStalled(ctx, q.im.Pool, q.im.Objects, q.im.Stall)
		switch {
		case err != nil && ctx.Err() == nil:
			q.im.Log.Warn("sweeping stalled imports failed", "err", err)
		case len(ids) > 0:
			q.im.Log.Warn("failed imports whose run went silent", "job_ids", ids)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// rescueStalled hands the jobs whose run has been silent for the stall time, and that have been
// rescued fewer than Importer.Rescues times, back to the queue: in one transaction the job turns
// pending, the dead run's table is dropped and a River job is inserted, so whichever replica's
// worker fetches it claims it as a new attempt. A run that is alive beats every sixth of the
// stall time and is never taken; one that only looked dead (its database connection hung)
// finds its job gone at its next beat and stops, and the attempt its writes carry can no longer
// complete the job: the job runs to completion once.
func (q *Queue) rescueStalled(ctx context.Context) ([]uuid.UUID, error) {
	if q.im.Rescues <= 0 {
		return nil, nil
	}
	var ids []uuid.UUID
	var keys []string
	err := pgx.BeginFunc(ctx, q.im.Pool, func(tx pgx.Tx) error {
		// A table still locked by a run that is alive after all: give up until the next round.
		if _, err := tx.Exec(ctx, "SET LOCAL lock_timeout = '5s'"); err != nil {
			return err
		}
		rows, err := store.New(tx).RescueStalledIngestJobs(ctx, store.RescueStalledIngestJobsParams{
			SilenceSeconds: q.im.Stall.Seconds(), MaxRescues: int32(q.im.Rescues)})
		if err != nil {
			return err
		}
		for _, r := range rows {
			ids = append(ids, r.ID)
			keys = append(keys, blob.RasterKey(rasterDatasetID(r.ID, r.Attempts), 1))
			if err := dropTable(ctx, tx, TableName(r.ID, r.Attempts)); err != nil {
				return err
			}
			var args river.JobArgs = ImportArgs{JobID: r.ID}
			if r.Vrt {
				args = VRTArgs{JobID: r.ID}
			}
			if _, err := q.client.InsertTx(ctx, tx, args, nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		if q.im.Objects != nil {
			_ = q.im.Objects.Delete(ctx, k) // the dead run's COG, if it stored one before its record
		}
	}
	return ids, nil
}

// Stop lets running imports finish (or ctx end) and stops fetching new ones.
func (q *Queue) Stop(ctx context.Context) error { return q.client.Stop(ctx) }

// InsertTx schedules a job of another package inside tx (see NewQueue's more).
func (q *Queue) InsertTx(ctx context.Context, tx pgx.Tx, args river.JobArgs) error {
	_, err := q.client.InsertTx(ctx, tx, args, nil)
	return err
}

// Enqueue schedules the import of job inside tx, so the job row and the River job commit together.
func (q *Queue) Enqueue(ctx context.Context, tx pgx.Tx, job uuid.UUID) error {
	_, err := q.client.InsertTx(ctx, tx, ImportArgs{JobID: job}, nil)
	return err
}
