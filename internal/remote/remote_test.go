package remote

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"meridian/internal/apperr"
	"meridian/internal/config"
)

func policy(p Policy) Policy {
	p.MaxBytes, p.Timeout = 1<<20, 5*time.Second
	return p
}

// hostOf is the host:port of a test server (127.0.0.1:port).
func hostOf(t *testing.T, s *httptest.Server) string {
	t.Helper()
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Hostname()
}

// Every test server here listens on loopback, which the default policy never reaches: the
// refusals below are the SSRF cases, and the allowed fetches need the policy to say so.
func TestPrivateAddressesAreRefusedByDefault(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("inside")) }))
	defer srv.Close()
	ctx := context.Background()
	if _, err := New(policy(Policy{})).Get(ctx, srv.URL, nil); !errors.Is(err, ErrRefused) || apperr.KindOf(err) != apperr.KindUnprocessable {
		t.Fatalf("loopback by default: %v", err)
	}
	for _, raw := range []string{"http://localhost:1/", "http://[::1]:1/", "http://169.254.169.254/latest/meta-data/",
		"http://10.0.0.1/", "http://0.0.0.0:1/", "http://100.64.0.1/", "http://[fd00:ec2::254]/"} {
		if _, err := New(policy(Policy{})).Get(ctx, raw, nil); !errors.Is(err, ErrRefused) {
			t.Errorf("%s: %v, want refused", raw, err)
		}
	}
	for _, raw := range []string{"file:///etc/passwd", "ftp://example.org/x", "gopher://x/", "http://user:pw@example.org/", "/relative"} {
		if _, err := New(policy(Policy{})).Get(ctx, raw, nil); apperr.KindOf(err) != apperr.KindUnprocessable {
			t.Errorf("%s: %v, want 422", raw, err)
		}
	}
	r, err := New(policy(Policy{AllowPrivate: true})).Get(ctx, srv.URL, nil)
	if err != nil || string(r.Body) != "inside" {
		t.Fatalf("with REMOTE_ALLOW_PRIVATE: %v", err)
	}
	// A host the admin named may be private.
	if r, err := New(policy(Policy{AllowHosts: []string{hostOf(t, srv)}})).Get(ctx, srv.URL, nil); err != nil || r.Status != 200 {
		t.Fatalf("an allowed host: %v", err)
	}
}

// A redirect is checked like a first request; credentials stay with their host.
func TestRedirectsAreCheckedAgain(t *testing.T) {
	var seen http.Header
	inside := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = r.Header.Clone()
		_, _ = w.Write([]byte("inside"))
	}))
	defer inside.Close()
	outside := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, inside.URL+"/secret", http.StatusFound)
	}))
	defer outside.Close()
	ctx := context.Background()
	// Only the outside server is allowed (by its name "localhost"; the inside one is 127.0.0.1).
	out := strings.Replace(outside.URL, "127.0.0.1", "localhost", 1)
	c := New(policy(Policy{AllowHosts: []string{"localhost"}}))
	if _, err := c.Get(ctx, out, nil); !errors.Is(err, ErrRefused) {
		t.Fatalf("a redirect to a host not allowed: %v", err)
	}
	// Both reachable, different hosts: the credentials do not follow.
	c = New(policy(Policy{AllowPrivate: true}))
	h := http.Header{"Authorization": {"Bearer secret"}, "X-Api-Key": {"k"}, "Accept": {"application/json"}}
	if _, err := c.Get(ctx, out, h); err != nil {
		t.Fatal(err)
	}
	if seen.Get("Authorization") != "" || seen.Get("X-Api-Key") != "" || seen.Get("Accept") != "application/json" {
		t.Fatalf("headers that reached the other host: %v", seen)
	}
	if _, err := New(policy(Policy{AllowPrivate: true, DenyHosts: []string{"127.0.0.1"}})).Get(ctx, out, nil); !errors.Is(err, ErrRefused) {
		t.Fatalf("a redirect to a denied host: %v", err)
	}
}

