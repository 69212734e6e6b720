package ai

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/store"
)

// The records' embeddings: computed by a River job on its own queue, as a backfill an admin
// asks for (with progress) and, while semantic search is on, periodically for the records whose
// text changed since they were embedded (the search documents' triggers mark them, migration
// 96).

// errNotEmbeddings is an embeddings answer that is not one vector per text.
var errNotEmbeddings = errors.New("the answer is not one embedding per text")

// embedQueue keeps embedding work apart from imports: a long backfill never holds an import's
// place.
const embedQueue = "embeddings"

// embedBatch is how many texts one embeddings request carries.
const embedBatch = 32

// EmbedArgs is the River job that embeds records: a backfill (Run set) or the periodic refresh
// of what changed.
type EmbedArgs struct {
	Run        *uuid.UUID  `json:"run,omitempty"`
	Mode       string      `json:"mode"` // missing, stale or all
	DatasetIDs []uuid.UUID `json:"dataset_ids,omitempty"`
}

// Kind names the job type in River's tables.
func (EmbedArgs) Kind() string { return "embed_records" }

// InsertOpts: one attempt (a backfill that failed is asked for again), on the embeddings queue,
// and never two of a kind waiting or running at once.
func (EmbedArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: embedQueue, MaxAttempts: 1, UniqueOpts: river.UniqueOpts{ByArgs: true,
		ByState: []rivertype.JobState{rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning, rivertype.JobStateScheduled}}}
}

type embedWorker struct {
	river.WorkerDefaults[EmbedArgs]
	s *Service
}

func (w *embedWorker) Work(ctx context.Context, j *river.Job[EmbedArgs]) error {
	return w.s.embedRecords(ctx, j.Args)
}

// Timeout bounds one run: a backfill of a large catalog takes long, and beats while it works.
func (w *embedWorker) Timeout(*river.Job[EmbedArgs]) time.Duration { return 6 * time.Hour }

// Jobs adds the embedding job, its queue and its periodic refresh (every interval) to the River
// client that runs the server's jobs (ingest.NewQueue). s must use the jobs' pool.
func Jobs(s *Service, interval time.Duration) func(*river.Config) {
	return func(cfg *river.Config) {
		river.AddWorker(cfg.Workers, &embedWorker{s: s})
		if cfg.Queues == nil {
			cfg.Queues = map[string]river.QueueConfig{}
		}
		cfg.Queues[embedQueue] = river.QueueConfig{MaxWorkers: 1}
		cfg.PeriodicJobs = append(cfg.PeriodicJobs, river.NewPeriodicJob(river.PeriodicInterval(interval),
			func() (river.JobArgs, *river.InsertOpts) { return EmbedArgs{Mode: "stale"}, nil },
			&river.PeriodicJobOpts{ID: "embed_records_refresh", RunOnStart: true}))
	}
}

