package conformance

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// BenchmarkSearch puts Search Datasets (q + bbox) and Search Facets under load over a generated
// catalog of BENCH_SEARCH_RECORDS records (10,000 by default: titles, summaries and keywords from
// a vocabulary, extents worldwide, a third each public, internal and private), signed in as a
// viewer, 16 clients. Beside each it runs the same search as one hand-written statement through
// pgx (the practical floor) and reports p50/p95 of both and the rates' ratio; STAC item search
// (bbox and a 5-year datetime) likewise. Targets at 10,000 records: search p95 <= 15 ms, facets
// p95 <= 30 ms, STAC search p95 <= 30 ms.
func BenchmarkSearch(b *testing.B) {
	n := 10000
	if v, err := strconv.Atoi(os.Getenv("BENCH_SEARCH_RECORDS")); err == nil && v > 0 {
		n = v
	}
	conc := ogcBenchConcurrency()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, server.DBURL)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	viewer, viewerID := searchBenchSetup(b, pool, n)
	d := &ogcBenchData{}
	var backend int
	if err := pool.QueryRow(ctx, "SELECT current_database(), pg_backend_pid()").Scan(&d.db, &backend); err != nil {
		b.Fatal(err)
	}
	d.postmaster = procField(backend, 1)
	hc := benchClient(conc)
	words := searchBenchWords()
	draw := func(rnd *rand.Rand) ogcParams {
		x, y := rnd.Float64()*300-180, rnd.Float64()*140-70
		return ogcParams{q: words[rnd.IntN(len(words))], bbox: [4]float64{x, y, x + 60, y + 40}}
	}
	// STAC item search draws a bbox and a data vintage interval of 5 years between 2000 and 2024.
	stacDraw := func(rnd *rand.Rand) ogcParams {
		p := draw(rnd)
		from := 2000 + rnd.IntN(20)
		p.q = fmt.Sprintf("%d-01-01/%d-12-31", from, from+4)
		return p
	}
	for _, c := range []struct {
		name, path string
		floor      func(p ogcParams) (string, []any)
		draw       func(rnd *rand.Rand) ogcParams
	}{
		{"stac-bbox+datetime", "/stac/search?limit=10&datetime=%s&bbox=%g,%g,%g,%g", func(p ogcParams) (string, []any) {
			start, end, _ := strings.Cut(p.q, "/")
			return `SELECT d.id, d.title, count(*) OVER () FROM catalog.datasets d
				WHERE (d.record_status = 'published' AND d.visibility IN ('public', 'internal') OR d.created_by = $7)
				AND d.extent_bbox[1] <= $4 AND d.extent_bbox[3] >= $2 AND d.extent_bbox[2] <= $5 AND d.extent_bbox[4] >= $3
				AND coalesce(d.data_vintage_end, d.data_vintage_start, d.created_at::date) >= $1::date
				AND coalesce(d.data_vintage_start, d.data_vintage_end, d.created_at::date) <= $6::date
				ORDER BY d.updated_at DESC, d.id LIMIT 11`,
				[]any{start, p.bbox[0], p.bbox[1], p.bbox[2], p.bbox[3], end, viewerID}
		}, stacDraw},
		{"q+bbox", "/search/datasets/?limit=10&q=%s&bbox=%g,%g,%g,%g", func(p ogcParams) (string, []any) {
			// The same match, order and page, visibility included, written by hand.
			return `SELECT d.id, d.title FROM catalog.datasets d JOIN catalog.dataset_search s ON s.dataset_id = d.id
				WHERE (d.record_status = 'published' AND d.visibility IN ('public', 'internal') OR d.created_by = $6)
				AND s.doc @@ websearch_to_tsquery('english', $1)
				AND d.extent_bbox[1] <= $4 AND d.extent_bbox[3] >= $2 AND d.extent_bbox[2] <= $5 AND d.extent_bbox[4] >= $3
				ORDER BY ts_rank_cd(s.doc, websearch_to_tsquery('english', $1), 1) DESC, d.id LIMIT 10`,
				[]any{p.q, p.bbox[0], p.bbox[1], p.bbox[2], p.bbox[3], viewerID}
		}, draw},
		{"facets", "/search/facets/?q=%s&bbox=%g,%g,%g,%g", func(p ogcParams) (string, []any) {
			return `WITH m AS MATERIALIZED (SELECT d.record_type, d.theme_category, d.source_organization FROM catalog.datasets d
				JOIN catalog.dataset_search s ON s.dataset_id = d.id
				WHERE (d.record_status = 'published' AND d.visibility IN ('public', 'internal') OR d.created_by = $6)
				AND s.doc @@ websearch_to_tsquery('english', $1)
				AND d.extent_bbox[1] <= $4 AND d.extent_bbox[3] >= $2 AND d.extent_bbox[2] <= $5 AND d.extent_bbox[4] >= $3)
				SELECT (SELECT jsonb_object_agg(record_type, c) FROM (SELECT record_type, count(*) c FROM m GROUP BY 1) x),
					(SELECT jsonb_agg(x) FROM (SELECT k, count(*) c FROM m, unnest(m.theme_category) k GROUP BY 1 ORDER BY 2 DESC LIMIT 20) x),
					(SELECT jsonb_agg(x) FROM (SELECT source_organization, count(*) c FROM m GROUP BY 1 ORDER BY 2 DESC LIMIT 20) x)`,
				[]any{p.q, p.bbox[0], p.bbox[1], p.bbox[2], p.bbox[3], viewerID}
		}, draw},
	} {
		b.Run(c.name, func(b *testing.B) {
			ours := func(ctx context.Context, p ogcParams) (int64, bool, error) {
				u := server.APIRoot + fmt.Sprintf(c.path, url.QueryEscape(p.q), p.bbox[0], p.bbox[1], p.bbox[2], p.bbox[3])
				if strings.HasPrefix(c.path, "/stac/") {
					u = server.APIRoot + fmt.Sprintf(c.path, p.q, p.bbox[0], p.bbox[1], p.bbox[2], p.bbox[3])
				}
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
				req.Header.Set("Authorization", "Bearer "+viewer)
				res, err := hc.Do(req)
				if err != nil {
					return 0, false, err
				}
				defer res.Body.Close()
				n, err := io.Copy(io.Discard, res.Body)
				if err == nil && res.StatusCode != http.StatusOK {
					err = fmt.Errorf("%s: %d", u, res.StatusCode)
				}
				return n, false, err
			}
			floor := func(ctx context.Context, p ogcParams) (int64, bool, error) {
				sql, args := c.floor(p)
				rows, err := pool.Query(ctx, sql, args...)
				if err != nil {
					return 0, false, err
				}
				rows.Close()
				return 0, false, rows.Err()
			}
			rnd := rand.New(rand.NewPCG(7, uint64(len(c.name))))
			for _, side := range []func(context.Context, ogcParams) (int64, bool, error){ours, floor} {
				if _, err := ogcRun(conc, 4*conc, func(int) ogcParams { return c.draw(rnd) }, side, d); err != nil {
					b.Fatal(err)
				}
			}
			sa, sb := abba(b, conc, 1600, func() ogcParams { return c.draw(rnd) }, ours, floor, d)
			b.ReportMetric(sa.rate(), "server-req/s")
			b.ReportMetric(sb.rate(), "floor-req/s")
			b.ReportMetric(sa.rate()/sb.rate(), "ratio")
			b.ReportMetric(sa.pct(0.50), "server-p50-ms")
			b.ReportMetric(sa.pct(0.95), "server-p95-ms")
			b.ReportMetric(sb.pct(0.50), "floor-p50-ms")
			b.ReportMetric(sb.pct(0.95), "floor-p95-ms")
			b.ReportMetric(sa.perReq(sa.srv), "server-srv-cpu-ms/req")
			b.ReportMetric(sa.perReq(sa.pg+sa.exited), "server-pg-cpu-ms/req")
			b.ReportMetric(sb.perReq(sb.pg+sb.exited), "floor-pg-cpu-ms/req")
		})
	}
}

