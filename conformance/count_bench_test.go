package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkOGCFilterWalk measures what an exact numberMatched costs a filtered page of the
// items benchmark's points (kind = 'k3', 5 % of them, no index on kind, 1000 a page): a client's
// first page alone, and its walk (the first page, then the next 10). Every walk filters with
// a filter of its own (the same rows, `AND n <> -m` with a new m; n is never negative), so its first page counts
// the matches afresh. Side "counted" runs the walks first; side "kept" runs the same walks again,
// when the server has kept their counts, which is the same pages without a count. Both run in
// each iteration, so drift of the shared machine falls on both; ratio is counted/kept.
//
// Walks run from BENCH_OGC_CONCURRENCY clients (16) at once, BENCH_OGC_REQUESTS of them a side.
func BenchmarkOGCFilterWalk(b *testing.B) {
	d := ogcBenchSetup(b)
	conc := ogcBenchConcurrency()
	hc := benchClient(conc)
	t := d.points
	var tag atomic.Int64
	tag.Store(time.Now().UnixNano() % 1_000_000_000) // a rerun on the same server counts afresh too
	path := func(n, offset int) string {
		f := url.QueryEscape(fmt.Sprintf("kind = 'k3' AND n <> %d", -n))
		return fmt.Sprintf("/collections/%s/items?limit=1000&offset=%d&filter=%s", t.id, offset, f)
	}
	get := func(ctx context.Context, p string) (int64, float64, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, server.APIRoot+p, nil)
		res, err := hc.Do(req)
		if err != nil {
			return 0, 0, err
		}
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		if err == nil && res.StatusCode != http.StatusOK {
			err = fmt.Errorf("%s: %d %s", p, res.StatusCode, body)
		}
		var page struct {
			NumberMatched float64 `json:"numberMatched"`
		}
		if err == nil {
			err = json.Unmarshal(body, &page)
		}
		return int64(len(body)), page.NumberMatched, err
	}
	// The count is the same whether counted or kept: every k of 20 kinds holds rows/20.
	want := float64(t.rows / 20)
	for _, c := range []struct {
		name     string
		pages    int
		requests int
	}{{"first-page", 1, 160}, {"walk", 11, 64}} {
		b.Run(c.name, func(b *testing.B) {
			walk := func(ctx context.Context, p ogcParams) (int64, bool, error) {
				var total int64
				for i := 0; i < c.pages; i++ {
					n, matched, err := get(ctx, path(p.id, i*1000))
					if err == nil && matched != want {
						err = fmt.Errorf("numberMatched %v, want %v", matched, want)
					}
					if total += n; err != nil {
						return total, false, err
					}
				}
				return total, false, nil
			}
			requests := c.requests
			if n, err := strconv.Atoi(os.Getenv("BENCH_OGC_REQUESTS")); err == nil && n > 0 {
				requests = n
			}
			var counted, kept ogcPhase
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				// In rounds of one walk per client, each counted then kept at once, so that the
				// shared machine's drift falls on both sides alike.
				for done := 0; done < requests; done += conc {
					n := min(conc, requests-done)
					first := int(tag.Add(int64(n))) - n
					param := func(j int) ogcParams { return ogcParams{id: first + j} }
					for _, side := range []*ogcPhase{&counted, &kept} {
						ph, err := ogcRun(conc, n, param, walk, d)
						if err != nil {
							b.Fatal(err)
						}
						side.add(ph)
					}
				}
			}
			b.StopTimer()
			// CPU per walk (server and PostgreSQL) varies far less with the machine's load than
			// rates do: its ratio says what counting costs in work.
			cpu := func(p ogcPhase) float64 { return p.perReq(p.srv + p.pg) }
			b.ReportMetric(cpu(kept)/cpu(counted), "cpu-ratio")
			b.ReportMetric(counted.rate(), "counted-walks/s")
			b.ReportMetric(kept.rate(), "kept-walks/s")
			b.ReportMetric(counted.rate()/kept.rate(), "ratio")
			b.ReportMetric(counted.pct(0.50), "counted-p50-ms")
			b.ReportMetric(counted.pct(0.95), "counted-p95-ms")
			b.ReportMetric(kept.pct(0.50), "kept-p50-ms")
			b.ReportMetric(kept.pct(0.95), "kept-p95-ms")
			b.ReportMetric(counted.perReq(counted.pg), "counted-pg-cpu-ms/walk")
			b.ReportMetric(kept.perReq(kept.pg), "kept-pg-cpu-ms/walk")
		})
	}
}
