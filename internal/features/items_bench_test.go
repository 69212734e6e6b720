package features

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"meridian/internal/testdb"
)

// benchItemsRows is the size of the generated tables (BENCH_ITEMS_ROWS overrides the 50,000).
func benchItemsRows() int {
	if n, err := strconv.Atoi(os.Getenv("BENCH_ITEMS_ROWS")); err == nil && n >= 2000 {
		return n
	}
	return 50_000
}

// benchTable creates data.<name> with n features of the given geometry expression (over g, the
// row number, and r, a random number) and the five attribute columns of the conformance
// benchmarks, in random physical order, with its primary key and GIST index, analysed.
func benchTable(b testing.TB, ctx context.Context, pool *pgxpool.Pool, name, geomType, geomExpr string, n int) Table {
	b.Helper()
	stmts := []string{
		"SELECT setseed(0.42)",
		`CREATE TABLE data.` + name + ` AS
		 SELECT g AS gid, ` + geomExpr + `::geometry(` + geomType + `, 4326) AS geom,
		        (random() * 1000000)::integer AS n, random() * 1000 AS score, 'k' || (g % 20) AS kind,
		        DATE '2024-01-01' + (g % 366) AS day, 'name-' || g AS name
		 FROM (SELECT g, random() AS r FROM generate_series(1, ` + strconv.Itoa(n) + `) g) s ORDER BY random()`,
		"ALTER TABLE data." + name + " ADD PRIMARY KEY (gid)",
		"CREATE INDEX ON data." + name + " USING gist (geom)",
		"VACUUM ANALYZE data." + name,
	}
	for _, s := range stmts {
		if _, err := pool.Exec(ctx, s); err != nil {
			b.Fatalf("%s: %v", s, err)
		}
	}
	t, err := Reader{Pool: pool}.Describe(ctx, "data", name, "gid", "geom")
	if err != nil {
		b.Fatal(err)
	}
	return t
}

// cpuTime is the CPU (user + system) this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procCPU is the CPU (utime + stime) process pid has used, from /proc/<pid>/stat; 0 when it
// cannot be read (not Linux, or another user's process without access).
func procCPU(pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name may hold spaces; the fields after its closing parenthesis are fixed.
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond // USER_HZ is 100 on Linux
}

// BenchmarkItems chooses between encoding GeoJSON in Go and in PostGIS by measuring both over
// the same table, side by side in one run: each iteration reads one page of 1000 features after a
// random key (the same for both) through Reader.Items and Cursor.Append (typed binary values
// and WKB, encoded here), then through a query that lets PostGIS encode each feature
// (ST_AsGeoJSON(t.*) per row, read as text and copied into the buffer). It reports the wall time
// of a page for both, the ratio postgis/go (above 1: Go is faster end to end), and the CPU this
// process and the database backend spent per page on each side (the Go side encodes here; the
// PostGIS side only copies, its backend encodes), with the ratios of the database's CPU (the
// part that does not scale out) and of the CPU of both. Both sides share one connection.
func BenchmarkItems(b *testing.B) {
	ctx := context.Background()
	setup := testdb.New(b)
	// One connection for both sides, so that its backend's CPU is the database's share of a page.
	cfg := setup.Config()
	cfg.MaxConns, cfg.MinConns = 1, 1
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	var backend int
	if err := pool.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&backend); err != nil {
		b.Fatal(err)
	}
	n := benchItemsRows()
	known := int64(n)
	tables := []struct {
		name, typ, expr string
	}{
		{"bench_points", "Point", "ST_SetSRID(ST_MakePoint(-180 + 360 * r, -85 + 170 * random()), 4326)"},
		// Polygons of 9 to 33 vertices, as parcels and buildings have.
		{"bench_polygons", "Polygon", "ST_Buffer(ST_SetSRID(ST_MakePoint(-180 + 360 * r, -85 + 170 * random()), 4326), 0.001 + 0.01 * random(), 2 + (g % 7))"},
	}
	for _, tc := range tables {
		t := benchTable(b, ctx, setup, tc.name, tc.typ, tc.expr, n)
		const limit = 1000
		// Both read the page as a range of the key (the first key drawn at random), so that the
		// rows read and the way they are read are the same and only the encoding differs; an
		// OFFSET would add the same walk over skipped rows to both.
		pgSQL := "SELECT ST_AsGeoJSON(t.*) FROM data." + tc.name + " t WHERE t.gid > $2 ORDER BY t.gid LIMIT $1"
		b.Run(tc.typ, func(b *testing.B) {
			rnd := rand.New(rand.NewPCG(7, 11))
			buf := make([]byte, 0, 1<<20)
			var goWall, pgWall, goCPU, pgCPU, goDB, pgDB time.Duration
			var goBytes, pgBytes int
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				after := rnd.IntN(n - limit)
				afterKey := int64(after)

				start, cpu, db := time.Now(), cpuTime(), procCPU(backend)
				cur, err := Reader{Pool: pool}.Items(ctx, t, ItemsQuery{Limit: limit, AfterKey: &afterKey, KnownCount: &known})
				if err != nil {
					b.Fatal(err)
				}
				buf = append(buf[:0], `{"type":"FeatureCollection","features":[`...)
				for first := true; ; first = false {
					mark := len(buf)
					if !first {
						buf = append(buf, ',')
					}
					var ok bool
					if buf, ok, err = cur.Append(buf); err != nil {
						b.Fatal(err)
					}
					if !ok {
						buf = buf[:mark]
						break
					}
				}
				buf = append(buf, "]}"...)
				cur.Close()
				if cur.Returned() != limit {
					b.Fatalf("go page of %d features", cur.Returned())
				}
				goWall += time.Since(start)
				goCPU += cpuTime() - cpu
				goDB += procCPU(backend) - db
				goBytes += len(buf)
				if i == 0 && !json.Valid(buf) {
					b.Fatalf("go page is not JSON: %.300s", buf)
				}

				start, cpu, db = time.Now(), cpuTime(), procCPU(backend)
				rows, err := pool.Query(ctx, pgSQL, limit+1, after)
				if err != nil {
					b.Fatal(err)
				}
				buf = append(buf[:0], `{"type":"FeatureCollection","features":[`...)
				got := 0
				for rows.Next() {
					if got == limit {
						continue // the look-ahead row, as Items reads it
					}
					if got > 0 {
						buf = append(buf, ',')
					}
					buf = append(buf, rows.RawValues()[0]...)
					got++
				}
				rows.Close()
				if err := rows.Err(); err != nil {
					b.Fatal(err)
				}
				buf = append(buf, "]}"...)
				if got != limit {
					b.Fatalf("postgis page of %d features", got)
				}
				pgWall += time.Since(start)
				pgCPU += cpuTime() - cpu
				pgDB += procCPU(backend) - db
				pgBytes += len(buf)
				if i == 0 && !json.Valid(buf) {
					b.Fatalf("postgis page is not JSON: %.300s", buf)
				}
			}
			b.StopTimer()
			N := float64(b.N)
			b.ReportMetric(float64(goWall.Nanoseconds())/N, "go-ns/page")
			b.ReportMetric(float64(pgWall.Nanoseconds())/N, "postgis-ns/page")
			b.ReportMetric(float64(pgWall)/float64(goWall), "postgis/go")
			b.ReportMetric(float64(goCPU.Microseconds())/N, "go-client-cpu-us/page")
			b.ReportMetric(float64(pgCPU.Microseconds())/N, "postgis-client-cpu-us/page")
			b.ReportMetric(float64(goDB.Microseconds())/N, "go-db-cpu-us/page")
			b.ReportMetric(float64(pgDB.Microseconds())/N, "postgis-db-cpu-us/page")
			b.ReportMetric(float64(pgDB)/float64(goDB), "db-cpu-postgis/go")
			b.ReportMetric(float64(pgDB+pgCPU)/float64(goDB+goCPU), "cpu-postgis/go")
			b.ReportMetric(float64(goBytes)/N, "go-B/page")
			b.ReportMetric(float64(pgBytes)/N, "postgis-B/page")
		})
	}
}

