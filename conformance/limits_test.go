package conformance

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// chunked hides a reader's length so the client sends it with Transfer-Encoding: chunked, as a
// client streaming a body of unknown size does.
type chunked struct{ r io.Reader }

func (c chunked) Read(p []byte) (int, error) { return c.r.Read(p) }

// An over-long body without Content-Length is cut while it is read; the answer is 413 whichever
// reader noticed (request validation for JSON operations, the multipart reader for uploads).
func TestChunkedBodyOverLimit(t *testing.T) {
	s := startFresh(t, "RATE_LIMIT_ENABLED=false", "MAX_BODY_BYTES=2048", "MAX_UPLOAD_BYTES=8192")
	hc := contractAt(t, s)
	tok := loginAt(t, hc, s.APIRoot, "admin", AdminPassword)

	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	fw, _ := mw.CreateFormFile("file", "big.geojson")
	_, _ = fw.Write(pointsGeoJSON(400)) // about 40 KB
	_ = mw.Close()

	tests := []struct {
		name, path, ctype string
		body              []byte
		want              int
	}{
		{"JSON operation over MAX_BODY_BYTES", "/datasets/create/", "application/json",
			[]byte(`{"title":"t","summary":"` + strings.Repeat("x", 4096) + `"}`), 413},
		{"JSON operation within MAX_BODY_BYTES", "/datasets/create/", "application/json",
			[]byte(`{"title":"t","columns":[{"name":"a","type":"text"}]}`), 200},
		{"upload over MAX_UPLOAD_BYTES", "/ingest/upload", mw.FormDataContentType(), form.Bytes(), 413},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, s.APIRoot+tt.path, chunked{bytes.NewReader(tt.body)})
			req.ContentLength, req.TransferEncoding = -1, []string{"chunked"}
			req.Header.Set("Content-Type", tt.ctype)
			req.Header.Set("Authorization", "Bearer "+tok)
			res, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			if res.StatusCode != tt.want {
				b, _ := io.ReadAll(res.Body)
				res.Body.Close()
				t.Fatalf("status %d, want %d: %s", res.StatusCode, tt.want, b)
			}
			if tt.want == 413 {
				if p := problemOf(t, res); !strings.Contains(p["detail"].(string), "limit") {
					t.Fatalf("413 problem does not name the limit: %v", p)
				}
				return
			}
			res.Body.Close()
		})
	}
}

// loginAt signs in on another server and returns the access token.
func loginAt(t *testing.T, hc *http.Client, root, username, password string) string {
	t.Helper()
	r := callAt(t, hc, root, "POST", "/auth/login", url.Values{"username": {username}, "password": {password}})
	if r.Status != 200 {
		t.Fatalf("login %s: %d %s", username, r.Status, r.Body)
	}
	return r.JSON(t)["access_token"].(string)
}

// contractAt is a validating client for a server started by startFresh.
func contractAt(t *testing.T, s *Server) *http.Client {
	t.Helper()
	c, err := NewContract(mustDoc(t), s.APIRoot)
	if err != nil {
		t.Fatal(err)
	}
	return c.Client()
}

