package backup

import (
	"slices"
	"strings"
	"testing"
)

// pg_dump and pg_restore take libpq's URL: pgx's pool_ parameters would make them refuse it, and
// the password must not show on their command line.
func TestLibpqConn(t *testing.T) {
	conn, env, err := libpqConn("postgres://meridian:s3cret@db:5432/meridian?sslmode=disable&pool_max_conns=40")
	if err != nil {
		t.Fatal(err)
	}
	if conn != "postgres://meridian@db:5432/meridian?sslmode=disable" || !slices.Contains(env, "PGPASSWORD=s3cret") {
		t.Fatalf("conn %q, PGPASSWORD set: %v", conn, slices.Contains(env, "PGPASSWORD=s3cret"))
	}
	if _, _, err := libpqConn("host=db dbname=meridian"); err == nil || !strings.Contains(err.Error(), "postgres://") {
		t.Fatalf("a keyword/value string: %v", err)
	}
}

// A restore refuses a backup of a newer schema: the binary must know its migrations.
func TestLatestMigration(t *testing.T) {
	if v, err := latestMigration(); err != nil || v < 125 {
		t.Fatalf("latest migration %d, %v", v, err)
	}
}
