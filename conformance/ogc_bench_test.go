package conformance

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The items benchmarks put OGC API Features items under load (16 concurrent clients by default)
// and measure, side by side in one run, the same FeatureCollection rendered by PostgreSQL itself
// (string_agg(ST_AsGeoJSON(t.*)) read through pgx by as many goroutines): the practical limit of
// a server that lets the database render. Both run against the same database, with the same
// LIMIT/OFFSET and filters, on the same list of randomly drawn pages.
//
// Sizes: BENCH_POINTS points (1,000,000 by default) and a tenth as many polygons, generated once
// per test process with SQL and registered. BENCH_OGC_REQUESTS overrides how many requests each
// side sends per iteration and BENCH_OGC_CONCURRENCY the 16 clients, e.g.
//
//	BENCH_POINTS=100000 BENCH_OGC_REQUESTS=64 go test -run '^$' -bench OGCItems ./conformance/

// ogcBenchTable is one generated table, registered and published.
type ogcBenchTable struct {
	name string // in public
	id   string // the dataset
	rows int
}

type ogcBenchData struct {
	points, polygons ogcBenchTable
	base             *pgxpool.Pool // the baseline's connections
	db               string        // the server's database name
	postmaster       int           // pid of the cluster's postmaster, parent of every backend
}

var (
	ogcBenchOnce  sync.Once
	ogcBenchState *ogcBenchData
	ogcBenchErr   error
	ogcExplained  sync.Map // case name -> true once its plans are logged
)

func ogcBenchConcurrency() int {
	if n, err := strconv.Atoi(os.Getenv("BENCH_OGC_CONCURRENCY")); err == nil && n > 0 {
		return n
	}
	return 16
}

// ogcBenchSetup generates and registers the datasets once per process, outside any timing.
func ogcBenchSetup(b *testing.B) *ogcBenchData {
	b.Helper()
	ogcBenchOnce.Do(func() {
		start := time.Now()
		ogcBenchState, ogcBenchErr = ogcBenchGenerate(benchPoints())
		if ogcBenchErr == nil {
			b.Logf("setup: %d points and %d polygons generated, indexed and registered in %s", ogcBenchState.points.rows,
				ogcBenchState.polygons.rows, time.Since(start).Round(time.Second))
		}
	})
	if ogcBenchErr != nil {
		b.Fatal(ogcBenchErr)
	}
	return ogcBenchState
}

// Both tables have the five attribute columns of the ingest benchmark (int, float, a 20-value
// category, date, name); 70 % of the features are uniform over the world, 30 % fall in 50 dense
// clusters. Rows are written in random physical order, so that a page in key order touches as
// many heap pages as it has rows; the key and a GIST index are built afterwards, then VACUUM
// ANALYZE (statistics and the visibility map a settled table has).
const ogcBenchSQL = `
SELECT setseed(%[3]f);
CREATE TABLE public.%[1]s AS
WITH centers AS (
  SELECT c, -170 + 340 * random() AS cx, -60 + 120 * random() AS cy, 0.05 + 0.5 * random() AS spread
  FROM generate_series(0, 49) c),
raw AS (SELECT g, random() AS u, random() AS a, random() AS b, random() AS v FROM generate_series(1, %[2]d) g),
pts AS (
  SELECT g, v, CASE WHEN u < 0.7 THEN ST_SetSRID(ST_MakePoint(-180 + 360 * a, -85 + 170 * b), 4326)
    ELSE (SELECT ST_SetSRID(ST_MakePoint(cx + spread * sqrt(-2 * ln(1 - a)) * cos(2 * pi() * b),
                                         cy + spread * sqrt(-2 * ln(1 - a)) * sin(2 * pi() * b)), 4326)
          FROM centers WHERE c = g %% 50) END AS p
  FROM raw)
SELECT g AS gid, %[4]s AS geom,
  (v * 1000000)::integer AS n, round((random() * 1000)::numeric, 3)::float8 AS score, 'k' || (g * 7 %% 20) AS kind,
  DATE '2020-01-01' + (g %% 1826) AS day, 'name-' || g AS name
FROM pts ORDER BY random();
ALTER TABLE public.%[1]s ADD PRIMARY KEY (gid);
CREATE INDEX ON public.%[1]s USING gist (geom);
VACUUM ANALYZE public.%[1]s`