// QUERY_TIMEOUT bounds every query a request makes: one that runs longer is cancelled by
// PostgreSQL (statement_timeout), answers 503 saying so, and gives its connection back, so a
// burst of slow requests on a pool of two leaves the server answering.
func TestQueryTimeout(t *testing.T) {
	s := startFresh(t, "RATE_LIMIT_ENABLED=false", "QUERY_TIMEOUT=1s", "DB_MAX_CONNS=2")
	hc := contractAt(t, s)
	tok := loginAt(t, hc, s.APIRoot, "admin", AdminPassword)
	ctx := context.Background()
	conn := connect(t, s.DBURL)
	slow := "slow_" + randomHex(3)
	for _, sql := range []string{
		`CREATE TABLE public.` + slow + ` (id serial PRIMARY KEY, name text, geom geometry(Point, 4326))`,
		`INSERT INTO public.` + slow + ` (name, geom) VALUES ('a', ST_SetSRID(ST_MakePoint(5, 50), 4326))`,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	r := callAt(t, hc, s.APIRoot, "POST", "/ingest/register/", map[string]any{"table_path": "public." + slow, "title": "Slow"}, bearer(tok)...)
	if r.Status != 201 {
		t.Fatalf("register: %d %s", r.Status, r.Body)
	}
	id := r.JSON(t)["id"].(string)
	// Behind the catalog's back, reading the registered name now takes two seconds.
	for _, sql := range []string{
		`ALTER TABLE public.` + slow + ` RENAME TO ` + slow + `_base`,
		`CREATE VIEW public.` + slow + ` AS SELECT b.* FROM public.` + slow + `_base b, pg_sleep(2) s`,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 4; i++ {
		start := time.Now()
		r := callAt(t, hc, s.APIRoot, "GET", "/collections/"+id+"/items?limit=5", nil, bearer(tok)...)
		if r.Status != 503 {
			t.Fatalf("slow read %d: %d %.300s", i+1, r.Status, r.Body)
		}
		if d := r.JSON(t)["detail"].(string); !strings.Contains(d, "longer than") || !strings.Contains(d, "1s") {
			t.Fatalf("503 detail %q does not say the query outlived the 1s limit", d)
		}
		if took := time.Since(start); took > 1900*time.Millisecond {
			t.Fatalf("slow read %d took %v: the query was not cut at 1s", i+1, took)
		}
	}
	start := time.Now()
	if r := callAt(t, hc, s.APIRoot, "GET", "/datasets/"+id, nil, bearer(tok)...); r.Status != 200 || time.Since(start) > time.Second {
		t.Fatalf("a normal request after the slow ones: %d in %v %.300s", r.Status, time.Since(start), r.Body)
	}
}

// One client cannot hold the request pool: its requests beyond its share (CLIENT_MAX_IN_FLIGHT)
// wait and are then refused with 503 and Retry-After, while other clients are answered at once.
// Filters over the size and term bounds are refused before the database sees them.
func TestOneClientCannotTakeThePool(t *testing.T) {
	s := startFresh(t, "RATE_LIMIT_ENABLED=false", "DB_MAX_CONNS=4", "CLIENT_MAX_IN_FLIGHT=2", "CLIENT_QUEUE_WAIT=300ms")
	hc := contractAt(t, s)
	tok := loginAt(t, hc, s.APIRoot, "admin", AdminPassword)
	conn := connect(t, s.DBURL)
	slow := "stall_" + randomHex(3)
	for _, sql := range []string{
		`CREATE TABLE public.` + slow + ` (id serial PRIMARY KEY, n integer, geom geometry(Point, 4326))`,
		`INSERT INTO public.` + slow + ` (n, geom) SELECT g, ST_SetSRID(ST_MakePoint(g % 90, 0), 4326) FROM generate_series(1, 50) g`,
	} {
		if _, err := conn.Exec(context.Background(), sql); err != nil {
			t.Fatal(err)
		}
	}
	r := callAt(t, hc, s.APIRoot, "POST", "/ingest/register/", map[string]any{"table_path": "public." + slow, "title": "Stall"}, bearer(tok)...)
	if r.Status != 201 {
		t.Fatalf("register: %d %s", r.Status, r.Body)
	}
	id := r.JSON(t)["id"].(string)
	wantStatus(t, "public", callAt(t, hc, s.APIRoot, "PATCH", "/datasets/"+id, map[string]any{"visibility": "public"}, bearer(tok)...), 200)
	for _, st := range []string{"ready", "internal", "published"} {
		callAt(t, hc, s.APIRoot, "PATCH", "/datasets/"+id+"/status/", map[string]any{"status": st}, bearer(tok)...)
	}
	// Filters beyond the bounds: refused at once, naming the bound.
	chain := func(n int) string {
		terms := make([]string, n)
		for i := range terms {
			terms[i] = fmt.Sprintf("n = %d", i)
		}
		return url.QueryEscape(strings.Join(terms, " OR "))
	}
	wantStatus(t, "a 3,000-term OR chain", callAt(t, hc, s.APIRoot, "GET", "/collections/"+id+"/items?filter="+chain(3000), nil), 400, "bytes")
	wantStatus(t, "a 400-term OR chain", callAt(t, hc, s.APIRoot, "GET", "/collections/"+id+"/items?filter="+chain(400), nil), 400, "terms")
	wantStatus(t, "a 300-term OR chain", callAt(t, hc, s.APIRoot, "GET", "/collections/"+id+"/items?filter="+chain(300), nil), 200)

	// Behind the catalog's back, every read of the table now takes two seconds.
	for _, sql := range []string{
		`ALTER TABLE public.` + slow + ` RENAME TO ` + slow + `_base`,
		`CREATE VIEW public.` + slow + ` AS SELECT b.* FROM public.` + slow + `_base b, pg_sleep(2) s`,
	} {
		if _, err := conn.Exec(context.Background(), sql); err != nil {
			t.Fatal(err)
		}
	}
	// An anonymous client sends three slow reads at once: two run, the third waits its turn for
	// the queue's 300 ms and is refused.
	type answer struct {
		status int
		retry  string
		took   time.Duration
	}
	answers := make(chan answer, 3)
	for i := range 3 {
		go func() {
			time.Sleep(time.Duration(i) * 150 * time.Millisecond) // the third comes last
			t0 := time.Now()
			res, err := plain.Get(s.APIRoot + "/collections/" + id + "/items?limit=5")
			if err != nil {
				answers <- answer{}
				return
			}
			res.Body.Close()
			answers <- answer{res.StatusCode, res.Header.Get("Retry-After"), time.Since(t0)}
		}()
	}
	// Meanwhile another client (a signed-in user) is served without waiting.
	time.Sleep(500 * time.Millisecond)
	t0 := time.Now()
	wantStatus(t, "another client during the flood", callAt(t, hc, s.APIRoot, "GET", "/datasets/"+id, nil, bearer(tok)...), 200)
	if took := time.Since(t0); took > time.Second {
		t.Errorf("another client waited %s", took)
	}
	var refused, served int
	for range 3 {
		a := <-answers
		switch {
		case a.status == 503 && a.retry != "" && a.took >= 300*time.Millisecond && a.took < 1500*time.Millisecond:
			refused++
		case a.status == 200:
			served++
		default:
			t.Errorf("answer %+v", a)
		}
	}
	if refused != 1 || served != 2 {
		t.Fatalf("%d served and %d refused; want 2 and 1", served, refused)
	}
}
