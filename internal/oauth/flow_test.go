package oauth

import (
	"cmp"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
)

const testRedirectURI = "http://localhost:9999/api/auth/oauth/corp-sso/callback"

// startOP runs zitadel's example OpenID Provider on 127.0.0.1 with one confidential web client
// registered for testRedirectURI, and returns its issuer.
func startOP(t *testing.T) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	issuer := "http://" + srv.Listener.Addr().String()
	st := storage.NewStorageWithClients(storage.NewUserStore(issuer), map[string]*storage.Client{
		"meridian": storage.WebClient("meridian", "meridian-secret", testRedirectURI),
	})
	srv.Config.Handler = exampleop.SetupServer(issuer, st, nil, false)
	srv.Start()
	t.Cleanup(srv.Close)
	return issuer
}

func newTestFlow(t *testing.T) (*Flow, *atomic.Int64) {
	t.Helper()
	var calls atomic.Int64
	client := &http.Client{Timeout: 10 * time.Second, Transport: countingTransport{&calls}}
	return NewFlow(client), &calls
}

// countingTransport proves the Flow sends provider traffic through the caller's client.
type countingTransport struct{ n *atomic.Int64 }

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

var (
	formAction = regexp.MustCompile(`<form method="POST" action="([^"]+)"`)
	formID     = regexp.MustCompile(`name="id" value="([^"]+)"`)
)

// browserLogin plays the user agent: it follows authURL to the example OP's login form, signs in
// as the example's test user and returns the code and state the OP sends to the redirect URI.
func browserLogin(t *testing.T, issuer, authURL string) (code, state string) {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	browser := &http.Client{
		Jar:     jar,
		Timeout: 10 * time.Second,
		CheckRedirect: func(req *http.Request, _ []*http.Request) error {
			if strings.HasPrefix(req.URL.String(), testRedirectURI) {
				return http.ErrUseLastResponse // the callback is ours; nothing listens there
			}
			return nil
		},
	}
	resp, err := browser.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	page := readBody(t, resp)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("authorize: %s: %s", resp.Status, page)
	}
	action, id := formAction.FindStringSubmatch(page), formID.FindStringSubmatch(page)
	if action == nil || id == nil {
		t.Fatalf("no login form at %s:\n%s", resp.Request.URL, page)
	}
	target, err := resp.Request.URL.Parse(action[1])
	if err != nil {
		t.Fatal(err)
	}
	host := strings.Split(strings.TrimPrefix(issuer, "http://"), ":")[0]
	resp, err = browser.PostForm(target.String(), url.Values{
		"id": {id[1]}, "username": {"test-user@" + host}, "password": {"verysecure"},
	})
	if err != nil {
		t.Fatal(err)
	}
	body := readBody(t, resp)
	loc, err := resp.Location()
	if resp.StatusCode != http.StatusFound || err != nil || !strings.HasPrefix(loc.String(), testRedirectURI) {
		t.Fatalf("login: %s, location %v: %s", resp.Status, loc, body)
	}
	q := loc.Query()
	if q.Get("code") == "" {
		t.Fatalf("no code in %s", loc)
	}
	return q.Get("code"), q.Get("state")
}

