package conformance

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/jackc/pgx/v5"

	"meridian/openapi"
)

// plain is an HTTP client without contract validation, for requests the contract does not describe
// literally (trailing-slash twins, HEAD, the documents themselves).
var plain = &http.Client{Timeout: time.Minute}

func problemOf(t *testing.T, res *http.Response) map[string]any {
	t.Helper()
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") {
		t.Fatalf("%s %s: content type %q, want application/problem+json", res.Request.Method, res.Request.URL, ct)
	}
	var p map[string]any
	if err := json.NewDecoder(res.Body).Decode(&p); err != nil {
		t.Fatalf("problem body: %v", err)
	}
	if s, _ := p["status"].(float64); int(s) != res.StatusCode {
		t.Fatalf("problem status %v != HTTP status %d", p["status"], res.StatusCode)
	}
	return p
}

func TestHealthIsHealthy(t *testing.T) {
	res, err := client.HealthWithResponse(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode() != 200 || res.JSON200 == nil || res.JSON200.Status != "healthy" {
		t.Fatalf("health: %d %s", res.StatusCode(), res.Body)
	}
	if res.JSON200.Version != "1.14.2" {
		t.Errorf("version %q", res.JSON200.Version)
	}
}

func TestLandingPageAtBothRoots(t *testing.T) {
	for _, path := range []string{"", "/"} {
		res, err := plain.Get(server.APIRoot + path)
		if err != nil {
			t.Fatal(err)
		}
		var lp struct {
			Links []struct{ Rel, Href string } `json:"links"`
		}
		err = json.NewDecoder(res.Body).Decode(&lp)
		res.Body.Close()
		if res.StatusCode != 200 || err != nil {
			t.Fatalf("GET /api%s: %d %v", path, res.StatusCode, err)
		}
		rels := map[string]string{}
		for _, l := range lp.Links {
			rels[l.Rel] = l.Href
		}
		for _, rel := range []string{"self", "service-desc", "service-doc", "conformance", "data"} {
			if rels[rel] == "" {
				t.Errorf("GET /api%s: no %s link in %v", path, rel, rels)
			}
		}
		if !strings.HasSuffix(rels["service-desc"], "/api/openapi.json") {
			t.Errorf("service-desc %q", rels["service-desc"])
		}
	}
	// And through the validating client, the landing page agrees with the contract.
	if res, err := client.OgcLandingPageWithResponse(context.Background(), nil); err != nil || res.StatusCode() != 200 {
		t.Fatalf("landing page via client: %v", err)
	}
}

func TestContractDocumentsServed(t *testing.T) {
	res, err := plain.Get(server.APIRoot + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	doc, err := openapi3.NewLoader().LoadFromData(body)
	if err != nil {
		t.Fatalf("openapi.json does not parse: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("openapi.json is not a valid OpenAPI 3.0 document: %v", err)
	}
	if doc.Info.Version != "1.14.2" || doc.OpenAPI != "3.0.3" {
		t.Errorf("info.version %q openapi %q", doc.Info.Version, doc.OpenAPI)
	}
	for path, want := range map[string]string{
		"/openapi.yaml":             "openapi: 3.0.3",
		"/docs":                     "redoc.standalone.js",
		"/docs/redoc.standalone.js": "Redoc",
	} {
		res, err := plain.Get(server.APIRoot + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || !bytes.Contains(b, []byte(want)) {
			t.Errorf("GET /api%s: %d, body lacks %q", path, res.StatusCode, want)
		}
	}
}

func TestTrailingSlashTwinsAndHEAD(t *testing.T) {
	for _, path := range []string{"/settings/basemaps/", "/auth/config/", "/stac/"} {
		a, err := plain.Get(server.APIRoot + path)
		if err != nil {
			t.Fatal(err)
		}
		a.Body.Close()
		b, err := plain.Get(server.APIRoot + strings.TrimSuffix(path, "/"))
		if err != nil {
			t.Fatal(err)
		}
		b.Body.Close()
		if a.StatusCode == 404 || a.StatusCode != b.StatusCode {
			t.Errorf("%s answered %d, without slash %d", path, a.StatusCode, b.StatusCode)
		}
	}
	req, _ := http.NewRequest(http.MethodHead, server.APIRoot+"/conformance", nil)
	res, err := httpc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || len(b) != 0 {
		t.Fatalf("HEAD /conformance: %d with %d body bytes", res.StatusCode, len(b))
	}
}

func TestUnknownPathIsProblem(t *testing.T) {
	res, err := plain.Get(server.APIRoot + "/no/such/thing")
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != 404 {
		t.Fatalf("status %d", res.StatusCode)
	}
	problemOf(t, res)
	if res.Header.Get("X-Request-Id") == "" {
		t.Error("no X-Request-Id header")
	}
}

// TestRequestValidation: malformed input is answered before any handler runs, with a detail
// array for schema violations (section 4.4) and a string problem for malformed syntax.
func TestRequestValidation(t *testing.T) {
	long := strings.Repeat("n", 256)
	tests := []struct {
		name, method, path, body string
		status                   int
		loc                      string
	}{
		{"string over maxLength", "POST", "/search/saved/", `{"name":"` + long + `","params":{}}`, 422, "body.name"},
		{"missing required field", "POST", "/search/saved/", `{"name":"x"}`, 422, "body.params"},
		{"wrong type", "POST", "/search/saved/", `{"name":5,"params":{}}`, 422, "body.name"},
		{"unknown enum value", "GET", "/datasets/?sort=colour", "", 422, "query.sort"},
		// OGC API clients expect 400 for an invalid parameter (/req/core/query-param-invalid).
		{"unknown enum value, OGC", "GET", "/collections/datasets/items?filter-lang=sql", "", 400, ""},
		{"bad uuid in path", "GET", "/datasets/not-a-uuid", "", 422, "path.dataset_id"},
		{"malformed JSON", "POST", "/search/saved/", `{"name":`, 400, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, server.APIRoot+tt.path, strings.NewReader(tt.body))
			req.Header.Set("Authorization", "Bearer "+admin(t).Access)
			if tt.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			res, err := httpc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			if res.StatusCode != tt.status {
				b, _ := io.ReadAll(res.Body)
				t.Fatalf("status %d, want %d: %s", res.StatusCode, tt.status, b)
			}
			p := problemOf(t, res)
			if tt.loc == "" {
				return
			}
			items, ok := p["detail"].([]any)
			if !ok || len(items) == 0 {
				t.Fatalf("detail is not an array: %v", p["detail"])
			}
			var locs []string
			for _, it := range items {
				var parts []string
				for _, l := range it.(map[string]any)["loc"].([]any) {
					parts = append(parts, fmt.Sprint(l))
				}
				locs = append(locs, strings.Join(parts, "."))
			}
			found := false
			for _, l := range locs {
				found = found || l == tt.loc
			}
			if !found {
				t.Errorf("detail locs %v, want %s", locs, tt.loc)
			}
		})
	}
}

func TestBodyLimit(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 11<<20)
	req, _ := http.NewRequest(http.MethodPost, server.APIRoot+"/search/saved/", bytes.NewReader(big))
	req.Header.Set("Content-Type", "application/json")
	res, err := httpc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d, want 413", res.StatusCode)
	}
	problemOf(t, res)
}

