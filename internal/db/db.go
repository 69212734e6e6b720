// Package db opens the PostgreSQL pool and runs the schema migrations.
package db

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/golang-migrate/migrate/v4"
	migratepgx "github.com/golang-migrate/migrate/v4/database/pgx/v5"
	"github.com/golang-migrate/migrate/v4/source/iofs"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"meridian/internal/apperr"
	"meridian/migrations"
)

// Open creates a connection pool. It does not wait for the database: a server that starts while
// PostgreSQL is down answers 503 until it is reachable.
//
// statementTimeout, when positive, is set as every connection's statement_timeout, so PostgreSQL
// itself cancels any statement that runs longer, whether it comes from sqlc, dynamic SQL or a
// library, and the connection stays usable for the next one. Zero leaves the server's default
// (none), for pools of background work that is bounded otherwise (see OpenBackground).
func Open(ctx context.Context, url string, maxConns int32, statementTimeout time.Duration) (*pgxpool.Pool, error) {
	return open(ctx, url, maxConns, statementTimeout, "meridian", nil)
}

// CountConns is the size of the pool OpenCounts makes for a request pool of requestConns: a
// quarter of it, at least one.
func CountConns(requestConns int32) int32 { return max(1, requestConns/4) }

// OpenSearch creates the pool the catalog's searches run on: apart from the request pool because
// its statements use generic plans. PostgreSQL plans a prepared statement again at every
// execution while its plan for the parameters at hand looks cheaper than the generic one, which
// for a search's statement (the visibility rule folded for the caller, a text's selectivity) is
// always: planning then costs more than running (1.1 to 1.8 ms against 2 ms at 100,000 records,
// and 0.5 ms against 0.02 for the matching collections). Its statements have the request pool's
// statement_timeout.
func OpenSearch(ctx context.Context, url string, conns int32, statementTimeout time.Duration) (*pgxpool.Pool, error) {
	return open(ctx, url, conns, statementTimeout, "meridian-search", map[string]string{"plan_cache_mode": "force_generic_plan"})
}

// OpenCounts creates the pool the numbers matched of filtered pages are counted on (a count runs
// alongside its page, internal/features): apart from the request pool, so counts never take the
// connections pages need, and without parallel workers, whose coordination costs a count of a
// million rows a fifth more CPU for a shorter wait nobody has. Its statements have the request
// pool's statement_timeout.
func OpenCounts(ctx context.Context, url string, conns int32, statementTimeout time.Duration) (*pgxpool.Pool, error) {
	return open(ctx, url, conns, statementTimeout, "meridian-counts", map[string]string{"max_parallel_workers_per_gather": "0"})
}

func open(ctx context.Context, url string, maxConns int32, statementTimeout time.Duration, name string, params map[string]string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("DATABASE_URL: %w", err)
	}
	cfg.MaxConns = maxConns
	cfg.MaxConnIdleTime = 5 * time.Minute
	cfg.HealthCheckPeriod = 15 * time.Second
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 5 * time.Second
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = name
	for k, v := range params {
		cfg.ConnConfig.RuntimeParams[k] = v
	}
	if statementTimeout > 0 {
		cfg.ConnConfig.RuntimeParams["statement_timeout"] = strconv.FormatInt(statementTimeout.Milliseconds(), 10)
	}
	return pgxpool.NewWithConfig(ctx, cfg)
}

// BackgroundConns is the size of the pool OpenBackground makes for that many import workers:
// three per worker (an import's finalize transaction holds one while its column profile reads
// on another, and its heartbeat beats on a third) plus River's own (leader election, producer,
// notifier, completer) and the stalled-import sweeper.
func BackgroundConns(workers int) int32 { return 3*int32(workers) + 5 }

// OpenBackground creates the pool of work that runs outside requests and may legitimately take
// longer than a request's query limit: migrations, River (its own migrations, job fetching and
// completion) and the import jobs (ANALYZE, index builds and profiles of large tables). Its
// connections carry no statement_timeout; the import job bounds itself with its context, and
// River with its job timeouts. It is named apart ("meridian-jobs") so pg_stat_activity tells its
// queries from the requests'.
func OpenBackground(ctx context.Context, url string, workers int) (*pgxpool.Pool, error) {
	return open(ctx, url, BackgroundConns(workers), 0, "meridian-jobs", nil)
}

