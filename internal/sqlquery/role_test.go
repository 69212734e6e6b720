package sqlquery

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"meridian/internal/testdb"
)

// Migrated by a superuser, the sandbox role reaches no other session; a privilege given back
// (as by migrations run without one) is named, so the server can warn at start.
func TestSandboxIsConfined(t *testing.T) {
	app := testdb.New(t)
	ctx := context.Background()
	pool, role, err := OpenSandbox(ctx, app, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if fns, err := Unconfined(ctx, app, role); err != nil || fns != "" {
		t.Fatalf("the sandbox may call %q (%v)", fns, err)
	}
	if _, err := app.Exec(ctx, "GRANT EXECUTE ON FUNCTION pg_advisory_lock(bigint), pg_terminate_backend(integer, bigint) TO "+pgx.Identifier{role}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	if fns, err := Unconfined(ctx, app, role); err != nil || fns != "pg_advisory_lock, pg_terminate_backend" {
		t.Fatalf("unconfined: %q (%v)", fns, err)
	}
}