// embedRecords embeds the records a run asks for, in batches, writing its progress as it goes.
// The periodic refresh does nothing unless semantic search is on; nothing is sent while AI is off.
func (s *Service) embedRecords(ctx context.Context, a EmbedArgs) error {
	st, err := s.Setup(ctx)
	if err != nil {
		return err
	}
	if a.Run == nil && !st.SemanticAvailable() {
		return nil
	}
	if err := embeddable(st); err != nil {
		return s.endRun(ctx, a.Run, err)
	}
	model, dims := deref(st.EmbeddingModel), *st.EmbeddingDimensions
	if a.Run != nil {
		if err := s.Q.StartBackfill(ctx, *a.Run); err != nil {
			return err
		}
	}
	emb := s.embeddingModel(st)
	after, processed, failed, failures := uuid.Nil, 0, 0, 0
	for {
		rows, err := s.Q.EmbeddingsToDo(ctx, store.EmbeddingsToDoParams{After: after, DatasetIds: nonNilIDs(a.DatasetIDs),
			Mode: a.Mode, Model: model, Dims: int32(dims), MaxRows: embedBatch})
		if err != nil {
			return s.endRun(ctx, a.Run, err)
		}
		if len(rows) == 0 {
			return s.endRun(ctx, a.Run, nil)
		}
		texts := make([]string, len(rows))
		for i, r := range rows {
			texts[i] = r.Text
		}
		callCtx, cancel := s.callContext(ctx)
		vecs, _, err := emb.embed(callCtx, texts)
		cancel()
		if err == nil && len(vecs[0]) != dims {
			err = wrongDims(len(vecs[0]), dims)
		}
		if err != nil {
			err = embedFailure(ctx, err)
			for _, r := range rows {
				_ = s.Q.PutEmbeddingError(ctx, store.PutEmbeddingErrorParams{DatasetID: r.ID, Error: clipPtr(err.Error(), 500)})
			}
			failed += len(rows)
			if failures++; failures == 3 || ctx.Err() != nil {
				return s.endRun(ctx, a.Run, err) // the provider keeps failing: say so, and stop
			}
		} else {
			failures = 0
			for i, r := range rows {
				if err := s.Q.PutEmbedding(ctx, store.PutEmbeddingParams{DatasetID: r.ID, Hash: r.Hash, Embedding: vecs[i],
					Model: &model, Dims: ptr(int32(dims))}); err != nil {
					return s.endRun(ctx, a.Run, err)
				}
			}
		}
		processed += len(rows)
		after = rows[len(rows)-1].ID
		if a.Run != nil {
			if err := s.Q.BackfillProgress(ctx, store.BackfillProgressParams{ID: *a.Run, Processed: int32(processed), Failed: int32(failed)}); err != nil {
				return err
			}
		}
	}
}

// endRun records how a backfill ended (the periodic refresh only logs); the job itself ends
// well either way, the run's row tells.
func (s *Service) endRun(ctx context.Context, run *uuid.UUID, cause error) error {
	if run == nil {
		if cause != nil && ctx.Err() == nil {
			s.Log.Warn("ai: refreshing embeddings failed", "err", cause)
		}
		return nil
	}
	status, msg := "complete", (*string)(nil)
	if cause != nil {
		status, msg = "failed", clipPtr(detailOf(cause), 500)
	}
	return s.Q.EndBackfill(context.WithoutCancel(ctx), store.EndBackfillParams{ID: *run, Status: status, Error: msg})
}

// embeddable is why records cannot be embedded now, or nil. Nothing is sent while AI is off.
func embeddable(st Setup) error {
	switch {
	case !st.Enabled:
		return apperr.Conflict("the AI features are switched off (setting ai_enabled): nothing is sent to a provider")
	case !st.EmbeddingsConfigured():
		return apperr.Conflict("%s", st.EmbedNote)
	case st.EmbeddingDimensions == nil:
		return apperr.Conflict("the embedding dimensions are not set (setting embedding_dims): run Detect Embedding Dims and save what it finds")
	}
	return nil
}

// Backfill queues the embedding of the records of mode (missing, stale or all), of datasetIDs
// only when given. One runs at a time: 409 while one is queued or running.
func (s *Service) Backfill(ctx context.Context, p auth.Principal, mode string, datasetIDs []uuid.UUID) (store.CatalogEmbeddingBackfill, error) {
	st, err := s.Setup(ctx)
	if err != nil {
		return store.CatalogEmbeddingBackfill{}, err
	}
	if err := embeddable(st); err != nil {
		return store.CatalogEmbeddingBackfill{}, err
	}
	// A run whose server died beats no more: it is over.
	if err := s.Q.FailSilentBackfills(ctx, 120); err != nil {
		return store.CatalogEmbeddingBackfill{}, err
	}
	total, err := s.Q.CountEmbeddingsToDo(ctx, store.CountEmbeddingsToDoParams{DatasetIds: nonNilIDs(datasetIDs), Mode: mode,
		Model: deref(st.EmbeddingModel), Dims: int32(*st.EmbeddingDimensions)})
	if err != nil {
		return store.CatalogEmbeddingBackfill{}, err
	}
	var run store.CatalogEmbeddingBackfill
	err = pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := s.Q.WithTx(tx)
		id, err := q.InsertBackfill(ctx, store.InsertBackfillParams{Mode: mode, DatasetIds: datasetIDs, RequestedBy: &p.UserID, Total: int32(total)})
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "23505" {
			return apperr.Conflict("a backfill is already queued or running; follow it with Get Embedding Stats")
		}
		if err != nil {
			return err
		}
		if err := s.Enqueue(ctx, tx, EmbedArgs{Run: &id, Mode: mode, DatasetIDs: datasetIDs}); err != nil {
			return err
		}
		run, err = q.GetBackfill(ctx, id)
		return err
	})
	return run, err
}

