package sqlquery

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"meridian/internal/apperr"
	"meridian/internal/audit"
	"meridian/internal/auth"
	"meridian/internal/features"
	"meridian/internal/settings"
	"meridian/store"
)

// Limits of a query (section 8 and the design).
const (
	MaxSQL      = 20000
	MaxTables   = 25
	MaxRowLimit = 1000
	DefaultRows = 100
	MaxBytes    = 10 << 20
)

// Service runs queries.
type Service struct {
	App     *pgxpool.Pool // the server's pool: catalog reads, views, grants
	Q       *store.Queries
	Sandbox *pgxpool.Pool // the sandbox role's pool
	Role    string        // the sandbox role

	geometry atomic.Uint32 // the oid of PostGIS geometry
	Settings settings.Reader
	Log      *slog.Logger

	running sync.Map // callers with a query running: one at a time each
}

// Request is one query.
type Request struct {
	SQL      string
	Tables   []string
	RowLimit int
	IP, UA   string
}

// Result is a query's answer: column names, rows as JSON arrays (as PostgreSQL wrote them:
// numerics keep every digit), and whether rows were left out (row limit or byte cap).
type Result struct {
	Columns   []string
	Rows      []json.RawMessage
	Truncated bool
}

// tableName is what a restrict_tables entry may be: a dataset's table name, nothing more (no
// quotes, dots or look-alike letters), after the schema data. that clients may prefix.
var tableName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// Check validates a request before anything runs.
func (r *Request) Check() error {
	switch {
	case strings.TrimSpace(r.SQL) == "":
		return apperr.Unprocessable("sql is empty")
	case utf8.RuneCountInString(r.SQL) > MaxSQL:
		return apperr.Unprocessable("sql is longer than %d characters", MaxSQL)
	case strings.ContainsRune(r.SQL, 0):
		return apperr.Unprocessable("sql holds a NUL character")
	case len(r.Tables) < 1 || len(r.Tables) > MaxTables:
		return apperr.Unprocessable("restrict_tables names 1 to %d tables", MaxTables)
	}
	for i, t := range r.Tables {
		t = strings.TrimPrefix(t, "data.")
		r.Tables[i] = t
		if !tableName.MatchString(t) {
			return apperr.Unprocessable("restrict_tables: %q is not a dataset table name (lowercase letters, digits and underscores)", t)
		}
	}
	if r.RowLimit == 0 {
		r.RowLimit = DefaultRows
	}
	if r.RowLimit < 1 || r.RowLimit > MaxRowLimit {
		return apperr.Unprocessable("row_limit must be 1 to %d", MaxRowLimit)
	}
	return nil
}

// Admin audit log actions of read-only SQL: a statement that ran (its outcome says whether it
// failed at run time: a bad cast, the timeout), or one refused before it ran or by the sandbox
// (not a query, a table the caller may not read, a relation or function the role may not use).
const (
	ActionExecute = "query.execute"
	ActionReject  = "query.reject"
)

// Run runs r for p and writes it to the audit log (never its rows).
func (s *Service) Run(ctx context.Context, p auth.Principal, r Request) (Result, error) {
	enabled, timeout, err := s.Settings.SQLQuery(ctx)
	if err != nil {
		return Result{}, err
	}
	if !enabled {
		return Result{}, apperr.Forbidden("read-only SQL is switched off on this deployment (feature flag enable_sql_query)")
	}
	// One query at a time per caller: the sandbox pool (SQL_MAX_CONCURRENT) is shared by all, and
	// each query may hold up to a value bound's worth of memory per row it builds.
	caller := "ip:" + r.IP
	if !p.Anonymous() {
		caller = p.UserID.String()
	}
	if _, busy := s.running.LoadOrStore(caller, struct{}{}); busy {
		return Result{}, &apperr.Error{Kind: apperr.KindRateLimited, Title: "Too Many Requests", RetryAfter: time.Second,
			Detail: "a read-only query of yours is still running; one runs at a time"}
	}
	defer s.running.Delete(caller)
	start := time.Now()
	res, err := Result{}, r.Check()
	rejected := err != nil
	if err == nil {
		res, rejected, err = s.run(ctx, p, r, timeout)
	}
	action, detail := ActionExecute, map[string]any{"tables": r.Tables, "duration_ms": time.Since(start).Milliseconds(), "rows": len(res.Rows)}
	if rejected {
		action = ActionReject
	}
	if err != nil {
		detail["error"] = err.Error()
	}
	audit.Record(ctx, s.Q, s.Log, audit.Entry{ActorID: p.UserID, ActorDisplay: p.Username, Action: action, ResourceType: "query",
		ResourceID: strings.Join(r.Tables, ","), Failed: err != nil, IP: r.IP, UA: r.UA, Detail: detail})
	return res, err
}

