package conformance

import (
	"bytes"
	"context"
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
