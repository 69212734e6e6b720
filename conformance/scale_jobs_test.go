//go:build scale

package conformance

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stallTimeout is the replicas' IMPORT_STALL_TIMEOUT: a killed replica's import is queued again
// within about 1.3 × this (the sweep runs every third of it). Long enough that a healthy run's
// beat (every sixth of it) never misses it on this busy two-core machine.
const stallTimeout = 5 * time.Second

// crossKilledImport: an import whose replica is killed (SIGKILL) mid-import is completed by
// another replica within a bounded time, once: a single dataset with every row, one River job
// completed for it, no partial table and no staging file left. Before the kill the run has gone
// on for more than the stall time with one attempt: a live run is never taken from its replica.
// With IMPORT_STALL_RESCUES=0 (SCALE_REPLICA_ENV) the job ends failed and this test fails.
func crossKilledImport(t *testing.T, c *scaleCluster, hc *http.Client, owner session) {
	rows := 400_000
	ctx := context.Background()
	db := connect(t, server.DBURL)
	var id, title string
	var victim int
	resume := func() { _ = server.cmd.Process.Signal(syscall.SIGCONT) }
	defer resume()
	var started time.Time
	for {
		id, title, victim = startKilledImport(t, c, hc, owner, rows, resume)
		var attempts int
		if err := db.QueryRow(ctx, "SELECT attempts, started_at FROM catalog.ingest_jobs WHERE id = $1", id).Scan(&attempts, &started); err != nil {
			t.Fatal(err)
		}
		// A live run past the stall time keeps its job.
		for time.Since(started) < stallTimeout+stallTimeout/2 {
			time.Sleep(100 * time.Millisecond)
		}
		var status string
		_ = db.QueryRow(ctx, "SELECT status, attempts FROM catalog.ingest_jobs WHERE id = $1", id).Scan(&status, &attempts)
		if status == "running" && attempts == 1 {
			break
		}
		if status == "complete" && attempts == 1 && rows < 3_200_000 {
			// A quiet machine imported the file within the stall time: a bigger one.
			t.Logf("%s ended within %s (%d rows); again with twice the rows", id, time.Since(started).Round(time.Millisecond), rows)
			rows *= 2
			continue
		}
		t.Fatalf("%s after running %s on a live replica: status %s, attempt %d; want running, 1",
			id, time.Since(started).Round(time.Millisecond), status, attempts)
	}
	s := c.replicas[victim]
	s.Kill()
	killed := time.Now()
	t.Logf("killed replica %d (SIGKILL) %s into its import", victim, time.Since(started).Round(time.Millisecond))
	defer func() {
		if err := s.Restart(); err != nil {
			t.Fatal(err)
		}
		for readyAt(s.APIRoot) != 200 {
			time.Sleep(50 * time.Millisecond)
		}
	}()
	other := c.replicas[1-victim].APIRoot
	end := waitJob(t, hc, other, owner.Access, id, 2*time.Minute+2*stallTimeout, func(j map[string]any) bool {
		return j["status"] == "complete" || j["status"] == "failed"
	})
	if end["status"] != "complete" {
		t.Fatalf("the import of a killed replica: %v", end)
	}
	t.Logf("completed %s after the kill (stall timeout %s)", time.Since(killed).Round(time.Millisecond), stallTimeout)

	var jobAttempts, rescues int
	var staging *string
	_ = db.QueryRow(ctx, "SELECT attempts, rescues, staging_path FROM catalog.ingest_jobs WHERE id = $1", id).Scan(&jobAttempts, &rescues, &staging)
	if jobAttempts != 2 || rescues != 1 {
		t.Errorf("attempts %d, rescues %d; want 2 runs of which 1 rescue", jobAttempts, rescues)
	}
	var datasets, features, stored int64
	var table string
	if err := db.QueryRow(ctx, "SELECT count(*), max(table_name), max(feature_count) FROM catalog.datasets WHERE title = $1", title).
		Scan(&datasets, &table, &features); err != nil {
		t.Fatal(err)
	}
	if datasets == 1 {
		_ = db.QueryRow(ctx, "SELECT count(*) FROM data."+table).Scan(&stored)
	}
	if datasets != 1 || features != int64(rows) || stored != int64(rows) {
		t.Errorf("%d dataset(s) titled %q, feature_count %d, %d stored rows; want 1, %d, %d", datasets, title, features, stored, rows, rows)
	}
	var leftover []string
	prefix := "ds_" + strings.ReplaceAll(id, "-", "") + "_"
	rs, _ := db.Query(ctx, "SELECT tablename FROM pg_tables WHERE schemaname = 'data' AND starts_with(tablename, $1) AND tablename <> $2", prefix, table)
	for rs.Next() {
		var n string
		_ = rs.Scan(&n)
		leftover = append(leftover, n)
	}
	rs.Close()
	if len(leftover) > 0 {
		t.Errorf("partial tables of the killed run left: %v", leftover)
	}
	// Nothing is left to run it again (the dead run's River job stays running until River's own
	// rescue, hours later, discards it: it has one attempt).
	var queued int
	_ = db.QueryRow(ctx, "SELECT count(*) FROM river.river_job WHERE args->>'job_id' = $1 AND state IN ('available', 'scheduled', 'retryable', 'pending')", id).Scan(&queued)
	if queued != 0 {
		t.Errorf("%d River jobs of the completed import are still queued", queued)
	}
	if staging != nil {
		if _, err := os.Stat(filepath.Dir(*staging)); !os.IsNotExist(err) {
			t.Errorf("the staging directory %s is left (%v)", filepath.Dir(*staging), err)
		}
	}
}

