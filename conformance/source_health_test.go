package conformance

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// Check Source Health on each kind of source: a remote URL (reachable and changed, gone,
// failing, a dead host), a registered table dropped behind the catalog's back, an upload.
func TestCheckSourceHealth(t *testing.T) {
	src := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/data.geojson":
			w.Header().Set("Last-Modified", time.Now().Add(time.Hour).UTC().Format(http.TimeFormat))
			w.Header().Set("ETag", `"v2"`)
			w.WriteHeader(200)
		case "/old.geojson":
			if r.Method == http.MethodHead {
				w.WriteHeader(http.StatusMethodNotAllowed) // HEAD refused: the check falls back to GET
				return
			}
			w.Header().Set("Last-Modified", time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC).Format(http.TimeFormat))
			_, _ = w.Write([]byte(`{"type":"FeatureCollection","features":[]}`))
		case "/broken":
			w.WriteHeader(500)
		default:
			http.NotFound(w, r)
		}
	}))
	defer src.Close()
	dead, _ := net.Listen("tcp", "127.0.0.1:0")
	deadURL := "http://" + dead.Addr().String() + "/gone"
	_ = dead.Close()

	s := startFresh(t, "RATE_LIMIT_ENABLED=false", "REMOTE_ALLOW_PRIVATE=true", "REMOTE_TIMEOUT=5s")
	hc := contractAt(t, s)
	tok := loginAt(t, hc, s.APIRoot, "admin", AdminPassword)
	ctx := context.Background()
	conn := connect(t, s.DBURL)
	if _, err := conn.Exec(ctx, `CREATE TABLE public.reg (id serial PRIMARY KEY, geom geometry(Point, 4326)); INSERT INTO public.reg (geom) VALUES ('SRID=4326;POINT(5 50)')`); err != nil {
		t.Fatal(err)
	}
	reg := callAt(t, hc, s.APIRoot, "POST", "/ingest/register/", map[string]any{"table_path": "public.reg", "title": "Registered"}, bearer(tok)...).JSON(t)["id"].(string)
	job := uploadAt(t, hc, s.APIRoot, tok, "up.geojson", pointsGeoJSON(2)).JSON(t)["job_id"].(string)
	callAt(t, hc, s.APIRoot, "POST", "/ingest/commit/"+job, map[string]any{}, bearer(tok)...)
	uploaded := waitJob(t, hc, s.APIRoot, tok, job, time.Minute, func(j map[string]any) bool { return j["status"] == "complete" })["dataset_id"].(string)
	withURL := func(u string) string {
		id := callAt(t, hc, s.APIRoot, "POST", "/datasets/create/", map[string]any{"title": "Remote " + randomHex(3), "columns": []any{}}, bearer(tok)...).JSON(t)["id"].(string)
		if r := callAt(t, hc, s.APIRoot, "PATCH", "/datasets/"+id, map[string]any{"source_url": u}, bearer(tok)...); r.Status != 200 {
			t.Fatalf("source_url: %d %s", r.Status, r.Body)
		}
		return id
	}
	check := func(t *testing.T, id, status, detail string) {
		t.Helper()
		r := callAt(t, hc, s.APIRoot, "POST", "/datasets/"+id+"/source-health/", nil, bearer(tok)...)
		b := r.JSON(t)
		if r.Status != 200 || b["source_health"] != status || !strings.Contains(b["source_health_detail"].(string), detail) || b["last_checked_at"] == nil {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		// Stored on the dataset, as its record shows it.
		if d := callAt(t, hc, s.APIRoot, "GET", "/datasets/"+id, nil, bearer(tok)...).JSON(t); d["source_health"] != status || d["last_checked_at"] == nil {
			t.Fatalf("the dataset: %v %v", d["source_health"], d["last_checked_at"])
		}
	}
	t.Run("reachable and changed", func(t *testing.T) {
		check(t, withURL(src.URL+"/data.geojson"), "healthy", `changed since the data was last loaded`)
	})
	t.Run("reachable by GET, unchanged", func(t *testing.T) { check(t, withURL(src.URL+"/old.geojson"), "healthy", "unchanged since") })
	t.Run("gone", func(t *testing.T) { check(t, withURL(src.URL+"/nothing"), "missing", "404") })
	t.Run("failing", func(t *testing.T) { check(t, withURL(src.URL+"/broken"), "inaccessible", "500") })
	t.Run("a dead host", func(t *testing.T) { check(t, withURL(deadURL), "inaccessible", "refused") })
	t.Run("an upload", func(t *testing.T) { check(t, uploaded, "healthy", "exists") })
	t.Run("a registered table dropped", func(t *testing.T) {
		check(t, reg, "healthy", "public.reg exists")
		if _, err := conn.Exec(ctx, `DROP TABLE public.reg`); err != nil {
			t.Fatal(err)
		}
		check(t, reg, "missing", "no longer exists")
	})
}

// The shared server refuses private addresses (REMOTE_ALLOW_PRIVATE is off by default): a source
// URL on one is inaccessible, and nothing is sent to it. Only who may change the dataset checks.
func TestSourceHealthRefusesPrivateAddressesAndReaders(t *testing.T) {
	hits := 0
	src := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits++ }))
	defer src.Close()
	u := newUser(t, "editor")
	id := call(t, "POST", "/datasets/create/", map[string]any{"title": "Intranet", "columns": []any{}}, bearer(u.Access)...).JSON(t)["id"].(string)
	if r := call(t, "PATCH", "/datasets/"+id, map[string]any{"source_url": src.URL + "/x"}, bearer(u.Access)...); r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	r := call(t, "POST", "/datasets/"+id+"/source-health/", nil, bearer(u.Access)...)
	if b := r.JSON(t); r.Status != 200 || b["source_health"] != "inaccessible" || hits != 0 {
		t.Fatalf("%d %s (requests that reached the source: %d)", r.Status, r.Body, hits)
	}
	publishAs(t, u, id, "public")
	if r := call(t, "POST", "/datasets/"+id+"/source-health/", nil, bearer(newUser(t, "viewer").Access)...); r.Status != 403 {
		t.Fatalf("a reader: %d %s", r.Status, r.Body)
	}
}
