package ingest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"meridian/store"
)

// VRTArgs is the River job that runs one generation of a VRT dataset.
type VRTArgs struct {
	JobID uuid.UUID `json:"job_id"`
}

// Kind names the job type in River's tables.
func (VRTArgs) Kind() string { return "vrt_generation" }

// InsertOpts: one attempt, as imports (a run whose server died is failed by the stall sweep).
func (VRTArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{MaxAttempts: 1} }

type vrtWorker struct {
	river.WorkerDefaults[VRTArgs]
	im *Importer
}

// Work runs the generation; River's record of the job completes in the transaction that serves it.
func (w *vrtWorker) Work(ctx context.Context, j *river.Job[VRTArgs]) error {
	return w.im.RunVRT(ctx, j.Args.JobID, func(ctx context.Context, tx pgx.Tx) error {
		_, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, j)
		return err
	})
}

func (w *vrtWorker) Timeout(*river.Job[VRTArgs]) time.Duration { return importTime + 10*time.Minute }

// vrtKey is where generation n of VRT v stores its COG (a key of its own per generation, so the
// served one is never overwritten by a build).
func vrtKey(v uuid.UUID, n int32) string { return fmt.Sprintf("rasters/%s/g%d.tif", v, n) }

// queueVRT queues a generation of VRT v inside tx (whose caller holds the VRT's lock): the one
// queued and not started yet when there is one (it will read the sources as they are when it
// starts), else a new one. It answers the generation's id (its job's) and whether it was new.
func (q *Queue) queueVRT(ctx context.Context, tx pgx.Tx, v uuid.UUID, trigger string, by, owner *uuid.UUID) (uuid.UUID, bool, error) {
	qs := store.New(tx)
	active, err := qs.ActiveVRTGenerations(ctx, v)
	if err != nil {
		return uuid.Nil, false, err
	}
	for _, a := range active {
		if a.Status == "pending" {
			return a.ID, false, nil
		}
	}
	n, err := qs.NextVRTGeneration(ctx, v)
	if err != nil {
		return uuid.Nil, false, err
	}
	id := uuid.New()
	jobOwner := by
	if jobOwner == nil {
		jobOwner = owner // a change of a source asked for it: the VRT's owner follows it
	}
	if _, err := qs.CreateVRTJob(ctx, store.CreateVRTJobParams{ID: id, CreatedBy: jobOwner, DatasetID: &v}); err != nil {
		return uuid.Nil, false, err
	}
	if err := qs.InsertVRTGeneration(ctx, store.InsertVRTGenerationParams{ID: id, VrtID: v, Generation: n, Trigger: trigger,
		RequestedBy: by, StorageKey: vrtKey(v, n)}); err != nil {
		return uuid.Nil, false, err
	}
	if err := qs.SetVRTStatus(ctx, v); err != nil {
		return uuid.Nil, false, err
	}
	if _, err := q.client.InsertTx(ctx, tx, VRTArgs{JobID: id}, nil); err != nil {
		return uuid.Nil, false, err
	}
	return id, true, nil
}

// sweepVRT, on every server every second: queues the regenerations that changes of sources asked
// for (the database's triggers mark them wanted, migration 85), settles the status of VRTs whose
// generation was failed as stalled, and removes COGs nobody serves any more and the work
// directories of runs that ended here without cleaning up (a killed server).
func (q *Queue) sweepVRT(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		if err := q.vrtRound(ctx); err != nil && ctx.Err() == nil {
			q.im.Log.Warn("sweeping VRT datasets failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (q *Queue) vrtRound(ctx context.Context) error {
	wanted, err := q.im.Q.ListWantedVRTs(ctx)
	if err != nil {
		return err
	}
	for _, v := range wanted {
		err := pgx.BeginFunc(ctx, q.im.Pool, func(tx pgx.Tx) error {
			w, err := store.New(tx).TakeVRTWanted(ctx, v)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil // taken by another server
			}
			if err != nil {
				return err
			}
			_, _, err = q.queueVRT(ctx, tx, v, w.Wanted, nil, w.CreatedBy)
			return err
		})
		if err != nil {
			return err
		}
	}
	unsettled, err := q.im.Q.UnsettledVRTs(ctx)
	if err != nil {
		return err
	}
	for _, v := range unsettled {
		if err := q.im.Q.SetVRTStatus(ctx, v); err != nil {
			return err
		}
	}
	gone, err := q.im.Q.VRTCOGsToRemove(ctx, q.im.RetireGrace.Seconds())
	if err != nil {
		return err
	}
	for _, g := range gone {
		if q.im.Objects == nil || q.im.Objects.Delete(ctx, g.StorageKey) == nil {
			if err := q.im.Q.MarkVRTCOGRemoved(ctx, g.ID); err != nil {
				return err
			}
		}
	}
	return q.removeVRTWork(ctx)
}

// removeVRTWork removes the work directories of generations not running any more.
func (q *Queue) removeVRTWork(ctx context.Context) error {
	dir := filepath.Join(q.im.DataDir, "vrt-work")
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) == 0 {
		return nil
	}
	running, err := q.im.Q.RunningVRTJobs(ctx)
	if err != nil {
		return err
	}
	busy := map[string]bool{}
	for _, id := range running {
		busy[id.String()] = true
	}
	for _, e := range entries {
		job, _, _ := strings.Cut(e.Name(), "-") // vrtWorkDir: the job's id, then the attempt
		if len(e.Name()) > 36 {
			job = e.Name()[:36]
		}
		info, err := e.Info()
		if busy[job] || err != nil || time.Since(info.ModTime()) < time.Minute {
			continue
		}
		_ = os.RemoveAll(filepath.Join(dir, e.Name()))
	}
	return nil
}
