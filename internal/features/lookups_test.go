package features

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// lookup reads feature id through r and returns its encoding, "" when there is none.
func lookup(ctx context.Context, r Reader, tbl Table, id string, g *Guard) (string, error) {
	cur, err := r.Items(ctx, tbl, ItemsQuery{ID: &id, Limit: 1, Guard: g})
	if err != nil {
		return "", err
	}
	defer cur.Close()
	body, _, err := cur.Append(nil)
	return string(body), err
}

// gathered waits until the open batch of l's only lane holds n lookups.
func gathered(t *testing.T, l *Lookups, n int) {
	t.Helper()
	for start := time.Now(); time.Since(start) < 5*time.Second; time.Sleep(time.Millisecond) {
		l.mu.Lock()
		got := 0
		for _, lane := range l.lanes {
			if lane.open != nil {
				got = len(lane.open.ints) + len(lane.open.texts)
			}
		}
		l.mu.Unlock()
		if got == n {
			return
		}
	}
	t.Fatalf("the lookups did not gather into one batch of %d", n)
}

// Lookups that wait for the connection together go as one statement, and each gets its own
// feature as a read of its own would: found, missing, asked twice, or not the canonical text of
// an integer key; by integer and by text keys.
func TestLookupsShareAStatement(t *testing.T) {
	ctx, plain, pts := onePool(t)
	if _, err := plain.Pool.Exec(ctx, `CREATE TABLE data.stations (code text PRIMARY KEY, label text, geom geometry(Point, 3857));
		INSERT INTO data.stations VALUES ('GVA', 'Geneva', ST_SetSRID(ST_MakePoint(683500, 5811000), 3857)), ('ZRH', 'Zurich', NULL)`); err != nil {
		t.Fatal(err)
	}
	stations, err := plain.Describe(ctx, "data", "stations", "code", "geom")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tbl     Table
		ids     []string
		found   string // one of ids that exists
		missing string // one that does not
		apart   string // one read apart
	}{
		{pts, []string{"1", "17", "999", "17", "5000", "0", "-3", "1000"}, "17", "5000", "007"},
		{stations, []string{"GVA", "BER", "ZRH", "GVA", "gva"}, "ZRH", "BER", ""},
	} {
		t.Run(c.tbl.Name, func(t *testing.T) {
			batched := Reader{Pool: plain.Pool, Lookups: &Lookups{}}
			want := map[string]string{}
			for _, id := range append(c.ids, c.apart) {
				body, err := lookup(ctx, plain, c.tbl, id, nil)
				if err != nil {
					t.Fatal(err)
				}
				want[id] = body
			}
			if want[c.found] == "" || want[c.missing] != "" {
				t.Fatalf("fixture: %s → %q, %s → %q", c.found, want[c.found], c.missing, want[c.missing])
			}

			held, err := plain.Pool.Acquire(ctx) // the pool's only connection: every lookup waits
			if err != nil {
				t.Fatal(err)
			}
			got := make([]string, len(c.ids))
			errs := make([]error, len(c.ids))
			var wg sync.WaitGroup
			for i, id := range c.ids {
				wg.Add(1)
				go func() {
					defer wg.Done()
					got[i], errs[i] = lookup(ctx, batched, c.tbl, id, nil)
				}()
			}
			gathered(t, batched.Lookups, len(c.ids))
			held.Release()
			wg.Wait()
			for i, id := range c.ids {
				if errs[i] != nil || got[i] != want[id] {
					t.Errorf("%s: %q (%v), want %q", id, got[i], errs[i], want[id])
				}
			}
			if c.apart != "" {
				// Not an integer's canonical text: read apart, matching nothing, as its text would not.
				if body, err := lookup(ctx, batched, c.tbl, c.apart, nil); err != nil || body != "" {
					t.Errorf("%s: %q %v, want none", c.apart, body, err)
				}
			}
			batched.Lookups.mu.Lock()
			defer batched.Lookups.mu.Unlock()
			if len(batched.Lookups.lanes) != 0 {
				t.Errorf("%d lanes left after every lookup ended", len(batched.Lookups.lanes))
			}
		})
	}
}