func TestBodiesAreBounded(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte(strings.Repeat("x", 2<<20)))
	}))
	defer srv.Close()
	_, err := New(policy(Policy{AllowPrivate: true})).Get(context.Background(), srv.URL, nil)
	if !errors.Is(err, ErrTooLarge) || apperr.KindOf(err) != apperr.KindUnprocessable {
		t.Fatalf("a 2 MB answer under a 1 MB bound: %v", err)
	}
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(2 * time.Second)
	}))
	defer slow.Close()
	p := policy(Policy{AllowPrivate: true})
	p.Timeout = 200 * time.Millisecond
	if _, err := New(p).Get(context.Background(), slow.URL, nil); apperr.KindOf(err) != apperr.KindUpstream {
		t.Fatalf("a slow remote: %v", err)
	}
}

func TestHostPatterns(t *testing.T) {
	for _, tc := range []struct {
		patterns []string
		host     string
		want     bool
	}{
		{[]string{"*.example.org"}, "data.example.org", true},
		{[]string{"*.example.org"}, "example.org", true},
		{[]string{"*.example.org"}, "evilexample.org", false},
		{[]string{"example.org"}, "sub.example.org", false},
		{[]string{" Example.ORG "}, "example.org", true},
	} {
		if got := matches(tc.patterns, tc.host); got != tc.want {
			t.Errorf("%v %s: %v", tc.patterns, tc.host, got)
		}
	}
	c := New(policy(Policy{}))
	for _, ip := range []string{"127.0.0.1", "::1", "10.1.2.3", "192.168.0.1", "169.254.1.1", "100.64.3.3", "::ffff:127.0.0.1", "fd00:ec2::254"} {
		if err := c.checkAddress("x", netip.MustParseAddr(ip)); err == nil {
			t.Errorf("%s passed", ip)
		}
	}
	if err := c.checkAddress("x", netip.MustParseAddr("93.184.215.14")); err != nil {
		t.Errorf("a public address: %v", err)
	}
}

// The configuration's policy converts to this package's, field for field.
var _ = Policy(config.RemotePolicy{})

// A streamed download keeps every check of Do and is bounded without being read into memory:
// an announced length over the bound is refused before the body, an unannounced one fails as
// soon as the stream passes it.
func TestOpenStreamsWithinBounds(t *testing.T) {
	big := strings.Repeat("y", 3<<20)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/chunked":
			w.WriteHeader(200)
			for i := 0; i < 3; i++ {
				_, _ = w.Write([]byte(big[:1<<20]))
				w.(http.Flusher).Flush()
			}
		case "/small":
			_, _ = w.Write([]byte("0123456789"))
		case "/redirect":
			http.Redirect(w, r, "http://10.0.0.1/x", http.StatusFound)
		default:
			w.Header().Set("Content-Length", strconv.Itoa(len(big)))
			_, _ = w.Write([]byte(big))
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	if _, err := New(policy(Policy{})).Open(ctx, srv.URL+"/small", nil, 1<<20); !errors.Is(err, ErrRefused) {
		t.Fatalf("loopback by default: %v", err)
	}
	if _, err := New(policy(Policy{})).Open(ctx, "file:///etc/passwd", nil, 1<<20); apperr.KindOf(err) != apperr.KindUnprocessable {
		t.Fatalf("a file URL: %v", err)
	}
	c := New(policy(Policy{AllowPrivate: true, DenyHosts: []string{"10.0.0.1"}}))
	if _, err := c.Open(ctx, srv.URL+"/redirect", nil, 1<<20); !errors.Is(err, ErrRefused) {
		t.Fatalf("a redirect to a denied address: %v", err)
	}
	if _, err := c.Open(ctx, srv.URL+"/announced", nil, 1<<20); !errors.Is(err, ErrTooLarge) || apperr.KindOf(err) != apperr.KindUnprocessable {
		t.Fatalf("an announced length over the bound: %v", err)
	}
	d, err := c.Open(ctx, srv.URL+"/chunked", nil, 2<<20)
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, d.Body)
	d.Body.Close()
	if !errors.Is(err, ErrTooLarge) || n > 2<<20 {
		t.Fatalf("an unannounced body over the bound: %d bytes, %v", n, err)
	}
	d, err = c.Open(ctx, srv.URL+"/small", nil, 10)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(d.Body)
	d.Body.Close()
	if err != nil || string(b) != "0123456789" {
		t.Fatalf("a body of exactly the bound: %q %v", b, err)
	}
}

