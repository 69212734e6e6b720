package conformance

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
)

// openIDProvider is a real OpenID Provider (zitadel/oidc's example OP) running in the test, with
// one confidential client whose redirect URIs are Meridian's callbacks. tamperVerifier, when set,
// rewrites the PKCE code_verifier of token requests on their way in.
type openIDProvider struct {
	issuer         string
	tamperVerifier atomic.Bool
	challenges     atomic.Int64 // authorize requests that carried an S256 challenge
}

func startOpenIDProvider(t *testing.T, redirectURIs ...string) *openIDProvider {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	op := &openIDProvider{issuer: "http://" + srv.Listener.Addr().String()}
	st := storage.NewStorageWithClients(storage.NewUserStore(op.issuer), map[string]*storage.Client{
		"meridian": storage.WebClient("meridian", "meridian-secret", redirectURIs...),
	})
	inner := exampleop.SetupServer(op.issuer, st, nil, false)
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("code_challenge_method") == "S256" && r.URL.Query().Get("code_challenge") != "" {
			op.challenges.Add(1)
		}
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/token") && op.tamperVerifier.Load() {
			_ = r.ParseForm()
			r.PostForm.Set("code_verifier", strings.Repeat("x", 43))
			body := r.PostForm.Encode()
			r.Body, r.ContentLength = io.NopCloser(strings.NewReader(body)), int64(len(body))
			r.Form = nil
		}
		inner.ServeHTTP(w, r)
	})
	srv.Start()
	t.Cleanup(srv.Close)
	return op
}

var (
	opFormAction = regexp.MustCompile(`<form method="POST" action="([^"]+)"`)
	opFormID     = regexp.MustCompile(`name="id" value="([^"]+)"`)
)

// oauthSignIn plays a browser: it starts the sign-in at Meridian, signs in at the OP as user and
// follows the redirect back to Meridian's callback, returning the callback's answer.
func oauthSignIn(t *testing.T, apiRoot, slug, user string, op *openIDProvider) (int, []byte) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, Timeout: 20 * time.Second}
	res, err := browser.Get(apiRoot + "/auth/oauth/" + slug + "/login?response_mode=json")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	action, id := opFormAction.FindSubmatch(page), opFormID.FindSubmatch(page)
	if res.StatusCode != 200 || action == nil || id == nil {
		t.Fatalf("no login form at the provider (%d %s): %s", res.StatusCode, res.Request.URL, page)
	}
	target, _ := res.Request.URL.Parse(string(action[1]))
	if user == "test-user" {
		user += "@" + strings.Split(strings.TrimPrefix(op.issuer, "http://"), ":")[0]
	}
	res, err = browser.PostForm(target.String(), url.Values{"id": {string(id[1])}, "username": {user}, "password": {"verysecure"}})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if !strings.HasPrefix(res.Request.URL.String(), apiRoot+"/auth/oauth/"+slug+"/callback") {
		t.Fatalf("the provider did not send the browser back to the callback: %s", res.Request.URL)
	}
	return res.StatusCode, b
}

