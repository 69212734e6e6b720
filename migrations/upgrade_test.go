package migrations_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/golang-migrate/migrate/v4"
	_ "github.com/golang-migrate/migrate/v4/database/pgx/v5"
	"github.com/golang-migrate/migrate/v4/source/iofs"
	"github.com/jackc/pgx/v5"

	"meridian/migrations"
)

// freshDatabase makes an empty database on the test cluster, dropped when the test ends.
func freshDatabase(t *testing.T) (conn *pgx.Conn, migrateURL string) {
	t.Helper()
	admin := os.Getenv("TEST_DATABASE_URL")
	if admin == "" {
		t.Skip("TEST_DATABASE_URL not set: run through `make test` (it starts a PostGIS cluster)")
	}
	ctx := context.Background()
	ac, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "mig_" + hex.EncodeToString(b)
	if _, err := ac.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(admin)
	u.Path = "/" + name
	conn, err = pgx.Connect(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close(ctx)
		_, _ = ac.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
		ac.Close(ctx)
	})
	u.Scheme = "pgx5"
	return conn, u.String()
}

// TestCollectionNamesPerOwnerMigratesExistingData: 000014 turns the global collection name index
// into one per owner. A database that somehow holds names one owner has twice (the old index was
// dropped by hand, say) must still migrate: the later duplicates are renamed, deterministically.
func TestCollectionNamesPerOwnerMigratesExistingData(t *testing.T) {
	conn, dbURL := freshDatabase(t)
	src, err := iofs.New(migrations.FS, ".")
	if err != nil {
		t.Fatal(err)
	}
	m, err := migrate.NewWithSourceInstance("iofs", src, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Migrate(12); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	setup := `
DROP INDEX catalog.collections_name_lower_key;
INSERT INTO catalog.users (id, username, email) VALUES
    ('00000000-0000-0000-0000-00000000000a', 'ann', 'ann@example.org'),
    ('00000000-0000-0000-0000-00000000000b', 'bob', 'bob@example.org');
INSERT INTO catalog.collections (id, name, created_by, created_at) VALUES
    ('10000000-0000-0000-0000-000000000001', 'Roads', '00000000-0000-0000-0000-00000000000a', '2026-01-01'),
    ('10000000-0000-0000-0000-000000000002', 'ROADS', '00000000-0000-0000-0000-00000000000a', '2026-01-02'),
    ('10000000-0000-0000-0000-000000000003', 'roads', '00000000-0000-0000-0000-00000000000a', '2026-01-02'),
    ('10000000-0000-0000-0000-000000000004', 'Roads', '00000000-0000-0000-0000-00000000000b', '2026-01-03'),
    ('10000000-0000-0000-0000-000000000005', 'Roads', NULL, '2026-01-04'),
    ('10000000-0000-0000-0000-000000000006', 'Roads', NULL, '2026-01-05'),
    ('10000000-0000-0000-0000-000000000007', '` + strings.Repeat("x", 255) + `', '00000000-0000-0000-0000-00000000000b', '2026-01-01'),
    ('10000000-0000-0000-0000-000000000008', '` + strings.Repeat("X", 255) + `', '00000000-0000-0000-0000-00000000000b', '2026-01-02');`
	if _, err := conn.Exec(ctx, setup); err != nil {
		t.Fatal(err)
	}
	if err := m.Up(); err != nil {
		t.Fatalf("migrating a database with duplicate names: %v", err)
	}
	names := map[string]string{}
	rows, _ := conn.Query(ctx, "SELECT id::text, name FROM catalog.collections")
	for rows.Next() {
		var id, name string
		if err := rows.Scan(&id, &name); err != nil {
			t.Fatal(err)
		}
		names[id] = name
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		// The oldest keeps its name; the others take their id, which no other name holds.
		"10000000-0000-0000-0000-000000000001": "Roads",
		"10000000-0000-0000-0000-000000000002": "ROADS (10000000-0000-0000-0000-000000000002)",
		"10000000-0000-0000-0000-000000000003": "roads (10000000-0000-0000-0000-000000000003)",
		"10000000-0000-0000-0000-000000000004": "Roads", // another owner's
		"10000000-0000-0000-0000-000000000005": "Roads", // ownerless collections do not conflict
		"10000000-0000-0000-0000-000000000006": "Roads",
		"10000000-0000-0000-0000-000000000007": strings.Repeat("x", 255),
		"10000000-0000-0000-0000-000000000008": strings.Repeat("X", 216) + " (10000000-0000-0000-0000-000000000008)",
	}
	for id, name := range want {
		if names[id] != name {
			t.Errorf("collection %s: name %q, want %q", id, names[id], name)
		}
	}
	// The index holds from now on, per owner and without regard to case.
	_, err = conn.Exec(ctx, `INSERT INTO catalog.collections (name, created_by) VALUES ('rOADS', '00000000-0000-0000-0000-00000000000b')`)
	if err == nil || !strings.Contains(err.Error(), "23505") {
		t.Fatalf("a second name of one owner: %v, want a unique violation", err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO catalog.collections (name, created_by) VALUES ('Rivers', '00000000-0000-0000-0000-00000000000a'),
		('Rivers', '00000000-0000-0000-0000-00000000000b')`); err != nil {
		t.Fatalf("the same name for two owners: %v", err)
	}
}

// TestDottedHistoryActionsMigrateExistingData: 000050 renames the history's actions to their
// dotted names, renumbers versions so that only data versions count (the others carry the data
// version they saw) and sets current_version to the last; the audit log's sql.query becomes
// query.execute.
func TestDottedHistoryActionsMigrateExistingData(t *testing.T) {
	conn, dbURL := freshDatabase(t)
	src, err := iofs.New(migrations.FS, ".")
	if err != nil {
		t.Fatal(err)
	}
	m, err := migrate.NewWithSourceInstance("iofs", src, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Migrate(36); err != nil { // the last migration before 50
		t.Fatal(err)
	}
	ctx := context.Background()
	const ds = "20000000-0000-0000-0000-000000000001"
	setup := `
INSERT INTO catalog.datasets (id, table_name, title, current_version) VALUES ('` + ds + `', 't', 'T', 7);
INSERT INTO catalog.dataset_history (dataset_id, version, action) VALUES
    ('` + ds + `', 1, 'create'), ('` + ds + `', 2, 'update_metadata'), ('` + ds + `', 3, 'status'),
    ('` + ds + `', 4, 'feature_created'), ('` + ds + `', 5, 'keyword_added'), ('` + ds + `', 6, 'column_added'),
    ('` + ds + `', 7, 'feature_updated');
INSERT INTO catalog.audit_log (actor_display, action, resource_type, resource_id, outcome, ip, user_agent, detail)
VALUES ('ann', 'sql.query', 'query', 'ds_x', 'success', '', '', '{}');`
	if _, err := conn.Exec(ctx, setup); err != nil {
		t.Fatal(err)
	}
	if err := m.Up(); err != nil {
		t.Fatalf("migrating: %v", err)
	}
	rows, err := conn.Query(ctx, "SELECT action || ':' || version FROM catalog.dataset_history WHERE dataset_id = $1 ORDER BY id", ds)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	want := "dataset.create:1 metadata.edit:1 status.change:1 feature.insert:2 keyword.add:2 column.add:3 feature.update:4"
	if strings.Join(got, " ") != want {
		t.Fatalf("history: %v\nwant %s", got, want)
	}
	var version int
	var action string
	if err := conn.QueryRow(ctx, "SELECT current_version FROM catalog.datasets WHERE id = $1", ds).Scan(&version); err != nil || version != 4 {
		t.Fatalf("current_version %d (%v), want 4", version, err)
	}
	if err := conn.QueryRow(ctx, "SELECT action FROM catalog.audit_log").Scan(&action); err != nil || action != "query.execute" {
		t.Fatalf("audit action %q (%v)", action, err)
	}
}