func ogcBenchGenerate(points int) (*ogcBenchData, error) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, server.DBURL)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	suffix := randomHex(3)
	d := &ogcBenchData{
		points:   ogcBenchTable{name: "bench_points_" + suffix, rows: points},
		polygons: ogcBenchTable{name: "bench_polygons_" + suffix, rows: max(points/10, 2000)},
	}
	geoms := map[*ogcBenchTable]string{
		&d.points: "p::geometry(Point, 4326)",
		// 9 to 33 vertices, 100 m to 2 km across, as parcels and buildings are.
		&d.polygons: "ST_Buffer(p, 0.001 + 0.01 * random(), 2 + g % 7)::geometry(Polygon, 4326)",
	}
	for _, t := range []*ogcBenchTable{&d.points, &d.polygons} {
		// One statement at a time: the simple protocol would run them as one transaction, and
		// VACUUM cannot run inside one.
		for _, stmt := range strings.Split(fmt.Sprintf(ogcBenchSQL, t.name, t.rows, 0.42, geoms[t]), ";") {
			if strings.TrimSpace(stmt) == "" {
				continue
			}
			if _, err := conn.Exec(ctx, stmt); err != nil {
				return nil, fmt.Errorf("generate %s: %v\n%s", t.name, err, stmt)
			}
		}
		// A VACUUM that runs while another transaction of the cluster is open may leave pages
		// not all-visible; a settled table has its visibility map set (autovacuum sees to it).
		for i := 0; ; i++ {
			var pages, visible int
			err := conn.QueryRow(ctx, "SELECT relpages, relallvisible FROM pg_class WHERE oid = $1::regclass", "public."+t.name).Scan(&pages, &visible)
			if err != nil {
				return nil, err
			}
			if visible >= pages*99/100 || i == 5 {
				break
			}
			time.Sleep(time.Second)
			if _, err := conn.Exec(ctx, "VACUUM public."+t.name); err != nil {
				return nil, err
			}
		}
	}
	var backend int
	if err := conn.QueryRow(ctx, "SELECT current_database(), pg_backend_pid()").Scan(&d.db, &backend); err != nil {
		return nil, err
	}
	d.postmaster = procField(backend, 1) // ppid

	token, err := ogcAdminToken()
	if err != nil {
		return nil, err
	}
	for _, t := range []*ogcBenchTable{&d.points, &d.polygons} {
		if t.id, err = ogcRegisterPublic(token, t.name); err != nil {
			return nil, err
		}
	}
	cfg, err := pgxpool.ParseConfig(server.DBURL)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = int32(ogcBenchConcurrency())
	cfg.ConnConfig.RuntimeParams["application_name"] = "bench-baseline"
	if d.base, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return nil, err
	}
	return d, nil
}

func ogcAdminToken() (string, error) { return ogcAdminTokenAt(server.APIRoot) }

// ogcRegisterPublic registers public.<table> and publishes it for everyone, so that the load
// runs anonymously (as QGIS and GDAL read open data) and no token expires during a long run.
func ogcRegisterPublic(token, table string) (string, error) {
	send := func(method, path string, body any, want int) (map[string]any, error) {
		raw, _ := json.Marshal(body)
		res, err := plain.Do(authed(method, server.APIRoot+path, string(raw), token))
		if err != nil {
			return nil, err
		}
		defer res.Body.Close()
		out, _ := io.ReadAll(res.Body)
		if res.StatusCode != want {
			return nil, fmt.Errorf("%s %s: %d %s", method, path, res.StatusCode, out)
		}
		var m map[string]any
		_ = json.Unmarshal(out, &m)
		return m, nil
	}
	d, err := send("POST", "/ingest/register/", map[string]any{"table_path": "public." + table, "title": table}, 201)
	if err != nil {
		return "", err
	}
	id, _ := d["id"].(string)
	if _, err := send("PATCH", "/datasets/"+id, map[string]any{"visibility": "public"}, 200); err != nil {
		return "", err
	}
	for _, st := range []string{"ready", "internal", "published"} {
		if _, err := send("PATCH", "/datasets/"+id+"/status/", map[string]any{"status": st}, 200); err != nil {
			return "", err
		}
	}
	return id, nil
}