func readBody(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestFlowAgainstOpenIDProvider(t *testing.T) {
	issuer := startOP(t)
	ctx := t.Context()
	discovered := discoverEndpoints(t, issuer)

	withDiscovery := Provider{
		Slug: "corp-sso", DisplayName: "Corporate SSO", Type: TypeOIDC, Enabled: true,
		ClientID: "meridian", ClientSecret: "meridian-secret",
		DiscoveryURL: issuer + "/.well-known/openid-configuration",
	}
	// Same OP configured by hand: no JWKS, so identity comes from userinfo alone.
	withEndpoints := withDiscovery
	withEndpoints.DiscoveryURL = ""
	withEndpoints.AuthorizeURL = discovered.AuthorizationEndpoint
	withEndpoints.TokenURL = discovered.TokenEndpoint
	withEndpoints.UserinfoURL = discovered.UserinfoEndpoint

	tests := []struct {
		name     string
		provider Provider
		tamper   func(st *State, gotState *string)
		wantErr  []error // all must match; none means success
		retry    bool    // the untampered Complete must still succeed afterwards
	}{
		{name: "discovery: signs in", provider: withDiscovery},
		{name: "endpoints: signs in", provider: withEndpoints},
		{
			name: "wrong code verifier", provider: withDiscovery,
			tamper:  func(st *State, _ *string) { st.Verifier = randomToken() },
			wantErr: []error{ErrExchangeFailed},
		},
		{
			name: "endpoints: wrong code verifier", provider: withEndpoints,
			tamper:  func(st *State, _ *string) { st.Verifier = randomToken() },
			wantErr: []error{ErrExchangeFailed},
		},
		{
			name: "state mismatch fails before the exchange", provider: withDiscovery,
			tamper:  func(_ *State, got *string) { *got = randomToken() },
			wantErr: []error{ErrStateMismatch}, retry: true,
		},
		{
			name: "empty state", provider: withDiscovery,
			tamper:  func(st *State, got *string) { st.State, *got = "", "" },
			wantErr: []error{ErrStateMismatch}, retry: true,
		},
		{
			name: "state of another provider", provider: withDiscovery,
			tamper:  func(st *State, _ *string) { st.Provider = "other" },
			wantErr: []error{ErrStateMismatch}, retry: true,
		},
		{
			name: "wrong nonce", provider: withDiscovery,
			tamper:  func(st *State, _ *string) { st.Nonce = randomToken() },
			wantErr: []error{ErrInvalidIDToken, oidc.ErrNonceInvalid},
		},
	}
	flow, calls := newTestFlow(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			authURL, st, err := flow.Begin(ctx, tt.provider, testRedirectURI)
			if err != nil {
				t.Fatalf("Begin: %v", err)
			}
			checkAuthURL(t, authURL, st, verifiesIDToken(tt.provider))
			// The caller round-trips State through a cookie.
			st = jsonRoundTrip(t, st)

			code, gotState := browserLogin(t, issuer, authURL)
			tampered := st
			if tt.tamper != nil {
				tt.tamper(&tampered, &gotState)
			}
			id, err := flow.Complete(ctx, tt.provider, testRedirectURI, tampered, gotState, code)
			if len(tt.wantErr) > 0 {
				for _, want := range tt.wantErr {
					if !errors.Is(err, want) {
						t.Errorf("Complete error = %v, want %v", err, want)
					}
				}
				if !tt.retry {
					return
				}
				id, err = flow.Complete(ctx, tt.provider, testRedirectURI, st, st.State, code)
			}
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			want := Identity{Subject: "id1", Email: "test-user@zitadel.ch", EmailVerified: true}
			if id.Subject != want.Subject || id.Email != want.Email || id.EmailVerified != want.EmailVerified {
				t.Errorf("identity = %+v, want %+v", id, want)
			}
		})
	}
	if calls.Load() == 0 {
		t.Error("the flow did not use the http.Client it was given")
	}

	t.Run("disabled provider", func(t *testing.T) {
		off := withDiscovery
		off.Enabled = false
		if _, _, err := flow.Begin(ctx, off, testRedirectURI); !errors.Is(err, ErrProviderDisabled) {
			t.Errorf("Begin = %v, want ErrProviderDisabled", err)
		}
	})
	t.Run("discovery document of another issuer", func(t *testing.T) {
		// Reached as localhost, the document still names 127.0.0.1: OpenID Connect Discovery
		// section 4.3 requires the issuer to be the URL the document was fetched from.
		p := withDiscovery
		p.DiscoveryURL = strings.Replace(p.DiscoveryURL, "127.0.0.1", "localhost", 1)
		_, _, err := flow.Begin(ctx, p, testRedirectURI)
		if !errors.Is(err, ErrProviderFailed) || !errors.Is(err, oidc.ErrIssuerInvalid) {
			t.Errorf("Begin = %v, want ErrProviderFailed and ErrIssuerInvalid", err)
		}
	})
	t.Run("unreachable discovery", func(t *testing.T) {
		p := withDiscovery
		p.DiscoveryURL = issuer + "/nowhere/.well-known/openid-configuration"
		if _, _, err := flow.Begin(ctx, p, testRedirectURI); !errors.Is(err, ErrProviderFailed) {
			t.Errorf("Begin = %v, want ErrProviderFailed", err)
		}
	})
}