func TestGzipAndCORS(t *testing.T) {
	req, _ := http.NewRequest(http.MethodGet, server.APIRoot+"/openapi.json", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	res, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("openapi.json not compressed: %v", res.Header)
	}
	zr, err := gzip.NewReader(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, zr); err != nil {
		t.Fatal(err)
	}

	pre, _ := http.NewRequest(http.MethodOptions, server.APIRoot+"/collections", nil)
	pre.Header.Set("Origin", "https://maps.example.org")
	pre.Header.Set("Access-Control-Request-Method", "GET")
	pre.Header.Set("Access-Control-Request-Headers", "X-Api-Key")
	res2, err := plain.Do(pre)
	if err != nil {
		t.Fatal(err)
	}
	res2.Body.Close()
	if res2.Header.Get("Access-Control-Allow-Origin") == "" || !strings.Contains(strings.ToLower(res2.Header.Get("Access-Control-Allow-Headers")), "x-api-key") {
		t.Fatalf("CORS preflight: %d %v", res2.StatusCode, res2.Header)
	}
}

// TestEveryOperationAnswers calls every operation of the contract once: each answers through its
// route (implemented, or 501 naming its operationId), and every answer validates against the
// contract (the validating transport fails the call otherwise).
func TestEveryOperationAnswers(t *testing.T) {
	doc := contract.doc
	// As an admin, so requests reach their handlers instead of stopping at authentication. Logout
	// would end the session, so it runs with a token of its own.
	token := admin(t).Access
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if op.OperationID == "logout" || op.OperationID == "changePassword" {
				continue // covered by the identity tests; here they would end the admin's session
			}
			url := server.APIRoot + fillPath(path, append(item.Parameters, op.Parameters...))
			var body io.Reader
			req, _ := http.NewRequest(method, url, body)
			if op.RequestBody != nil && op.RequestBody.Value != nil {
				if _, ok := op.RequestBody.Value.Content["application/json"]; ok {
					req, _ = http.NewRequest(method, url, strings.NewReader(`{}`))
					req.Header.Set("Content-Type", "application/json")
				}
			}
			req.Header.Set("Authorization", "Bearer "+token)
			res, err := httpc.Do(req)
			if err != nil {
				t.Errorf("%s (%s %s): %v", op.OperationID, method, path, err)
				continue
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			switch {
			case res.StatusCode == 404 && bytes.Contains(b, []byte("no resource at this path")),
				res.StatusCode == http.StatusMethodNotAllowed:
				t.Errorf("%s (%s %s) is not routed: %d", op.OperationID, method, path, res.StatusCode)
			case res.StatusCode == http.StatusNotImplemented:
				if !bytes.Contains(b, []byte(op.OperationID)) {
					t.Errorf("%s: 501 problem does not name the operation: %s", op.OperationID, b)
				}
			}
		}
	}
}

