package conformance

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// Query tag: read-only SQL, confined by PostgreSQL, tried against a hostile corpus.

func sqlQuery(t *testing.T, s session, sql string, tables []string, extra ...map[string]any) reply {
	t.Helper()
	body := map[string]any{"sql": sql, "restrict_tables": tables}
	for _, e := range extra {
		for k, v := range e {
			body[k] = v
		}
	}
	return call(t, "POST", "/query/", body, bearer(s.Access)...)
}

func tableOf(t *testing.T, s session, id string) string {
	t.Helper()
	return call(t, "GET", "/datasets/"+id, nil, bearer(s.Access)...).JSON(t)["table_name"].(string)
}

func TestReadOnlySQL(t *testing.T) {
	owner, other := newUser(t, "editor"), newUser(t, "editor")
	mine := ogcDataset(t, owner, "private")
	theirs := ogcDataset(t, other, "private")
	table, theirTable := tableOf(t, owner, mine), tableOf(t, other, theirs)

	r := sqlQuery(t, owner, "SELECT gid, name, rank, score, day, geom FROM "+table+" WHERE rank < 3 ORDER BY gid", []string{table})
	wantStatus(t, "query", r, 200)
	res := r.JSON(t)
	rows := res["rows"].([]any)
	if fmt.Sprint(res["columns"]) != "[gid name rank score day geom]" || len(rows) != 3 || res["row_count"] != float64(3) || res["truncated"] != false {
		t.Fatalf("result: %s", r.Body)
	}
	first := rows[0].([]any)
	if first[1] != "place 00" || first[4] != "2020-01-01" || fmt.Sprint(first[5]) != "map[coordinates:[[-170 -40]] type:MultiPoint]" {
		t.Fatalf("first row: %v", first)
	}
	// Row limit: truncated; an empty result still names its columns.
	r = sqlQuery(t, owner, "SELECT gid FROM "+table, []string{table}, map[string]any{"row_limit": 5})
	if res := r.JSON(t); len(res["rows"].([]any)) != 5 || res["truncated"] != true {
		t.Fatalf("row limit: %s", r.Body)
	}
	if res := sqlQuery(t, owner, "SELECT gid AS id, name FROM "+table+" WHERE false", []string{table}).JSON(t); fmt.Sprint(res["columns"]) != "[id name]" {
		t.Fatalf("empty result: %v", res)
	}
	// Numerics keep every digit.
	if r := sqlQuery(t, owner, "SELECT 12345678901234567890.123456789::numeric AS n", []string{table}); !strings.Contains(string(r.Body), "12345678901234567890.123456789") {
		t.Fatalf("numeric: %s", r.Body)
	}
	// Another user's private dataset is no table for this caller, named or not.
	wantStatus(t, "their dataset in restrict_tables", sqlQuery(t, owner, "SELECT 1", []string{theirTable}), 403)
	wantStatus(t, "no such dataset", sqlQuery(t, owner, "SELECT 1", []string{"ds_nothing_here"}), 403)
	// Their view exists (they queried it), but outside the request's grant it has no rows.
	wantStatus(t, "their own query", sqlQuery(t, other, "SELECT count(*) FROM "+theirTable, []string{theirTable}), 200)
	r = sqlQuery(t, owner, "SELECT count(*) AS n FROM "+theirTable, []string{table})
	if r.Status != 200 || !strings.Contains(string(r.Body), `[[0]]`) {
		t.Fatalf("another request's view gave rows: %d %s", r.Status, r.Body)
	}
	// Nor can an error be used as an oracle on its rows: the view is a security barrier, so a
	// failing predicate never sees a row the gate holds back.
	r = sqlQuery(t, owner, "SELECT count(*) AS n FROM "+theirTable+" WHERE 1 / (gid - gid) = 1 OR name = 'place 00'", []string{table})
	if r.Status != 200 || !strings.Contains(string(r.Body), `[[0]]`) {
		t.Fatalf("an error oracle on another dataset's view: %d %s", r.Status, r.Body)
	}
}