// The pages Items reads in its three ways (one pass from offset 0, deep pages in key order
// through the key's index, other deep pages cut before the select list) are the pages of the
// one-pass query, and an integer key finds only its canonical text.
func TestItemsPagesMatchOnePass(t *testing.T) {
	ctx := context.Background()
	pool := testdb.New(t)
	const n = 3000
	tb := benchTable(t, ctx, pool, "pages", "Point", "ST_SetSRID(ST_MakePoint(-180 + 360 * r, -85 + 170 * random()), 4326)", n)
	sorts := map[string][]SortKey{"key": nil, "-key": {{Column: "gid", Desc: true}}, "score": {{Column: "score"}},
		"-kind,key": {{Column: "kind", Desc: true}, {Column: "gid"}}}
	orders := map[string]string{"key": "gid", "-key": "gid DESC NULLS LAST", "score": "score, gid", "-kind,key": "kind DESC NULLS LAST, gid"}
	for name, sort := range sorts {
		for _, bbox := range [][]float64{nil, {-90, -45, 90, 45}} {
			for _, offset := range []int{0, 1, 999, 2500, 2999, 3000} {
				where := ""
				if bbox != nil {
					where = " WHERE ST_Intersects(geom, ST_MakeEnvelope(-90, -45, 90, 45, 4326))"
				}
				rows, err := pool.Query(ctx, "SELECT gid FROM data.pages"+where+" ORDER BY "+orders[name]+" LIMIT 101 OFFSET $1", offset)
				if err != nil {
					t.Fatal(err)
				}
				want, err := pgx.CollectRows(rows, pgx.RowTo[int32])
				if err != nil {
					t.Fatal(err)
				}
				cur, err := Reader{Pool: pool}.Items(ctx, tb, ItemsQuery{Limit: 100, Offset: offset, Sort: sort, BBox: bbox})
				if err != nil {
					t.Fatal(err)
				}
				var got []int32
				for {
					out, ok, err := cur.Append(nil)
					if err != nil {
						t.Fatal(err)
					}
					if !ok {
						break
					}
					var f struct{ ID int32 }
					if err := json.Unmarshal(out, &f); err != nil {
						t.Fatalf("%v: %s", err, out)
					}
					got = append(got, f.ID)
				}
				cur.Close()
				if more := len(want) > 100; more != cur.More() || !slices.Equal(got, want[:min(100, len(want))]) {
					t.Fatalf("sort %s, bbox %v, offset %d: got %v (more %v), want %v", name, bbox, offset, got, cur.More(), want)
				}
			}
		}
	}
	for id, found := range map[string]bool{"5": true, "+5": false, "05": false, " 5": false, "abc": false, "99999999999999999999": false, "-1": false} {
		cur, err := Reader{Pool: pool}.Items(ctx, tb, ItemsQuery{ID: &id, Limit: 1})
		if err != nil {
			t.Fatalf("id %q: %v", id, err)
		}
		out, ok, err := cur.Append(nil)
		cur.Close()
		if err != nil || ok != found || found && !strings.HasPrefix(string(out), `{"type":"Feature","id":5,`) {
			t.Fatalf("id %q: %v %v %s", id, ok, err, out)
		}
	}
}