// run grants, prepares and executes; rejected tells a refusal from a run that failed.
func (s *Service) run(ctx context.Context, p auth.Principal, r Request, timeout time.Duration) (Result, bool, error) {
	token := uuid.New()
	defer func() {
		if err := s.Q.EndSQLGrant(context.WithoutCancel(ctx), token); err != nil {
			s.Log.Warn("sql: ending a grant failed", "err", err)
		}
	}()
	if err := s.grant(ctx, p, token, r.Tables, timeout+10*time.Second); err != nil {
		return Result{}, apperr.KindOf(err) == apperr.KindForbidden, err
	}
	res, err := s.execute(ctx, token, r, timeout)
	kind := apperr.KindOf(err)
	return res, err != nil && (kind == apperr.KindInvalid || kind == apperr.KindForbidden), err
}

// grant grants the request token the datasets of the tables, in one statement with finding them
// among those p may read (any other name answers like one that does not exist; the grant then
// goes unused and ends with the request), and prepares the tables the sandbox has never read.
func (s *Service) grant(ctx context.Context, p auth.Principal, token uuid.UUID, tables []string, ttl time.Duration) error {
	var caller *uuid.UUID
	var role *string
	if !p.Anonymous() {
		caller, role = &p.UserID, &p.Role
	}
	rows, err := s.Q.GrantSQLDatasets(ctx, store.GrantSQLDatasetsParams{Names: tables, CallerID: caller, CallerRole: role,
		IsAdmin: p.IsAdmin(), Token: token, TtlSeconds: ttl.Seconds(), Role: s.Role})
	if err != nil {
		return err
	}
	for _, t := range tables {
		if !slices.ContainsFunc(rows, func(r store.GrantSQLDatasetsRow) bool { return r.TableName == t }) {
			return apperr.Forbidden("restrict_tables: no dataset you may read has the table %q", t)
		}
	}
	for _, r := range rows {
		if !r.Ready {
			if err := s.prepare(ctx, r.TableName); err != nil {
				return err
			}
		}
	}
	return nil
}

// prepare opens a dataset's table to the sandbox role, once in the table's life: SELECT on it,
// and row security with one policy for that role whose rows show only to a request granted the
// dataset (migration 52). The gate is a scalar subquery, evaluated once per statement, and a
// policy's condition is applied before any of the caller's, so no predicate of the caller's
// (say, a division by zero on a column) sees a row the gate holds back. Nothing depends on the
// table: it is dropped and its columns changed as before. Its owner, the server's role (feature
// reads, tiles, exports), is not subject to row security.
func (s *Service) prepare(ctx context.Context, table string) error {
	ident, role := pgx.Identifier{"data", table}.Sanitize(), pgx.Identifier{s.Role}.Sanitize()
	// The gate names the table, not its dataset: policies are readable by every role (migration 53).
	ddl := "ALTER TABLE " + ident + " ENABLE ROW LEVEL SECURITY; DROP POLICY IF EXISTS meridian_sql ON " + ident + "; " +
		"CREATE POLICY meridian_sql ON " + ident + " FOR SELECT TO " + role +
		" USING ((SELECT sql_sandbox.allowed_table(" + quoteLiteral(ident) + "::regclass))); GRANT SELECT ON " + ident + " TO " + role
	return pgx.BeginFunc(ctx, s.App, func(tx pgx.Tx) error {
		// Requests for one dataset arriving together prepare its table once.
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext('meridian.sql_table.' || $1))", table); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, ddl)
		return err
	})
}