// ogcCase is one kind of request under load.
type ogcCase struct {
	name     string
	polygons bool
	kind     string // page, item, bbox, filter
	limit    int
	gzip     bool // compare with gzip negotiated against the same requests without it
	requests int  // per side and iteration, unless BENCH_OGC_REQUESTS says otherwise
}

var ogcCases = []ogcCase{
	{name: "points/limit1000", kind: "page", limit: 1000, requests: 320},
	{name: "points/limit100", kind: "page", limit: 100, requests: 480},
	{name: "points/item", kind: "item", requests: 6000},
	{name: "points/bbox", kind: "bbox", limit: 1000, requests: 320},
	{name: "points/filter", kind: "filter", limit: 1000, requests: 160},
	{name: "points/limit1000-gzip", kind: "page", limit: 1000, gzip: true, requests: 320},
	{name: "points/limit100-gzip", kind: "page", limit: 100, gzip: true, requests: 960},
	{name: "points/item-gzip", kind: "item", gzip: true, requests: 6000},
	{name: "polygons/limit1000", polygons: true, kind: "page", limit: 1000, requests: 160},
	{name: "polygons/bbox", polygons: true, kind: "bbox", limit: 1000, requests: 320},
	{name: "polygons/item", polygons: true, kind: "item", requests: 6000},
	{name: "polygons/limit1000-gzip", polygons: true, kind: "page", limit: 1000, gzip: true, requests: 160},
	{name: "polygons/item-gzip", polygons: true, kind: "item", gzip: true, requests: 6000},
}

// ogcParams is one drawn request: the same for the server and the baseline.
type ogcParams struct {
	offset int
	bbox   [4]float64
	id     int
	q      string // search text (BenchmarkSearch)
	tile   [3]int // z, x, y (BenchmarkTiles)
}

// draw picks the pages: random pages within the first 100,000 rows (or the table), random
// 20°×20° boxes (about 5,000 points of a million) with one of their first three pages, the category k3 (5 % of the rows) with one of
// its first five pages, random features by key.
func (c ogcCase) draw(rnd *rand.Rand, rows int) ogcParams {
	var p ogcParams
	switch c.kind {
	case "page":
		p.offset = rnd.IntN(max(1, (min(rows, 100_000)-c.limit)/c.limit)) * c.limit
	case "bbox":
		x, y := -180+340*rnd.Float64(), -85+150*rnd.Float64()
		p.bbox = [4]float64{x, y, x + 20, y + 20}
		p.offset = rnd.IntN(3) * c.limit
	case "filter":
		p.offset = rnd.IntN(5) * c.limit
	case "item":
		p.id = 1 + rnd.IntN(rows)
	}
	return p
}

func (c ogcCase) path(t ogcBenchTable, p ogcParams) string {
	base := "/collections/" + t.id + "/items"
	switch c.kind {
	case "item":
		return base + "/" + strconv.Itoa(p.id)
	case "bbox":
		return fmt.Sprintf("%s?limit=%d&offset=%d&bbox=%g,%g,%g,%g", base, c.limit, p.offset, p.bbox[0], p.bbox[1], p.bbox[2], p.bbox[3])
	case "filter":
		return fmt.Sprintf("%s?limit=%d&offset=%d&kind=k3", base, c.limit, p.offset)
	}
	return fmt.Sprintf("%s?limit=%d&offset=%d", base, c.limit, p.offset)
}

