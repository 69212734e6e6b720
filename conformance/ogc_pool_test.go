package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// After a burst of items requests whose clients give up while their requests wait for one of the
// server's two database connections, or while their query runs, or while their page streams,
// the next request answers at once: no connection stays held by a request nobody waits for, and
// no query keeps running in the database.
func TestItemsPoolRecoversFromAbandonedRequests(t *testing.T) {
	// 200,000 rows: sorting them by an unindexed text column takes a few hundred milliseconds.
	// The first 20,000 carry 1.6 kB of text (that compresses to nothing in the table), so that a
	// page of 10,000 of them, 16 MB, outgrows the socket buffers and a client that hangs up makes
	// the server's writes fail mid-page. Made in about half a second.
	conn, token, table, items := poolFixture(t, "pool_", `SELECT g AS gid, ST_SetSRID(ST_MakePoint(g % 360 - 180, g % 170 - 85), 4326)::geometry(Point, 4326) AS geom,
		md5(g::text) AS name, g % 1000 AS n, CASE WHEN g <= 20000 THEN repeat(md5(g::text), 50) END AS note FROM generate_series(1, 200000) g`)
	ctx := context.Background()

	// 50 clients at once, each gone after 50 ms: with two connections nearly all of them wait
	// for one, a few are cut while their sort runs or their page streams. Five more read the
	// start of a page of 10,000 and hang up, so that the server's writes fail mid-page.
	slow := []string{"?sortby=name&offset=150000&limit=1000", "?limit=10000", "?n=7&sortby=-name"}
	impatient := &http.Client{Timeout: 50 * time.Millisecond, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	var cut, answered, hungUp atomic.Int64
	var wg sync.WaitGroup
	get := func(c *http.Client, u string) (*http.Response, error) {
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		return c.Do(req)
	}
	for i := 0; i < 55; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i >= 50 {
				res, err := get(&http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}},
					items+"?limit=10000&offset="+fmt.Sprint((i-50)*1000))
				if err == nil {
					_, _ = io.CopyN(io.Discard, res.Body, 64<<10)
					res.Body.Close() // before the end: the connection is closed
					hungUp.Add(1)
				}
				return
			}
			res, err := get(impatient, items+slow[i%len(slow)])
			if err == nil {
				_, err = io.Copy(io.Discard, res.Body)
				res.Body.Close()
			}
			if err != nil {
				cut.Add(1)
			} else {
				answered.Add(1)
			}
		}()
	}
	wg.Wait()
	if cut.Load() < 40 {
		t.Fatalf("only %d of 50 requests were abandoned (%d answered in 50 ms): the load did not queue", cut.Load(), answered.Load())
	}

	// The next requests answer at once, more of them than there are connections, each a full
	// page (a row beyond it was read and left unwritten).
	start := time.Now()
	for i := 0; i < 5; i++ {
		res, err := get(&http.Client{Timeout: 2 * time.Second}, items+"?limit=5&offset="+fmt.Sprint(i*5))
		if err != nil {
			t.Fatalf("request %d after the abandoned ones: %v (the pool is wedged)", i+1, err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		var page struct{ NumberReturned int }
		if res.StatusCode != 200 || json.Unmarshal(body, &page) != nil || page.NumberReturned != 5 {
			t.Fatalf("request %d after the abandoned ones: %d %.300s", i+1, res.StatusCode, body)
		}
	}
	t.Logf("%d requests abandoned, %d answered within 50 ms, %d hung up mid-page; the next five answered in %s",
		cut.Load(), answered.Load(), hungUp.Load(), time.Since(start).Round(time.Millisecond))

	// And the database is not left running what nobody waits for.
	var active []string
	for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		rows, err := conn.Query(ctx, `SELECT state || ': ' || left(query, 120) FROM pg_stat_activity
			WHERE datname = current_database() AND application_name = 'meridian' AND state <> 'idle' AND query LIKE '%' || $1 || '%'`, table)
		if err != nil {
			t.Fatal(err)
		}
		if active, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			t.Fatal(err)
		}
		if len(active) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("queries of abandoned requests still run after 3 s:\n%s", strings.Join(active, "\n"))
		}
	}
}

