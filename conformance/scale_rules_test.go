//go:build scale

package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestScale is issue #34's run: one cluster of two replicas behind HAProxy for all its parts, so
// `-run TestScale/rolling` starts it once too.
func TestScale(t *testing.T) {
	c := twoReplicas(t)
	a, b := c.replicas[0].APIRoot, c.replicas[1].APIRoot
	hc := &http.Client{Timeout: 60 * time.Second}
	owner := newUser(t, "editor")

	t.Run("cross-replica/private-dataset", func(t *testing.T) { crossPrivate(t, hc, owner, a, b) })
	t.Run("cross-replica/grant", func(t *testing.T) { crossGrant(t, hc, owner, a, b) })
	t.Run("cross-replica/revoked-api-key", func(t *testing.T) { crossAPIKey(t, hc, owner, a, b) })
	t.Run("cross-replica/ended-session", func(t *testing.T) { crossSession(t, hc, a, b) })
	t.Run("cross-replica/settings", func(t *testing.T) { crossSettings(t, hc, owner, a, b) })
	t.Run("cross-replica/map", func(t *testing.T) { crossMap(t, hc, owner, a, b) })
	t.Run("cross-replica/tile-cache", func(t *testing.T) { crossTiles(t, hc, owner, a, b) })
	t.Run("jobs/upload-on-one-commit-on-other", func(t *testing.T) { crossJob(t, hc, owner, a, b) })
	t.Run("jobs/replica-killed-mid-import", func(t *testing.T) { crossKilledImport(t, c, hc, owner) })

	fx := newLoadFixture(t, owner, c.proxy)
	t.Run("rolling-restart", func(t *testing.T) { rollingRestartUnderLoad(t, c, fx) })
	t.Run("endurance", func(t *testing.T) { endurance(t, c, fx) })
}

// want fails unless r has status code.
func want(t *testing.T, what string, r reply, code int) reply {
	t.Helper()
	if r.Status != code {
		t.Fatalf("%s: %d, want %d: %s", what, r.Status, code, r.Body)
	}
	return r
}

// crossPrivate: a dataset made private on A disappears from B's reads at once: its record, its
// items and its kept tiles (the old signed template stops serving).
func crossPrivate(t *testing.T, hc *http.Client, owner session, a, b string) {
	id := ogcDataset(t, owner, "public")
	table := call(t, "GET", "/datasets/"+id, nil, bearer(owner.Access)...).JSON(t)["table_name"].(string)
	tile := "/tiles/data." + table + "/0/0/0.pbf?" + signedQuery(tileToken(t, id, bearer(owner.Access)...))
	paths := []string{"/datasets/" + id, "/collections/" + id + "/items?limit=2", tile}
	for range 2 { // the second read is answered from what B keeps
		for _, p := range paths {
			want(t, "B reads the public dataset "+p, callAt(t, hc, b, "GET", p, nil), 200)
		}
	}
	want(t, "A makes it private", callAt(t, hc, a, "PATCH", "/datasets/"+id, map[string]any{"visibility": "private"}, bearer(owner.Access)...), 200)
	// Record and items are checked in the database on every read: at once.
	for _, p := range paths[:2] {
		if r := callAt(t, hc, b, "GET", p, nil); r.Status == 200 {
			t.Fatalf("B still serves %s of a dataset made private on A", p)
		}
	}
	converges(t, "B's kept tile of a dataset made private on A", func() bool { return callAt(t, hc, b, "GET", tile, nil).Status != 200 })
}

// staleFor bounds how long B may answer from what it keeps after a change committed on A: kept
// map documents and tiles are forgotten when PostgreSQL's announcement of the change reaches B
// (catalog.Watch), a millisecond or two after the commit. Without the announcement B would serve
// the old answer until it forgets for another reason, far past this bound.
const staleFor = time.Second