// TestReadOnlySQLHostileCorpus: every statement ends harmless: refused, or run with no effect and
// no leak.
func TestReadOnlySQLHostileCorpus(t *testing.T) {
	adm, owner := admin(t), newUser(t, "editor")
	id := ogcDataset(t, owner, "private")
	table := tableOf(t, owner, id)
	tables := []string{table}
	defer call(t, "POST", "/settings/reset/", map[string]any{"keys": []string{"sql_query"}}, bearer(adm.Access)...)
	wantStatus(t, "short time limit", call(t, "PUT", "/settings/", map[string]any{"settings": map[string]any{
		"sql_query": map[string]any{"statement_timeout_ms": 500}}}, bearer(adm.Access)...), 200)

	cases := []struct {
		name string
		sql  string
		want []int // acceptable statuses
	}{
		{"two statements", "SELECT 1; DROP TABLE " + table, []int{400}},
		{"comment trick", "SELECT 1 -- ) q; DROP TABLE " + table, []int{200, 400}},
		{"block comment", "SELECT 1 /* ", []int{400}},
		{"closing the wrapper", "SELECT 1) q; DROP TABLE " + table + "; SELECT (1", []int{400}},
		{"sleep", "SELECT pg_sleep(60)", []int{504}},
		{"lifting its own timeout", "SELECT set_config('statement_timeout', '0', false), pg_sleep(3)", []int{504}},
		{"huge series", "SELECT * FROM generate_series(1, 1e12::bigint)", []int{200, 504}},
		{"cross join", "SELECT a.gid FROM " + table + " a, " + table + " b, " + table + " c, " + table + " d, " + table + " e", []int{200, 504}},
		{"copy to program", "COPY (SELECT 1) TO PROGRAM 'id'", []int{400}},
		{"dblink", "SELECT * FROM dblink('host=127.0.0.1', 'SELECT 1') AS t(x int)", []int{400}},
		{"lo_import", "SELECT lo_import('/etc/passwd')", []int{403, 422}},
		{"pg_read_file", "SELECT pg_read_file('/etc/passwd')", []int{403}},
		{"set_config role", "SELECT set_config('role', 'postgres', true)", []int{403}},
		{"set role", "SET ROLE postgres", []int{400}},
		{"reset role", "RESET ROLE", []int{400}},
		{"secret setting", "SELECT current_setting('data_directory')", []int{403}},
		{"catalog users", "SELECT * FROM catalog.users", []int{403}},
		{"river jobs", "SELECT * FROM river.river_job", []int{403, 400}},
		{"pg_authid", "SELECT rolpassword FROM pg_authid", []int{403}},
		{"data schema, as agents name tables", "SELECT * FROM data." + table, []int{200}},
		{"nextval", "SELECT nextval('catalog.audit_log_id_seq')", []int{403, 422}},
		{"for update", "SELECT * FROM " + table + " FOR UPDATE", []int{400, 403, 422}},
		{"writing CTE", "WITH x AS (DELETE FROM " + table + " RETURNING *) SELECT * FROM x", []int{400, 403}},
		{"app function", "SELECT catalog.dataset_visible(gen_random_uuid(), 'public', 'published', NULL, NULL, NULL, true)", []int{403}},
		{"gate of another dataset", "SELECT sql_sandbox.allowed(gen_random_uuid())", []int{200}},
		{"grants table", "SELECT * FROM catalog.sql_grants", []int{403}},
		{"temp table", "CREATE TEMP TABLE x AS SELECT 1", []int{400}},
		{"the server's advisory lock", "SELECT pg_advisory_lock(hashtext('meridian.admin_changes'))", []int{403}},
		{"transaction advisory lock", "SELECT pg_try_advisory_xact_lock(42)", []int{403}},
		{"advisory locks by the million", "SELECT count(pg_try_advisory_lock(g)) FROM generate_series(1, 1000000) g", []int{403}},
		{"cancel another session", "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE usename = current_user AND pid <> pg_backend_pid()", []int{403}},
		{"announce on the server's channel", "SELECT pg_notify('catalog_datasets', gen_random_uuid()::text)", []int{403}},
		{"terminate another session", "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = current_user AND pid <> pg_backend_pid()", []int{403}},
		// Memory (issue #28): values built from a count are bounded before they are built, rows
		// before they are sent; pg_catalog's own builders are not the sandbox's to call.
		{"repeat by the gigabyte", "SELECT length(repeat('a', 250000000)), length(repeat('a', 250000000))", []int{422}},
		{"pg_catalog's repeat", "SELECT length(pg_catalog.repeat('a', 250000000))", []int{403}},
		{"lpad by the hundred million", "SELECT length(lpad('', 100000000))", []int{422}},
		{"rpad with a fill", "SELECT length(rpad('x', 100000000, 'yz'))", []int{422}},
		{"array_fill", "SELECT cardinality(array_fill(1, ARRAY[100000000]))", []int{422}},
		{"a doubled string returned whole", "WITH RECURSIVE r(s, n) AS (SELECT 'x'::text, 0 UNION ALL SELECT s || s, n + 1 FROM r WHERE n < 21) " +
			"SELECT s FROM r ORDER BY n DESC LIMIT 1", []int{422}},
		// Large objects persist and every user shares the sandbox role.
		{"large object from bytea", "SELECT lo_from_bytea(0, 'secret'::bytea)", []int{403}},
		{"large object read", "SELECT lo_get(16384)", []int{403}},
		{"large object put", "SELECT lo_put(16384, 0, 'x'::bytea)", []int{403}},
		{"large object unlink", "SELECT lo_unlink(16384)", []int{403}},
		// The statistics of other tables (row counts of users, keys, private datasets).
		{"table statistics", "SELECT relname, n_live_tup FROM pg_stat_user_tables", []int{403}},
		{"table statistics, all", "SELECT relname, n_tup_ins FROM pg_stat_all_tables", []int{403}},
		{"statistics function", "SELECT pg_stat_get_live_tuples(c.oid) FROM pg_class c WHERE c.relname = 'users'", []int{403}},
		{"database statistics", "SELECT tup_inserted FROM pg_stat_database", []int{403}},
	}
	for _, c := range cases {
		r := sqlQuery(t, owner, c.sql, tables)
		ok := false
		for _, w := range c.want {
			ok = ok || r.Status == w
		}
		if !ok {
			t.Errorf("%s: %d, want one of %v: %s", c.name, r.Status, c.want, r.Body)
		}
		if r.Status >= 400 && (strings.Contains(string(r.Body), "meridian_sql") || strings.Contains(string(r.Body), "catalog.")) {
			t.Errorf("%s: the problem names internals: %s", c.name, r.Body)
		}
	}
	// What stays: the bounded builders within their bound, and policies that do not name datasets.
	for sql, want := range map[string]string{"SELECT repeat('ab', 3), lpad('7', 3, '0'), rpad('7', 3), array_fill(0, ARRAY[2])": `[["ababab","007","7  ","{0,0}"]]`} {
		if r := sqlQuery(t, owner, sql, tables); r.Status != 200 || !strings.Contains(string(r.Body), want) {
			t.Errorf("%s: %d %s", sql, r.Status, r.Body)
		}
	}
	if r := sqlQuery(t, owner, "SELECT tablename, qual FROM pg_policies", tables); r.Status != 200 || strings.Contains(string(r.Body), id) {
		t.Errorf("policies name the dataset: %d %s", r.Status, r.Body)
	}
	// Nothing was changed.
	if n := call(t, "GET", "/datasets/"+id, nil, bearer(owner.Access)...).JSON(t)["feature_count"]; n != float64(30) {
		t.Fatalf("the dataset changed: %v features", n)
	}
	if r := sqlQuery(t, owner, "SELECT count(*) FROM "+table, tables); !strings.Contains(string(r.Body), "[[30]]") {
		t.Fatalf("after the corpus: %s", r.Body)
	}
	// Restrict_tables entries that are not plain table names (the schema data. may prefix one).
	wantStatus(t, "restrict_tables data.<table>", sqlQuery(t, owner, "SELECT count(*) FROM data."+table, []string{"data." + table}), 200)
	for _, bad := range []string{"data.data." + table, "public." + table, `"` + table + `"`, "..", "ds_а", "catalog.users", "DS_X"} {
		wantStatus(t, "restrict_tables "+bad, sqlQuery(t, owner, "SELECT 1", []string{bad}), 422)
	}
	wantStatus(t, "sql too long", sqlQuery(t, owner, "SELECT 1"+strings.Repeat(" ", 20001), tables), 422)

}

