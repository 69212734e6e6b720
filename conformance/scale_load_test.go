//go:build scale

package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// loadClients is how many clients the rolling restart and the endurance run send the mix from.
const loadClients = 16

// loadFixture is what the load clients read and write: public datasets of 30 points each, and
// per client a user of its own (its API key, its public map) so that its imports and exports
// are one user's, as in a real catalog, not sixteen clients behind one account's quotas.
type loadFixture struct {
	root     string // through the proxy
	key      string // the datasets' owner's API key: it outlives access tokens over an hour's run
	datasets []loadDataset
	clients  []loadClient
	s3       bool // presigned uploads go to the cluster's MinIO: half the imports use them

	mu      sync.Mutex
	imports []*loadImport // every import the load committed
}

type loadDataset struct {
	id, table string
	gids      []int
	tile      atomic.Pointer[tileGrant]
}

type tileGrant struct {
	query string
	exp   time.Time
}

type loadClient struct {
	key   string
	mapID string
	live  []*loadImport // its imported datasets not deleted yet (at most keepImports)
}

// loadImport is one import of the load: its job, and what became of it.
type loadImport struct {
	job, dataset string
	ended        bool // complete or failed, as the client saw it or the settling found it
	deleted      bool // the client deleted the dataset (keepImports)
}

// keepImports bounds each client's imported datasets: past it the client deletes its oldest, so
// an hour's run does not grow the catalog (and every search over it) by thousands of datasets.
const keepImports = 2

func newLoadFixture(t *testing.T, owner session, root string, clients int) *loadFixture {
	key, _ := newKey(t, owner, "full")
	fx := &loadFixture{root: root, key: key, datasets: make([]loadDataset, 4), clients: make([]loadClient, clients)}
	for i := range fx.datasets {
		d := &fx.datasets[i]
		d.id = ogcDataset(t, owner, "public")
		d.table = call(t, "GET", "/datasets/"+d.id, nil, bearer(owner.Access)...).JSON(t)["table_name"].(string)
		d.gids, _, _ = features(t, call(t, "GET", "/collections/"+d.id+"/items?limit=100", nil))
	}
	for i := range fx.clients {
		u := newUser(t, "editor")
		cl := &fx.clients[i]
		cl.key, _ = newKey(t, u, "full")
		m := want(t, "a client's map", call(t, "POST", "/maps/", map[string]any{"name": "Load " + strconv.Itoa(i)}, bearer(u.Access)...), 201).JSON(t)
		cl.mapID = m["id"].(string)
		want(t, "the map made public", call(t, "PUT", "/maps/"+cl.mapID, map[string]any{"visibility": "public"}, bearer(u.Access)...), 200)
	}
	return fx
}

// loadStats keeps every request's latency by window of the run and by the replica that
// answered (X-Replica from the proxy; "-" when none did), and the failures.
type loadStats struct {
	mu      sync.Mutex
	start   time.Time
	window  time.Duration
	wins    []map[string]*winFigures
	samples []string
	byOp    map[string]int
}

type winFigures struct {
	lat  []time.Duration
	errs int
}

func newLoadStats(window time.Duration) *loadStats {
	return &loadStats{start: time.Now(), window: window, byOp: map[string]int{}}
}

func (s *loadStats) record(op, replica string, d time.Duration, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := int(time.Since(s.start) / s.window)
	for len(s.wins) <= w {
		s.wins = append(s.wins, map[string]*winFigures{})
	}
	if replica == "" {
		replica = "-"
	}
	f := s.wins[w][replica]
	if f == nil {
		f = &winFigures{}
		s.wins[w][replica] = f
	}
	s.byOp[op]++
	if err != nil {
		f.errs++
		if len(s.samples) < 20 {
			s.samples = append(s.samples, fmt.Sprintf("%s at %s: %v", op, time.Since(s.start).Round(time.Millisecond), err))
		}
		return
	}
	f.lat = append(f.lat, d)
}