// baseline is the SQL that has PostgreSQL render the same answer, and its arguments.
func (c ogcCase) baseline(t ogcBenchTable, p ogcParams) (string, []any) {
	tbl := "public." + pgx.Identifier{t.name}.Sanitize()
	if c.kind == "item" {
		return "SELECT ST_AsGeoJSON(t.*) FROM " + tbl + " t WHERE gid = $1", []any{p.id}
	}
	where, args := "", []any{c.limit, p.offset}
	switch c.kind {
	case "bbox":
		where = " WHERE ST_Intersects(geom, ST_MakeEnvelope($3, $4, $5, $6, 4326))"
		args = append(args, p.bbox[0], p.bbox[1], p.bbox[2], p.bbox[3])
	case "filter":
		where = " WHERE kind = $3"
		args = append(args, "k3")
	}
	// A filtered page answers numberMatched (the contract requires it): PostgreSQL alone counts
	// the matches in the same statement. An unfiltered page takes it from the maintained count,
	// as the server does, so the baseline needs none.
	matched := ""
	if where != "" {
		matched = `'"numberMatched":' || (SELECT count(*) FROM ` + tbl + where + `) || ',' || `
	}
	return `SELECT '{"type":"FeatureCollection",' || ` + matched + `'"features":[' || coalesce(string_agg(ST_AsGeoJSON(t.*), ','), '') || ']}'
		FROM (SELECT * FROM ` + tbl + where + ` ORDER BY gid LIMIT $1 OFFSET $2) t`, args
}

// serverArgs are the arguments of the server's items SQL for p, in the order it binds them
// (feature id, bbox, property filters, then limit + 1 and offset; a single feature has no page),
// to explain that SQL.
func (c ogcCase) serverArgs(p ogcParams) []any {
	switch c.kind {
	case "item":
		return []any{int64(p.id)}
	case "bbox":
		return []any{p.bbox[0], p.bbox[1], p.bbox[2], p.bbox[3], c.limit + 1, p.offset}
	case "filter":
		return []any{"k3", c.limit + 1, p.offset}
	}
	return []any{c.limit + 1, p.offset}
}

// ogcPhase is what one side measured.
type ogcPhase struct {
	n, compressed int
	wall          time.Duration
	lat           []time.Duration
	bytes         int64
	srv, pg, cli  time.Duration // CPU of the server, of the database's backends, of this process
	exited        time.Duration // CPU of the cluster's processes that ended meanwhile
}

func (p *ogcPhase) add(q ogcPhase) {
	p.n += q.n
	p.compressed += q.compressed
	p.wall += q.wall
	p.lat = append(p.lat, q.lat...)
	p.bytes += q.bytes
	p.srv += q.srv
	p.pg += q.pg
	p.cli += q.cli
	p.exited += q.exited
}

func (p ogcPhase) rate() float64 { return float64(p.n) / p.wall.Seconds() }

func (p ogcPhase) pct(q float64) float64 {
	if len(p.lat) == 0 {
		return 0
	}
	s := slices.Clone(p.lat)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return float64(s[max(0, i)].Microseconds()) / 1000
}

func (p ogcPhase) perReq(d time.Duration) float64 {
	return float64(d.Microseconds()) / 1000 / float64(p.n)
}

