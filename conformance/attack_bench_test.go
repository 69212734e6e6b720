package conformance

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkFilterAttack replays attack 3 of issue #28 and measures an ordinary request meanwhile:
// six anonymous clients at once keep asking the items benchmark's points (BENCH_POINTS, a
// million by default, public, no index on n) for pages filtered by long OR chains, each with a
// literal of its own so no count is shared, while another anonymous client (another address)
// reads a plain page again and again. Two servers of the same database take turns:
//
//   - before: the bounds off (CLIENT_MAX_IN_FLIGHT=0, filters up to 64 KB and any number of
//     terms), attacked with the reported filter (3,000 terms, about 40 KB);
//   - after: the default bounds, attacked with the longest OR chain they let through.
//
// It reports the ordinary request's p50 and p99 under attack on each, and how the attackers'
// requests ended. BENCH_ATTACK_SECONDS sets how long each attack lasts (20).
func BenchmarkFilterAttack(b *testing.B) {
	d := ogcBenchSetup(b)
	seconds := 20
	if n, err := strconv.Atoi(os.Getenv("BENCH_ATTACK_SECONDS")); err == nil && n > 0 {
		seconds = n
	}
	sides := []struct {
		name  string
		env   []string
		terms int
	}{
		{"before", []string{"CLIENT_MAX_IN_FLIGHT=0", "CQL2_MAX_BYTES=65536", "CQL2_MAX_TERMS=100000"}, 3000},
		{"after", nil, 330},
	}
	for _, side := range sides {
		b.Run(side.name, func(b *testing.B) {
			env := append([]string{"RATE_LIMIT_ENABLED=false", "TRUST_FORWARDED_HEADERS=true"}, side.env...)
			s, err := Start(context.Background(), server.DBURL, env...)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Stop()
			hc := benchClient(16)
			var ordinary []time.Duration
			outcomes := map[int]int{}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				lat, out := filterAttack(b, hc, s, d.points.id, side.terms, time.Duration(seconds)*time.Second)
				ordinary = append(ordinary, lat...)
				for k, v := range out {
					outcomes[k] += v
				}
			}
			b.StopTimer()
			slices.Sort(ordinary)
			pct := func(q float64) float64 {
				return float64(ordinary[min(len(ordinary)-1, int(q*float64(len(ordinary))))].Microseconds()) / 1000
			}
			b.ReportMetric(pct(0.50), "ordinary-p50-ms")
			b.ReportMetric(pct(0.99), "ordinary-p99-ms")
			b.ReportMetric(float64(len(ordinary))/float64(seconds*b.N), "ordinary-req/s")
			b.Logf("%s: attack requests ended %v (status: count)", side.name, outcomes)
		})
	}
}

// filterAttack runs six attackers and one ordinary client against s for d; it answers the
// ordinary requests' latencies and the attackers' statuses (0: cut at the end of the attack).
func filterAttack(b *testing.B, hc *http.Client, s *Server, dataset string, terms int, d time.Duration) ([]time.Duration, map[int]int) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	get := func(path, from string) (int, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.APIRoot+path, nil)
		req.Header.Set("X-Forwarded-For", from)
		res, err := hc.Do(req)
		if err != nil {
			return 0, err
		}
		defer res.Body.Close()
		_, err = io.Copy(io.Discard, res.Body)
		return res.StatusCode, err
	}
	var mu sync.Mutex
	outcomes := map[int]int{}
	var wg sync.WaitGroup
	for a := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ctx.Err() == nil; n++ {
				parts := make([]string, terms)
				for i := range parts {
					parts[i] = fmt.Sprintf("n = %d", 1_000_000+a*1_000_000+n*terms+i) // matches nothing; every row tests all
				}
				status, _ := get("/collections/"+dataset+"/items?limit=10&filter="+url.QueryEscape(strings.Join(parts, " OR ")), "203.0.113.66")
				mu.Lock()
				outcomes[status]++
				mu.Unlock()
			}
		}()
	}
	var lat []time.Duration
	time.Sleep(time.Second) // the attack is under way
	for ctx.Err() == nil {
		t0 := time.Now()
		status, err := get("/collections/"+dataset+"/items?limit=10&offset=500", "198.51.100.7")
		if ctx.Err() != nil {
			lat = append(lat, time.Since(t0)) // still waiting when the attack ended: at least this long
			break
		}
		if err != nil || status != http.StatusOK {
			b.Fatalf("ordinary request: %d %v", status, err)
		}
		lat = append(lat, time.Since(t0))
	}
	cancel()
	wg.Wait()
	time.Sleep(2 * time.Second) // cancelled statements leave the database before the next side
	return lat, outcomes
}