// runnerOfImport is the replica whose process has an ogr2ogr child (-1: none, so the suite's
// server runs the import), looked for during two seconds.
func (c *scaleCluster) runnerOfImport() int {
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		for _, p := range processes() {
			if p.name != "ogr2ogr" {
				continue
			}
			for i, s := range c.replicas {
				if s.cmd.Process.Pid == p.ppid {
					return i
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return -1
}

type procInfo struct {
	name string
	ppid int
}

// processes reads every process's name and parent from /proc.
func processes() map[int]procInfo {
	out := map[int]procInfo{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so cut at the last parenthesis.
		s := string(b)
		open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || close < open {
			continue
		}
		f := strings.Fields(s[close+1:])
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		out[pid] = procInfo{name: s[open+1 : close], ppid: ppid}
	}
	return out
}

// startKilledImport uploads and commits an import of rows points on replica A and answers its
// job, title and the replica running it, with the suite's server paused (SIGSTOP) until a
// replica has claimed it (three servers share the queue, and the suite's own took the import
// three times out of four in one run): an import the suite's server took all the same is let
// finish and another one started.
func startKilledImport(t *testing.T, c *scaleCluster, hc *http.Client, owner session, rows int, resume func()) (id, title string, victim int) {
	for try := 1; ; try++ {
		if err := server.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		title = "Killed mid-import " + randomHex(3)
		up := want(t, "upload on A", uploadAt(t, hc, c.replicas[0].APIRoot, owner.Access, "many.geojsonl", pointsSeq(rows)), 201).JSON(t)
		id = up["job_id"].(string)
		want(t, "commit on A", callAt(t, hc, c.replicas[0].APIRoot, "POST", "/ingest/commit/"+id, map[string]any{"title": title},
			bearer(owner.Access)...), 202)
		waitJob(t, hc, c.proxy, owner.Access, id, time.Minute, func(j map[string]any) bool {
			p, _ := j["progress"].(float64)
			return p >= 0.1 || j["status"] != "running" && j["status"] != "pending"
		})
		victim = c.runnerOfImport()
		resume()
		if victim >= 0 {
			break
		}
		if try == 4 {
			t.Fatal("the suite's server took the import four times out of four")
		}
		t.Logf("try %d: the suite's server runs the import; another one", try)
		waitJob(t, hc, c.proxy, owner.Access, id, 3*time.Minute, func(j map[string]any) bool { return j["status"] != "running" })
	}
	return id, title, victim
}