// oauthBrowserRedirect runs the default (redirect) mode and returns the callback's answer
// without following it into the web UI.
func oauthBrowserRedirect(t *testing.T, apiRoot, slug string, op *openIDProvider) *http.Response {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	callback := apiRoot + "/auth/oauth/" + slug + "/callback"
	browser := &http.Client{Jar: jar, Timeout: 20 * time.Second, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if strings.HasPrefix(via[len(via)-1].URL.String(), callback) {
			return http.ErrUseLastResponse // the callback's answer is what the test inspects
		}
		return nil
	}}
	res, err := browser.Get(apiRoot + "/auth/oauth/" + slug + "/login?redirect_to=" + url.QueryEscape("/maps/mine?tab=2"))
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	action, id := opFormAction.FindSubmatch(page), opFormID.FindSubmatch(page)
	if action == nil || id == nil {
		t.Fatalf("no login form: %s", page)
	}
	target, _ := res.Request.URL.Parse(string(action[1]))
	user := "test-user@" + strings.Split(strings.TrimPrefix(op.issuer, "http://"), ":")[0]
	res, err = browser.PostForm(target.String(), url.Values{"id": {string(id[1])}, "username": {user}, "password": {"verysecure"}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res
}

func createProvider(t *testing.T, slug, issuer, role string) map[string]any {
	t.Helper()
	r := call(t, "POST", "/settings/oauth-providers/", map[string]any{
		"slug": slug, "display_name": "Corporate SSO " + slug, "provider_type": "oidc", "client_id": "meridian",
		"client_secret": "meridian-secret", "discovery_url": issuer + "/.well-known/openid-configuration", "default_role": role,
	}, bearer(admin(t).Access)...)
	if r.Status != 201 {
		t.Fatalf("create provider: %d %s", r.Status, r.Body)
	}
	m := r.JSON(t)
	if _, ok := m["client_secret"]; ok {
		t.Fatalf("the response carries client_secret: %s", r.Body)
	}
	return m
}

func tokenUser(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var tr struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.Unmarshal(body, &tr); err != nil || tr.AccessToken == "" {
		t.Fatalf("callback did not answer a token pair: %s", body)
	}
	return call(t, "GET", "/auth/me/", nil, bearer(tr.AccessToken)...).JSON(t)
}

// TestOAuthSignInFlow walks spec section 4.6 step by step against a real OpenID Provider.
func TestOAuthSignInFlow(t *testing.T) {
	slug := "corp" + randomHex(2)
	op := startOpenIDProvider(t, server.APIRoot+"/auth/oauth/"+slug+"/callback")
	a := admin(t)

	// A local user already owns the provider's first email: rule (b) must link, not duplicate.
	local := call(t, "POST", "/admin/users/", map[string]any{"username": "localsso" + randomHex(2), "email": "Test-User@Zitadel.ch",
		"password": "Local-password-1", "role": "viewer"}, bearer(a.Access)...)
	if local.Status != 201 {
		t.Fatalf("local user: %d %s", local.Status, local.Body)
	}
	localUser := local.JSON(t)
	prov := createProvider(t, slug, op.issuer, "editor")
	defer call(t, "DELETE", "/settings/oauth-providers/"+prov["provider_id"].(string), nil, bearer(a.Access)...)

	t.Run("provider appears on the login page at once", func(t *testing.T) {
		list := string(call(t, "GET", "/auth/oauth/providers/", nil).Body)
		cfg := string(call(t, "GET", "/auth/config/", nil).Body)
		if !strings.Contains(list, `"slug":"`+slug+`"`) || !strings.Contains(cfg, slug) {
			t.Fatalf("providers %s / config %s", list, cfg)
		}
	})
	t.Run("step 1: login redirects with PKCE S256 and a flow cookie", func(t *testing.T) {
		r := call(t, "GET", "/auth/oauth/"+slug+"/login", nil)
		loc, _ := url.Parse(r.Header.Get("Location"))
		if r.Status != 302 || loc == nil || loc.Query().Get("code_challenge_method") != "S256" || loc.Query().Get("code_challenge") == "" || loc.Query().Get("state") == "" {
			t.Fatalf("login: %d %s", r.Status, r.Header.Get("Location"))
		}
		if c := r.Header.Get("Set-Cookie"); !strings.Contains(c, "service_oauth_flow=") || !strings.Contains(c, "HttpOnly") {
			t.Fatalf("flow cookie: %q", c)
		}
	})
	var linkedID string
	t.Run("step 3 rule b: same email links the local user, who keeps the password", func(t *testing.T) {
		code, body := oauthSignIn(t, server.APIRoot, slug, "test-user", op)
		if code != 200 {
			t.Fatalf("callback: %d %s", code, body)
		}
		me := tokenUser(t, body)
		if me["id"] != localUser["id"] {
			t.Fatalf("signed in as %v, want the local user %v", me["id"], localUser["id"])
		}
		linkedID = me["id"].(string)
		login(t, localUser["username"].(string), "Local-password-1")
	})
	t.Run("step 3 rule a: a prior link signs into the linked account", func(t *testing.T) {
		code, body := oauthSignIn(t, server.APIRoot, slug, "test-user", op)
		if code != 200 || tokenUser(t, body)["id"] != linkedID {
			t.Fatalf("second sign-in: %d %s", code, body)
		}
	})
	t.Run("step 3 rule c: a new email creates a user with the provider's default role", func(t *testing.T) {
		code, body := oauthSignIn(t, server.APIRoot, slug, "test-user2", op)
		if code != 200 {
			t.Fatalf("callback: %d %s", code, body)
		}
		me := tokenUser(t, body)
		if me["role"] != "editor" || me["email"] != "test-user2@zitadel.ch" || !strings.HasPrefix(me["username"].(string), "test-user2") || me["has_password"] != false {
			t.Fatalf("new user: %v", me)
		}
	})
	t.Run("browser flow: cookies and a redirect to the web UI, no token in any URL", func(t *testing.T) {
		res := oauthBrowserRedirect(t, server.APIRoot, slug, op)
		loc := res.Header.Get("Location")
		if res.StatusCode != 302 || !strings.HasSuffix(loc, "/maps/mine?tab=2") || strings.Contains(loc, "token") {
			t.Fatalf("callback redirect: %d %q", res.StatusCode, loc)
		}
		var refresh, csrf string
		for _, c := range res.Cookies() {
			switch c.Name {
			case "service_refresh":
				refresh = c.Value
			case "service_csrf":
				csrf = c.Value
			}
		}
		if refresh == "" || csrf == "" {
			t.Fatalf("session cookies missing: %v", res.Header.Values("Set-Cookie"))
		}
		r := call(t, "POST", "/auth/refresh/", nil, "X-Service-Auth-Mode", "cookie",
			"Cookie", "service_refresh="+refresh+"; service_csrf="+csrf, "X-CSRF-Token", csrf)
		if r.Status != 200 || tokenUser(t, r.Body)["id"] != linkedID {
			t.Fatalf("refresh with the sign-in cookies: %d %s", r.Status, r.Body)
		}
	})
	t.Run("PKCE: a wrong code_verifier at the token exchange fails the sign-in", func(t *testing.T) {
		op.tamperVerifier.Store(true)
		defer op.tamperVerifier.Store(false)
		code, body := oauthSignIn(t, server.APIRoot, slug, "test-user", op)
		if code != 502 {
			t.Fatalf("tampered verifier: %d %s", code, body)
		}
	})
	t.Run("every authorize request carried an S256 challenge", func(t *testing.T) {
		if op.challenges.Load() < 4 {
			t.Fatalf("only %d authorize requests carried a challenge", op.challenges.Load())
		}
	})
	t.Run("callback without the flow cookie is refused", func(t *testing.T) {
		if r := call(t, "GET", "/auth/oauth/"+slug+"/callback?state=abc&code=def", nil); r.Status != 400 {
			t.Fatalf("callback without cookie: %d", r.Status)
		}
	})
	t.Run("provider changes show at once and delete removes the links", func(t *testing.T) {
		id := prov["provider_id"].(string)
		r := call(t, "PATCH", "/settings/oauth-providers/"+id, map[string]any{"enabled": false}, bearer(a.Access)...)
		if r.Status != 200 || r.JSON(t)["secret_status"] != "ok" {
			t.Fatalf("disable: %d %s", r.Status, r.Body)
		}
		if strings.Contains(string(call(t, "GET", "/auth/oauth/providers/", nil).Body), slug) {
			t.Fatal("disabled provider still offered")
		}
		if r := call(t, "GET", "/auth/oauth/"+slug+"/login", nil); r.Status != 404 {
			t.Fatalf("login at a disabled provider: %d", r.Status)
		}
		if r := call(t, "DELETE", "/settings/oauth-providers/"+id, nil, bearer(a.Access)...); r.Status != 204 {
			t.Fatalf("delete: %d", r.Status)
		}
		if r := call(t, "GET", "/settings/oauth-providers/", nil, bearer(a.Access)...); strings.Contains(string(r.Body), id) {
			t.Fatal("deleted provider still listed")
		}
		login(t, localUser["username"].(string), "Local-password-1") // local password survives
	})
}

func TestOAuthProviderRules(t *testing.T) {
	a := admin(t)
	tests := []struct {
		name   string
		body   map[string]any
		status int
		check  func(m map[string]any) bool
	}{
		{"google fills discovery", map[string]any{"slug": "g" + randomHex(2), "display_name": "Google", "provider_type": "google", "client_id": "c", "client_secret": "s"}, 201,
			func(m map[string]any) bool {
				return strings.HasPrefix(m["discovery_url"].(string), "https://accounts.google.com/") && m["scopes"] == "openid profile email" && m["default_role"] == "viewer"
			}},
		{"github fills endpoints and scopes", map[string]any{"slug": "gh" + randomHex(2), "display_name": "GitHub", "provider_type": "github", "client_id": "c", "client_secret": "s"}, 201,
			func(m map[string]any) bool {
				return m["discovery_url"] == nil && strings.Contains(m["authorize_url"].(string), "github.com") && strings.Contains(m["scopes"].(string), "user:email")
			}},
		{"github refuses discovery_url", map[string]any{"slug": "gx" + randomHex(2), "display_name": "GitHub", "provider_type": "github", "client_id": "c", "client_secret": "s", "discovery_url": "https://x.example/.well-known/openid-configuration"}, 422, nil},
		{"secret required on create", map[string]any{"slug": "ns" + randomHex(2), "display_name": "No secret", "provider_type": "google", "client_id": "c"}, 422, nil},
		{"oidc needs discovery or endpoints", map[string]any{"slug": "o" + randomHex(2), "display_name": "OIDC", "provider_type": "oidc", "client_id": "c", "client_secret": "s"}, 422, nil},
		{"unknown provider type", map[string]any{"slug": "u" + randomHex(2), "display_name": "U", "provider_type": "saml", "client_id": "c", "client_secret": "s"}, 422, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := call(t, "POST", "/settings/oauth-providers/", tt.body, bearer(a.Access)...)
			if r.Status != tt.status {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			if tt.check != nil {
				m := r.JSON(t)
				if !tt.check(m) || strings.Contains(string(r.Body), `"client_secret"`) {
					t.Fatalf("record %s", r.Body)
				}
				call(t, "DELETE", "/settings/oauth-providers/"+m["provider_id"].(string), nil, bearer(a.Access)...)
			}
		})
	}
	if r := call(t, "GET", "/settings/oauth-providers/", nil, bearer(newUser(t, "editor").Access)...); r.Status != 403 {
		t.Fatalf("editor listing providers: %d", r.Status)
	}
}

// TestOAuthSecretRotation: after JWT_SECRET_KEY changes, stored client secrets no longer open; the
// provider says so instead of failing obscurely, and a PATCH with a new secret heals it.
func TestOAuthSecretRotation(t *testing.T) {
	a := admin(t)
	slug := "rot" + randomHex(2)
	prov := createProvider(t, slug, "https://login.example.org", "viewer")
	id := prov["provider_id"].(string)
	defer call(t, "DELETE", "/settings/oauth-providers/"+id, nil, bearer(a.Access)...)

	// A second server on the same database with another secret plays the rotated deployment.
	rotated, err := Start(context.Background(), server.DBURL, "RATE_LIMIT_ENABLED=false")
	if err != nil {
		t.Fatal(err)
	}
	defer rotated.Stop()
	c, _ := NewContract(mustDoc(t), rotated.APIRoot)
	hc := c.Client()
	tok := callAt(t, hc, rotated.APIRoot, "POST", "/auth/login", url.Values{"username": {"admin"}, "password": {AdminPassword}}).JSON(t)["access_token"].(string)
	var got map[string]any
	var list []map[string]any
	_ = json.Unmarshal(callAt(t, hc, rotated.APIRoot, "GET", "/settings/oauth-providers/", nil, bearer(tok)...).Body, &list)
	for _, p := range list {
		if p["provider_id"] == id {
			got = p
		}
	}
	if got == nil || got["secret_status"] != "needs_reentry" {
		t.Fatalf("after rotation: %v", got)
	}
	if r := callAt(t, hc, rotated.APIRoot, "GET", "/auth/oauth/"+slug+"/login", nil); r.Status != 409 {
		t.Fatalf("login with an unreadable secret: %d", r.Status)
	}
	if strings.Contains(string(callAt(t, hc, rotated.APIRoot, "GET", "/auth/oauth/providers/", nil).Body), slug) {
		t.Fatal("provider with an unreadable secret is offered")
	}
	r := callAt(t, hc, rotated.APIRoot, "PATCH", "/settings/oauth-providers/"+id, map[string]any{"client_secret": "new-secret"}, bearer(tok)...)
	if r.Status != 200 || r.JSON(t)["secret_status"] != "ok" {
		t.Fatalf("re-entering the secret: %d %s", r.Status, r.Body)
	}
}

// TestOAuthProviderClientShapes: PUT takes the partial bodies clients send, providers answer
// `id`, and SAML or group-mapping values are refused rather than silently ignored.
func TestOAuthProviderClientShapes(t *testing.T) {
	a := admin(t)
	slug := "shape" + randomHex(2)
	prov := createProvider(t, slug, "https://idp.example.org", "viewer")
	id := prov["id"].(string)
	defer call(t, "DELETE", "/settings/oauth-providers/"+id, nil, bearer(a.Access)...)
	if prov["provider_id"] != id || prov["group_claim"] != nil {
		t.Fatalf("created provider: %v", prov)
	}
	r := call(t, "PUT", "/settings/oauth-providers/"+id, map[string]any{"display_name": "Renamed", "idp_entity_id": nil}, bearer(a.Access)...)
	if r.Status != 200 || r.JSON(t)["display_name"] != "Renamed" || r.JSON(t)["slug"] != slug {
		t.Fatalf("partial PUT: %d %s", r.Status, r.Body)
	}
	for _, body := range []map[string]any{{"idp_sso_url": "https://idp.example.org/sso"}, {"group_role_mapping": map[string]any{"g": "admin"}}} {
		if r := call(t, "PATCH", "/settings/oauth-providers/"+id, body, bearer(a.Access)...); r.Status != 422 {
			t.Fatalf("unsupported %v: %d %s", body, r.Status, r.Body)
		}
	}
	if r := call(t, "POST", "/settings/oauth-providers/", map[string]any{"slug": slug + "x", "display_name": "No client", "provider_type": "oidc"},
		bearer(a.Access)...); r.Status != 422 {
		t.Fatalf("create without client credentials: %d %s", r.Status, r.Body)
	}
}
