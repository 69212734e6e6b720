package conformance

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// BenchmarkReadOnlySQL runs a SELECT of 1,000 rows of the generated points (copied into a dataset
// of the data schema) through POST /query/ and the same statement through pgx as the server's
// role, 16 clients; and `SELECT 1` through POST /query/ for the fixed cost of a request (the
// transaction, the grant, the view check, the audit entry).
func BenchmarkReadOnlySQL(b *testing.B) {
	d := ogcBenchSetup(b)
	conc := ogcBenchConcurrency()
	ctx := context.Background()
	table := "bench_sql_" + strings.ToLower(randomHex(3))
	for _, stmt := range []string{
		"CREATE TABLE data." + table + " AS SELECT * FROM public." + pgx.Identifier{d.points.name}.Sanitize(),
		"ALTER TABLE data." + table + " ADD PRIMARY KEY (gid)",
		"INSERT INTO catalog.datasets (table_schema, table_name, title, visibility, record_status, record_type) VALUES ('data', '" +
			table + "', 'SQL bench', 'public', 'published', 'vector_dataset')",
	} {
		if _, err := d.base.Exec(ctx, stmt); err != nil {
			b.Fatal(err)
		}
	}
	_, token := mapsBenchUser(b)
	hc := benchClient(conc)
	query := "SELECT gid, n, score, kind, day, name FROM " + table + " WHERE gid <= 1000 ORDER BY gid"
	ours := func(sql string) func(context.Context, ogcParams) (int64, bool, error) {
		body := fmt.Sprintf(`{"sql":%q,"restrict_tables":[%q],"row_limit":1000}`, sql, table)
		return func(ctx context.Context, _ ogcParams) (int64, bool, error) {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, server.APIRoot+"/query/", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Content-Type", "application/json")
			res, err := hc.Do(req)
			if err != nil {
				return 0, false, err
			}
			defer res.Body.Close()
			n, err := io.Copy(io.Discard, res.Body)
			if err == nil && res.StatusCode != 200 {
				err = fmt.Errorf("query: %d", res.StatusCode)
			}
			return n, false, err
		}
	}
	direct := func(ctx context.Context, _ ogcParams) (int64, bool, error) {
		rows, err := d.base.Query(ctx, "SELECT gid, n, score, kind, day, name FROM data."+table+" WHERE gid <= 1000 ORDER BY gid")
		if err != nil {
			return 0, false, err
		}
		var n int64
		for rows.Next() {
			for _, v := range rows.RawValues() {
				n += int64(len(v))
			}
		}
		rows.Close()
		return n, false, rows.Err()
	}
	none := func(int) ogcParams { return ogcParams{} }
	for _, c := range []struct {
		name       string
		ours, base func(context.Context, ogcParams) (int64, bool, error)
	}{{"select-1000-rows", ours(query), direct}, {"select-1", ours("SELECT 1"), direct}} {
		b.Run(c.name, func(b *testing.B) {
			for _, side := range []func(context.Context, ogcParams) (int64, bool, error){c.ours, c.base} {
				if _, err := ogcRun(conc, 4*conc, none, side, d); err != nil {
					b.Fatal(err)
				}
			}
			sa, sb := abba(b, conc, 2*400, func() ogcParams { return ogcParams{} }, c.ours, c.base, d)
			b.ReportMetric(sa.rate(), "server-req/s")
			b.ReportMetric(sb.rate(), "pgx-req/s")
			b.ReportMetric(sa.pct(0.50), "server-p50-ms")
			b.ReportMetric(sb.pct(0.50), "pgx-p50-ms")
			b.ReportMetric(sa.pct(0.50)/sb.pct(0.50), "p50-time-ratio")
			b.ReportMetric(sa.perReq(sa.srv), "server-srv-cpu-ms/req")
			b.ReportMetric(sa.perReq(sa.pg), "server-pg-cpu-ms/req")
			b.ReportMetric(sb.perReq(sb.pg), "pgx-pg-cpu-ms/req")
		})
	}
}
