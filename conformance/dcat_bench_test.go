package conformance

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// dcatBenchSetup makes n public, published records with a summary, licence, language, vintage,
// extent, theme categories and a contact each, in one statement each (the records query and the
// mapping read all of them).
func dcatBenchSetup(b *testing.B, n int) {
	b.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, server.DBURL)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	var have int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM catalog.datasets WHERE title LIKE 'bench dcat %'`).Scan(&have); err != nil {
		b.Fatal(err)
	}
	if have >= n {
		return
	}
	start := time.Now()
	if _, err := pool.Exec(ctx, `INSERT INTO catalog.datasets (table_schema, table_name, title, summary, visibility, record_type,
			record_status, theme_category, source_organization, extent_bbox, license, language, update_frequency, lineage_summary,
			created_by, data_vintage_start, data_vintage_end, srid)
		SELECT 'data', 'bench_dcat_' || i, 'bench dcat ' || lpad(i::text, 6, '0'), 'Survey number ' || i || ' of the coast.',
			'public', 'vector_dataset', 'published', ARRAY['oceans', 'transportation'], 'Agency ' || (i % 23),
			ARRAY[(i % 340) - 170, (i % 150) - 75, (i % 340) - 169, (i % 150) - 74]::float8[], 'CC BY 4.0', 'en', 'annually',
			'Imported from survey ' || i, (SELECT id FROM catalog.users WHERE username = 'admin'),
			DATE '2000-01-01' + i % 9000, DATE '2000-01-01' + i % 9000 + 30, 4326
		FROM generate_series($1::int, $2::int) i`, have+1, n); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO catalog.record_contacts (dataset_id, role, name, email)
		SELECT d.id, 'pointOfContact', 'Desk ' || d.table_name, d.table_name || '@example.org' FROM catalog.datasets d
		WHERE d.title LIKE 'bench dcat %' AND NOT EXISTS (SELECT FROM catalog.record_contacts c WHERE c.dataset_id = d.id)`); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "VACUUM ANALYZE catalog.datasets, catalog.record_contacts"); err != nil {
		b.Fatal(err)
	}
	b.Logf("setup: %d records in %s", n-have, time.Since(start).Round(time.Millisecond))
}

// BenchmarkDCATCatalogFeed streams a 10,000-record catalog page to an anonymous client and
// reports the time to its last byte and the server's resident memory growth during it (sampled
// from /proc every 2 ms), for JSON-LD and Turtle. Targets: under 2 s and under 64 MB.
func BenchmarkDCATCatalogFeed(b *testing.B) {
	const n = 10000
	dcatBenchSetup(b, n)
	pid := server.cmd.Process.Pid
	plain := &http.Client{Timeout: time.Minute}
	for _, c := range []struct{ name, path, accept string }{
		{"dcat-ap-jsonld", "/datasets/dcat/?limit=10000", "application/ld+json"},
		{"dcat-us-turtle", "/datasets/dcat-us/3.0/?limit=10000", "text/turtle"},
		{"geodcat-ap-rdfxml", "/datasets/geodcat-ap/?limit=10000", "application/rdf+xml"},
	} {
		b.Run(c.name, func(b *testing.B) {
			var tookMS, grewMB, cpuMS []float64
			var size int64
			for i := 0; i < b.N; i++ {
				base, cpu0 := procStatusKB(b, pid, "VmRSS"), procCPUms(b, pid)
				var peak atomic.Int64
				stop := make(chan struct{})
				var wg sync.WaitGroup
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						if kb := int64(procStatusKB(b, pid, "VmRSS")); kb > peak.Load() {
							peak.Store(kb)
						}
						select {
						case <-stop:
							return
						case <-time.After(2 * time.Millisecond):
						}
					}
				}()
				req, _ := http.NewRequest(http.MethodGet, server.APIRoot+c.path, nil)
				req.Header.Set("Accept", c.accept)
				start := time.Now()
				res, err := plain.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				size, err = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				took := time.Since(start)
				close(stop)
				wg.Wait()
				if err != nil || res.StatusCode != 200 {
					b.Fatalf("%s: %d %v", c.path, res.StatusCode, err)
				}
				tookMS = append(tookMS, float64(took.Milliseconds()))
				cpuMS = append(cpuMS, procCPUms(b, pid)-cpu0)
				grewMB = append(grewMB, float64(peak.Load()-int64(base))/1024)
			}
			ms, mb := median(tookMS), median(grewMB)
			b.ReportMetric(ms, "ms-to-last-byte")
			b.ReportMetric(mb, "MB-rss-growth")
			b.ReportMetric(float64(size)/(1<<20), "MB-document")
			// The server's own CPU time: what the feed costs whatever else the machine runs.
			b.ReportMetric(median(cpuMS), "ms-server-cpu")
			b.Logf("%s: %.0f ms to the last byte, %.0f ms of server CPU, %.1f MB of server memory (medians of %d), %.1f MB",
				c.name, ms, median(cpuMS), mb, len(tookMS), float64(size)/(1<<20))
			if ms > 2000 || mb > 64 {
				b.Errorf("%s: over 2 s or 64 MB", c.name)
			}
		})
	}
}

// median is the middle of xs (the mean of the two middle ones of an even count).
func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// procCPUms is a process's CPU time so far (user and system, /proc/<pid>/stat), in ms.
func procCPUms(tb testing.TB, pid int) float64 {
	tb.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		tb.Fatal(err)
	}
	// Fields after the command's closing parenthesis: state is field 3, utime 14, stime 15.
	fields := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	return (utime + stime) * 1000 / 100 // USER_HZ is 100 on Linux
}