// windowFigures returns the count, p50, p99 and errors of window w, of replica ("" for all).
func (s *loadStats) windowFigures(w int, replica string) (n int, p50, p99 time.Duration, errs int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w >= len(s.wins) {
		return 0, 0, 0, 0
	}
	var l []time.Duration
	for r, f := range s.wins[w] {
		if replica == "" || r == replica {
			l = append(l, f.lat...)
			errs += f.errs
		}
	}
	sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
	if len(l) > 0 {
		p50, p99 = l[len(l)/2], l[min(len(l)-1, len(l)*99/100)]
	}
	return len(l), p50, p99, errs
}

func (s *loadStats) totals() (n, errs int, samples []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range s.wins {
		for _, f := range w {
			n += len(f.lat) + f.errs
			errs += f.errs
		}
	}
	return n, errs, append([]string(nil), s.samples...)
}

func (s *loadStats) ops() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, _ := json.Marshal(s.byOp)
	return string(b)
}

// runLoad sends the mix from clients goroutines through the proxy until ctx ends:
//   - reads 60 %: items pages, single features, search, tiles, dataset records, maps;
//   - writes 25 %: feature edits (each client its own feature), dataset metadata, its map;
//   - imports 10 %: a small GeoJSON uploaded, committed (round robin puts the two on different
//     replicas about half the time) and followed until its job ends, as a user waits for it;
//   - exports 5 %: a whole dataset as GeoJSON, GeoPackage or CSV, read to its last byte.
//
// Every request is counted on its own (an import's upload, commit and job polls, the deletion of
// a client's oldest import). Any answer but the expected one, and an import whose job fails, is
// an error a user would see.
func runLoad(ctx context.Context, fx *loadFixture, clients int, stats *loadStats) {
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hc := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 2}}
			rng := rand.New(rand.NewPCG(uint64(c), uint64(time.Now().UnixNano())))
			rec := func(op, replica string, d time.Duration, err error) {
				if ctx.Err() == nil { // a request cut off by the end of the run is not the service's
					stats.record(op, replica, d, err)
				}
			}
			for ctx.Err() == nil {
				fx.step(ctx, hc, rng, c, rec)
			}
		}()
	}
	wg.Wait()
}

type recorder func(op, replica string, d time.Duration, err error)

// step is one pick of the mix by client c.
func (fx *loadFixture) step(ctx context.Context, hc *http.Client, rng *rand.Rand, c int, rec recorder) {
	d := &fx.datasets[c%len(fx.datasets)]
	cl := &fx.clients[c%len(fx.clients)]
	// Each client edits its own feature: concurrent edits of one feature are not what is measured.
	own := d.gids[(c/len(fx.datasets))%len(d.gids)]
	owner := apiKey(fx.key)
	switch p := rng.IntN(100); {
	case p < 14:
		fx.do(ctx, hc, rec, "items page", "GET", fmt.Sprintf("/collections/%s/items?limit=10&offset=%d", d.id, rng.IntN(20)), nil, []int{200}, nil)
	case p < 24:
		fx.do(ctx, hc, rec, "feature", "GET", fmt.Sprintf("/collections/%s/items/%d", d.id, d.gids[rng.IntN(len(d.gids))]), nil, []int{200}, nil)
	case p < 32:
		fx.do(ctx, hc, rec, "search", "GET", "/search/datasets/?q=places&limit=10", nil, []int{200}, nil)
	case p < 44:
		q, err := fx.tileQuery(ctx, hc, d)
		if err != nil {
			rec("tile token", "", 0, err)
			return
		}
		z := rng.IntN(4)
		fx.do(ctx, hc, rec, "tile", "GET", fmt.Sprintf("/tiles/data.%s/%d/%d/%d.pbf?%s", d.table, z, rng.IntN(1<<z), rng.IntN(1<<z), q), nil, []int{200, 204}, nil)
	case p < 52:
		fx.do(ctx, hc, rec, "record", "GET", "/datasets/"+d.id, nil, []int{200}, nil)
	case p < 60:
		fx.do(ctx, hc, rec, "map", "GET", "/maps/"+fx.clients[rng.IntN(len(fx.clients))].mapID, nil, []int{200}, nil)
	case p < 72:
		fx.do(ctx, hc, rec, "feature edit", "PATCH", fmt.Sprintf("/datasets/%s/features/%d", d.id, own),
			map[string]any{"properties": map[string]any{"name": "edit " + strconv.Itoa(rng.IntN(1e6))}}, []int{200}, owner)
	case p < 78:
		fx.do(ctx, hc, rec, "metadata edit", "PATCH", "/datasets/"+d.id, map[string]any{"description": "load " + strconv.Itoa(rng.IntN(1e6))}, []int{200}, owner)
	case p < 85:
		fx.do(ctx, hc, rec, "map edit", "PUT", "/maps/"+cl.mapID, map[string]any{"name": "Load map " + strconv.Itoa(rng.IntN(1e6))}, []int{200}, apiKey(cl.key))
	case p < 95:
		fx.importOne(ctx, hc, rng, cl, rec)
	default:
		format := []string{"geojson", "gpkg", "csv"}[rng.IntN(3)]
		fx.do(ctx, hc, rec, "export "+format, "GET", "/datasets/"+d.id+"/export?format="+format, nil, []int{200}, apiKey(cl.key))
	}
}