// EmbeddingStats is the coverage of the records' embeddings with the configured model.
type EmbeddingStats struct {
	Total, Embedded, Stale, Missing, Failed int64
	Model                                   *string
	Dimensions                              *int
	Backfill                                *store.CatalogEmbeddingBackfill // the latest, nil when none ran
}

// Stats counts the records' embeddings: current with the configured model and dimensions,
// stale (of an older text, or another model), missing, failed; and the latest backfill.
func (s *Service) Stats(ctx context.Context) (EmbeddingStats, error) {
	st, err := s.Setup(ctx)
	if err != nil {
		return EmbeddingStats{}, err
	}
	dims := 0
	if st.EmbeddingDimensions != nil {
		dims = *st.EmbeddingDimensions
	}
	c, err := s.Q.EmbeddingCounts(ctx, store.EmbeddingCountsParams{Model: deref(st.EmbeddingModel), Dims: int32(dims)})
	if err != nil {
		return EmbeddingStats{}, err
	}
	out := EmbeddingStats{Total: c.Total, Embedded: c.Current, Stale: c.Stale, Failed: c.Failed,
		Missing: c.Total - c.Current - c.Stale, Model: st.EmbeddingModel, Dimensions: st.EmbeddingDimensions}
	if st.EmbeddingModel == nil || st.EmbeddingDimensions == nil {
		// Without a model (and its dimensions) no record has a usable embedding: all are missing.
		out.Embedded, out.Stale, out.Missing = 0, 0, c.Total
	}
	run, err := s.Q.LatestBackfill(ctx)
	switch {
	case err == nil:
		out.Backfill = &run
	case !errors.Is(err, pgx.ErrNoRows):
		return out, err
	}
	return out, nil
}

// DetectDims embeds a short text with the configured model and answers its vectors' length.
func (s *Service) DetectDims(ctx context.Context) (int, string, error) {
	st, err := s.Setup(ctx)
	if err != nil {
		return 0, "", err
	}
	switch {
	case !st.Enabled:
		return 0, "", apperr.Conflict("the AI features are switched off (setting ai_enabled): nothing is sent to a provider")
	case !st.EmbeddingsConfigured():
		return 0, "", apperr.Conflict("%s", st.EmbedNote)
	}
	callCtx, cancel := s.callContext(ctx)
	defer cancel()
	vecs, _, err := s.embeddingModel(st).embed(callCtx, []string{"Meridian spatial data catalog"})
	if err != nil {
		return 0, "", embedFailure(ctx, err)
	}
	return len(vecs[0]), deref(st.EmbeddingModel), nil
}

// HasEmbeddings reports whether any record has a current embedding of the configured model.
func (s *Service) HasEmbeddings(ctx context.Context, st Setup) (bool, error) {
	if st.EmbeddingModel == nil || st.EmbeddingDimensions == nil {
		return false, nil
	}
	v, err := s.Q.EmbeddingsVersion(ctx, store.EmbeddingsVersionParams{Model: *st.EmbeddingModel, Dims: int32(*st.EmbeddingDimensions)})
	return v.Count > 0, err
}

func nonNilIDs(ids []uuid.UUID) []uuid.UUID {
	if ids == nil {
		return []uuid.UUID{}
	}
	return ids
}

func ptr[T any](v T) *T { return &v }

func clipPtr(s string, n int) *string {
	s = clip(s, n)
	return &s
}

// detailOf is what may be shown of an error: an apperr's detail, else a generic sentence.
func detailOf(err error) string {
	var ae *apperr.Error
	if errors.As(err, &ae) && ae.Kind != apperr.KindInternal {
		return ae.Detail
	}
	return "the server could not complete the work; its log has the cause"
}
