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

// InsertOpts: two attempts, so a job whose worker died with its replica is run once more by
// River's rescuer; a failure the import itself reports is final (the caller retries explicitly).
func (ImportArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{MaxAttempts: 2} }

type importWorker struct {
	river.WorkerDefaults[ImportArgs]
	im *Importer
}

func (w *importWorker) Work(ctx context.Context, j *river.Job[ImportArgs]) error {
	return w.im.Run(ctx, j.Args.JobID)
}

// Timeout bounds one import; a 500 MB GeoPackage takes minutes, not hours.
func (w *importWorker) Timeout(*river.Job[ImportArgs]) time.Duration { return 2 * time.Hour }

// Queue runs imports on River, so every replica shares the work through PostgreSQL.
type Queue struct {
	client *river.Client[pgx.Tx]
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

// NewQueue prepares the River client; workers run after Start.
func NewQueue(pool *pgxpool.Pool, im *Importer, log *slog.Logger, workers int) (*Queue, error) {
	ws := river.NewWorkers()
	river.AddWorker(ws, &importWorker{im: im})
	c, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Schema:  riverSchema,
		Queues:  map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: workers}},
		Workers: ws,
		Logger:  log,
		// A job whose replica died mid-import is picked up again after this long.
		RescueStuckJobsAfter: 2*time.Hour + 5*time.Minute,
	})
	if err != nil {
		return nil, err
	}
	return &Queue{client: c}, nil
}

// Start runs the workers until Stop.
func (q *Queue) Start(ctx context.Context) error { return q.client.Start(ctx) }

// Stop lets running imports finish (or ctx end) and stops fetching new ones.
func (q *Queue) Stop(ctx context.Context) error { return q.client.Stop(ctx) }

// Enqueue schedules the import of job inside tx, so the job row and the River job commit together.
func (q *Queue) Enqueue(ctx context.Context, tx pgx.Tx, job uuid.UUID) error {
	_, err := q.client.InsertTx(ctx, tx, ImportArgs{JobID: job}, nil)
	return err
}