// A shared statement is under its lookups' guard: a row for each key found, one row of NULLs
// when none is, and no row at all, for every lookup, when the guard does not hold.
func TestLookupsKeepTheGuard(t *testing.T) {
	ctx, plain, tbl := onePool(t)
	kept := tbl.Kept() // the later cases bind their guard to the statement the first wrote
	var g Guard
	err := plain.Pool.QueryRow(ctx, `INSERT INTO catalog.datasets (table_schema, table_name, title, visibility, record_status)
		VALUES ('data', 'pts', 'pts', 'public', 'published') RETURNING id, xmin::text::bigint`).Scan(&g.Dataset, &g.Version)
	if err != nil {
		t.Fatal(err)
	}
	stale := g
	stale.Version++
	for _, c := range []struct {
		name  string
		guard Guard
		ids   []string
		stale bool
	}{
		{"current", g, []string{"3", "4000", "8"}, false},
		{"current, none found", g, []string{"4000", "5000"}, false},
		{"changed since", stale, []string{"3", "4000", "8"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			batched := Reader{Pool: plain.Pool, Lookups: &Lookups{}}
			held, err := plain.Pool.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			ids := c.ids
			got := make([]string, len(ids))
			errs := make([]error, len(ids))
			var wg sync.WaitGroup
			for i, id := range ids {
				wg.Add(1)
				go func() {
					defer wg.Done()
					got[i], errs[i] = lookup(ctx, batched, kept, id, &c.guard)
				}()
			}
			gathered(t, batched.Lookups, len(ids))
			held.Release()
			wg.Wait()
			for i, id := range ids {
				want, _ := lookup(ctx, plain, tbl, id, nil)
				switch {
				case c.stale && !errors.Is(errs[i], ErrStale):
					t.Errorf("%s: %q (%v), want ErrStale", id, got[i], errs[i])
				case !c.stale && (errs[i] != nil || got[i] != want):
					t.Errorf("%s: %q (%v), want %q", id, got[i], errs[i], want)
				}
			}
		})
	}
}

// A lookup that goes away leaves the others their answer, even the one that runs the statement;
// when all have gone, the statement is given up, and nobody waits for the connection any longer.
func TestLookupsLeaveTogether(t *testing.T) {
	ctx, plain, tbl := onePool(t)
	batched := Reader{Pool: plain.Pool, Lookups: &Lookups{}}
	want, err := lookup(ctx, plain, tbl, "42", nil)
	if err != nil || want == "" {
		t.Fatalf("fixture: %q %v", want, err)
	}

	held, err := plain.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first, leave := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var firstErr, otherErr error
	var other string
	wg.Add(2)
	go func() {
		defer wg.Done()
		_, firstErr = lookup(first, batched, tbl, "7", nil)
	}()
	gathered(t, batched.Lookups, 1)
	go func() {
		defer wg.Done()
		other, otherErr = lookup(ctx, batched, tbl, "42", nil)
	}()
	gathered(t, batched.Lookups, 2)
	leave()
	time.Sleep(20 * time.Millisecond) // had leaving cancelled the statement, it would by now
	held.Release()
	wg.Wait()
	if otherErr != nil || other != want {
		t.Errorf("the lookup that stayed: %q (%v), want %q", other, otherErr, want)
	}
	if firstErr != nil && !errors.Is(firstErr, context.Canceled) {
		t.Errorf("the lookup that left: %v", firstErr) // its answer or its cancellation, nothing else
	}

	held, err = plain.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	errs := make(chan error, 3)
	var cancels []context.CancelFunc
	for i := range 3 {
		c, cancel := context.WithCancel(ctx)
		cancels = append(cancels, cancel)
		go func() {
			_, err := lookup(c, batched, tbl, strconv.Itoa(i+1), nil)
			errs <- err
		}()
		gathered(t, batched.Lookups, i+1)
	}
	for _, cancel := range cancels {
		cancel()
	}
	for range 3 {
		select {
		case err := <-errs:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("a lookup given up: %v, want context.Canceled", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("lookups given up still wait for the connection")
		}
	}
}

// While a statement of a table runs, lookups of it gather behind it even when the pool has
// connections to spare: a quarter of the pool runs one key's statements (here one of four).
func TestLookupsGatherBehindARunningStatement(t *testing.T) {
	ctx, plain, tbl := onePool(t)
	cfg := plain.Pool.Config()
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	batched := Reader{Pool: pool, Lookups: &Lookups{}}

	lock, err := plain.Pool.Begin(ctx) // holds the statement that comes first inside PostgreSQL
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback(ctx)
	if _, err := lock.Exec(ctx, "LOCK TABLE data.pts IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	got := make([]string, 6)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], _ = lookup(ctx, batched, tbl, strconv.Itoa(i+1), nil)
		}()
		if i == 0 {
			waitFor(t, func() bool { return lockWaiters(ctx, pool) == 1 })
		}
	}
	gathered(t, batched.Lookups, len(got)-1)
	if n := lockWaiters(ctx, pool); n != 1 {
		t.Errorf("%d statements wait for the table, want 1", n)
	}
	if err := lock.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i, body := range got {
		if want, _ := lookup(ctx, plain, tbl, strconv.Itoa(i+1), nil); body != want || want == "" {
			t.Errorf("%d: %q, want %q", i+1, body, want)
		}
	}
}