// converges fails unless ok holds within staleFor, and logs how long it took.
func converges(t *testing.T, what string, ok func() bool) {
	t.Helper()
	start := time.Now()
	for tries := 0; !ok(); tries++ {
		if time.Since(start) > staleFor {
			t.Fatalf("%s: not after %s", what, staleFor)
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Logf("%s: after %s", what, time.Since(start).Round(100*time.Microsecond))
}

// crossGrant: a read grant given on A opens a restricted dataset on B at once; removed on A, it
// closes the record and items on B at once and the reader's kept tiles as soon as the
// announcement arrives.
func crossGrant(t *testing.T, hc *http.Client, owner session, a, b string) {
	id := ogcDataset(t, owner, "restricted")
	reader := newUser(t, "viewer")
	paths := []string{"/datasets/" + id, "/collections/" + id + "/items?limit=2"}
	as := bearer(reader.Access)
	for range 2 {
		for _, p := range paths {
			want(t, "B before the grant "+p, callAt(t, hc, b, "GET", p, nil, as...), 404)
		}
	}
	g := want(t, "A grants read", callAt(t, hc, a, "POST", "/datasets/"+id+"/grants/", map[string]any{"user_id": reader.ID, "level": "read"},
		bearer(owner.Access)...), 201).JSON(t)
	for _, p := range paths {
		want(t, "B after the grant on A "+p, callAt(t, hc, b, "GET", p, nil, as...), 200)
	}
	tok := want(t, "B gives the reader a tile template", callAt(t, hc, b, "GET", "/tiles/token/"+id+"/", nil, as...), 200).JSON(t)
	tile := "/tiles/data." + tok["scope"].(string) + "/0/0/0.pbf?" + signedQuery(tok)
	for range 2 {
		want(t, "B's tile for the reader", callAt(t, hc, b, "GET", tile, nil), 200)
	}
	want(t, "A removes the grant", callAt(t, hc, a, "DELETE", "/datasets/"+id+"/grants/"+g["id"].(string), nil, bearer(owner.Access)...), 204)
	for _, p := range paths {
		want(t, "B after the grant was removed on A "+p, callAt(t, hc, b, "GET", p, nil, as...), 404)
	}
	converges(t, "B's kept tile of a grant removed on A", func() bool { return callAt(t, hc, b, "GET", tile, nil).Status != 200 })
}

// crossAPIKey: an API key revoked on A is refused by B at once.
func crossAPIKey(t *testing.T, hc *http.Client, owner session, a, b string) {
	m := want(t, "A creates a key", callAt(t, hc, a, "POST", "/auth/api-keys/", map[string]any{"name": "k-" + randomHex(2), "scope": "full"},
		bearer(owner.Access)...), 201).JSON(t)
	key, id := m["key"].(string), m["id"].(string)
	for range 2 {
		want(t, "B takes the key", callAt(t, hc, b, "GET", "/auth/me/", nil, apiKey(key)...), 200)
	}
	want(t, "A revokes the key", callAt(t, hc, a, "DELETE", "/auth/api-keys/"+id, nil, bearer(owner.Access)...), 204)
	want(t, "B with the revoked key", callAt(t, hc, b, "GET", "/auth/me/", nil, apiKey(key)...), 401)
}

// crossSession: a session signed out on A is over on B: its access token and its refresh token.
func crossSession(t *testing.T, hc *http.Client, a, b string) {
	u := newUser(t, "viewer")
	s := want(t, "sign in on A", callAt(t, hc, a, "POST", "/auth/login", url.Values{"username": {u.Username}, "password": {u.Password}}), 200).JSON(t)
	access, refresh := s["access_token"].(string), s["refresh_token"].(string)
	for range 2 {
		want(t, "B takes the access token", callAt(t, hc, b, "GET", "/auth/me/", nil, bearer(access)...), 200)
	}
	want(t, "sign out on A", callAt(t, hc, a, "POST", "/auth/logout/", map[string]any{"refresh_token": refresh}, bearer(access)...), 204)
	want(t, "B with the signed-out access token", callAt(t, hc, b, "GET", "/auth/me/", nil, bearer(access)...), 401)
	want(t, "B refreshes the signed-out session", callAt(t, hc, b, "POST", "/auth/refresh/", map[string]any{"refresh_token": refresh}), 401)
}

// crossSettings: ogc_items_max_page_size saved on A bounds B's items pages within the one second
// B keeps the value (settings.ItemsPageMax); every other setting is read per request.
func crossSettings(t *testing.T, hc *http.Client, owner session, a, b string) {
	id := ogcDataset(t, owner, "public")
	items := "/collections/" + id + "/items?limit=100"
	page := func() int {
		ids, _, _ := features(t, callAt(t, hc, b, "GET", items, nil))
		return len(ids)
	}
	if n := page(); n != 30 {
		t.Fatalf("B's page before: %d features", n)
	}
	put := func(v any) {
		want(t, "A saves the page size", callAt(t, hc, a, "PUT", "/settings/", map[string]any{"settings": map[string]any{"ogc_items_max_page_size": v}},
			bearer(admin(t).Access)...), 200)
	}
	put(3)
	t.Cleanup(func() { put(nil) })
	within := func(what string, ok func(int) bool) {
		t.Helper()
		deadline := time.Now().Add(2 * time.Second)
		for n := page(); !ok(n); n = page() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: B's page still has %d features after 2s", what, n)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	within("page size 3 saved on A", func(n int) bool { return n == 3 })
	put(nil)
	within("page size reset on A", func(n int) bool { return n == 30 })
}

// crossMap: a map renamed, made private and deleted on A reads so on B at once.
func crossMap(t *testing.T, hc *http.Client, owner session, a, b string) {
	m := want(t, "A creates a map", callAt(t, hc, a, "POST", "/maps/", map[string]any{"name": "Before"}, bearer(owner.Access)...), 201).JSON(t)
	path := "/maps/" + m["id"].(string)
	want(t, "A makes it public", callAt(t, hc, a, "PUT", path, map[string]any{"visibility": "public"}, bearer(owner.Access)...), 200)
	for range 2 {
		if got := want(t, "B reads the map", callAt(t, hc, b, "GET", path, nil), 200).JSON(t)["name"]; got != "Before" {
			t.Fatalf("B's map name: %v", got)
		}
	}
	want(t, "A renames it", callAt(t, hc, a, "PUT", path, map[string]any{"name": "After"}, bearer(owner.Access)...), 200)
	converges(t, "B reads the map renamed on A", func() bool {
		return want(t, "B reads the map", callAt(t, hc, b, "GET", path, nil), 200).JSON(t)["name"] == "After"
	})
	want(t, "A makes it private", callAt(t, hc, a, "PUT", path, map[string]any{"visibility": "private"}, bearer(owner.Access)...), 200)
	converges(t, "B anonymously reads the map made private on A", func() bool { return callAt(t, hc, b, "GET", path, nil).Status == 404 })
	want(t, "A deletes it", callAt(t, hc, a, "DELETE", path, nil, bearer(owner.Access)...), 204)
	converges(t, "B reads the map deleted on A", func() bool { return callAt(t, hc, b, "GET", path, nil, bearer(owner.Access)...).Status == 404 })
}

// crossTiles: a feature added on A is in B's next tile, under a new ETag, though B answered the
// tile before from memory.
func crossTiles(t *testing.T, hc *http.Client, owner session, a, b string) {
	id := ogcDataset(t, owner, "public")
	table := call(t, "GET", "/datasets/"+id, nil, bearer(owner.Access)...).JSON(t)["table_name"].(string)
	tile := "/tiles/data." + table + "/0/0/0.pbf?" + signedQuery(tileToken(t, id, bearer(owner.Access)...))
	var etag string
	for range 2 {
		r, layers := getTile(t, b, tile, 200)
		if len(layers[0].Features) != 30 {
			t.Fatalf("B's tile: %d features", len(layers[0].Features))
		}
		etag = r.Header.Get("ETag")
	}
	getTile(t, b, tile, 304, "If-None-Match", etag)
	want(t, "A adds a feature", callAt(t, hc, a, "POST", "/datasets/"+id+"/features/", map[string]any{"geometry": point(10, 10),
		"properties": map[string]any{"name": "new"}}, bearer(owner.Access)...), 201)
	converges(t, "B's tile after a feature added on A", func() bool {
		return callAt(t, hc, b, "GET", tile, nil, "If-None-Match", etag).Status == 200
	})
	r, layers := getTile(t, b, tile, 200, "If-None-Match", etag)
	if len(layers[0].Features) != 31 || r.Header.Get("ETag") == etag {
		t.Fatalf("B's tile after an edit on A: %d features, ETag %s (was %s)", len(layers[0].Features), r.Header.Get("ETag"), etag)
	}
}

// crossJob: a file uploaded through A and committed through B is imported (by whichever
// replica's worker takes it) and read on both.
func crossJob(t *testing.T, hc *http.Client, owner session, a, b string) {
	up := want(t, "upload on A", uploadAt(t, hc, a, owner.Access, "points.geojson", pointsGeoJSON(25)), 201).JSON(t)
	job := up["job_id"].(string)
	want(t, "commit on B", callAt(t, hc, b, "POST", "/ingest/commit/"+job, map[string]any{"title": "Crossed " + randomHex(3)}, bearer(owner.Access)...), 202)
	end := waitJob(t, hc, a, owner.Access, job, 2*time.Minute, func(j map[string]any) bool { return j["status"] == "complete" || j["status"] == "failed" })
	if end["status"] != "complete" {
		t.Fatalf("job uploaded on A, committed on B: %v", end)
	}
	id := end["dataset_id"].(string)
	for _, root := range []string{a, b} {
		if n := want(t, "the imported dataset", callAt(t, hc, root, "GET", "/datasets/"+id, nil, bearer(owner.Access)...), 200).JSON(t)["feature_count"]; n != 25.0 {
			t.Fatalf("feature_count on %s: %v", root, n)
		}
	}
}

// loadFixture is what the load clients read and write: public datasets of 30 points each.
type loadFixture struct {
	root     string // through the proxy
	key      string // the owner's API key: it outlives access tokens over an hour's run
	datasets []loadDataset
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

func newLoadFixture(t *testing.T, owner session, root string) *loadFixture {
	key, _ := newKey(t, owner, "full")
	fx := &loadFixture{root: root, key: key, datasets: make([]loadDataset, 4)}
	for i := range fx.datasets {
		d := &fx.datasets[i]
		d.id = ogcDataset(t, owner, "public")
		d.table = call(t, "GET", "/datasets/"+d.id, nil, bearer(owner.Access)...).JSON(t)["table_name"].(string)
		d.gids, _, _ = features(t, call(t, "GET", "/collections/"+d.id+"/items?limit=100", nil))
	}
	return fx
}

// loadStats keeps every request's latency by minute of the run, and the failures.
type loadStats struct {
	mu      sync.Mutex
	start   time.Time
	window  time.Duration
	lat     [][]time.Duration
	errs    []int
	samples []string
	byOp    map[string]int
}

func newLoadStats(window time.Duration) *loadStats {
	return &loadStats{start: time.Now(), window: window, byOp: map[string]int{}}
}

func (s *loadStats) record(op string, d time.Duration, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := int(time.Since(s.start) / s.window)
	for len(s.lat) <= w {
		s.lat = append(s.lat, nil)
		s.errs = append(s.errs, 0)
	}
	s.byOp[op]++
	if err != nil {
		s.errs[w]++
		if len(s.samples) < 20 {
			s.samples = append(s.samples, fmt.Sprintf("%s at %s: %v", op, time.Since(s.start).Round(time.Millisecond), err))
		}
		return
	}
	s.lat[w] = append(s.lat[w], d)
}

// window returns the count, p50, p99 and errors of window w.
func (s *loadStats) windowFigures(w int) (n int, p50, p99 time.Duration, errs int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w >= len(s.lat) {
		return 0, 0, 0, 0
	}
	l := append([]time.Duration(nil), s.lat[w]...)
	sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
	if len(l) > 0 {
		p50, p99 = l[len(l)/2], l[min(len(l)-1, len(l)*99/100)]
	}
	return len(l), p50, p99, s.errs[w]
}

func (s *loadStats) totals() (n, errs int, samples []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for w := range s.lat {
		n += len(s.lat[w]) + s.errs[w]
		errs += s.errs[w]
	}
	return n, errs, append([]string(nil), s.samples...)
}

// runLoad sends the mix from clients goroutines through the proxy until ctx ends: reads 70 %
// (items pages, single features, search, tiles, records), writes 30 % (feature edits on the
// client's own features, dataset metadata). Any answer but the expected one is an error a user
// would see.
func runLoad(ctx context.Context, fx *loadFixture, clients int, stats *loadStats) {
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hc := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 2}}
			rng := rand.New(rand.NewPCG(uint64(c), uint64(time.Now().UnixNano())))
			for ctx.Err() == nil {
				op, err, d := fx.oneRequest(ctx, hc, rng, c)
				if ctx.Err() != nil {
					return // cut off by the end of the run, not by the service
				}
				stats.record(op, d, err)
			}
		}()
	}
	wg.Wait()
}