// A credential goes to the origin it was given for, in the header named, and nowhere else:
// not to another port or name of the same machine, not after a redirect there, not on http
// when given for https; back on its origin after a redirect, it is sent again.
func TestCredentialStaysWithItsOrigin(t *testing.T) {
	seen := map[string]string{}
	var mu sync.Mutex
	record := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen[name+"@"+strings.Split(r.Host, ":")[0]+r.URL.Path] = r.Header.Get("X-Api-Key")
			mu.Unlock()
			if to := r.URL.Query().Get("to"); to != "" {
				http.Redirect(w, r, to, http.StatusFound)
				return
			}
			_, _ = w.Write([]byte("ok"))
		})
	}
	other := httptest.NewServer(record("other"))
	defer other.Close()
	home := httptest.NewServer(record("home"))
	defer home.Close()
	byName := strings.Replace(home.URL, "127.0.0.1", "localhost", 1)
	c := New(policy(Policy{AllowPrivate: true}))
	ctx := WithCredential(context.Background(), Credential{Origin: OriginOf(home.URL + "/catalog.json"), Header: "X-Api-Key", Value: "s3cret"})
	for _, raw := range []string{
		home.URL + "/direct",
		other.URL + "/direct",
		byName + "/direct",
		home.URL + "/away?to=" + url.QueryEscape(other.URL+"/redirected"),
		home.URL + "/renamed?to=" + url.QueryEscape(byName+"/redirected"),
		byName + "/back?to=" + url.QueryEscape(home.URL+"/returned"),
	} {
		if _, err := c.Get(ctx, raw, nil); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
	}
	want := map[string]string{"home@127.0.0.1/direct": "s3cret", "other@127.0.0.1/direct": "", "home@localhost/direct": "",
		"home@127.0.0.1/away": "s3cret", "other@127.0.0.1/redirected": "", "home@127.0.0.1/renamed": "s3cret",
		"home@localhost/redirected": "", "home@localhost/back": "", "home@127.0.0.1/returned": "s3cret"}
	for k, v := range want {
		if got, ok := seen[k]; !ok || got != v {
			t.Errorf("%s saw %q, want %q (all: %v)", k, got, v, seen)
		}
	}
	if OriginOf("https://Example.org/x") != OriginOf("https://example.org:443/y") || OriginOf("http://example.org/") == OriginOf("https://example.org/") {
		t.Error("origins: the default port is explicit, the scheme counts")
	}
}

func TestCheckCredential(t *testing.T) {
	for _, tc := range []struct {
		header, value string
		ok            bool
	}{
		{"Authorization", "Bearer abc", true}, {"X-Api-Key", "k", true},
		{"Host", "evil.example", false}, {"content-length", "0", false}, {"X Api", "k", false}, {"", "k", false},
		{"Authorization", "", false}, {"Authorization", "a\r\nX-Other: b", false},
	} {
		if err := CheckCredential(tc.header, tc.value); (err == nil) != tc.ok {
			t.Errorf("%q: %q: %v", tc.header, tc.value, err)
		}
	}
}

// A remote that answers too slowly fails with the setting that bounds it named: REMOTE_TIMEOUT
// for a document, REMOTE_ASSET_TIMEOUT for a download that stalls after its first bytes.
func TestTimeoutsNameTheirSetting(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/stall" {
			_, _ = w.Write([]byte("first bytes"))
			w.(http.Flusher).Flush()
		}
		select {
		case <-r.Context().Done():
		case <-time.After(3 * time.Second):
		}
	}))
	defer srv.Close()
	p := policy(Policy{AllowPrivate: true})
	p.Timeout, p.AssetTimeout = 200*time.Millisecond, 300*time.Millisecond
	c := New(p)
	if _, err := c.Get(context.Background(), srv.URL+"/slow", nil); !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "REMOTE_TIMEOUT") ||
		apperr.KindOf(err) != apperr.KindUpstream {
		t.Fatalf("a slow document: %v", err)
	}
	dl, err := c.Open(context.Background(), srv.URL+"/stall", nil, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer dl.Body.Close()
	if _, err := io.ReadAll(dl.Body); !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "REMOTE_ASSET_TIMEOUT") {
		t.Fatalf("a stalled download: %v", err)
	}
}
