package ingest

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"meridian/internal/testdb"
)

// The role ogr2ogr writes as can create tables in the data schema and do nothing else that
// matters: each statement below is what a GDAL tricked by a file would try.
func TestImportRoleIsConfined(t *testing.T) {
	pool := testdb.New(t)
	ctx := context.Background()
	role, err := ProvisionImportRole(ctx, pool, "", "a-server-secret-of-at-least-32-chars")
	if err != nil {
		t.Fatal(err)
	}
	// Provisioning twice (every start, every replica) changes nothing.
	if _, err := ProvisionImportRole(ctx, pool, "", "a-server-secret-of-at-least-32-chars"); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "CREATE TABLE data.owned_by_server (secret text); INSERT INTO data.owned_by_server VALUES ('x')"); err != nil {
		t.Fatal(err)
	}
	cfg := pool.Config().ConnConfig
	u := url.URL{Scheme: "postgres", User: url.UserPassword(role.Name, role.password), Host: cfg.Host + ":" + strconv.Itoa(int(cfg.Port)), Path: "/" + cfg.Database,
		RawQuery: "sslmode=disable"}
	conn, err := pgx.Connect(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE TABLE data.imported (a int)"); err != nil {
		t.Fatalf("the import role cannot create its table: %v", err)
	}
	for _, stmt := range []string{
		"SELECT count(*) FROM catalog.users",
		"UPDATE catalog.users SET role = 'admin'",
		"SELECT count(*) FROM river.river_job",
		"SELECT * FROM data.owned_by_server",
		"DROP TABLE data.owned_by_server",
		"CREATE TABLE public.planted (a int)",
		"CREATE TABLE catalog.planted (a int)",
		"SELECT pg_read_file('/etc/hostname')",
		"COPY (SELECT 1) TO PROGRAM 'true'",
		"CREATE ROLE planted SUPERUSER",
		"SET ROLE postgres",
	} {
		_, err := conn.Exec(ctx, stmt)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "42501" && pe.Code != "3F000" {
			t.Errorf("%s: %v, want permission denied", stmt, err)
		}
	}
	// The server takes a finished table over, as finalize does.
	if _, err := pool.Exec(ctx, "ALTER TABLE data.imported OWNER TO CURRENT_USER"); err != nil {
		t.Fatalf("the server cannot take the table over: %v", err)
	}
	if _, err := conn.Exec(ctx, "INSERT INTO data.imported VALUES (1)"); err == nil {
		t.Error("the import role can still write a table the server took over")
	}
}

// A role the operator names must not be able to do more than create tables.
func TestImportRoleRefusesWideRoles(t *testing.T) {
	pool := testdb.New(t)
	cfg := pool.Config().ConnConfig
	super := "postgres://" + cfg.User + "@" + cfg.Host + ":" + strconv.Itoa(int(cfg.Port)) + "/" + cfg.Database
	if _, err := ProvisionImportRole(context.Background(), pool, super, ""); err == nil {
		t.Fatalf("a superuser (%s) was accepted as the import role", cfg.User)
	}
}