// lockWaiters counts the sessions of the database waiting for a lock.
func lockWaiters(ctx context.Context, pool *pgxpool.Pool) int {
	var n int
	_ = pool.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'").Scan(&n)
	return n
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for start := time.Now(); time.Since(start) < 5*time.Second; time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("timed out")
}

// A kept table writes a lookup statement once per shape of query and binds each lookup's own
// values to it; shapes come from request parameters, so only the first few are kept.
func TestKeptTablesRememberLookupStatements(t *testing.T) {
	ctx, plain, tbl := onePool(t)
	kept := tbl.Kept()
	batched := Reader{Pool: plain.Pool, Lookups: &Lookups{}}
	read := func(r Reader, tb Table, q ItemsQuery) string {
		t.Helper()
		cur, err := r.Items(ctx, tb, q)
		if err != nil {
			t.Fatal(err)
		}
		defer cur.Close()
		body, _, err := cur.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		return string(body)
	}
	var shapes []ItemsQuery
	for _, props := range [][]string{nil, {}, {"n"}} {
		shapes = append(shapes, ItemsQuery{Properties: props})
	}
	for _, srid := range []int{4269, 4258, 4230, 4277, 4167, 4283, 4612, 4617, 4618, 4619, 4326, 3857, 3395, 4087, 6933, 4674, 4686, 4148, 4019, 4020} {
		shapes = append(shapes, ItemsQuery{StorageSRID: 4326, OutSRID: srid})
	}
	for _, id := range []string{"5", "6"} { // the second time round from the statements kept
		for _, q := range shapes {
			q.ID, q.Limit = &id, 1
			if got, want := read(batched, kept, q), read(plain, tbl, q); got != want || want == "" {
				t.Errorf("%s %v %d: %q, want %q", id, q.Properties, q.OutSRID, got, want)
			}
		}
	}
	n := 0
	kept.memo.lookups.Range(func(any, any) bool { n++; return true })
	if n != maxStatements {
		t.Errorf("%d statements kept, want %d", n, maxStatements)
	}
}

// A table kept under load is missed by many lookups of one shape at once, each writing the same
// statement: they take one place among the shapes kept, not one each.
func TestKeptStatementsCountShapesNotWrites(t *testing.T) {
	kept := Table{}.Kept()
	for range 20 {
		kept.memo.remember(lookupShape{all: true}, lookupStatement{sql: "a"})
	}
	for srid := range maxStatements + 5 {
		kept.memo.remember(lookupShape{all: true, out: 1000 + srid}, lookupStatement{sql: "b"})
	}
	n := 0
	kept.memo.lookups.Range(func(any, any) bool { n++; return true })
	if n != maxStatements {
		t.Errorf("%d shapes kept, want %d", n, maxStatements)
	}
	if _, ok := kept.memo.recall(lookupShape{all: true, out: 1000}); !ok {
		t.Error("the second shape was not kept")
	}
}