func discoverEndpoints(t *testing.T, issuer string) oidc.DiscoveryConfiguration {
	t.Helper()
	resp, err := http.Get(issuer + "/.well-known/openid-configuration")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc oidc.DiscoveryConfiguration
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// checkAuthURL asserts spec 4.6 step 1: state and an S256 challenge of the kept verifier on every
// authorize URL, and the nonce wherever the ID token is verified against it.
func checkAuthURL(t *testing.T, authURL string, st State, wantNonce bool) {
	t.Helper()
	u, err := url.Parse(authURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	if q.Get("state") != st.State || q.Get("code_challenge_method") != "S256" ||
		q.Get("code_challenge") != oidc.NewSHACodeChallenge(st.Verifier) || q.Get("redirect_uri") != testRedirectURI {
		t.Errorf("authorize URL %s does not carry state, S256 challenge and redirect_uri", authURL)
	}
	if len(st.Verifier) < 43 || st.State == st.Nonce || st.State == st.Verifier {
		t.Errorf("weak or reused secrets in %+v", st)
	}
	if got := q.Get("nonce"); (got == st.Nonce) != wantNonce {
		t.Errorf("nonce on the authorize URL = %q, want present=%v", got, wantNonce)
	}
}

func jsonRoundTrip(t *testing.T, st State) State {
	t.Helper()
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var out State
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if out != st {
		t.Fatalf("State does not survive JSON: %s", b)
	}
	return out
}

// fakeGitHub imitates GitHub's token endpoint and the two REST endpoints Complete reads, including
// GitHub's habit of answering token errors with 200 and a form-encoded body.
type fakeGitHub struct {
	mu         sync.Mutex
	challenge  string
	emails     string
	tokenCalls int
}

const (
	fakeCode  = "gh-code"
	fakeToken = "gho_faketoken"
)

func (g *fakeGitHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch r.URL.Path {
	case "/login/oauth/access_token":
		g.tokenCalls++
		if err := r.ParseForm(); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		id, secret, ok := r.BasicAuth()
		if !ok {
			id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
		}
		w.Header().Set("Content-Type", "application/x-www-form-urlencoded")
		switch {
		case id != "gh-client" || secret != "gh-secret":
			_, _ = w.Write([]byte("error=incorrect_client_credentials"))
		case r.PostForm.Get("code") != fakeCode || r.PostForm.Get("redirect_uri") != testRedirectURI:
			_, _ = w.Write([]byte("error=bad_verification_code"))
		case g.challenge == "" || oidc.NewSHACodeChallenge(r.PostForm.Get("code_verifier")) != g.challenge:
			_, _ = w.Write([]byte("error=invalid_grant&error_description=code_verifier+mismatch"))
		default:
			_, _ = w.Write([]byte("access_token=" + fakeToken + "&scope=read%3Auser%2Cuser%3Aemail&token_type=bearer"))
		}
	case "/user", "/user/emails":
		if r.Header.Get("Authorization") != "Bearer "+fakeToken {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/user" {
			_, _ = w.Write([]byte(`{"id":583231,"login":"octocat","name":"The Octocat","email":"public@example.org"}`))
			return
		}
		_, _ = w.Write([]byte(g.emails))
	default:
		http.NotFound(w, r)
	}
}

func TestFlowGitHub(t *testing.T) {
	fake := &fakeGitHub{}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	p := Provider{
		Slug: "github", DisplayName: "GitHub", Type: TypeGitHub, Enabled: true,
		ClientID: "gh-client", ClientSecret: "gh-secret",
		AuthorizeURL: srv.URL + "/login/oauth/authorize", TokenURL: srv.URL + "/login/oauth/access_token",
		UserinfoURL: srv.URL + "/user",
	}
	const (
		twoPrimaries = `[{"email":"old@example.org","primary":true,"verified":false},
			{"email":"octo@example.org","primary":true,"verified":true},
			{"email":"side@example.org","primary":false,"verified":true}]`
		noneVerified = `[{"email":"old@example.org","primary":true,"verified":false},
			{"email":"side@example.org","primary":false,"verified":false}]`
		onlySecondaryVerified = `[{"email":"old@example.org","primary":true,"verified":false},
			{"email":"side@example.org","primary":false,"verified":true}]`
	)
	tests := []struct {
		name       string
		emails     string
		tamper     func(st *State, gotState *string)
		code       string // empty: fakeCode
		noCode     bool
		wantErr    error
		wantEmail  string
		wantTokens int // token endpoint calls this case may cause
	}{
		{name: "verified primary email is used", emails: twoPrimaries, wantEmail: "octo@example.org", wantTokens: 1},
		{name: "no verified email", emails: noneVerified, wantErr: ErrNoVerifiedEmail, wantTokens: 1},
		{name: "a verified secondary is not enough", emails: onlySecondaryVerified, wantErr: ErrNoVerifiedEmail, wantTokens: 1},
		{name: "empty email list", emails: `[]`, wantErr: ErrNoVerifiedEmail, wantTokens: 1},
		{
			name: "wrong code verifier", emails: twoPrimaries,
			tamper:  func(st *State, _ *string) { st.Verifier = randomToken() },
			wantErr: ErrExchangeFailed, wantTokens: 2, // oauth2 may retry with the other client authentication
		},
		{
			name: "callback without code", emails: twoPrimaries, noCode: true,
			wantErr: ErrExchangeFailed, wantTokens: 0,
		},
		{
			name: "wrong code", emails: twoPrimaries, code: "stolen",
			wantErr: ErrExchangeFailed, wantTokens: 2,
		},
		{
			name: "state mismatch", emails: twoPrimaries,
			tamper:  func(_ *State, got *string) { *got = "forged" },
			wantErr: ErrStateMismatch, wantTokens: 0,
		},
	}
	flow, calls := newTestFlow(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			authURL, st, err := flow.Begin(t.Context(), p, testRedirectURI)
			if err != nil {
				t.Fatalf("Begin: %v", err)
			}
			checkAuthURL(t, authURL, st, false)
			if !strings.HasPrefix(authURL, p.AuthorizeURL+"?") {
				t.Errorf("authorize URL %s is not at %s", authURL, p.AuthorizeURL)
			}
			u, _ := url.Parse(authURL)
			fake.mu.Lock()
			fake.challenge, fake.emails, fake.tokenCalls = u.Query().Get("code_challenge"), tt.emails, 0
			fake.mu.Unlock()

			gotState := st.State
			if tt.tamper != nil {
				tt.tamper(&st, &gotState)
			}
			code := cmp.Or(tt.code, fakeCode)
			if tt.noCode {
				code = ""
			}
			id, err := flow.Complete(t.Context(), p, testRedirectURI, st, gotState, code)
			fake.mu.Lock()
			tokenCalls := fake.tokenCalls
			fake.mu.Unlock()
			if tokenCalls > tt.wantTokens {
				t.Errorf("token endpoint called %d times, want at most %d", tokenCalls, tt.wantTokens)
			}
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Complete error = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			want := Identity{Subject: "583231", Email: tt.wantEmail, EmailVerified: true, Name: "The Octocat", PreferredUsername: "octocat"}
			if id != want {
				t.Errorf("identity = %+v, want %+v", id, want)
			}
		})
	}
	if calls.Load() == 0 {
		t.Error("the flow did not use the http.Client it was given")
	}
}