// BenchmarkOGCItems runs every case of ogcCases as a sub-benchmark. Each iteration sends the same
// drawn requests through both sides in ABBA order (half of A, B, B's other half, A's other half),
// so that drift on a shared machine falls on both. It reports per side the rate, p50 and p99
// latency, and the CPU per request of the server process (/proc/<pid>/stat), of the PostgreSQL
// backends connected to the server's database (/proc, by their process title), of this
// load-generating process (getrusage), and the ratio of the rates. Parallel workers come and go
// between two readings of /proc: their CPU is in pg-exited-cpu, the children's CPU the
// postmaster collected meanwhile, which on a cluster shared with other work also holds the CPU
// of other sessions that ended.
func BenchmarkOGCItems(b *testing.B) {
	d := ogcBenchSetup(b)
	conc := ogcBenchConcurrency()
	b.Logf("machine: %d CPUs shared by the server, PostgreSQL and this load generator; %d concurrent clients", runtime.NumCPU(), conc)
	hc := benchClient(conc)
	for _, c := range ogcCases {
		b.Run(c.name, func(b *testing.B) {
			t := d.points
			if c.polygons {
				t = d.polygons
			}
			requests := c.requests
			if n, err := strconv.Atoi(os.Getenv("BENCH_OGC_REQUESTS")); err == nil && n > 0 {
				requests = n
			}
			ours := func(gz bool) func(context.Context, ogcParams) (int64, bool, error) {
				return func(ctx context.Context, p ogcParams) (int64, bool, error) {
					req, _ := http.NewRequestWithContext(ctx, http.MethodGet, server.APIRoot+c.path(t, p), nil)
					if gz {
						req.Header.Set("Accept-Encoding", "gzip")
					}
					res, err := hc.Do(req)
					if err != nil {
						return 0, false, err
					}
					defer res.Body.Close()
					n, err := io.Copy(io.Discard, res.Body)
					if err == nil && res.StatusCode != http.StatusOK {
						err = fmt.Errorf("%s: %d", req.URL, res.StatusCode)
					}
					return n, res.Header.Get("Content-Encoding") == "gzip", err
				}
			}
			base := func(ctx context.Context, p ogcParams) (int64, bool, error) {
				sql, args := c.baseline(t, p)
				var body []byte
				err := d.base.QueryRow(ctx, sql, args...).Scan(&body)
				return int64(len(body)), false, err
			}
			aName, bName, a, other := "server", "baseline", ours(c.gzip), base
			if c.gzip {
				aName, bName, other = "gzip", "identity", ours(false)
			}
			rnd := rand.New(rand.NewPCG(uint64(len(c.name)), 2026))
			check := c.draw(rnd, t.rows)
			check.offset = 0 // a first page has features whatever the box
			ogcBenchCheck(b, hc, d, c, t, check)
			if _, done := ogcExplained.LoadOrStore(c.name, true); !done && !c.gzip {
				ogcBenchExplain(b, d, c, t, rnd)
			}
			// Warm both sides (connections, statement caches) before the first measured request.
			for _, side := range []func(context.Context, ogcParams) (int64, bool, error){a, other} {
				if _, err := ogcRun(conc, conc, func(i int) ogcParams { return c.draw(rnd, t.rows) }, side, d); err != nil {
					b.Fatal(err)
				}
			}
			sa, sb := abba(b, conc, requests, func() ogcParams { return c.draw(rnd, t.rows) }, a, other, d)
			b.ReportMetric(sa.rate(), aName+"-req/s")
			b.ReportMetric(sb.rate(), bName+"-req/s")
			b.ReportMetric(sa.rate()/sb.rate(), "ratio")
			b.ReportMetric(sa.pct(0.50), aName+"-p50-ms")
			b.ReportMetric(sa.pct(0.99), aName+"-p99-ms")
			b.ReportMetric(sb.pct(0.50), bName+"-p50-ms")
			b.ReportMetric(sb.pct(0.99), bName+"-p99-ms")
			b.ReportMetric(sa.perReq(sa.srv), aName+"-srv-cpu-ms/req")
			b.ReportMetric(sa.perReq(sa.pg), aName+"-pg-cpu-ms/req")
			b.ReportMetric(sa.perReq(sa.cli), aName+"-client-cpu-ms/req")
			if c.gzip {
				b.ReportMetric(sb.perReq(sb.srv), bName+"-srv-cpu-ms/req")
				b.ReportMetric(float64(sa.compressed)/float64(sa.n), "gzipped-share")
			}
			b.ReportMetric(sb.perReq(sb.pg), bName+"-pg-cpu-ms/req")
			b.ReportMetric(sa.perReq(sa.exited), aName+"-pg-exited-cpu-ms/req")
			b.ReportMetric(sb.perReq(sb.exited), bName+"-pg-exited-cpu-ms/req")
			b.ReportMetric(sb.perReq(sb.cli), bName+"-client-cpu-ms/req")
			b.ReportMetric(float64(sa.bytes)/float64(sa.n)/1024, aName+"-KiB/resp")
			b.ReportMetric(float64(sb.bytes)/float64(sb.n)/1024, bName+"-KiB/resp")
		})
	}
}