// searchBenchRegions are the places of generated summaries.
func searchBenchRegions() []string {
	return strings.Fields(`rhine danube thames loire elbe alps pyrenees carpathians baltic adriatic aegean flanders
		bavaria tuscany andalusia provence scotland wales brittany lapland`)
}

// benchViewer creates a viewer through the admin API and signs it in: its token and id.
func benchViewer(b *testing.B) (string, string) {
	b.Helper()
	name := "benchviewer" + strconv.FormatInt(time.Now().UnixNano(), 36)
	body := fmt.Sprintf(`{"username":%q,"email":%q,"password":%q,"role":"viewer"}`, name, name+"@example.org", AdminPassword)
	res, err := plain.Do(authed(http.MethodPost, server.APIRoot+"/admin/users/", body, newUserTB(b)))
	if err != nil {
		b.Fatal(err)
	}
	var u struct{ ID string }
	decode(b, res, &u)
	res, err = plain.PostForm(server.APIRoot+"/auth/login", url.Values{"username": {name}, "password": {AdminPassword}})
	if err != nil {
		b.Fatal(err)
	}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	decode(b, res, &tok)
	if u.ID == "" || tok.AccessToken == "" {
		b.Fatalf("viewer %s: id %q, token %d bytes", name, u.ID, len(tok.AccessToken))
	}
	return tok.AccessToken, u.ID
}

