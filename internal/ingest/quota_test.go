package ingest

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"meridian/internal/apperr"
	"meridian/internal/testdb"
	"meridian/store"
)

// The sweep expires what nobody will use and nothing else: it is run over one job in every
// state a staging directory can be in, with their clocks set past the TTL.
func TestStagingSweepKeepsWhatJobsNeed(t *testing.T) {
	pool := testdb.New(t)
	ctx := context.Background()
	q := store.New(pool)
	dir := t.TempDir()
	s := &Staging{Dir: dir, Q: q, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), TTL: time.Hour, OrphanAfter: 2 * time.Hour}

	// stage makes a staging directory with a file and, unless orphan, a job reading it.
	stage := func(orphan bool) (uuid.UUID, string) {
		id := uuid.New()
		path := filepath.Join(StageDir(dir, id), "f.geojson")
		if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := q.AddStagedBytes(ctx, store.AddStagedBytesParams{JobID: id, Bytes: 2}); err != nil {
			t.Fatal(err)
		}
		if !orphan {
			name := "f.geojson"
			if _, err := q.CreateIngestJob(ctx, store.CreateIngestJobParams{ID: id, SourceFilename: &name, StagingPath: &path}); err != nil {
				t.Fatal(err)
			}
		}
		return id, path
	}
	exec := func(sql string, args ...any) {
		if _, err := pool.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-3 * time.Hour)
	age := func(id uuid.UUID, status string, committed bool) {
		exec(`UPDATE catalog.ingest_jobs SET status = $2, committed = $3, updated_at = $4::timestamptz, completed_at = CASE WHEN $2::text IN ('failed', 'complete') THEN $4::timestamptz END WHERE id = $1`,
			id, status, committed, old)
	}

	uncommitted, _ := stage(false)
	age(uncommitted, "pending", false)
	fresh, _ := stage(false) // pending, uncommitted, within the TTL
	queued, _ := stage(false)
	age(queued, "pending", true)
	running, _ := stage(false)
	age(running, "running", true)
	failedOld, _ := stage(false)
	age(failedOld, "failed", true)
	failedNew, _ := stage(false)
	exec(`UPDATE catalog.ingest_jobs SET status = 'failed', committed = true, completed_at = now() WHERE id = $1`, failedNew)
	// A fan-out parent whose child still runs: the directory is the parent's, the child reads it.
	parent, parentPath := stage(false)
	age(parent, "fanned_out", true)
	child := uuid.New()
	if _, err := q.CreateIngestJob(ctx, store.CreateIngestJobParams{ID: child, StagingPath: &parentPath}); err != nil {
		t.Fatal(err)
	}
	age(child, "running", true)
	orphanOld, _ := stage(true)
	if err := os.Chtimes(StageDir(dir, orphanOld), old, old); err != nil {
		t.Fatal(err)
	}
	exec(`UPDATE catalog.staging_areas SET created_at = $2 WHERE job_id = $1`, orphanOld, old)
	orphanNew, _ := stage(true) // an upload in progress: no job yet
	// A presigned upload not yet completed, long begun: its parts (local storage) or the file its
	// completion is downloading lie in its directory before the job names them.
	presigned := uuid.New()
	if err := os.MkdirAll(StageDir(dir, presigned), 0o750); err != nil {
		t.Fatal(err)
	}
	name, size, one := "f.gpkg", int64(2), int32(1)
	if _, err := q.CreatePresignedJob(ctx, store.CreatePresignedJobParams{ID: presigned, SourceFilename: &name, DeclaredSize: &size,
		PartCount: &one, ExpiresAt: ptr(time.Now().Add(time.Hour))}); err != nil {
		t.Fatal(err)
	}
	if err := q.AddStagedBytes(ctx, store.AddStagedBytesParams{JobID: presigned, Bytes: 2}); err != nil {
		t.Fatal(err)
	}
	exec(`UPDATE catalog.ingest_jobs SET updated_at = $2 WHERE id = $1`, presigned, old)

	removed, err := s.Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	gone := map[uuid.UUID]bool{uncommitted: true, failedOld: true, orphanOld: true}
	for name, id := range map[string]uuid.UUID{"uncommitted": uncommitted, "fresh": fresh, "queued": queued, "running": running,
		"failed long ago": failedOld, "failed just now": failedNew, "fan-out parent": parent, "old orphan": orphanOld, "new orphan": orphanNew,
		"presigned upload in progress": presigned} {
		_, statErr := os.Stat(StageDir(dir, id))
		var rows int
		_ = pool.QueryRow(ctx, `SELECT count(*) FROM catalog.staging_areas WHERE job_id = $1`, id).Scan(&rows)
		if exists := statErr == nil; exists == gone[id] || (rows == 1) == gone[id] {
			t.Errorf("%s: directory exists %v, accounted %v; want removed %v", name, exists, rows == 1, gone[id])
		}
	}
	if removed != len(gone) {
		t.Errorf("removed %d, want %d", removed, len(gone))
	}
	job, _ := q.GetIngestJob(ctx, uncommitted)
	if job.Status != "failed" || job.ErrorMessage == nil || job.StagingPath != nil {
		t.Errorf("the uncommitted job after the sweep: %s %v %v", job.Status, job.ErrorMessage, job.StagingPath)
	}
	if job, _ := q.GetIngestJob(ctx, failedOld); job.StagingPath != nil || retryable(job) {
		t.Errorf("the old failed job is still retryable")
	}
	if job, _ := q.GetIngestJob(ctx, failedNew); !retryable(job) {
		t.Errorf("the failed job within its retry window lost its retry")
	}
}

// Claims count what concurrent writers of one owner take before it is recorded, and the two
// quotas answer differently: the user's with 413, the server's with 503 and Retry-After.
func TestStagingClaimsShareTheQuota(t *testing.T) {
	pool := testdb.New(t)
	ctx := context.Background()
	q := store.New(pool)
	var owner, other uuid.UUID
	for _, id := range []*uuid.UUID{&owner, &other} {
		if err := pool.QueryRow(ctx, `INSERT INTO catalog.users (username, email) VALUES ($1, $1 || '@example.org') RETURNING id`,
			"u"+uuid.NewString()[:8]).Scan(id); err != nil {
			t.Fatal(err)
		}
	}
	s := &Staging{Q: q, PerUser: 100, Total: 150}
	a, _ := s.begin(ctx, owner, false)
	b, _ := s.begin(ctx, owner, false)
	if err := a.take(60); err != nil {
		t.Fatal(err)
	}
	if err := b.take(60); apperr.KindOf(err) != apperr.KindTooLarge || !errors.Is(err, errQuota) {
		t.Fatalf("a second writer past the user's quota: %v", err)
	}
	if err := a.record(ctx, uuid.New()); err != nil {
		t.Fatal(err)
	}
	admin, _ := s.begin(ctx, other, true)
	if err := admin.take(80); err != nil { // admins are held only to the total
		t.Fatal(err)
	}
	var ae *apperr.Error
	if err := admin.take(20); !errors.As(err, &ae) || ae.Kind != apperr.KindUnavailable || ae.RetryAfter == 0 {
		t.Fatalf("past the total: %v", err)
	}
	admin.drop()
	if n := s.inTotal; n != 0 {
		t.Fatalf("%d bytes still claimed after every claim ended", n)
	}
}
