package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/jackc/pgx/v5"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// reply is a decoded response of the validating client.
type reply struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into a map (objects) or fails the test.
func (r reply) JSON(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v: %s", err, r.Body)
	}
	return m
}

// call sends one request through the validating transport: every answer is checked against the
// contract before the test sees it. body may be nil, a string (sent as is), url.Values (form) or
// anything else (JSON).
func call(t *testing.T, method, path string, body any, headers ...string) reply {
	t.Helper()
	return callAt(t, httpc, server.APIRoot, method, path, body, headers...)
}

func callAt(t *testing.T, hc *http.Client, root, method, path string, body any, headers ...string) reply {
	t.Helper()
	var rd io.Reader
	ctype := ""
	switch b := body.(type) {
	case nil:
	case string:
		rd, ctype = strings.NewReader(b), "application/json"
	case url.Values:
		rd, ctype = strings.NewReader(b.Encode()), "application/x-www-form-urlencoded"
	default:
		buf, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd, ctype = bytes.NewReader(buf), "application/json"
	}
	req, err := http.NewRequest(method, root+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i] == "Cookie" {
			req.Header.Add("Cookie", headers[i+1])
			continue
		}
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return reply{Status: res.StatusCode, Header: res.Header, Body: b}
}

func bearer(token string) []string { return []string{"Authorization", "Bearer " + token} }
func apiKey(key string) []string   { return []string{"X-Api-Key", key} }

// session is a signed-in user of the shared server.
type session struct {
	ID, Username, Password string
	Access, Refresh        string
}

var userSeq atomic.Int64

// login signs in through POST /auth/login.
func login(t *testing.T, username, password string) session {
	t.Helper()
	r := call(t, "POST", "/auth/login", url.Values{"username": {username}, "password": {password}})
	if r.Status != 200 {
		t.Fatalf("login %s: %d %s", username, r.Status, r.Body)
	}
	m := r.JSON(t)
	s := session{Username: username, Password: password, Access: m["access_token"].(string)}
	if rt, ok := m["refresh_token"].(string); ok {
		s.Refresh = rt
	}
	me := call(t, "GET", "/auth/me/", nil, bearer(s.Access)...).JSON(t)
	s.ID = me["id"].(string)
	return s
}

var (
	adminMu      sync.Mutex
	adminSession *session
	adminSince   time.Time
)

// admin returns a session of the first admin (created by the server from ADMIN_*), signed in
// again every five minutes: a run slowed down by a busy machine outlives an access token.
func admin(t *testing.T) session {
	t.Helper()
	adminMu.Lock()
	defer adminMu.Unlock()
	if adminSession == nil || time.Since(adminSince) > 5*time.Minute {
		s := login(t, "admin", AdminPassword)
		adminSession, adminSince = &s, time.Now()
	}
	return *adminSession
}

// newUser creates a user with role through the admin API and signs them in.
func newUser(t *testing.T, role string) session {
	t.Helper()
	n := userSeq.Add(1)
	name := "user" + strings.ToLower(randomHex(3)) + string(rune('a'+n%26))
	password := "Pass-word-" + randomHex(4)
	r := call(t, "POST", "/admin/users/", map[string]any{"username": name, "email": name + "@example.org",
		"password": password, "role": role, "email_verified": true}, bearer(admin(t).Access)...)
	if r.Status != 201 {
		t.Fatalf("create user: %d %s", r.Status, r.Body)
	}
	return login(t, name, password)
}

// newKey creates an API key for the session's user through /auth/api-keys/.
func newKey(t *testing.T, s session, scope string) (key, id string) {
	t.Helper()
	r := call(t, "POST", "/auth/api-keys/", map[string]any{"name": "k-" + randomHex(2), "scope": scope}, bearer(s.Access)...)
	if r.Status != 201 {
		t.Fatalf("create key: %d %s", r.Status, r.Body)
	}
	m := r.JSON(t)
	return m["key"].(string), m["id"].(string)
}

// startFresh starts another server on a new database for tests that need their own settings;
// both go away when the test ends.
func startFresh(t *testing.T, env ...string) *Server {
	t.Helper()
	ctx := context.Background()
	dbURL, err := CreateDatabase(ctx, adminDBURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = DropDatabase(ctx, adminDBURL, dbURL) })
	s, err := Start(ctx, dbURL, env...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			// The shared server's log is printed at the end of the run; this one's only here.
			t.Logf("log of the test's own server (tail):\n%s", tail(s.Logs(), 4000))
		}
		s.Stop()
	})
	return s
}

// dbConn opens a connection to the shared server's database for checks the API does not expose
// (what tables exist, settings the typed settings API will own later); closed with the test.
func dbConn(t *testing.T) *pgx.Conn {
	t.Helper()
	return connect(t, server.DBURL)
}

// connect opens a connection to the database at dbURL, closed with the test.
func connect(t *testing.T, dbURL string) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	return conn
}

// newUserTB makes an editor for benchmarks and returns its access token.
func newUserTB(tb testing.TB) string {
	tb.Helper()
	t, ok := tb.(*testing.T)
	if ok {
		return newUser(t, "editor").Access
	}
	// Benchmarks cannot use the *testing.T helpers: sign in as the admin, who may upload.
	res, err := plain.PostForm(server.APIRoot+"/auth/login", url.Values{"username": {"admin"}, "password": {AdminPassword}})
	if err != nil {
		tb.Fatal(err)
	}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	decode(tb, res, &tok)
	return tok.AccessToken
}

func authed(method, u, body, token string) *http.Request {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, u, rd)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+token)
	return req
}

func decode(tb testing.TB, res *http.Response, v any) {
	tb.Helper()
	defer res.Body.Close()
	if err := json.NewDecoder(res.Body).Decode(v); err != nil {
		tb.Fatalf("decode %s: %v", res.Request.URL, err)
	}
}

// staleFor bounds how long a server may answer from what it keeps after a change committed
// elsewhere (another replica, an operator's SQL): kept map documents, tiles and principals are
// forgotten when PostgreSQL's announcement of the change reaches it (catalog.Watch), a
// millisecond or two after the commit. Without the announcement the server would serve
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