// Another request's statement is not in pg_stat_activity, though its session is: the sandbox
// sessions share a role, and the statement is only ever a parameter of open().
func TestReadOnlySQLHidesOtherStatements(t *testing.T) {
	owner, other := newUser(t, "editor"), newUser(t, "editor") // one query at a time each
	tables := []string{tableOf(t, owner, ogcDataset(t, owner, "private"))}
	theirs := []string{tableOf(t, other, ogcDataset(t, other, "private"))}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sqlQuery(t, owner, "SELECT pg_sleep(2), 'secret-marker-42'", tables)
	}()
	seen, leaked := "", ""
	for deadline := time.Now().Add(1800 * time.Millisecond); seen == "" && leaked == "" && time.Now().Before(deadline); time.Sleep(30 * time.Millisecond) {
		r := sqlQuery(t, other, `SELECT query FROM pg_stat_activity WHERE usename = current_user AND pid <> pg_backend_pid() AND state = 'active'`, theirs)
		switch body := string(r.Body); {
		case strings.Contains(body, "secret-marker-42"):
			leaked = body
		case strings.Contains(body, "FETCH"):
			seen = body
		}
	}
	<-done
	if leaked != "" {
		t.Fatalf("pg_stat_activity shows another request's statement: %s", leaked)
	}
	if seen == "" {
		t.Fatal("the sleeping request's session was never seen in pg_stat_activity: the check proves nothing")
	}
}

