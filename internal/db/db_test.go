package db_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"meridian/internal/db"
	"meridian/internal/testdb"
)

// Migrated by a superuser (as every test database is), the functions the server calls are taken
// from PUBLIC (migration 33): the role that migrated may call them, a role that neither migrated
// nor owns the database may not, and the server names them at start instead of failing on its
// first write.
func TestMissingFunctions(t *testing.T) {
	pool := testdb.New(t)
	ctx := context.Background()
	if missing, err := db.MissingFunctions(ctx, pool); err != nil || missing != "" {
		t.Fatalf("the migrating role may not call %q (%v)", missing, err)
	}
	role := "t_stranger_" + pool.Config().ConnConfig.Database
	if _, err := pool.Exec(ctx, "CREATE ROLE "+pgx.Identifier{role}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = pool.Exec(context.Background(), "DROP ROLE "+pgx.Identifier{role}.Sanitize()) }()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_, _ = conn.Exec(context.Background(), "RESET ROLE")
		conn.Release()
	}()
	if _, err := conn.Exec(ctx, "SET ROLE "+pgx.Identifier{role}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	missing, err := db.MissingFunctions(ctx, conn.Conn())
	want := "pg_advisory_lock(bigint), pg_advisory_unlock(bigint), pg_advisory_xact_lock(bigint), pg_notify(text,text), pg_try_advisory_xact_lock(bigint)"
	if err != nil || missing != want {
		t.Fatalf("missing %q (%v), want %q", missing, err, want)
	}
}

// The search pool's statements run on generic plans: a prepared statement is planned once per
// connection, not at every execution (PostgreSQL keeps planning one whose custom plan looks
// cheaper, as the request pool's statement here shows).
func TestSearchPoolPlansOnce(t *testing.T) {
	pool := testdb.New(t)
	ctx := context.Background()
	search, err := db.OpenSearch(ctx, pool.Config().ConnString(), 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer search.Close()
	const query = `SELECT count(*) FROM catalog.datasets WHERE $1::uuid IS NULL OR created_by = $1`
	plans := func(p *pgxpool.Pool) (generic, custom int64) {
		t.Helper()
		conn, err := p.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Release()
		for range 8 {
			var n int64
			if err := conn.QueryRow(ctx, query, nil).Scan(&n); err != nil {
				t.Fatal(err)
			}
		}
		if err := conn.QueryRow(ctx, `SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = $1`, query).
			Scan(&generic, &custom); err != nil {
			t.Fatal(err)
		}
		return generic, custom
	}
	if generic, custom := plans(search); custom != 0 || generic < 8 {
		t.Errorf("search pool: %d generic and %d custom plans, want only generic", generic, custom)
	}
	if generic, custom := plans(pool); custom < 5 {
		t.Logf("request pool: %d generic and %d custom plans", generic, custom)
		t.Errorf("the request pool planned %d times for the parameters: the comparison shows nothing", custom)
	}
}
