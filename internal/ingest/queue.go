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
)

// riverSchema keeps River's tables apart from the catalog's.
const riverSchema = "river"

// ImportArgs is the River job that imports one staged upload.
type ImportArgs struct {
	JobID uuid.UUID `json:"job_id"`
}

// Kind names the job type in River's tables.
func (ImportArgs) Kind() string { return "ingest_import" }

// InsertOpts: one attempt. A run whose replica died is found by its silent heartbeat and failed
// (Sweep), and the caller retries explicitly; River's own rescue, hours later, finds the job
// claimed or ended and does nothing.
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
		// A job whose replica died mid-import is picked up again after this long.
		RescueStuckJobsAfter: 2*time.Hour + 5*time.Minute,
	}
	for _, f := range more {
		f(cfg)
	}
	c, err := river.NewClient(riverpgxv5.New(pool), cfg)
	if err != nil {
		return nil, err
	}
	return &Queue{client: c, im: im}, nil
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

// sweep fails, on every replica, imports whose run has been silent for the stall time (their
// server was killed or hangs) and drops their partial tables, at start-up and then every third
// of the stall time: a killed import is failed and retryable within about 1.3 stall times.
func (q *Queue) sweep(ctx context.Context) {
	t := time.NewTicker(max(q.im.Stall/3, time.Second))
	defer t.Stop()
	for {
		ids, err := failStalled(ctx, q.im.Pool, q.im.Objects, q.im.Stall)
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