// do sends one request (headers: names and values), records it and answers the body when the
// status was one of ok.
func (fx *loadFixture) do(ctx context.Context, hc *http.Client, rec recorder, op, method, path string, body any, ok []int, headers []string) ([]byte, bool) {
	start := time.Now()
	status, b, replica, err := send(ctx, hc, method, fx.root+path, body, headers...)
	took := time.Since(start)
	if err == nil {
		for _, code := range ok {
			if status == code {
				rec(op, replica, took, nil)
				return b, true
			}
		}
		err = fmt.Errorf("%s %s: %d %s", method, path, status, b[:min(len(b), 300)])
	}
	rec(op, replica, took, err)
	return nil, false
}

// importOne uploads a small file, commits it and follows its job to the end; past keepImports
// the client deletes its oldest imported dataset.
func (fx *loadFixture) importOne(ctx context.Context, hc *http.Client, rng *rand.Rand, cl *loadClient, rec recorder) {
	name, content := "load-"+randomHex(3)+".geojson", pointsGeoJSON(5+rng.IntN(46))
	key := apiKey(cl.key)
	var up struct {
		JobID string   `json:"job_id"`
		URLs  []string `json:"urls"`
	}
	if fx.s3 && rng.IntN(2) == 0 {
		// Presigned: asked of one replica, sent to MinIO, completed through the proxy again.
		b, ok := fx.do(ctx, hc, rec, "import presign", "POST", "/ingest/upload/presigned", map[string]any{"filename": name, "file_size": len(content)}, []int{200}, key)
		if !ok {
			return
		}
		if err := json.Unmarshal(b, &up); err != nil || up.JobID == "" || len(up.URLs) != 1 {
			rec("import presign", "", 0, fmt.Errorf("presign answer: %s", b))
			return
		}
		start := time.Now()
		status, b, _, err := send(ctx, hc, "PUT", up.URLs[0], rawBody(content))
		if err == nil && status != 200 {
			err = fmt.Errorf("PUT to MinIO: %d %s", status, b)
		}
		rec("import put to MinIO", "minio", time.Since(start), err)
		if err != nil {
			return
		}
		if _, ok := fx.do(ctx, hc, rec, "import complete upload", "POST", "/ingest/upload/presigned/"+up.JobID+"/complete", map[string]any{}, []int{200}, key); !ok {
			return
		}
	} else {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		fw, _ := mw.CreateFormFile("file", name)
		_, _ = fw.Write(content)
		_ = mw.Close()
		b, ok := fx.do(ctx, hc, rec, "import upload", "POST", "/ingest/upload", multipartBody{mw.FormDataContentType(), buf.Bytes()}, []int{201}, key)
		if !ok {
			return
		}
		if err := json.Unmarshal(b, &up); err != nil || up.JobID == "" {
			rec("import upload", "", 0, fmt.Errorf("upload answer without job_id: %s", b))
			return
		}
	}
	if _, ok := fx.do(ctx, hc, rec, "import commit", "POST", "/ingest/commit/"+up.JobID,
		map[string]any{"title": "Load import " + randomHex(3), "visibility": "private"}, []int{202}, key); !ok {
		return
	}
	im := &loadImport{job: up.JobID}
	fx.mu.Lock()
	fx.imports = append(fx.imports, im)
	fx.mu.Unlock()
	for ctx.Err() == nil {
		b, ok := fx.do(ctx, hc, rec, "job status", "GET", "/jobs/"+up.JobID, nil, []int{200}, key)
		if !ok {
			return
		}
		var job struct {
			Status    string  `json:"status"`
			DatasetID *string `json:"dataset_id"`
			Error     *string `json:"error_message"`
		}
		_ = json.Unmarshal(b, &job)
		switch job.Status {
		case "complete":
			fx.mu.Lock()
			im.ended, im.dataset = true, strOf(job.DatasetID)
			cl.live = append(cl.live, im)
			var oldest *loadImport
			if len(cl.live) > keepImports {
				// Marked first: a deletion cut off by the end of the run may still take effect.
				oldest, cl.live = cl.live[0], cl.live[1:]
				oldest.deleted = true
			}
			fx.mu.Unlock()
			if oldest != nil {
				fx.do(ctx, hc, rec, "import delete", "DELETE", "/datasets/"+oldest.dataset, nil, []int{204}, key)
			}
			return
		case "failed":
			fx.mu.Lock()
			im.ended = true
			fx.mu.Unlock()
			rec("import", "", 0, fmt.Errorf("import job %s failed: %s", up.JobID, strOf(job.Error)))
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func strOf(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// settle waits until every import of the load has ended (the run's end cuts clients off while
// they follow their jobs) and answers those that failed: errors a user would have seen.
func (fx *loadFixture) settle(t *testing.T, limit time.Duration) []string {
	t.Helper()
	db := connect(t, server.DBURL)
	fx.mu.Lock()
	var ids []string
	for _, im := range fx.imports {
		if !im.ended {
			ids = append(ids, im.job)
		}
	}
	fx.mu.Unlock()
	deadline := time.Now().Add(limit)
	for {
		var open int
		if err := db.QueryRow(context.Background(), "SELECT count(*) FROM catalog.ingest_jobs WHERE id = ANY($1::uuid[]) AND status NOT IN ('complete', 'failed')", ids).Scan(&open); err != nil {
			t.Fatal(err)
		}
		if open == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d imports of the load still running %s after it ended", open, limit)
		}
		time.Sleep(200 * time.Millisecond)
	}
	var failed []string
	rows, err := db.Query(context.Background(), "SELECT id::text || ': ' || coalesce(error_message, '') FROM catalog.ingest_jobs WHERE id = ANY($1::uuid[]) AND status = 'failed'", fx.jobIDs())
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var s string
		_ = rows.Scan(&s)
		failed = append(failed, s)
	}
	return failed
}

func (fx *loadFixture) jobIDs() []string {
	fx.mu.Lock()
	defer fx.mu.Unlock()
	ids := make([]string, len(fx.imports))
	for i, im := range fx.imports {
		ids[i] = im.job
	}
	return ids
}

// tileQuery is the dataset's signed tile query, asked again through the proxy when it has less
// than five minutes left.
func (fx *loadFixture) tileQuery(ctx context.Context, hc *http.Client, d *loadDataset) (string, error) {
	if g := d.tile.Load(); g != nil && time.Until(g.exp) > 5*time.Minute {
		return g.query, nil
	}
	req, _ := http.NewRequestWithContext(ctx, "GET", fx.root+"/tiles/token/"+d.id+"/", nil)
	req.Header.Set("X-Api-Key", fx.key)
	res, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	var tok map[string]any
	if err := json.NewDecoder(res.Body).Decode(&tok); err != nil {
		return "", fmt.Errorf("tile token: %d: %w", res.StatusCode, err)
	}
	if res.StatusCode != 200 || tok["sig"] == nil {
		return "", fmt.Errorf("tile token: %d %v", res.StatusCode, tok)
	}
	g := &tileGrant{query: signedQuery(tok), exp: time.Unix(int64(tok["exp"].(float64)), 0)}
	d.tile.Store(g)
	return g.query, nil
}

// multipartBody is a request body sent as it is, with its content type.
type multipartBody struct {
	contentType string
	b           []byte
}

// rawBody is a request body sent as it is, without a content type (a presigned PUT).
type rawBody []byte

// send is one request of a load client; the body is read whole, as a client would, and its first
// 64 KiB answered with the replica that served it.
func send(ctx context.Context, hc *http.Client, method, u string, body any, headers ...string) (int, []byte, string, error) {
	var rd io.Reader
	ct := ""
	switch b := body.(type) {
	case nil:
	case multipartBody:
		rd, ct = bytes.NewReader(b.b), b.contentType
	case rawBody:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(body)
		if err != nil {
			return 0, nil, "", err
		}
		rd, ct = bytes.NewReader(j), "application/json"
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return 0, nil, "", err
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := hc.Do(req)
	if err != nil {
		return 0, nil, "", err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	if _, err := io.Copy(io.Discard, res.Body); err != nil {
		return 0, nil, res.Header.Get("X-Replica"), fmt.Errorf("%s %s: reading the body: %w", method, u, err)
	}
	return res.StatusCode, b, res.Header.Get("X-Replica"), nil
}

// rollingRestartUnderLoad: 16 clients through the proxy while each replica in turn is stopped
// with SIGTERM and started again: no request fails, and every import committed meanwhile
// completes (a replica draining finishes its running imports; queued ones wait for a worker).
func rollingRestartUnderLoad(t *testing.T, c *scaleCluster, fx *loadFixture) {
	stats := newLoadStats(time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { runLoad(ctx, fx, loadClients, stats); close(done) }()
	time.Sleep(3 * time.Second)
	for i := range c.replicas {
		began := time.Now()
		c.rollingRestart(t, i)
		t.Logf("replica %d restarted in %s (drain %s)", i, time.Since(began).Round(time.Millisecond), drainDelay)
		time.Sleep(2 * time.Second)
	}
	time.Sleep(2 * time.Second)
	cancel()
	<-done
	failed := fx.settle(t, 2*time.Minute)
	n, errs, samples := stats.totals()
	_, p50, p99, _ := stats.windowFigures(0, "")
	t.Logf("rolling restart: %d requests by %d clients, %d failed, p50 %s, p99 %s; %d imports; by operation %s",
		n, loadClients, errs, p50, p99, len(fx.jobIDs()), stats.ops())
	if n < 100 {
		t.Fatalf("only %d requests: the load did not run", n)
	}
	if errs > 0 || len(failed) > 0 {
		t.Fatalf("%d requests failed during the rolling restart, %d imports failed:\n%s\n%s\nhaproxy:\n%s", errs, len(failed),
			strings.Join(samples, "\n"), strings.Join(failed, "\n"), tail(c.hlog.String(), 2000))
	}
}

// sample is one replica's process figures at one moment.
type sample struct {
	rss              float64
	fds, conns, gors int
}

func (c *scaleCluster) sample(i int) sample {
	return sample{rss: c.rss(i), fds: c.fds(i), conns: c.dbConns(i), gors: c.goroutines(i)}
}

// Flatness: a replica's figure at the end of the run may exceed its figure at the end of the
// first window by half, plus a floor for what a busy moment holds anyway (requests in flight,
// their sockets, goroutines and buffers, a GC cycle's garbage). A leak over an hour grows past
// both; over five minutes the rule only catches a fast one. Idle figures (the load stopped, every
// job ended) may exceed those before the load by the idle keep-alive connections of the proxy.
var flatFloor = sample{rss: 96, fds: 64, conns: 8, gors: 160}

const idleSlack = 48

// endurance runs the mix for SCALE_ENDURANCE (5m unless set; 60m for the full run) and reports
// each window per replica: requests, p50, p99, errors, RSS, open files, database connections and
// goroutines, and for both (all) the database's connections. It fails on any error (a failed
// import included), on a window whose p99 is over twice the first's (floored at 10ms, under which
// a busy shared machine's scheduling is the noise measured), on figures that are not flat (see
// flatFloor), and on what the run leaves behind: temporary tables, import tables of no dataset,
// datasets without their table, completed imports without their dataset, staging or export files.
func endurance(t *testing.T, c *scaleCluster, fx *loadFixture) {
	dur := 5 * time.Minute
	if v := os.Getenv("SCALE_ENDURANCE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("SCALE_ENDURANCE: %v", err)
		}
		dur = d
	}
	window := time.Minute
	if v := os.Getenv("SCALE_WINDOW"); v != "" { // shorter windows for trying the test itself
		window, _ = time.ParseDuration(v)
	}
	db := connect(t, server.DBURL)
	conns := func() int {
		var n int
		if err := db.QueryRow(context.Background(), "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()").Scan(&n); err != nil {
			t.Errorf("open connections: %v", err)
		}
		return n - 1 // this one
	}
	before := [2]sample{c.sample(0), c.sample(1)}
	stats := newLoadStats(window)
	ctx, cancel := context.WithTimeout(context.Background(), dur)
	defer cancel()
	done := make(chan struct{})
	go func() { runLoad(ctx, fx, loadClients, stats); close(done) }()
	t.Logf("endurance: %s of %d clients through the proxy, figures every %s; idle before: r0 %+v, r1 %+v", dur, loadClients, window, before[0], before[1])
	t.Logf("%6s %7s %8s %8s %8s %6s %8s %5s %8s %10s", "window", "replica", "requests", "p50", "p99", "errors", "rss MiB", "fds", "db conns", "goroutines")
	var p99s []time.Duration
	var first, last [2]sample
	tick := time.NewTicker(window)
	defer tick.Stop()
	report := func(w int) {
		for i := range c.replicas {
			r := "r" + strconv.Itoa(i)
			n, p50, p99, errs := stats.windowFigures(w, r)
			s := c.sample(i)
			t.Logf("%6d %7s %8d %8s %8s %6d %8.1f %5d %8d %10d", w+1, r, n, p50.Round(10*time.Microsecond), p99.Round(10*time.Microsecond), errs, s.rss, s.fds, s.conns, s.gors)
			if w == 0 {
				first[i] = s
			}
			last[i] = s
		}
		n, p50, p99, errs := stats.windowFigures(w, "")
		t.Logf("%6d %7s %8d %8s %8s %6d %8s %5s %8d %10s", w+1, "all", n, p50.Round(10*time.Microsecond), p99.Round(10*time.Microsecond), errs, "", "", conns(), "")
		p99s = append(p99s, p99)
	}
	for w := 0; ; w++ {
		select {
		case <-tick.C:
			report(w)
			continue
		case <-done:
		}
		if w2 := int(dur / window); len(p99s) < w2 {
			report(len(p99s)) // the last full window when the ticker lost the race
		}
		break
	}
	failed := fx.settle(t, 2*time.Minute)
	n, errs, samples := stats.totals()
	t.Logf("endurance: %d requests, %d errors, %d imports (%d failed); by operation %s", n, errs, len(fx.jobIDs()), len(failed), stats.ops())
	if errs > 0 || len(failed) > 0 {
		t.Errorf("%d requests failed, %d imports failed:\n%s\n%s", errs, len(failed), strings.Join(samples, "\n"), strings.Join(failed, "\n"))
	}
	if len(p99s) == 0 {
		t.Fatal("no full window ran")
	}
	limit := 2 * max(p99s[0], 10*time.Millisecond)
	for i, p := range p99s {
		if p > limit {
			t.Errorf("window %d: p99 %s is over twice the first window's (%s)", i+1, p, p99s[0])
		}
	}
	for i := range c.replicas {
		f, l := first[i], last[i]
		check := func(what string, first, last, floor float64) {
			if last > 1.5*first+floor {
				t.Errorf("r%d: %s grew from %.0f (first window) to %.0f (last): over 1.5 × plus %.0f", i, what, first, last, floor)
			}
		}
		check("RSS MiB", f.rss, l.rss, flatFloor.rss)
		check("open files", float64(f.fds), float64(l.fds), float64(flatFloor.fds))
		check("database connections", float64(f.conns), float64(l.conns), float64(flatFloor.conns))
		check("goroutines", float64(f.gors), float64(l.gors), float64(flatFloor.gors))
	}
	// Idle again: what the load started has ended (HAProxy's idle connections to the replicas
	// may stay open, and their goroutines with them: idleSlack).
	time.Sleep(3 * time.Second)
	for i := range c.replicas {
		s := c.sample(i)
		t.Logf("r%d idle after: %+v", i, s)
		if s.gors > before[i].gors+idleSlack || s.fds > before[i].fds+idleSlack {
			t.Errorf("r%d idle after the load: %d goroutines, %d open files; before it %d, %d (leak: more than %d over)",
				i, s.gors, s.fds, before[i].gors, before[i].fds, idleSlack)
		}
	}
	leftovers(t, db, fx)
}

// leftovers checks what the run leaves in the database and in DATA_DIR once its jobs ended:
// no temporary table, no table of the data schema that no dataset names (an import's partial
// table), no vector dataset without its table, every import the load completed still a dataset
// (unless the load deleted it) with its table, no staging directory of a job that has ended
// complete, and no export's temporary file.
func leftovers(t *testing.T, db *pgx.Conn, fx *loadFixture) {
	ctx := context.Background()
	list := func(what, q string, args ...any) {
		t.Helper()
		rows, err := db.Query(ctx, q, args...)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		defer rows.Close()
		var got []string
		for rows.Next() {
			var s string
			_ = rows.Scan(&s)
			got = append(got, s)
		}
		if len(got) > 0 {
			t.Errorf("%s: %d: %s", what, len(got), strings.Join(got[:min(len(got), 10)], ", "))
		}
	}
	list("temporary tables", "SELECT n.nspname || '.' || c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relpersistence = 't'")
	list("tables of the data schema no dataset names", `SELECT t.tablename::text FROM pg_tables t WHERE t.schemaname = 'data'
		AND NOT EXISTS (SELECT 1 FROM catalog.datasets d WHERE d.table_schema = 'data' AND d.table_name = t.tablename)`)
	list("vector datasets without their table", `SELECT d.id::text || ' ' || d.table_schema || '.' || d.table_name FROM catalog.datasets d
		WHERE d.raster IS NULL AND d.table_name <> '' AND to_regclass(format('%I.%I', d.table_schema, d.table_name)) IS NULL`)
	list("completed imports of the load without their dataset", `SELECT j.id::text FROM catalog.ingest_jobs j
		WHERE j.id = ANY($1::uuid[]) AND j.status = 'complete' AND (j.dataset_id IS NULL OR NOT EXISTS (SELECT 1 FROM catalog.datasets d WHERE d.id = j.dataset_id))`,
		fx.kept())
	list("import jobs of the load that ended neither complete nor failed", `SELECT id::text || ' ' || status FROM catalog.ingest_jobs
		WHERE id = ANY($1::uuid[]) AND status NOT IN ('complete', 'failed')`, fx.jobIDs())
	// Staging: a directory per job (DATA_DIR/staging/<job>) is kept while the job may run again
	// (pending, running, failed): one of a completed job, or of no job, is left behind.
	entries, _ := os.ReadDir(filepath.Join(server.dataDir, "staging"))
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	list("staging directories of no job or of a completed one", `SELECT n || ' (' || coalesce((SELECT j.status || CASE WHEN j.committed THEN ' committed' ELSE '' END
		|| ', attempts ' || j.attempts || ', rescues ' || j.rescues || CASE WHEN j.presigned THEN ', presigned' ELSE '' END
		|| ', created ' || j.created_at::time || ', completed ' || coalesce(j.completed_at::time::text, '-')
		|| ', river ' || coalesce((SELECT string_agg(r.state || ' ' || coalesce(r.errors::text, ''), '; ') FROM river.river_job r WHERE r.args->>'job_id' = n), 'none')
		FROM catalog.ingest_jobs j WHERE j.id::text = n), 'no job') || ')' FROM unnest($1::text[]) n
		WHERE n !~ '^[0-9a-f-]{36}$' OR NOT EXISTS (SELECT 1 FROM catalog.ingest_jobs j WHERE j.id::text = n AND j.status IN ('pending', 'running', 'failed'))`, names)
	exports, _ := os.ReadDir(filepath.Join(server.dataDir, "exports"))
	if len(exports) > 0 {
		t.Errorf("%d export files left in DATA_DIR/exports (first %s)", len(exports), exports[0].Name())
	}
}

// kept is the load's completed imports whose dataset the load did not delete.
func (fx *loadFixture) kept() []string {
	fx.mu.Lock()
	defer fx.mu.Unlock()
	var ids []string
	for _, im := range fx.imports {
		if !im.deleted {
			ids = append(ids, im.job)
		}
	}
	return ids
}
