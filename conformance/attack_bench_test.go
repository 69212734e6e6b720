package conformance

import (
	"context"
	"encoding/json"
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
			b.ReportMetric(percentileMS(ordinary, 0.50), "ordinary-p50-ms")
			b.ReportMetric(percentileMS(ordinary, 0.99), "ordinary-p99-ms")
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

// BenchmarkSQLAttack replays attack 1 of issue #28 as the bounds leave it possible: six users at
// once keep asking read-only SQL for a string doubled 26 times (64 MB, built step by step, which
// no function shadow can refuse; only its length is returned), while an anonymous client reads a
// plain page of the items benchmark's points. It reports the ordinary request's p50 and p99, how
// the attackers' queries ended, and the peak memory (RSS) of the sandbox's backends together,
// which SQL_MAX_CONCURRENT (2) bounds. BENCH_ATTACK_SECONDS sets how long the attack lasts (20).
func BenchmarkSQLAttack(b *testing.B) {
	d := ogcBenchSetup(b)
	seconds := 20
	if n, err := strconv.Atoi(os.Getenv("BENCH_ATTACK_SECONDS")); err == nil && n > 0 {
		seconds = n
	}
	s, err := Start(context.Background(), server.DBURL, "RATE_LIMIT_ENABLED=false", "TRUST_FORWARDED_HEADERS=true")
	if err != nil {
		b.Fatal(err)
	}
	defer s.Stop()
	hc := benchClient(16)
	admin, err := ogcAdminTokenAt(s.APIRoot)
	if err != nil {
		b.Fatal(err)
	}
	table := sqlAttackDataset(b, s, admin)
	var users []string
	for i := range 6 {
		users = append(users, sqlAttackUser(b, s, admin, i))
	}
	query := `{"sql":"WITH RECURSIVE r(s, n) AS (SELECT 'x'::text, 0 UNION ALL SELECT s || s, n + 1 FROM r WHERE n < 26) ` +
		`SELECT length(s) FROM r ORDER BY n DESC LIMIT 1","restrict_tables":["` + table + `"]}`
	var ordinary []time.Duration
	outcomes := map[int]int{}
	var peak int64
	b.ResetTimer()
	for range b.N {
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(seconds)*time.Second)
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, tok := range users {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					req := authed(http.MethodPost, s.APIRoot+"/query/", query, tok).WithContext(ctx)
					status := 0
					if res, err := hc.Do(req); err == nil {
						_, _ = io.Copy(io.Discard, res.Body)
						res.Body.Close()
						status = res.StatusCode
					}
					mu.Lock()
					outcomes[status]++
					mu.Unlock()
				}
			}()
		}
		wg.Add(1)
		go func() { // the sandbox backends' memory, every 50 ms
			defer wg.Done()
			for ctx.Err() == nil {
				if n := sandboxRSS(); n > peak {
					peak = n
				}
				time.Sleep(50 * time.Millisecond)
			}
		}()
		time.Sleep(time.Second)
		for ctx.Err() == nil {
			t0 := time.Now()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.APIRoot+"/collections/"+d.points.id+"/items?limit=10&offset=500", nil)
			req.Header.Set("X-Forwarded-For", "198.51.100.7")
			res, err := hc.Do(req)
			if ctx.Err() != nil {
				break
			}
			if err != nil || res.StatusCode != http.StatusOK {
				b.Fatalf("ordinary request: %v %v", res, err)
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			ordinary = append(ordinary, time.Since(t0))
		}
		cancel()
		wg.Wait()
	}
	b.StopTimer()
	b.ReportMetric(percentileMS(ordinary, 0.50), "ordinary-p50-ms")
	b.ReportMetric(percentileMS(ordinary, 0.99), "ordinary-p99-ms")
	b.ReportMetric(float64(peak)/(1<<20), "sandbox-peak-MiB")
	b.Logf("attack queries ended %v (status: count)", outcomes)
}

// sandboxRSS is the resident memory of every PostgreSQL backend of a sandbox role, in bytes.
func sandboxRSS() int64 {
	var total int64
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		cmd, _ := os.ReadFile("/proc/" + p.Name() + "/cmdline")
		if !strings.Contains(string(cmd), "meridian_sql_") {
			continue
		}
		status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		for _, line := range strings.Split(string(status), "\n") {
			if f := strings.Fields(line); len(f) == 3 && f[0] == "VmRSS:" {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				total += kb << 10
			}
		}
	}
	return total
}

func ogcAdminTokenAt(root string) (string, error) {
	res, err := plain.PostForm(root+"/auth/login", url.Values{"username": {"admin"}, "password": {AdminPassword}})
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(res.Body).Decode(&tok); err != nil || tok.AccessToken == "" {
		return "", fmt.Errorf("admin login: %d %v", res.StatusCode, err)
	}
	return tok.AccessToken, nil
}

// sqlAttackDataset makes an empty public dataset for the attackers' restrict_tables.
func sqlAttackDataset(b *testing.B, s *Server, admin string) string {
	send := func(method, path, body string) map[string]any {
		res, err := plain.Do(authed(method, s.APIRoot+path, body, admin))
		if err != nil {
			b.Fatal(err)
		}
		var m map[string]any
		decode(b, res, &m)
		return m
	}
	ds := send("POST", "/datasets/create/", `{"title":"Attack target","columns":[{"name":"n","type":"integer"}]}`)
	id := ds["id"].(string)
	send("PATCH", "/datasets/"+id, `{"visibility":"public"}`)
	send("PATCH", "/datasets/"+id+"/target-status/", `{"status":"published"}`)
	return ds["table_name"].(string)
}

// sqlAttackUser makes an editor and answers its access token.
func sqlAttackUser(b *testing.B, s *Server, admin string, i int) string {
	name, password := fmt.Sprintf("attacker%d%s", i, randomHex(3)), "Pass-word-"+randomHex(4)
	body := fmt.Sprintf(`{"username":%q,"email":"%s@example.org","password":%q,"role":"editor","email_verified":true}`, name, name, password)
	res, err := plain.Do(authed("POST", s.APIRoot+"/admin/users/", body, admin))
	if err != nil {
		b.Fatal(err)
	}
	res.Body.Close()
	res, err = plain.PostForm(s.APIRoot+"/auth/login", url.Values{"username": {name}, "password": {password}})
	if err != nil {
		b.Fatal(err)
	}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	decode(b, res, &tok)
	return tok.AccessToken
}

// percentileMS is the q-quantile of lat in milliseconds.
func percentileMS(lat []time.Duration, q float64) float64 {
	s := slices.Clone(lat)
	slices.Sort(s)
	return float64(s[min(len(s)-1, int(q*float64(len(s))))].Microseconds()) / 1000
}