func TestMicrosoftIssuer(t *testing.T) {
	const (
		common   = "https://login.microsoftonline.com/common/v2.0/.well-known/openid-configuration"
		template = "https://login.microsoftonline.com/{tenantid}/v2.0"
		tenant   = "https://login.microsoftonline.com/72f988bf-86f1-41af-91ab-2d7cd011db47/v2.0"
	)
	tests := []struct {
		name         string
		discoveryURL string
		docIssuer    string
		wantIssuer   string
		wantErr      bool
		accept       []string // token iss values the verifier must accept
		refuse       []string
	}{
		{
			name: "multi-tenant template", discoveryURL: common, docIssuer: template, wantIssuer: template,
			accept: []string{tenant, "https://login.microsoftonline.com/9188040d-6c67-4c5b-b112-36a304b66dad/v2.0"},
			refuse: []string{
				template, "https://login.microsoftonline.com/common/v2.0",
				"https://evil.example.org/72f988bf-86f1-41af-91ab-2d7cd011db47/v2.0",
				"https://login.microsoftonline.com/72f988bf-86f1-41af-91ab-2d7cd011db47/v2.0/x",
				"https://login.microsoftonline.com/72f988bf-86f1-41af-91ab-2d7cd011db47/v1.0",
			},
		},
		{
			name:         "single tenant",
			discoveryURL: tenant + "/.well-known/openid-configuration", docIssuer: tenant, wantIssuer: tenant,
		},
		{
			name:         "consumers names a concrete tenant",
			discoveryURL: "https://login.microsoftonline.com/consumers/v2.0/.well-known/openid-configuration",
			docIssuer:    "https://login.microsoftonline.com/9188040d-6c67-4c5b-b112-36a304b66dad/v2.0",
			wantIssuer:   "https://login.microsoftonline.com/9188040d-6c67-4c5b-b112-36a304b66dad/v2.0",
		},
		{name: "issuer on another host", discoveryURL: common, docIssuer: "https://evil.example.org/{tenantid}/v2.0", wantErr: true},
		{name: "issuer over http", discoveryURL: common, docIssuer: "http://login.microsoftonline.com/{tenantid}/v2.0", wantErr: true},
		{name: "no issuer", discoveryURL: common, docIssuer: "", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			iss, verify, err := microsoftIssuer(tt.discoveryURL, tt.docIssuer)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("microsoftIssuer accepted %q", tt.docIssuer)
				}
				return
			}
			if err != nil || iss != tt.wantIssuer {
				t.Fatalf("microsoftIssuer = %q, %v; want %q", iss, err, tt.wantIssuer)
			}
			if verify == nil {
				if len(tt.accept)+len(tt.refuse) > 0 {
					t.Fatal("no issuer verifier for a template")
				}
				return
			}
			for _, a := range tt.accept {
				if err := verify(a); err != nil {
					t.Errorf("refused %q: %v", a, err)
				}
			}
			for _, r := range tt.refuse {
				if err := verify(r); !errors.Is(err, oidc.ErrIssuerInvalid) {
					t.Errorf("verify(%q) = %v, want ErrIssuerInvalid", r, err)
				}
			}
		})
	}
}

func TestGitHubEmailsURL(t *testing.T) {
	tests := []struct{ userinfo, want string }{
		{"https://api.github.com/user", "https://api.github.com/user/emails"},
		{"https://ghe.example.org/api/v3/user", "https://ghe.example.org/api/v3/user/emails"},
		{"https://ghe.example.org/api/v3/user/", "https://ghe.example.org/api/v3/user/emails"},
		{"http://127.0.0.1:8089/user?x=1", "http://127.0.0.1:8089/user/emails"},
	}
	for _, tt := range tests {
		if got, err := githubEmailsURL(tt.userinfo); err != nil || got != tt.want {
			t.Errorf("githubEmailsURL(%q) = %q, %v; want %q", tt.userinfo, got, err, tt.want)
		}
	}
}
