package conformance

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// BenchmarkTiles puts vector tiles of the generated points and polygons (ogcBenchSetup: 1,000,000
// points and 100,000 polygons, random physical order, GIST) under load, 16 clients, against the
// same ST_AsMVT statement executed through pgx for the same tiles (no HTTP, no cache): the
// practical floor. Tiles are drawn where the data is (the tile of a random feature), so dense
// areas weigh as much as they do for a map user. Cases:
//
//   - uncached z6/z10/z14: the server's tile cache is switched off (cache_max_bytes 0);
//   - cached z14: 64 tiles requested over and over, the cache warm; the baseline renders them
//     (the cheapest tiles to render: this measures the HTTP floor more than the cache);
//   - cached z6-z14: the same for 64 tiles of a map session's zooms;
//   - signed cached z14: the cached z14 tiles through a signed template (sig, exp, scope), the
//     way maps of share links and embeds ask for them;
//   - clusters z6: cluster tiles of the points, uncached (p95 target 150 ms);
//   - cache-bound: random tiles at z8..z14 under a 16 MiB cache bound, reporting the cache's
//     use and the server's RSS.
//
// BENCH_TILE_REQUESTS overrides the requests per side and iteration.
func BenchmarkTiles(b *testing.B) {
	d := ogcBenchSetup(b)
	conc := ogcBenchConcurrency()
	hc := benchClient(conc)
	token, err := ogcAdminToken()
	if err != nil {
		b.Fatal(err)
	}
	cases := []struct {
		name     string
		polygons bool
		zooms    []int
		cached   bool
		cluster  bool
		signed   bool
		requests int
	}{
		{name: "points/z6", zooms: []int{6}, requests: 64},
		{name: "points/z10", zooms: []int{10}, requests: 400},
		{name: "points/z14", zooms: []int{14}, requests: 2000},
		{name: "polygons/z6", polygons: true, zooms: []int{6}, requests: 64},
		{name: "polygons/z10", polygons: true, zooms: []int{10}, requests: 400},
		{name: "polygons/z14", polygons: true, zooms: []int{14}, requests: 2000},
		{name: "points/z14-cached", zooms: []int{14}, cached: true, requests: 20000},
		{name: "points/z14-cached-signed", zooms: []int{14}, cached: true, signed: true, requests: 20000},
		{name: "points/z6-z14-cached", zooms: []int{6, 8, 10, 12, 14}, cached: true, requests: 8000},
		{name: "points/clusters-z6", zooms: []int{6}, cluster: true, requests: 64},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			t := d.points
			if c.polygons {
				t = d.polygons
			}
			tileBenchCache(b, hc, token, c.cached, 128<<20)
			requests := c.requests
			if n, err := strconv.Atoi(os.Getenv("BENCH_TILE_REQUESTS")); err == nil && n > 0 {
				requests = n
			}
			pool := tileBenchDraw(b, d, t, c.zooms, 2000)
			rnd := rand.New(rand.NewPCG(uint64(len(c.name)), 7))
			if c.cached {
				pool = pool[:64]
			}
			draw := func() ogcParams { return ogcParams{tile: pool[rnd.IntN(len(pool))]} }
			prefix := "/tiles/"
			query := ""
			if c.cluster {
				prefix, query = "/tiles/clusters/", "?cluster_radius=48&cluster_max_zoom=14"
			}
			if c.signed {
				query = "?" + tileBenchSigned(b, hc, token, t.id)
			}
			ours := func(ctx context.Context, p ogcParams) (int64, bool, error) {
				u := fmt.Sprintf("%s%s%s/%d/%d/%d.pbf%s", server.APIRoot, prefix, t.id, p.tile[0], p.tile[1], p.tile[2], query)
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
				res, err := hc.Do(req)
				if err != nil {
					return 0, false, err
				}
				defer res.Body.Close()
				n, err := io.Copy(io.Discard, res.Body)
				if err == nil && res.StatusCode != 200 && res.StatusCode != 204 {
					err = fmt.Errorf("%s: %d", u, res.StatusCode)
				}
				return n, false, err
			}
			sql := tileBaselineSQL(t, c.polygons, c.cluster)
			base := func(ctx context.Context, p ogcParams) (int64, bool, error) {
				var body []byte
				err := d.base.QueryRow(ctx, sql, p.tile[0], p.tile[1], p.tile[2]).Scan(&body)
				return int64(len(body)), false, err
			}
			for _, side := range []func(context.Context, ogcParams) (int64, bool, error){ours, base} {
				if _, err := ogcRun(conc, max(conc, len(pool)/4), func(i int) ogcParams { return ogcParams{tile: pool[i%len(pool)]} }, side, d); err != nil {
					b.Fatal(err)
				}
			}
			sa, sb := abba(b, conc, requests, draw, ours, base, d)
			b.ReportMetric(sa.rate(), "server-req/s")
			b.ReportMetric(sb.rate(), "baseline-req/s")
			b.ReportMetric(sa.rate()/sb.rate(), "ratio")
			b.ReportMetric(sa.pct(0.50), "server-p50-ms")
			b.ReportMetric(sa.pct(0.95), "server-p95-ms")
			b.ReportMetric(sa.pct(0.99), "server-p99-ms")
			b.ReportMetric(sb.pct(0.95), "baseline-p95-ms")
			b.ReportMetric(sa.perReq(sa.srv), "server-srv-cpu-ms/req")
			b.ReportMetric(sa.perReq(sa.pg), "server-pg-cpu-ms/req")
			b.ReportMetric(sb.perReq(sb.pg), "baseline-pg-cpu-ms/req")
			b.ReportMetric(float64(sa.bytes)/float64(sa.n)/1024, "KiB/tile")
		})
	}
	b.Run("cache-bound", func(b *testing.B) {
		const bound = 16 << 20
		tileBenchCache(b, hc, token, true, bound)
		pool := tileBenchDraw(b, d, d.points, []int{8, 9, 10, 11, 12, 13, 14}, 20000)
		rnd := rand.New(rand.NewPCG(1, 2))
		var used float64
		for i := 0; i < b.N; i++ {
			params := make([]ogcParams, 20000)
			for j := range params {
				params[j] = ogcParams{tile: pool[rnd.IntN(len(pool))]}
			}
			_, err := ogcRun(conc, len(params), func(i int) ogcParams { return params[i] },
				func(ctx context.Context, p ogcParams) (int64, bool, error) {
					u := fmt.Sprintf("%s/tiles/%s/%d/%d/%d.pbf", server.APIRoot, d.points.id, p.tile[0], p.tile[1], p.tile[2])
					res, err := hc.Get(u)
					if err != nil {
						return 0, false, err
					}
					defer res.Body.Close()
					n, err := io.Copy(io.Discard, res.Body)
					return n, false, err
				}, d)
			if err != nil {
				b.Fatal(err)
			}
			conf := tileBenchConfig(b, hc, token)
			if used = conf["cache_used_bytes"].(float64); used > bound {
				b.Fatalf("the tile cache holds %.0f bytes, bound %d", used, bound)
			}
		}
		b.ReportMetric(used/(1<<20), "cache-MiB")
		b.ReportMetric(procStatusKB(b, server.cmd.Process.Pid, "VmRSS")/1024, "server-rss-MiB")
	})
	tileBenchCache(b, hc, token, true, 128<<20)
}