// ogcRun sends n requests from conc workers and measures them.
func ogcRun(conc, n int, param func(int) ogcParams, do func(context.Context, ogcParams) (int64, bool, error), d *ogcBenchData) (ogcPhase, error) {
	ctx := context.Background()
	var ph ogcPhase
	ph.lat = make([]time.Duration, n)
	var next atomic.Int64
	var size, compressed atomic.Int64
	var firstErr error
	var mu sync.Mutex
	var wg sync.WaitGroup
	srv0, pg0, cli0, exited0 := procCPU(server.cmd.Process.Pid), backendCPU(d.db), selfCPU(), childrenCPU(d.postmaster)
	start := time.Now()
	for w := 0; w < min(conc, n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				t0 := time.Now()
				n, gz, err := do(ctx, param(i))
				ph.lat[i] = time.Since(t0)
				size.Add(n)
				if gz {
					compressed.Add(1)
				}
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	ph.wall = time.Since(start)
	ph.srv, ph.cli = procCPU(server.cmd.Process.Pid)-srv0, selfCPU()-cli0
	for pid, cpu := range backendCPU(d.db) {
		ph.pg += cpu - pg0[pid] // a backend that started meanwhile counts from zero
	}
	ph.exited = childrenCPU(d.postmaster) - exited0
	ph.n, ph.bytes, ph.compressed = n, size.Load(), int(compressed.Load())
	return ph, firstErr
}

// ogcBenchCheck compares one answer of the server with the baseline's before anything is timed:
// the same features, and with gzip a body that inflates to the same page.
func ogcBenchCheck(b *testing.B, hc *http.Client, d *ogcBenchData, c ogcCase, t ogcBenchTable, p ogcParams) {
	b.Helper()
	req, _ := http.NewRequest(http.MethodGet, server.APIRoot+c.path(t, p), nil)
	if c.gzip {
		req.Header.Set("Accept-Encoding", "gzip")
	}
	res, err := hc.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	var body io.Reader = res.Body
	if res.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(res.Body)
		if err != nil {
			b.Fatal(err)
		}
		body = zr
	}
	raw, err := io.ReadAll(body)
	if err != nil || res.StatusCode != 200 {
		b.Fatalf("%s: %d %v %.300s", req.URL, res.StatusCode, err, raw)
	}
	sql, args := c.baseline(t, p)
	var want []byte
	if err := d.base.QueryRow(context.Background(), sql, args...).Scan(&want); err != nil {
		b.Fatal(err)
	}
	count := func(doc []byte) int {
		var v struct {
			Type     string
			Features []json.RawMessage
		}
		if err := json.Unmarshal(doc, &v); err != nil {
			b.Fatalf("%s: %v: %.300s", req.URL, err, doc)
		}
		if v.Type == "Feature" {
			return 1
		}
		return len(v.Features)
	}
	if got, exp := count(raw), count(want); got != exp || got == 0 {
		b.Fatalf("%s: %d features, the baseline has %d", req.URL, got, exp)
	}
}

// ogcBenchExplain logs EXPLAIN (ANALYZE, BUFFERS) of the server's items SQL (its last statement
// on the table, read from pg_stat_activity after one request, with the arguments it bound) and of
// the baseline's, for one drawn request.
func ogcBenchExplain(b *testing.B, d *ogcBenchData, c ogcCase, t ogcBenchTable, rnd *rand.Rand) {
	b.Helper()
	ctx := context.Background()
	p := c.draw(rnd, t.rows)
	if c.kind == "page" {
		p.offset = min(t.rows, 100_000) / 2 / c.limit * c.limit // the middle of the pages drawn
	}
	res, err := plain.Get(server.APIRoot + c.path(t, p))
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	var sql string
	err = d.base.QueryRow(ctx, `SELECT query FROM pg_stat_activity WHERE datname = current_database()
		AND application_name = 'meridian' AND query LIKE '%'||$1||'%' ORDER BY query_start DESC LIMIT 1`, t.name).Scan(&sql)
	if err != nil {
		b.Fatalf("the server's items SQL: %v", err)
	}
	explain := func(sql string, args []any) string {
		rows, err := d.base.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS) "+sql, args...)
		if err != nil {
			return "explain: " + err.Error()
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return "explain: " + err.Error()
		}
		return strings.Join(lines, "\n")
	}
	bsql, bargs := c.baseline(t, p)
	b.Logf("plans of %s (%s):\n-- server: %s\n%s\n-- baseline: %s\n%s", c.name, c.path(t, p), sql, explain(sql, c.serverArgs(p)),
		strings.Join(strings.Fields(bsql), " "), explain(bsql, bargs))
}

