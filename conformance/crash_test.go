package conformance

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// pointsSeq is a GeoJSON text sequence of n points: a format whose import reports progress.
func pointsSeq(n int) []byte {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `{"type":"Feature","properties":{"name":"p%d","rank":%d},"geometry":{"type":"Point","coordinates":[%g,%g]}}`+"\n",
			i, i, float64(i%3600)/10-180, float64(i%1800)/10-90)
	}
	return []byte(b.String())
}

// A server killed in the middle of an import loses nothing and leaves nothing: after a restart
// the job is failed and retryable well within two minutes (not after River's hour), the partial
// table is gone, and the retry imports every row exactly once.
func TestKilledImportFailsRetryablyAndRetriesOnce(t *testing.T) {
	const rows = 300_000
	s := startFresh(t, "IMPORT_STALL_TIMEOUT=3s", "IMPORT_STALL_RESCUES=0", "RATE_LIMIT_ENABLED=false", "LOG_LEVEL=info")
	ctx := context.Background()
	hc := contractAt(t, s)
	tok := loginAt(t, hc, s.APIRoot, "admin", AdminPassword)
	up := uploadAt(t, hc, s.APIRoot, tok, "many.geojsonl", pointsSeq(rows))
	if up.Status != 201 {
		t.Fatalf("upload: %d %s", up.Status, up.Body)
	}
	id := up.JSON(t)["job_id"].(string)
	if c := callAt(t, hc, s.APIRoot, "POST", "/ingest/commit/"+id, map[string]any{"title": "Many"}, bearer(tok)...); c.Status != 202 {
		t.Fatalf("commit: %d %s", c.Status, c.Body)
	}
	job := waitJob(t, hc, s.APIRoot, tok, id, 60*time.Second, func(j map[string]any) bool {
		// Past two of ogr2ogr's 65536-row transactions (progress is 0.9 × the share copied), so a
		// partial table exists.
		p, _ := j["progress"].(float64)
		return p >= 0.45 || j["status"] != "running" && j["status"] != "pending"
	})
	if job["status"] != "running" {
		t.Fatalf("the import ended before it could be killed: %v", job)
	}
	s.Kill()

	conn := connect(t, s.DBURL)
	// The import died with its server: no connection of the import role is left writing.
	deadline := time.Now().Add(10 * time.Second)
	for n := 1; n > 0; time.Sleep(100 * time.Millisecond) {
		_ = conn.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND usename = 'meridian_ingest'").Scan(&n)
		if n > 0 && time.Now().After(deadline) {
			t.Fatalf("%d connection(s) of ogr2ogr outlived the killed server", n)
		}
	}
	var partial int
	_ = conn.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE schemaname = 'data'").Scan(&partial)
	if partial != 1 {
		t.Fatalf("%d tables in data after the kill, want the partial one", partial)
	}

	killed := time.Now()
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	job = waitJob(t, hc, s.APIRoot, tok, id, 2*time.Minute, func(j map[string]any) bool { return j["status"] != "running" })
	if job["status"] != "failed" || job["can_retry"] != true {
		t.Fatalf("after the restart: %v", job)
	}
	t.Logf("failed and retryable %.1f s after the kill", time.Since(killed).Seconds())
	var tables int
	_ = conn.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE schemaname = 'data'").Scan(&tables)
	if tables != 0 {
		t.Fatalf("%d partial table(s) left in data", tables)
	}

	if r := callAt(t, hc, s.APIRoot, "POST", "/jobs/"+id+"/retry", nil, bearer(tok)...); r.Status != 200 {
		t.Fatalf("retry: %d %s", r.Status, r.Body)
	}
	job = waitJob(t, hc, s.APIRoot, tok, id, 2*time.Minute, func(j map[string]any) bool { return j["status"] == "complete" || j["status"] == "failed" })
	if job["status"] != "complete" {
		t.Fatalf("the retry did not complete: %v", job)
	}
	var datasets, features int64
	var table string
	if err := conn.QueryRow(ctx, "SELECT count(*), max(table_name), max(feature_count) FROM catalog.datasets").Scan(&datasets, &table, &features); err != nil {
		t.Fatal(err)
	}
	var stored int64
	_ = conn.QueryRow(ctx, "SELECT count(*) FROM data."+table).Scan(&stored)
	if datasets != 1 || features != rows || stored != rows {
		t.Fatalf("after the retry: %d dataset(s), feature_count %d, %d stored rows; want 1, %d, %d", datasets, features, stored, rows, rows)
	}
	_ = conn.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE schemaname = 'data'").Scan(&tables)
	if tables != 1 {
		t.Fatalf("%d tables in data, want the dataset's one", tables)
	}
}

// waitJob polls a job on the server at root until done says so or the time is up.
func waitJob(t *testing.T, hc *http.Client, root, token, id string, limit time.Duration, done func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		job := callAt(t, hc, root, "GET", "/jobs/"+id, nil, bearer(token)...).JSON(t)
		if done(job) {
			return job
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s after %s: %v", id, limit, job)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