// fillPath substitutes a well-formed value for every path parameter.
func fillPath(path string, params openapi3.Parameters) string {
	for _, p := range params {
		if p.Value == nil || p.Value.In != "path" {
			continue
		}
		v := "x"
		if s := p.Value.Schema; s != nil && s.Value != nil {
			switch {
			case len(s.Value.Enum) > 0:
				v = fmt.Sprint(s.Value.Enum[0])
			case s.Value.Format == "uuid":
				v = "5f0c8a52-3d3c-4f43-9b7e-1d2a6c0f9e11"
			case s.Value.Type != nil && (s.Value.Type.Is("integer") || s.Value.Type.Is("number")):
				v = "1"
			}
		}
		path = strings.ReplaceAll(path, "{"+p.Value.Name+"}", v)
	}
	return path
}

// TestStartupRefusesWeakSecret: a JWT_SECRET_KEY that is short or a placeholder stops the server
// with a message naming the variable.
func TestStartupRefusesWeakSecret(t *testing.T) {
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{strings.Repeat("k7", 15) + "q", "changeme-please-this-is-long-enough-123"} {
		cmd := exec.Command(bin, "serve")
		cmd.Env = []string{"DATABASE_URL=" + adminDBURL, "JWT_SECRET_KEY=" + secret, "PATH=/usr/bin:/bin"}
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Fatalf("serve started with secret %q", secret)
		}
		if !strings.Contains(string(out), "JWT_SECRET_KEY") {
			t.Errorf("message does not name the variable: %s", out)
		}
	}
}

