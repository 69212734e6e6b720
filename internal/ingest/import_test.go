package ingest

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"meridian/internal/testdb"
	"meridian/store"
)

// The dataset record and the job's completion (with the queue's own record of it) commit
// together: when the last step fails, there is no record, no table and no complete job, and a
// retry imports the file exactly once.
func TestRecordAndCompletionAreOneUnit(t *testing.T) {
	if _, err := exec.LookPath("ogr2ogr"); err != nil {
		t.Skip("gdal-bin is not installed (make test installs it)")
	}
	pool := testdb.New(t)
	ctx := context.Background()
	role, err := ProvisionImportRole(ctx, pool, "", "a-server-secret-of-at-least-32-chars")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	id := uuid.New()
	gj := `{"type":"FeatureCollection","features":[{"type":"Feature","properties":{"n":1},"geometry":{"type":"Point","coordinates":[5,50]}}]}`
	path, _, err := Stage(dir, id, "one.geojson", strings.NewReader(gj), 1<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	q := store.New(pool)
	name := "one.geojson"
	if _, err := q.CreateIngestJob(ctx, store.CreateIngestJobParams{ID: id, SourceFilename: &name, StagingPath: &path}); err != nil {
		t.Fatal(err)
	}
	if _, err := q.CommitIngestJob(ctx, store.CommitIngestJobParams{ID: id, Options: []byte(`{"title":"One"}`)}); err != nil {
		t.Fatal(err)
	}
	im := &Importer{Pool: pool, Q: q, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), DataDir: dir,
		Bounds: Bounds{MaxUnpacked: 1 << 30}, Role: role, Stall: time.Minute}
	count := func(sql string) int {
		var n int
		if err := pool.QueryRow(ctx, sql).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	crash := errors.New("the process died between the record and the completion")
	if err := im.Run(ctx, id, func(context.Context, pgx.Tx) error { return crash }); err != nil {
		t.Fatal(err)
	}
	job, _ := q.GetIngestJob(ctx, id)
	if job.Status != "failed" || !job.CanRetry || job.DatasetID != nil {
		t.Fatalf("after the failed completion: status %s can_retry %v dataset %v", job.Status, job.CanRetry, job.DatasetID)
	}
	if n, m := count("SELECT count(*) FROM catalog.datasets"), count("SELECT count(*) FROM pg_tables WHERE schemaname = 'data'"); n != 0 || m != 0 {
		t.Fatalf("%d record(s) and %d table(s) survived the rolled-back completion", n, m)
	}

	if _, err := q.RequeueIngestJob(ctx, id); err != nil {
		t.Fatal(err)
	}
	completed := 0
	if err := im.Run(ctx, id, func(context.Context, pgx.Tx) error { completed++; return nil }); err != nil {
		t.Fatal(err)
	}
	// A second run of the same job (a queue rescuing it late) claims nothing.
	if err := im.Run(ctx, id, func(context.Context, pgx.Tx) error { completed++; return nil }); err != nil {
		t.Fatal(err)
	}
	job, _ = q.GetIngestJob(ctx, id)
	if job.Status != "complete" || completed != 1 || count("SELECT count(*) FROM catalog.datasets") != 1 {
		t.Fatalf("retry: status %s, completed %d times, %d records", job.Status, completed, count("SELECT count(*) FROM catalog.datasets"))
	}
}

// A run is repeated only for the catalog race, as GDAL printed it in the hour of mixed load; a
// broken file or a database that went away fails the import as before.
func TestCatalogRaceIsTheOnlyRepeatedFailure(t *testing.T) {
	for _, c := range []struct {
		stderr string
		race   bool
	}{
		{"ERROR 1: ERROR:  cache lookup failed for index 79939\n\nERROR 1: Unable to write feature 0 from layer load-0d2246.", true},
		{"ERROR 1: ERROR:  cache lookup failed for relation 80211", true},
		{"ERROR 1: Unable to write feature 0 from layer x.\nERROR 1: Terminating translation prematurely", false},
		{"ERROR 1: PQconnectdb failed.\nconnection to server failed: Connection refused", false},
		{"", false},
	} {
		if got := catalogRace(c.stderr); got != c.race {
			t.Errorf("catalogRace(%q) = %v, want %v", c.stderr, got, c.race)
		}
	}
}
