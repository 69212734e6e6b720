package features

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
)

// matchedOf reads a whole page of q and answers its number matched.
func matchedOf(t *testing.T, ctx context.Context, r Reader, tbl Table, q ItemsQuery) int64 {
	t.Helper()
	n, _ := readPage(t, ctx, r, tbl, q)
	return n
}

// readPage reads a whole page of q and answers its number matched and how many it returned.
func readPage(t *testing.T, ctx context.Context, r Reader, tbl Table, q ItemsQuery) (matched int64, returned int) {
	t.Helper()
	cur, err := r.Items(ctx, tbl, q)
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close()
	for {
		_, ok, err := cur.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
	}
	n, err := cur.Matched()
	if err != nil {
		t.Fatal(err)
	}
	return n, cur.Returned()
}

// A filtered page's count is kept for the dataset's data version: the next page (and any other
// request for it) does not count again, a new version counts afresh, and a count made while the
// data was already at another version is answered but not kept. The pool has one connection, so
// the count can only run once the page has given its connection back.
func TestKeptCountsFollowTheVersion(t *testing.T) {
	ctx, r, tbl := onePool(t)
	r.Counts = &Counts{}
	var id uuid.UUID
	if err := r.Pool.QueryRow(ctx, `INSERT INTO catalog.datasets (table_name, title) VALUES ('pts', 'Points') RETURNING id`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	page := func(version int64, offset int) int64 {
		return matchedOf(t, ctx, r, tbl, ItemsQuery{Limit: 5, Offset: offset, Equals: map[string]string{"n": "3"},
			Count: &CountKey{Dataset: id, Version: version}})
	}
	if n := page(1, 0); n != 100 {
		t.Fatalf("first page: matched %d, want 100", n)
	}
	// Rows deleted behind the version's back: a kept count does not see them, which shows it
	// was kept (the service moves the version on with every change it makes).
	if _, err := r.Pool.Exec(ctx, `DELETE FROM data.pts WHERE gid IN (3, 13, 23)`); err != nil {
		t.Fatal(err)
	}
	if n := page(1, 5); n != 100 {
		t.Fatalf("next page at the same version: matched %d, want the kept 100", n)
	}
	// The version moves on (a column change bumps tile_version): counted again.
	if _, err := r.Pool.Exec(ctx, `UPDATE catalog.datasets SET column_info = '[]' WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	if n := page(2, 0); n != 97 {
		t.Fatalf("new version: matched %d, want 97", n)
	}
	// A request holding an older version counts what is there now, and keeps nothing.
	if n := page(7, 0); n != 97 {
		t.Fatalf("a version the data is not at: matched %d, want 97", n)
	}
	if _, err := r.Pool.Exec(ctx, `DELETE FROM data.pts WHERE gid = 33`); err != nil {
		t.Fatal(err)
	}
	if n := page(7, 0); n != 96 {
		t.Fatalf("again at that version: matched %d, want 96 (not kept)", n)
	}
	// Another filter is another count.
	q := ItemsQuery{Limit: 5, Equals: map[string]string{"n": "4"}, Count: &CountKey{Dataset: id, Version: 2}}
	if n := matchedOf(t, ctx, r, tbl, q); n != 100 {
		t.Fatalf("another filter: matched %d, want 100", n)
	}
}

// Requests asking the same count at once share one run; the run stops when the last of them
// leaves before it ends, and a finished run is kept.
func TestSharedCountsRunOnceAndStopWhenAllLeave(t *testing.T) {
	var c Counts
	var runs atomic.Int32
	release := make(chan struct{})
	stopped := make(chan struct{})
	run := func(ctx context.Context) (int64, bool, error) {
		runs.Add(1)
		select {
		case <-release:
			return 42, true, nil
		case <-ctx.Done():
			close(stopped)
			return 0, false, ctx.Err()
		}
	}
	key := CountKey{Dataset: uuid.New(), Version: 1}
	digest := countDigest(key, "SELECT count(*) FROM x", []any{"a"})
	a := c.join(context.Background(), key, digest, run)
	b := c.join(context.Background(), key, digest, run)
	a.leave()
	select {
	case <-stopped:
		t.Fatal("the count stopped while a request still waited for it")
	case <-time.After(50 * time.Millisecond):
	}
	b.leave()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("the count went on after every request left")
	}
	// Asked again: a new run, which finishes and is kept for the next request.
	d := c.join(context.Background(), key, digest, run)
	close(release)
	if n, err := d.wait(); n != 42 || err != nil {
		t.Fatalf("wait: %d %v", n, err)
	}
	if e := c.join(context.Background(), key, digest, run); e.known == nil || *e.known != 42 {
		t.Fatalf("a finished count is not kept: %+v", e)
	}
	if n := runs.Load(); n != 2 {
		t.Fatalf("%d runs, want 2 (one shared, one after all left)", n)
	}
	// A request that gives up waiting gets its context's error, not a count.
	ctx, cancel := context.WithCancel(context.Background())
	other := CountKey{Dataset: key.Dataset, Version: 2}
	blocked := c.join(ctx, other, countDigest(other, "SELECT 1", nil), func(ctx context.Context) (int64, bool, error) {
		<-ctx.Done()
		return 0, false, ctx.Err()
	})
	cancel()
	if _, err := blocked.wait(); err == nil {
		t.Fatal("a cancelled wait answered a count")
	}
}