// tileBenchSigned is the query of a signed template of dataset id.
func tileBenchSigned(b *testing.B, hc *http.Client, token, id string) string {
	b.Helper()
	res, err := hc.Do(authed(http.MethodGet, server.APIRoot+"/tiles/token/"+id+"/", "", token))
	if err != nil {
		b.Fatal(err)
	}
	var tok struct {
		Sig   string `json:"sig"`
		Exp   int64  `json:"exp"`
		Scope string `json:"scope"`
	}
	decode(b, res, &tok)
	return fmt.Sprintf("sig=%s&exp=%d&scope=%s", tok.Sig, tok.Exp, url.QueryEscape(tok.Scope))
}

// tileBenchConfig reads the tile configuration the server uses.
func tileBenchConfig(b *testing.B, hc *http.Client, token string) map[string]any {
	b.Helper()
	req, _ := http.NewRequest(http.MethodGet, server.APIRoot+"/settings/tile-config/", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := hc.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	var out map[string]any
	decode(b, res, &out)
	return out
}

// tileBenchCache sets the cache bound (0 when off) and waits until the server uses it.
func tileBenchCache(b *testing.B, hc *http.Client, token string, on bool, bound int) {
	b.Helper()
	want := 0
	if on {
		want = bound
	}
	conn, err := pgx.Connect(context.Background(), server.DBURL)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), `INSERT INTO catalog.settings (key, value) VALUES ('tile_config.cache_max_bytes', to_jsonb($1::bigint))
		ON CONFLICT (key) DO UPDATE SET value = excluded.value`, want); err != nil {
		b.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		// Tile requests make the server read its settings again once they are 10 s old.
		_, _ = hc.Get(server.APIRoot + "/tiles/00000000-0000-0000-0000-000000000000/0/0/0.pbf")
		if int(tileBenchConfig(b, hc, token)["cache_max_bytes"].(float64)) == want {
			return
		}
		if time.Now().After(deadline) {
			b.Fatal("the server never took the new cache bound")
		}
	}
}