// quoteLiteral writes s as an SQL string literal.
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// execute runs the statement in the sandbox, in one round trip: a pipeline that PostgreSQL runs
// as one read-only transaction. The first statement makes it read-only, names the request's
// token, the statement timeout and the search path (data first, so a table's bare name works as
// well as data.<table_name>), and opens the statement as the
// cursor q (sql_sandbox.open); the second fetches its rows in PostgreSQL's text format, one past
// the row limit, which are written as JSON arrays as they arrive; the last two release the
// session's advisory locks (where migration 33 could not take them from the role) and reset
// whatever the statement set for the session (set_config(..., false) is any role's right), so
// the next request on the pooled connection starts clean. A failed transaction undoes such
// settings itself; its session locks outlive the rollback and are released apart.
func (s *Service) execute(ctx context.Context, token uuid.UUID, r Request, timeout time.Duration) (Result, error) {
	geometry, err := s.geometryOID(ctx)
	if err != nil {
		return Result{}, err
	}
	var batch pgx.Batch
	// sql_sandbox comes first on the search path: its bounded repeat, lpad, rpad and array_fill
	// shadow pg_catalog's (migration 53). No parallel workers: each would be one more process
	// with its own work_mem.
	batch.Queue(`SELECT set_config('transaction_read_only', 'on', true), set_config('meridian.sql_token', $1, true), set_config('statement_timeout', $2, true),
		set_config('search_path', 'sql_sandbox, pg_catalog, data, public', true), set_config('work_mem', '16MB', true),
		set_config('max_parallel_workers_per_gather', '0', true), sql_sandbox.open($3)`,
		token.String(), strconv.FormatInt(timeout.Milliseconds(), 10), r.SQL)
	batch.Queue("FETCH " + strconv.Itoa(r.RowLimit+1) + " FROM q")
	for _, sql := range cleanUp {
		batch.Queue(sql)
	}
	conn, err := s.Sandbox.Acquire(ctx)
	if err != nil {
		return Result{}, err
	}
	defer conn.Release()
	br := conn.SendBatch(ctx, &batch)
	res, err := fetch(br, r.RowLimit, geometry)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		// A failed pipeline skipped the clean-up, and a session lock survives the rollback.
		unlockOrDrop(conn)
	}
	if res.Columns == nil {
		res.Columns = []string{}
	}
	return res, problem(err, timeout)
}

// cleanUp ends every pipeline: the session's advisory locks, then its settings.
var cleanUp = []string{"SELECT pg_advisory_unlock_all()", "RESET ALL"}

// unlockOrDrop releases the session's advisory locks on a connection going back to the pool (its
// settings went with the failed transaction), or closes it (the pool then drops it) when it
// cannot.
func unlockOrDrop(conn *pgxpool.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := conn.Exec(ctx, cleanUp[0]); err != nil {
		_ = conn.Conn().Close(ctx)
	}
}

// fetch reads the pipeline's answers: the opening, the rows up to limit and the byte cap, the clean-up.
func fetch(br pgx.BatchResults, limit int, geometry uint32) (Result, error) {
	var res Result
	if _, err := br.Exec(); err != nil {
		return res, err
	}
	rows, err := br.Query()
	if err != nil {
		return res, err
	}
	defer rows.Close()
	fields := rows.FieldDescriptions()
	res.Columns = make([]string, len(fields))
	for i, f := range fields {
		res.Columns[i] = f.Name
	}
	size := 0
	for rows.Next() {
		if len(res.Rows) == limit || size > MaxBytes {
			res.Truncated = true
			break
		}
		row, err := jsonRow(fields, rows.RawValues(), geometry)
		if err != nil {
			return res, err
		}
		size += len(row)
		res.Rows = append(res.Rows, row)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return res, err
	}
	for range cleanUp {
		if _, err := br.Exec(); err != nil {
			return res, err
		}
	}
	return res, nil
}

// geometryOID is the type oid of PostGIS geometry in this database, read once.
func (s *Service) geometryOID(ctx context.Context) (uint32, error) {
	if oid := s.geometry.Load(); oid != 0 {
		return oid, nil
	}
	var oid uint32
	err := s.App.QueryRow(ctx, "SELECT 'geometry'::regtype::oid").Scan(&oid)
	s.geometry.Store(oid)
	return oid, err
}

