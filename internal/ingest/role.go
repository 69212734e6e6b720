package ingest

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"meridian/internal/db"
)

// DefaultImportRole is the role Meridian creates for ogr2ogr when it may create roles itself.
const DefaultImportRole = "meridian_ingest"

// ImportRole is the database role ogr2ogr writes imported tables as. It may create tables in the
// data schema and nothing else: no catalog, no river, no other dataset's table, no superuser or
// file-reading rights. The server is a member of it, so it can take each finished table over.
type ImportRole struct {
	Name     string
	conn     string // GDAL "PG:" connection string, without the password
	password string // given to ogr2ogr as PGPASSWORD only
}

// ProvisionImportRole returns the import role. With url (INGEST_DATABASE_URL) the operator made
// the role: it is checked, never changed. Without it the server creates or repairs
// DefaultImportRole, with a password derived from secret, which needs CREATEROLE (make run and
// the test clusters connect as a superuser); a server that cannot is told what to set.
func ProvisionImportRole(ctx context.Context, pool *pgxpool.Pool, url, secret string) (ImportRole, error) {
	if url != "" {
		cfg, err := pgx.ParseConfig(url)
		if err != nil {
			return ImportRole{}, fmt.Errorf("INGEST_DATABASE_URL: %w", err)
		}
		r := ImportRole{Name: cfg.User, conn: ogrConnection(cfg.Host, cfg.Port, cfg.Database, cfg.User), password: cfg.Password}
		if err := checkImportRole(ctx, pool, r.Name); err != nil {
			return ImportRole{}, fmt.Errorf("INGEST_DATABASE_URL: %w", err)
		}
		return r, nil
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte("meridian import role password"))
	c := pool.Config().ConnConfig
	r := ImportRole{Name: DefaultImportRole, password: hex.EncodeToString(mac.Sum(nil)),
		conn: ogrConnection(c.Host, c.Port, c.Database, DefaultImportRole)}
	if err := createImportRole(ctx, pool, r); err != nil {
		return ImportRole{}, fmt.Errorf("creating the import role %s needs CREATEROLE; without it, create the role yourself "+
			"(README, \"The import role\") and set INGEST_DATABASE_URL: %w", r.Name, err)
	}
	return r, checkImportRole(ctx, pool, r.Name)
}

// createImportRole creates the role or repairs its password, and grants it the data schema.
func createImportRole(ctx context.Context, pool *pgxpool.Pool, r ImportRole) error {
	ident := pgx.Identifier{r.Name}.Sanitize()
	return db.EnsureLoginRole(ctx, pool, r.Name, "NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS NOINHERIT",
		r.password, "GRANT USAGE, CREATE ON SCHEMA data TO "+ident+"; GRANT "+ident+" TO CURRENT_USER")
}

// checkImportRole refuses to run imports as a role that could do more than create tables in
// the data schema, or that the server cannot take tables over from.
func checkImportRole(ctx context.Context, pool *pgxpool.Pool, role string) error {
	var super, wide, catalog, river, member, create, files bool
	err := pool.QueryRow(ctx, `SELECT r.rolsuper, r.rolcreaterole OR r.rolcreatedb OR r.rolreplication OR r.rolbypassrls,
			has_schema_privilege(r.oid, 'catalog', 'USAGE'),
			coalesce(has_schema_privilege(r.oid, (SELECT oid FROM pg_namespace WHERE nspname = 'river'), 'USAGE'), false),
			pg_has_role(current_user, r.oid, 'USAGE'), has_schema_privilege(r.oid, 'data', 'CREATE'),
			pg_has_role(r.oid, 'pg_read_server_files', 'USAGE') OR pg_has_role(r.oid, 'pg_write_server_files', 'USAGE')
				OR pg_has_role(r.oid, 'pg_execute_server_program', 'USAGE')
		FROM pg_roles r WHERE r.rolname = $1`, role).Scan(&super, &wide, &catalog, &river, &member, &create, &files)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("the import role %q does not exist", role)
	case err != nil:
		return err
	case super || wide || files:
		return fmt.Errorf("the import role %q has more rights than creating tables (superuser, CREATEROLE/CREATEDB, or server file access)", role)
	case catalog || river:
		return fmt.Errorf("the import role %q may use the catalog or river schema; revoke that", role)
	case !create:
		return fmt.Errorf("the import role %q may not create tables in schema data (GRANT USAGE, CREATE ON SCHEMA data)", role)
	case !member:
		return fmt.Errorf("the server's role is not a member of the import role %q (GRANT %s TO the server's role)", role, role)
	}
	return nil
}

// ogrConnection is a GDAL "PG:" connection string; values are quoted the libpq way.
func ogrConnection(host string, port uint16, database, user string) string {
	q := func(v string) string {
		return "'" + strings.ReplaceAll(strings.ReplaceAll(v, `\`, `\\`), `'`, `\'`) + "'"
	}
	return fmt.Sprintf("PG:host=%s port=%d dbname=%s user=%s", q(host), port, q(database), q(user))
}
