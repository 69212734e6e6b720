package conformance

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"

	"meridian/store"
)

// BenchmarkCatalogStats counts a catalog of 100,000 dataset records (BENCH_STATS_DATASETS)
// for the admin dashboard: the counting statement through pgx (what the server runs every 30
// seconds) and GET /admin/stats/ under 16 clients (answered from the 30-second cache between).
func BenchmarkCatalogStats(b *testing.B) {
	d := ogcBenchSetup(b)
	conc := ogcBenchConcurrency()
	ctx := context.Background()
	n := 100000
	if v, err := strconv.Atoi(os.Getenv("BENCH_STATS_DATASETS")); err == nil && v > 0 {
		n = v
	}
	prefix := "stats_" + strings.ToLower(randomHex(3)) + "_"
	if _, err := d.base.Exec(ctx, `INSERT INTO catalog.datasets (table_name, title, visibility, record_status, geometry_type, created_at)
		SELECT $1 || g, 'Stats ' || g, (ARRAY['private','restricted','internal','public'])[1 + g % 4], 'published',
			(ARRAY['POINT','MULTIPOLYGON','LINESTRING'])[1 + g % 3], now() - (g % 30) * interval '1 day'
		FROM generate_series(1, $2::int) g`, prefix, n); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_, _ = d.base.Exec(context.Background(), "DELETE FROM catalog.datasets WHERE starts_with(table_name, $1)", prefix)
	})
	if _, err := d.base.Exec(ctx, "ANALYZE catalog.datasets"); err != nil {
		b.Fatal(err)
	}
	token, err := ogcAdminToken()
	if err != nil {
		b.Fatal(err)
	}
	hc := benchClient(conc)
	q := store.New(d.base)
	count := func(ctx context.Context, _ ogcParams) (int64, bool, error) {
		_, err := q.CatalogStats(ctx)
		return 0, false, err
	}
	ours := func(ctx context.Context, _ ogcParams) (int64, bool, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, server.APIRoot+"/admin/stats/", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := hc.Do(req)
		if err != nil {
			return 0, false, err
		}
		defer res.Body.Close()
		n, err := io.Copy(io.Discard, res.Body)
		if err == nil && res.StatusCode != 200 {
			err = fmt.Errorf("stats: %d", res.StatusCode)
		}
		return n, false, err
	}
	sa, sb := abba(b, conc, 400, func() ogcParams { return ogcParams{} }, ours, count, d)
	b.ReportMetric(sa.pct(0.95), "server-p95-ms")
	b.ReportMetric(sb.pct(0.50), "count-p50-ms")
	b.ReportMetric(sb.pct(0.95), "count-p95-ms")
}
