package sources

// Scheduled refresh (issue 33): a River periodic job, run by the leader replica only (so two
// servers never start the same refresh), looks every tick for service layers and registered
// tables whose update_frequency period has passed since they were last refreshed or last tried,
// and refreshes each as its owner would (trigger schedule). A scheduled refresh has no token: a
// source that needs one fails its run, which the run history shows.

import (
	"context"
	"log/slog"
	"time"

	"github.com/riverqueue/river"

	"meridian/internal/auth"
	"meridian/internal/catalog"
)

// fetchAbandoned is how long a run may fetch its source without a job before it is taken for
// one whose server stopped (the remote policy bounds each request, the staging bounds the size).
const fetchAbandoned = 2 * time.Hour

// Scheduler queues the refreshes that are due. Service is set once the services exist.
type Scheduler struct {
	Service *Service
	Log     *slog.Logger
}

// DueArgs is the periodic River job that refreshes what is due.
type DueArgs struct{}

// Kind names the job type in River's tables.
func (DueArgs) Kind() string { return "refresh_due" }

// InsertOpts: one attempt; the next tick tries again.
func (DueArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{MaxAttempts: 1} }

type dueWorker struct {
	river.WorkerDefaults[DueArgs]
	s *Scheduler
}

func (w *dueWorker) Work(ctx context.Context, _ *river.Job[DueArgs]) error {
	_, err := w.s.RunDue(ctx, time.Now())
	return err
}

// Timeout: the refreshes it starts fetch their sources in turn.
func (w *dueWorker) Timeout(*river.Job[DueArgs]) time.Duration { return 3 * time.Hour }

// Jobs adds the due check, every tick, to the River client of the server's jobs (ingest.NewQueue).
func (sc *Scheduler) Jobs(tick time.Duration) func(*river.Config) {
	return func(cfg *river.Config) {
		river.AddWorker(cfg.Workers, &dueWorker{s: sc})
		cfg.PeriodicJobs = append(cfg.PeriodicJobs, river.NewPeriodicJob(river.PeriodicInterval(tick),
			func() (river.JobArgs, *river.InsertOpts) { return DueArgs{}, nil },
			&river.PeriodicJobOpts{ID: "refresh_due", RunOnStart: true}))
	}
}

// RunDue fails the runs whose server stopped while fetching, then starts a scheduled refresh of
// every dataset due at now, and answers the runs it started. One dataset's failure (its run
// records it) does not stop the others.
func (sc *Scheduler) RunDue(ctx context.Context, now time.Time) ([]RefreshStart, error) {
	s := sc.Service
	if s == nil {
		return nil, nil
	}
	if _, err := s.Q.FailAbandonedRefreshRuns(ctx, now.Add(-fetchAbandoned)); err != nil {
		return nil, err
	}
	due, err := s.Q.RefreshCandidates(ctx)
	if err != nil {
		return nil, err
	}
	var started []RefreshStart
	for _, d := range due {
		period, ok := catalog.Cadence(d.UpdateFrequency)
		if !ok || d.CreatedBy == nil || now.Sub(d.Since) < period {
			continue
		}
		u, err := s.Q.GetUserByID(ctx, *d.CreatedBy)
		if err != nil || u.Status != "active" {
			continue // an owner who cannot act any more refreshes nothing
		}
		p := auth.Principal{UserID: u.ID, Username: u.Username, Role: u.Role, Via: "schedule"}
		r, err := s.Refresh(ctx, p, d.ID, "", TriggerSchedule)
		if err != nil {
			if sc.Log != nil {
				sc.Log.Warn("scheduled refresh failed", "dataset_id", d.ID, "err", err)
			}
			continue
		}
		started = append(started, r)
	}
	return started, nil
}