// procField is field i of /proc/<pid>/stat counted from the state (i = 0), 0 when unreadable.
func procField(pid, i int) int {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command may hold spaces and parentheses; the fields after its last ')' are fixed.
	f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
	if len(f) <= i {
		return 0
	}
	v, _ := strconv.Atoi(f[i])
	return v
}

// ticks are USER_HZ clock ticks, 100 per second on Linux.
func ticks(n int) time.Duration { return time.Duration(n) * 10 * time.Millisecond }

// procCPU is the CPU (user + system) process pid has used so far.
func procCPU(pid int) time.Duration { return ticks(procField(pid, 11) + procField(pid, 12)) }

// childrenCPU is the CPU of the ended children pid has waited for: for the postmaster, the
// backends and parallel workers that exited, in any database of the cluster.
func childrenCPU(pid int) time.Duration { return ticks(procField(pid, 13) + procField(pid, 14)) }

// backendCPU is the CPU of every PostgreSQL backend connected to database db, by pid: backends
// set their process title to "postgres: <user> <database> <client> <state>". Parallel workers
// of those backends are included while they live; a worker that comes and goes between two
// readings is missed (the plans logged show whether any was launched).
func backendCPU(db string) map[int]time.Duration {
	out := map[int]time.Duration{}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	leaders := map[string]bool{}
	var workers []int
	for _, dir := range dirs {
		pid, err := strconv.Atoi(filepath.Base(dir))
		if err != nil {
			continue
		}
		title, err := os.ReadFile(dir + "/cmdline")
		if err != nil || !bytes.HasPrefix(title, []byte("postgres: ")) {
			continue
		}
		f := strings.Fields(strings.ReplaceAll(string(title), "\x00", " "))
		switch {
		case len(f) >= 3 && f[2] == db:
			out[pid] = procCPU(pid)
			leaders[strconv.Itoa(pid)] = true
		case len(f) >= 6 && f[1] == "parallel" && f[2] == "worker":
			workers = append(workers, pid)
		}
	}
	for _, pid := range workers {
		title, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if f := strings.Fields(strings.ReplaceAll(string(title), "\x00", " ")); len(f) >= 6 && leaders[f[5]] {
			out[pid] = procCPU(pid)
		}
	}
	return out
}

// selfCPU is the CPU this process has used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// abba runs b.N iterations of n requests per side, drawn by draw, in the order half of a, half
// of other, other's second half, a's second half: drift on a shared machine falls on both sides.
// benchClient is the HTTP client of the side-by-side benchmarks: connections for every client,
// and no compression, since the floor beside it compresses nothing (Accept-Encoding is set by
// hand where a benchmark wants it).
func benchClient(conc int) *http.Client {
	return &http.Client{Timeout: 5 * time.Minute, Transport: &http.Transport{MaxIdleConns: 4 * conc, MaxIdleConnsPerHost: 4 * conc,
		IdleConnTimeout: time.Minute, DisableCompression: true}}
}

func abba(b *testing.B, conc, n int, draw func() ogcParams, a, other func(context.Context, ogcParams) (int64, bool, error), d *ogcBenchData) (sa, sb ogcPhase) {
	b.Helper()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		params := make([]ogcParams, n)
		for j := range params {
			params[j] = draw()
		}
		half := n / 2
		first := func(i int) ogcParams { return params[i] }
		second := func(i int) ogcParams { return params[half+i] }
		for _, step := range []struct {
			side  func(context.Context, ogcParams) (int64, bool, error)
			into  *ogcPhase
			n     int
			param func(int) ogcParams
		}{{a, &sa, half, first}, {other, &sb, half, first}, {other, &sb, n - half, second}, {a, &sa, n - half, second}} {
			ph, err := ogcRun(conc, step.n, step.param, step.side, d)
			if err != nil {
				b.Fatal(err)
			}
			step.into.add(ph)
		}
	}
	b.StopTimer()
	return sa, sb
}