// Migrate applies every pending migration. golang-migrate holds a PostgreSQL advisory lock while
// it runs, so replicas that start together apply each migration exactly once.
func Migrate(pool *pgxpool.Pool) error {
	src, err := iofs.New(migrations.FS, ".")
	if err != nil {
		return err
	}
	sqlDB := stdlib.OpenDBFromPool(pool)
	drv, err := migratepgx.WithInstance(sqlDB, &migratepgx.Config{})
	if err != nil {
		sqlDB.Close()
		return fmt.Errorf("migrate: %w", err)
	}
	m, err := migrate.NewWithInstance("iofs", src, "pgx5", drv)
	if err != nil {
		_ = drv.Close() // the first error is the one to report
		return fmt.Errorf("migrate: %w", err)
	}
	// Close returns the connection the driver holds for its lock; without it pool.Close would
	// wait for that connection forever at shutdown.
	defer func() { _, _ = m.Close() }()
	if err := m.Up(); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// MissingFunctions lists the built-in functions the server calls (triggers announce changes with
// pg_notify; migrations, River and several writes take advisory locks) that the role of q may
// not call: migration 33, run by a superuser, takes them from PUBLIC and gives them back only to
// that role and the database's owner. Empty when the role may call them all.
func MissingFunctions(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) (string, error) {
	var missing string
	err := q.QueryRow(ctx, `SELECT coalesce(string_agg(f, ', ' ORDER BY f), '') FROM unnest(ARRAY['pg_notify(text,text)',
		'pg_advisory_lock(bigint)', 'pg_advisory_unlock(bigint)', 'pg_advisory_xact_lock(bigint)', 'pg_try_advisory_xact_lock(bigint)']) f
		WHERE NOT has_function_privilege(f, 'EXECUTE')`).Scan(&missing)
	return missing, err
}

// Unavailable reports whether err means the database could not serve the request at all
// (unreachable, restarting, shutting down), as opposed to a failing query. Such errors answer 503.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// Class 08: connection exception; 57P01..57P03: admin/crash shutdown, cannot connect now;
		// 53300: too many connections.
		return strings.HasPrefix(pgErr.Code, "08") || strings.HasPrefix(pgErr.Code, "57P") || pgErr.Code == "53300"
	}
	var connErr *pgconn.ConnectError
	if errors.As(err, &connErr) {
		return true
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return true
	}
	if pgconn.SafeToRetry(err) || pgconn.Timeout(err) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "conn closed") || strings.Contains(msg, "unexpected EOF") ||
		strings.Contains(msg, "connection reset")
}

// OGRConnection is the GDAL connection string ("PG:...") of the pool's database and the password
// to pass in PGPASSWORD, so it never shows on a command line other processes can read.
func OGRConnection(pool *pgxpool.Pool) (conn, password string) {
	c := pool.Config().ConnConfig
	q := func(v string) string {
		return "'" + strings.ReplaceAll(strings.ReplaceAll(v, `\`, `\\`), `'`, `\'`) + "'"
	}
	return fmt.Sprintf("PG:host=%s port=%d dbname=%s user=%s", q(c.Host), c.Port, q(c.Database), q(c.User)), c.Password
}

// StatementTimeout reports whether err is PostgreSQL cancelling a statement that outlived the
// connection's statement_timeout (SQLSTATE 57014 with its own message: the same code also means
// a cancel request, which pgx sends when the caller's context ends).
func StatementTimeout(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "57014" && strings.Contains(pe.Message, "statement timeout")
}

// QueryValueError turns an error PostgreSQL raises about a value a client put into a query (a
// data exception, class 22, such as an overflow or a malformed literal; PostGIS's parse errors)
// into a 400 problem; any other error is returned as it is.
func QueryValueError(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (strings.HasPrefix(pe.Code, "22") || pe.Code == "XX000" && strings.Contains(pe.Message, "parse")) {
		return apperr.Invalid("the query could not be evaluated: %s", pe.Message)
	}
	return err
}

// Code is the SQLSTATE of a PostgreSQL error, "" for any other error.
func Code(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// RoleRace reports the errors of two servers creating or altering the same role at once (roles
// belong to the cluster, which several databases and servers share): worth another try.
func RoleRace(err error) bool {
	switch Code(err) {
	case "XX000", "23505", "40001", "40P01", "42710":
		return true
	}
	return false
}

// EnsureLoginRole creates the login role name with attrs and password, or repairs its password
// when it no longer logs in, then runs grants (may be ""). Roles belong to the cluster, which
// servers of several databases share: their collisions are retried. The password must be hex
// (role statements take no parameters, so it is written as a literal).
func EnsureLoginRole(ctx context.Context, pool *pgxpool.Pool, name, attrs, password, grants string) error {
	var err error
	for try := 1; try <= 5; try++ {
		if err = ensureLoginRole(ctx, pool, name, attrs, password, grants); err == nil || !RoleRace(err) {
			return err
		}
		time.Sleep(time.Duration(try) * 50 * time.Millisecond)
	}
	return err
}

func ensureLoginRole(ctx context.Context, pool *pgxpool.Pool, name, attrs, password, grants string) error {
	ident := pgx.Identifier{name}.Sanitize()
	with := " WITH LOGIN " + attrs + " PASSWORD '" + password + "'"
	if _, err := pool.Exec(ctx, "CREATE ROLE "+ident+with); err != nil && Code(err) != "42710" {
		return err
	}
	// Only a password that no longer logs in is set again: concurrent ALTER ROLEs of one role
	// collide.
	c := pool.Config().ConnConfig.Copy()
	c.User, c.Password = name, password
	if conn, err := pgx.ConnectConfig(ctx, c); err == nil {
		_ = conn.Close(ctx)
	} else if code := Code(err); code == "28P01" || code == "28000" {
		if _, err := pool.Exec(ctx, "ALTER ROLE "+ident+with); err != nil {
			return err
		}
	} else {
		return err
	}
	if grants == "" {
		return nil
	}
	_, err := pool.Exec(ctx, grants)
	return err
}
