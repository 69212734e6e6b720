package db_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

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