func TestRateLimitAnswers429(t *testing.T) {
	s := startFresh(t, "RATE_LIMIT_PER_SECOND=0.5", "RATE_LIMIT_BURST=3")
	var last *http.Response
	for i := 0; i < 6; i++ {
		res, err := plain.Get(s.APIRoot + "/conformance")
		if err != nil {
			t.Fatal(err)
		}
		if res.StatusCode == http.StatusTooManyRequests {
			last = res
			break
		}
		res.Body.Close()
	}
	if last == nil {
		t.Fatal("no 429 after exhausting the burst")
	}
	ra, err := strconv.Atoi(last.Header.Get("Retry-After"))
	if err != nil || ra < 1 {
		t.Fatalf("Retry-After %q is not a positive integer", last.Header.Get("Retry-After"))
	}
	problemOf(t, last)
}

// TestDatabaseOutageAnswers503AndHeals stops PostgreSQL under a running server: requests answer
// 503 problems (health: 503, not healthy), and when PostgreSQL is back the server recovers by itself.
func TestDatabaseOutageAnswers503AndHeals(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	devdb := filepath.Join(root, "scripts", "devdb.sh")
	sh := func(args ...string) string {
		out, err := exec.Command(devdb, args...).Output()
		if err != nil {
			t.Fatalf("devdb %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	url := sh("start", "pgoutage")
	defer sh("stop", "pgoutage")
	ctx := context.Background()
	s, err := Start(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	c, err := NewContract(mustDoc(t), s.APIRoot)
	if err != nil {
		t.Fatal(err)
	}
	hc := c.Client()

	sh("stop", "pgoutage")
	// A health report is reused for a second: the outage shows within it.
	var h struct{ Status string }
	var res *http.Response
	for deadline := time.Now().Add(1500 * time.Millisecond); ; time.Sleep(100 * time.Millisecond) {
		if res, err = hc.Get(s.APIRoot + "/health"); err != nil {
			t.Fatal(err)
		}
		_ = json.NewDecoder(res.Body).Decode(&h)
		res.Body.Close()
		if res.StatusCode == 503 || time.Now().After(deadline) {
			break
		}
	}
	if res.StatusCode != 503 || h.Status == "healthy" {
		t.Fatalf("health with the database down: %d %q", res.StatusCode, h.Status)
	}
	res, err = hc.Get(s.APIRoot + "/auth/config/")
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != 503 {
		t.Fatalf("database-backed read with the database down: %d, want 503", res.StatusCode)
	}
	problemOf(t, res)

	sh("start", "pgoutage")
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := hc.Get(s.APIRoot + "/auth/config/")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("server did not recover after the database came back (last: %v %v)", res, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func mustDoc(t *testing.T) *openapi3.T {
	t.Helper()
	doc, err := openapi.Load()
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestReplicasStartTogether: two servers started at once on an empty database both come up; the
// advisory locks let exactly one of them apply the migrations and create the first admin.
func TestReplicasStartTogether(t *testing.T) {
	ctx := context.Background()
	dbURL, err := CreateDatabase(ctx, adminDBURL)
	if err != nil {
		t.Fatal(err)
	}
	defer DropDatabase(ctx, adminDBURL, dbURL)
	type result struct {
		s   *Server
		err error
	}
	results := make(chan result, 2)
	for i := 0; i < 2; i++ {
		go func() {
			s, err := Start(ctx, dbURL)
			results <- result{s, err}
		}()
	}
	for i := 0; i < 2; i++ {
		r := <-results
		if r.err != nil {
			t.Fatalf("replica %d: %v", i, r.err)
		}
		defer r.s.Stop()
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var admins, versions int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM catalog.users WHERE role = 'admin'").Scan(&admins); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM schema_migrations WHERE NOT dirty").Scan(&versions); err != nil {
		t.Fatal(err)
	}
	if admins != 1 || versions != 1 {
		t.Fatalf("after two concurrent starts: %d admins, %d clean migration rows; want 1 and 1", admins, versions)
	}
}