// A query may change its session's settings (set_config(..., false) is every role's right), and
// the sandbox's connections are pooled: what one request sets must not reach the next request
// on that connection, where it would silently change answers (two significant digits of every
// float, dates in another style) or lift the read-only default.
func TestReadOnlySQLSessionsStartClean(t *testing.T) {
	owner := newUser(t, "editor")
	table := tableOf(t, owner, ogcDataset(t, owner, "private"))
	tables := []string{table}
	for i := 0; i < 10; i++ {
		wantStatus(t, "setting session values", sqlQuery(t, owner, `SELECT set_config('extra_float_digits', '-15', false),
			set_config('DateStyle', 'SQL, DMY', false), set_config('default_transaction_read_only', 'off', false)`, tables), 200)
	}
	for i := 0; i < 10; i++ {
		r := sqlQuery(t, owner, `SELECT 0.123456789::float8 AS f, DATE '2024-02-01' AS d, current_setting('default_transaction_read_only') AS ro`, tables)
		if r.Status != 200 || !strings.Contains(string(r.Body), `[[0.123456789,"2024-02-01","on"]]`) {
			t.Fatalf("a later request saw an earlier one's session settings: %d %s", r.Status, r.Body)
		}
	}
}

// One read-only query runs at a time per user: a second sent meanwhile answers 429.
func TestReadOnlySQLOneQueryAtATime(t *testing.T) {
	owner := newUser(t, "editor")
	tables := []string{tableOf(t, owner, ogcDataset(t, owner, "private"))}
	done := make(chan reply)
	go func() { done <- sqlQuery(t, owner, "SELECT pg_sleep(1.5)", tables) }()
	time.Sleep(300 * time.Millisecond)
	r := sqlQuery(t, owner, "SELECT 1", tables)
	if r.Status != 429 || r.Header.Get("Retry-After") == "" {
		t.Errorf("a second query while the first runs: %d %s", r.Status, r.Body)
	}
	wantStatus(t, "the first query", <-done, 200)
	wantStatus(t, "a query after it", sqlQuery(t, owner, "SELECT 1", tables), 200)
}
