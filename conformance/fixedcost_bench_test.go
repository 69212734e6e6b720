package conformance

import (
	"io"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkFixedCost puts the requests that touch no table under load (health, the landing page,
// conformance): what they cost is the fixed cost every request pays (routing, middleware,
// request validation, the generated wrapper, encoding), the floor under tiles, search and the
// web UI's many small calls. Target: at least 15,000 req/s each on the 2-core machine, shared
// with this load generator. BENCH_FIXED_REQUESTS sets the requests per iteration (20,000).
func BenchmarkFixedCost(b *testing.B) {
	conc := ogcBenchConcurrency()
	requests := 20000
	if n, err := strconv.Atoi(os.Getenv("BENCH_FIXED_REQUESTS")); err == nil && n > 0 {
		requests = n
	}
	b.Logf("machine: %d CPUs shared by the server, PostgreSQL and this load generator; %d concurrent clients", runtime.NumCPU(), conc)
	hc := benchClient(conc)
	for _, path := range []string{"/health", "/", "/conformance"} {
		b.Run(path, func(b *testing.B) {
			get := func() error {
				res, err := hc.Get(server.APIRoot + path)
				if err != nil {
					return err
				}
				defer res.Body.Close()
				_, err = io.Copy(io.Discard, res.Body)
				if err == nil && res.StatusCode != http.StatusOK {
					err = &statusError{path, res.StatusCode}
				}
				return err
			}
			if err := fixedRun(conc, conc, get); err != nil { // warm the connections
				b.Fatal(err)
			}
			var wall, srv, cli time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				srv0, cli0, start := procCPU(server.cmd.Process.Pid), selfCPU(), time.Now()
				if err := fixedRun(conc, requests, get); err != nil {
					b.Fatal(err)
				}
				wall += time.Since(start)
				srv += procCPU(server.cmd.Process.Pid) - srv0
				cli += selfCPU() - cli0
			}
			b.StopTimer()
			n := float64(b.N * requests)
			b.ReportMetric(n/wall.Seconds(), "req/s")
			b.ReportMetric(float64(srv.Microseconds())/1000/n, "srv-cpu-ms/req")
			b.ReportMetric(float64(cli.Microseconds())/1000/n, "client-cpu-ms/req")
		})
	}
}

type statusError struct {
	path   string
	status int
}

func (e *statusError) Error() string { return e.path + ": " + strconv.Itoa(e.status) }

// fixedRun sends n requests from conc workers; the first error ends it.
func fixedRun(conc, n int, get func() error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for w := 0; w < min(conc, n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(n) {
				if err := get(); err != nil {
					once.Do(func() { first = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}
