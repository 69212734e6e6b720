// Package testdb gives store and integration tests a fresh, migrated PostgreSQL database on the
// throwaway cluster `make test` starts (TEST_DATABASE_URL), dropped when the test ends.
package testdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"meridian/internal/db"
)

// New returns a pool on a new database with every migration applied. Without TEST_DATABASE_URL
// the test is skipped with a message saying how to run it (`make test` always sets it).
func New(tb testing.TB) *pgxpool.Pool {
	tb.Helper()
	admin := os.Getenv("TEST_DATABASE_URL")
	if admin == "" {
		tb.Skip("TEST_DATABASE_URL not set: run through `make test` (it starts a PostGIS cluster)")
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		tb.Fatal(err)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "t_" + hex.EncodeToString(b)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		tb.Fatal(err)
	}
	u, _ := url.Parse(admin)
	u.Path = "/" + name
	pool, err := db.Open(ctx, u.String(), 8, 0)
	if err != nil {
		tb.Fatal(err)
	}
	if err := db.Migrate(pool); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		pool.Close()
		_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
		_ = conn.Close(ctx)
	})
	return pool
}