// tileBenchDraw picks n tiles at the given zooms where the data is: the tiles of random features.
func tileBenchDraw(b *testing.B, d *ogcBenchData, t ogcBenchTable, zooms []int, n int) [][3]int {
	b.Helper()
	rows, err := d.base.Query(context.Background(), "SELECT ST_X(p), ST_Y(p) FROM (SELECT ST_PointOnSurface(geom) AS p FROM public."+
		pgx.Identifier{t.name}.Sanitize()+" WHERE gid = ANY($1)) s", tileBenchGids(t.rows, n))
	if err != nil {
		b.Fatal(err)
	}
	var out [][3]int
	i := 0
	for rows.Next() {
		var lon, lat float64
		if err := rows.Scan(&lon, &lat); err != nil {
			b.Fatal(err)
		}
		lat = math.Max(-85, math.Min(85, lat))
		z := zooms[i%len(zooms)]
		i++
		scale := float64(int(1) << z)
		x := int((lon + 180) / 360 * scale)
		r := lat * math.Pi / 180
		y := int((1 - math.Log(math.Tan(r)+1/math.Cos(r))/math.Pi) / 2 * scale)
		out = append(out, [3]int{z, min(x, int(scale)-1), min(max(y, 0), int(scale)-1)})
	}
	if err := rows.Err(); err != nil || len(out) == 0 {
		b.Fatalf("drawing tiles: %v (%d)", err, len(out))
	}
	return out
}

func tileBenchGids(rows, n int) []int64 {
	rnd := rand.New(rand.NewPCG(uint64(rows), uint64(n)))
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(1 + rnd.IntN(rows))
	}
	return out
}

// tileBaselineSQL is the statement a hand-written tile server runs for the same tile: the
// envelope in the table's SRID for the index, ST_AsMVTGeom per feature, ST_AsMVT; the server's
// settings (simplification of polygons, the feature cap, grid clustering) included, so both sides
// draw the same tile.
func tileBaselineSQL(t ogcBenchTable, polygons, cluster bool) string {
	tbl := "public." + pgx.Identifier{t.name}.Sanitize()
	env := `WITH e AS (SELECT ST_TileEnvelope($1, $2, $3) AS tile,
		ST_Transform(ST_ClipByBox2D(ST_TileEnvelope($1, $2, $3, margin => %s), ST_TileEnvelope(0, 0, 0)::box2d), 4326) AS search) `
	if cluster {
		return fmt.Sprintf(env, "0") + `SELECT ST_AsMVT(m, 'layer', 4096, 'geom') FROM (
			SELECT ST_AsMVTGeom(ST_SetSRID(ST_MakePoint(c.x, c.y), 3857), e.tile, 4096, 256, true) AS geom, c.n AS point_count
			FROM (SELECT count(*) AS n, avg(ST_X(g)) AS x, avg(ST_Y(g)) AS y FROM (SELECT ST_Transform(geom, 3857) AS g FROM ` + tbl + `, e
				WHERE geom && e.search) p, e
				GROUP BY floor((ST_X(g) - ST_XMin(e.tile)) / ((ST_XMax(e.tile) - ST_XMin(e.tile)) / 5)),
				         floor((ST_Y(g) - ST_YMin(e.tile)) / ((ST_XMax(e.tile) - ST_XMin(e.tile)) / 5))) c, e) m`
	}
	geom := "ST_Transform(geom, 3857)"
	if polygons {
		geom = "ST_Simplify(" + geom + ", (ST_XMax(e.tile) - ST_XMin(e.tile)) / 4096, true)"
	}
	// From zoom 10 the server's tiles carry the attribute columns (popups read them), below it
	// the geometry only; null properties are left out of a tile.
	var cols strings.Builder
	for _, c := range []string{"n", "score", "kind", "day::text", "name"} {
		fmt.Fprintf(&cols, ", CASE WHEN $1 >= 10 THEN %s END AS %s", c, strings.TrimSuffix(c, "::text"))
	}
	return fmt.Sprintf(env, "0.0625") + `SELECT ST_AsMVT(m, 'layer', 4096, 'geom', 'gid') FROM (
		SELECT gid, ST_AsMVTGeom(` + geom + `, e.tile, 4096, 256, true) AS geom` + cols.String() + ` FROM ` + tbl + `, e
		WHERE geom && e.search LIMIT 50000) m`
}