func (fx *loadFixture) oneRequest(ctx context.Context, hc *http.Client, rng *rand.Rand, client int) (string, error, time.Duration) {
	d := &fx.datasets[client%len(fx.datasets)]
	// Each client edits its own feature: concurrent edits of one feature are not what is measured.
	own := d.gids[(client/len(fx.datasets))%len(d.gids)]
	var (
		op, method, path string
		body             any
		ok               = []int{200}
		headers          []string
	)
	switch p := rng.IntN(100); {
	case p < 20:
		op, method, path = "items page", "GET", fmt.Sprintf("/collections/%s/items?limit=10&offset=%d", d.id, rng.IntN(20))
	case p < 35:
		op, method, path = "feature", "GET", fmt.Sprintf("/collections/%s/items/%d", d.id, d.gids[rng.IntN(len(d.gids))])
	case p < 45:
		op, method, path = "search", "GET", "/search/datasets/?q=places&limit=10"
	case p < 60:
		q, err := fx.tileQuery(ctx, hc, d)
		if err != nil {
			return "tile token", err, 0
		}
		z := rng.IntN(4)
		op, method, path = "tile", "GET", fmt.Sprintf("/tiles/data.%s/%d/%d/%d.pbf?%s", d.table, z, rng.IntN(1<<z), rng.IntN(1<<z), q)
		ok = []int{200, 204}
	case p < 70:
		op, method, path = "record", "GET", "/datasets/"+d.id
	case p < 90:
		op, method, path = "feature edit", "PATCH", fmt.Sprintf("/datasets/%s/features/%d", d.id, own)
		body = map[string]any{"properties": map[string]any{"name": "edit " + strconv.Itoa(rng.IntN(1e6))}}
		headers = apiKey(fx.key)
	default:
		op, method, path = "metadata edit", "PATCH", "/datasets/"+d.id
		body = map[string]any{"description": "load " + strconv.Itoa(rng.IntN(1e6))}
		headers = apiKey(fx.key)
	}
	start := time.Now()
	status, msg, err := send(ctx, hc, method, fx.root+path, body, headers...)
	took := time.Since(start)
	if err != nil {
		return op, err, took
	}
	for _, code := range ok {
		if status == code {
			return op, nil, took
		}
	}
	return op, fmt.Errorf("%s %s: %d %s", method, path, status, msg), took
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

// send is one request of a load client; the body is read whole, as a client would.
func send(ctx context.Context, hc *http.Client, method, u string, body any, headers ...string) (int, string, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, "", err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return 0, "", err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := hc.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer res.Body.Close()
	var sb strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := res.Body.Read(buf)
		if sb.Len() < 300 {
			sb.Write(buf[:min(n, 300)])
		}
		if err != nil {
			break
		}
	}
	return res.StatusCode, sb.String(), nil
}