// poolFixture starts a server with two database connections and registers a table made from
// rows (a SELECT with gid and geom): a connection of the test's to its database, an admin token,
// the table's name and its items URL.
func poolFixture(t *testing.T, prefix, rows string) (*pgx.Conn, string, string, string) {
	t.Helper()
	s := startFresh(t, "DB_MAX_CONNS=2", "RATE_LIMIT_ENABLED=false")
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.DBURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	table := prefix + randomHex(3)
	for _, stmt := range []string{"CREATE TABLE public." + table + " AS " + rows, "ALTER TABLE public." + table + " ADD PRIMARY KEY (gid)",
		"ANALYZE public." + table} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	token := poolAdminToken(t, s)
	if err := putSettingsAt(s.APIRoot, map[string]any{"ogc_items_max_page_size": 10000}); err != nil { // pages of 10,000: see the callers
		t.Fatal(err)
	}
	return conn, token, table, s.APIRoot + "/collections/" + poolRegister(t, s, token, table) + "/items"
}

// poolAdminToken signs in as the first admin of s.
func poolAdminToken(t *testing.T, s *Server) string {
	t.Helper()
	res, err := plain.PostForm(s.APIRoot+"/auth/login", url.Values{"username": {"admin"}, "password": {AdminPassword}})
	if err != nil {
		t.Fatal(err)
	}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	decode(t, res, &tok)
	return tok.AccessToken
}

// poolRegister registers public.<table> on s and returns the dataset id.
func poolRegister(t *testing.T, s *Server, token, table string) string {
	t.Helper()
	res, err := plain.Do(authed(http.MethodPost, s.APIRoot+"/ingest/register/", fmt.Sprintf(`{"table_path":"public.%s"}`, table), token))
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != 201 {
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		t.Fatal(errors.New("register: " + res.Status + " " + string(body)))
	}
	var d struct{ ID string }
	decode(t, res, &d)
	return d.ID
}

// Keyset pages with a filter count their matches on a second connection while the page is read.
// With more such requests than connections, a page holding its connection while it waited for a
// count that waited for a connection held by another such page stalled them all: every page now
// gives its connection back before it waits.
func TestCountedPagesDoNotExhaustThePool(t *testing.T) {
	_, token, _, items := poolFixture(t, "counted_", `SELECT g AS gid, ST_SetSRID(ST_MakePoint(g % 360 - 180, g % 170 - 85), 4326)::geometry(Point, 4326) AS geom,
		g % 10 AS n FROM generate_series(1, 20000) g`)
	items += "?n=3&limit=5&after_gid="
	client := &http.Client{Timeout: 10 * time.Second}
	errs := make(chan error, 24)
	var wg sync.WaitGroup
	for i := 0; i < 24; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodGet, items+fmt.Sprint(i*100), nil)
			req.Header.Set("Authorization", "Bearer "+token)
			res, err := client.Do(req)
			if err != nil {
				errs <- err
				return
			}
			defer res.Body.Close()
			var page struct{ NumberMatched, NumberReturned int }
			if err := json.NewDecoder(res.Body).Decode(&page); err != nil || res.StatusCode != 200 || page.NumberMatched != 2000 || page.NumberReturned != 5 {
				errs <- fmt.Errorf("page after %d: %d, %+v, %v", i*100, res.StatusCode, page, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// A request holds at most one of the pool's connections at a time: a transaction that read
// through the pool as well would wait, while holding one, for a second that a busy pool may never
// free (every connection held by a request waiting the same way). A server with one connection
// shows it at once. Saving a map read the map defaults through the pool inside its transaction.
func TestWritesNeedOneConnection(t *testing.T) {
	s := startFresh(t, "DB_MAX_CONNS=1", "RATE_LIMIT_ENABLED=false")
	token := poolAdminToken(t, s)
	hc := &http.Client{Timeout: 10 * time.Second}
	send := func(method, path, body string, want int) map[string]any {
		t.Helper()
		res, err := hc.Do(authed(method, s.APIRoot+path, body, token))
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		var out map[string]any
		raw, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != want {
			t.Fatalf("%s %s: %d, want %d: %s", method, path, res.StatusCode, want, raw)
		}
		_ = json.Unmarshal(raw, &out)
		return out
	}
	m := send(http.MethodPost, "/maps/", `{"name":"One connection"}`, 201)
	id, _ := m["id"].(string)
	send(http.MethodPut, "/maps/"+id, `{"name":"Still one connection","zoom":4}`, 200)
	send(http.MethodPost, "/maps/"+id+"/duplicate", `{}`, 200)
}