// searchBenchWords is the vocabulary of generated titles, summaries and keywords.
func searchBenchWords() []string {
	return strings.Fields(`hydrography rivers lakes canals roads railways buildings parcels cadastre elevation soils
		geology land cover forests wetlands coastline bathymetry population census schools hospitals parks
		protected areas noise air quality flood risk zoning addresses boundaries municipalities heritage
		agriculture crops fisheries energy wind solar pipelines power lines transport traffic cycling footpaths`)
}

// searchBenchSetup generates the catalog once per database (records titled "bench search ..."
// are reused) and returns a viewer's token and id.
func searchBenchSetup(b *testing.B, pool *pgxpool.Pool, n int) (string, string) {
	b.Helper()
	ctx := context.Background()
	token, viewerID := benchViewer(b)
	var have int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM catalog.datasets WHERE title LIKE 'bench search %'`).Scan(&have); err != nil {
		b.Fatal(err)
	}
	if have >= n {
		return token, viewerID
	}
	start := time.Now()
	words, regions := searchBenchWords(), searchBenchRegions()
	// One statement: titles, summaries and keywords drawn from the vocabulary by the row number,
	// extents anywhere on Earth, visibility by thirds; the trigger indexes every row.
	_, err := pool.Exec(ctx, `INSERT INTO catalog.datasets (table_schema, table_name, title, summary, visibility, record_type,
			record_status, theme_category, source_organization, extent_bbox, created_by, data_vintage_start, data_vintage_end)
		SELECT 'data', 'bench_search_' || i, 'bench search ' || w[1 + i % nw] || ' ' || w[1 + (i / 7) % nw] || ' ' || i,
			'Survey of ' || w[1 + (i / 3) % nw] || ' and ' || w[1 + (i / 11) % nw] || ' in ' || r[1 + (i / 17) % cardinality(r)],
			(ARRAY['public', 'internal', 'private'])[1 + i % 3], 'vector_dataset', 'published',
			ARRAY[w[1 + (i / 5) % nw], w[1 + (i / 13) % nw]], 'Agency ' || (i % 23),
			ARRAY[x, y, x + 1 + (i % 10), y + 1 + (i % 7)]::float8[], (SELECT id FROM catalog.users WHERE username = 'admin'),
			DATE '2000-01-01' + (i * 37) % 9000, DATE '2000-01-01' + (i * 37) % 9000 + i % 400
		FROM generate_series($1::int, $2::int) i, LATERAL (SELECT $3::text[] AS w, cardinality($3::text[]) AS nw, $4::text[] AS r,
			((i::bigint * 7919) % 340) - 170 AS x, ((i::bigint * 104729) % 150) - 75 AS y) v`, have+1, n, words, regions)
	if err != nil {
		b.Fatal(err)
	}
	// Measured in the steady state autovacuum keeps a catalog in, not amid the generation's garbage.
	if _, err := pool.Exec(ctx, "VACUUM ANALYZE catalog.datasets, catalog.dataset_search"); err != nil {
		b.Fatal(err)
	}
	b.Logf("setup: %d records generated and indexed in %s", n-have, time.Since(start).Round(time.Millisecond))
	return token, viewerID
}