// rollingRestartUnderLoad: 16 clients through the proxy while each replica in turn is stopped
// with SIGTERM and started again: no request fails.
func rollingRestartUnderLoad(t *testing.T, c *scaleCluster, fx *loadFixture) {
	stats := newLoadStats(time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { runLoad(ctx, fx, 16, stats); close(done) }()
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
	n, errs, samples := stats.totals()
	_, p50, p99, _ := stats.windowFigures(0)
	t.Logf("rolling restart: %d requests by 16 clients, %d failed, p50 %s, p99 %s; by operation %v", n, errs, p50, p99, stats.byOp)
	if n < 100 {
		t.Fatalf("only %d requests: the load did not run", n)
	}
	if errs > 0 {
		t.Fatalf("%d requests failed during the rolling restart:\n%s\nhaproxy:\n%s", errs, strings.Join(samples, "\n"), tail(c.hlog.String(), 2000))
	}
}

// endurance runs the mix for SCALE_ENDURANCE (5m unless set; 60m for the full run) and reports
// each minute: requests, p50, p99, errors, the replicas' RSS and the database's connections. It
// fails on any error and on a minute whose p99 is over twice the first minute's (floored at
// 10ms, under which a busy shared machine's scheduling is the noise measured).
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
	stats := newLoadStats(window)
	ctx, cancel := context.WithTimeout(context.Background(), dur)
	defer cancel()
	done := make(chan struct{})
	go func() { runLoad(ctx, fx, 16, stats); close(done) }()
	db := connect(t, server.DBURL)
	conns := func() int {
		var n int
		if err := db.QueryRow(context.Background(), "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()").Scan(&n); err != nil {
			t.Errorf("open connections: %v", err)
		}
		return n - 1 // this one
	}
	t.Logf("endurance: %s of 16 clients through the proxy, figures every %s", dur, window)
	t.Logf("%6s %8s %8s %8s %6s %10s %10s %8s", "minute", "requests", "p50", "p99", "errors", "rss A MiB", "rss B MiB", "db conns")
	type row struct{ p99 time.Duration }
	var rows []row
	tick := time.NewTicker(window)
	defer tick.Stop()
	report := func(w int) {
		n, p50, p99, errs := stats.windowFigures(w)
		t.Logf("%6d %8d %8s %8s %6d %10.1f %10.1f %8d", w+1, n, p50.Round(10*time.Microsecond), p99.Round(10*time.Microsecond), errs, c.rss(0), c.rss(1), conns())
		rows = append(rows, row{p99})
	}
	for w := 0; ; w++ {
		select {
		case <-tick.C:
			report(w)
			continue
		case <-done:
		}
		if w2 := int(dur / window); len(rows) < w2 {
			report(len(rows)) // the last full window when the ticker lost the race
		}
		break
	}
	n, errs, samples := stats.totals()
	t.Logf("endurance: %d requests, %d errors; by operation %v", n, errs, stats.byOp)
	if errs > 0 {
		t.Fatalf("%d requests failed:\n%s", errs, strings.Join(samples, "\n"))
	}
	if len(rows) == 0 {
		t.Fatal("no full window ran")
	}
	limit := 2 * max(rows[0].p99, 10*time.Millisecond)
	for i, r := range rows {
		if r.p99 > limit {
			t.Errorf("minute %d: p99 %s is over twice the first minute's (%s)", i+1, r.p99, rows[0].p99)
		}
	}
}
