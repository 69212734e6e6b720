// Package sqlquery runs the read-only SQL of POST /query/. Its safety comes from PostgreSQL's
// privileges, not from reading the SQL: the statement runs in a READ ONLY transaction, on a pool
// of its own, as a login role that owns nothing, is a member of nothing (so SET ROLE and
// set_config('role') lead nowhere) and may use only the schema data, where it may read only the
// tables of datasets prepared for it, whose row security shows rows only to the request they were
// granted to (migration 52), and the sandbox schema's two functions (migration 29).
package sqlquery

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"meridian/internal/db"
)

// OpenSandbox makes sure the sandbox role of this database exists with exactly its rights
// (which needs CREATEROLE, as the import role does) and opens its pool. The role is named after
// the database (meridian_sql_<hash>), since roles are shared by the cluster's databases, and its
// random password is kept in the database, so every server of it logs in alike.
func OpenSandbox(ctx context.Context, app *pgxpool.Pool, maxConns int32) (*pgxpool.Pool, string, error) {
	random := make([]byte, 24)
	if _, err := rand.Read(random); err != nil {
		return nil, "", err
	}
	var role, password string
	err := app.QueryRow(ctx, `INSERT INTO catalog.sql_sandbox_login (role, password)
		VALUES ('meridian_sql_' || left(encode(sha256(convert_to(current_database(), 'UTF8')), 'hex'), 12), $1)
		ON CONFLICT (only_one) DO UPDATE SET role = catalog.sql_sandbox_login.role
		RETURNING role, password`, hex.EncodeToString(random)).Scan(&role, &password)
	if err != nil {
		return nil, "", err
	}
	ident := pgx.Identifier{role}.Sanitize()
	// Every session of the role is read-only from its first statement, and cannot idle in a
	// transaction holding locks.
	err = db.EnsureLoginRole(ctx, app, role, "NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS NOINHERIT CONNECTION LIMIT 20",
		password, "ALTER ROLE "+ident+" SET default_transaction_read_only = on; "+
			"ALTER ROLE "+ident+" SET idle_in_transaction_session_timeout = '30s'; "+
			"GRANT USAGE ON SCHEMA sql_sandbox TO "+ident+"; "+
			"GRANT USAGE ON SCHEMA data TO "+ident+"; "+
			"GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA sql_sandbox TO "+ident)
	if err != nil {
		return nil, "", fmt.Errorf("creating the SQL sandbox role %s needs CREATEROLE: %w", role, err)
	}
	cfg := app.Config().Copy()
	cfg.ConnConfig.User, cfg.ConnConfig.Password = role, password
	cfg.ConnConfig.RuntimeParams["application_name"] = "meridian-sql"
	cfg.MaxConns, cfg.MinConns = maxConns, 0
	cfg.AfterConnect = nil
	// Statements described at execution, never prepared: the rows of FETCH are those of a cursor
	// opened earlier in the same pipeline (sqlquery.execute).
	cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeExec
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	return pool, role, err
}

// Unconfined lists what the sandbox role may still call or read of what migrations 33 and 53
// take from PUBLIC only when they run as a superuser: functions reaching other sessions
// (advisory locks, backend signals, pg_notify), the value amplifiers its shadows bound, large
// objects, and the statistics of tables. Empty when the sandbox is confined.
func Unconfined(ctx context.Context, app *pgxpool.Pool, role string) (string, error) {
	var fns string
	err := app.QueryRow(ctx, `SELECT coalesce(string_agg(name, ', ' ORDER BY name), '') FROM (
			SELECT DISTINCT p.proname::text AS name FROM catalog.sandbox_denied_functions() f JOIN pg_catalog.pg_proc p ON p.oid = f
			WHERE has_function_privilege($1, f, 'EXECUTE')
			UNION SELECT v::text FROM catalog.sandbox_denied_views() v WHERE has_table_privilege($1, v, 'SELECT')) x`, role).Scan(&fns)
	return fns, err
}

// LimitValues writes the largest value or row a sandbox query may build or return where the
// database's functions read it (migration 53), when it differs.
func LimitValues(ctx context.Context, app *pgxpool.Pool, bytes int64) error {
	_, err := app.Exec(ctx, `UPDATE catalog.sql_sandbox_limits SET max_value_bytes = $1 WHERE max_value_bytes <> $1`, bytes)
	return err
}