// typeNames are the words of format_type for the types whose text form features.AppendJSONText
// writes as something other than a string.
var typeNames = map[uint32]string{pgtype.Int2OID: "smallint", pgtype.Int4OID: "integer", pgtype.Int8OID: "bigint",
	pgtype.Float4OID: "real", pgtype.Float8OID: "double precision", pgtype.NumericOID: "numeric", pgtype.BoolOID: "boolean",
	pgtype.JSONOID: "json", pgtype.JSONBOID: "jsonb"}

// jsonRow writes one row of text values as a JSON array: numbers, booleans and JSON as such,
// geometries (hex EWKB) as GeoJSON, timestamps in RFC 3339, everything else as a string.
func jsonRow(fields []pgconn.FieldDescription, values [][]byte, geometry uint32) ([]byte, error) {
	out := []byte{'['}
	for i, v := range values {
		if i > 0 {
			out = append(out, ',')
		}
		oid := fields[i].DataTypeOID
		switch {
		case v == nil:
			out = append(out, "null"...)
		case oid == geometry && geometry != 0:
			wkb := make([]byte, hex.DecodedLen(len(v)))
			if _, err := hex.Decode(wkb, v); err != nil {
				return nil, fmt.Errorf("sqlquery: a geometry value is not hex EWKB: %w", err)
			}
			var err error
			if out, err = features.AppendGeoJSON(out, wkb); err != nil {
				return nil, err
			}
		case oid == pgtype.TimestamptzOID || oid == pgtype.TimestampOID:
			out = features.AppendJSONText(out, "text", rfc3339(v))
		default:
			name, known := typeNames[oid]
			if !known {
				name = "text" // any other type is written as the string of its text form
			}
			out = features.AppendJSONText(out, name, v)
		}
	}
	return append(out, ']'), nil
}

// rfc3339 turns PostgreSQL's ISO timestamp text ("2024-05-01 12:00:00.5+02", or "-09:30",
// "+05:45:30") into RFC 3339 ("2024-05-01T12:00:00.5+02:00"); infinities stay as they are.
func rfc3339(v []byte) []byte {
	if len(v) < 19 || v[10] != ' ' {
		return v
	}
	out := bytes.Clone(v)
	out[10] = 'T'
	if i := bytes.LastIndexAny(out[19:], "+-"); i >= 0 && len(out[19+i:]) == 3 { // +hh
		out = append(out, ":00"...)
	}
	return out
}

// internalName matches the names a database message may carry that are not the caller's
// business: our schemas' relations and roles.
var internalName = regexp.MustCompile(`(catalog|river|sql_sandbox|data)\.[A-Za-z0-9_"]+|meridian[A-Za-z0-9_]*|role "[^"]*"`)

// problem maps what PostgreSQL refused to the caller's answer, its message stripped of internal
// names.
func problem(err error, timeout time.Duration) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return err
	}
	msg := internalName.ReplaceAllString(pe.Message, "…")
	if pe.Position > 0 {
		msg += fmt.Sprintf(" (at character %d)", pe.Position)
	}
	switch {
	case pe.Code == "57014":
		// Not wrapping the database's error: this timeout is the query's own limit, answered 504,
		// not the server's QUERY_TIMEOUT.
		return &apperr.Error{Kind: apperr.KindTimeout, Title: "Gateway Timeout",
			Detail: fmt.Sprintf("statement timeout after %d ms: the query took too long and was cancelled", timeout.Milliseconds())}
	case pe.Code == "42501":
		return apperr.Forbidden("permission denied: %s", msg)
	case strings.HasPrefix(pe.Code, "42"), pe.Code == "0A000":
		return apperr.Invalid("the statement is not a query this service runs: %s", msg)
	case strings.HasPrefix(pe.Code, "22"), strings.HasPrefix(pe.Code, "25"), strings.HasPrefix(pe.Code, "2B"), strings.HasPrefix(pe.Code, "P0"),
		pe.Code == "54000": // a value or row over the sandbox's bound (migration 53)
		return apperr.Unprocessable("the query failed: %s", msg)
	}
	return err
}
