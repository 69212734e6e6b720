package conformance

import (
	"github.com/google/uuid"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

func meName(t *testing.T, headers ...string) (int, string) {
	t.Helper()
	r := call(t, "GET", "/auth/me/", nil, headers...)
	if r.Status != 200 {
		return r.Status, ""
	}
	return r.Status, r.JSON(t)["username"].(string)
}

// Spec section 5 rule 1: header key, then query key, then JWT, then anonymous.
func TestRule1CredentialPriority(t *testing.T) {
	a, b := newUser(t, "viewer"), newUser(t, "viewer")
	keyA, _ := newKey(t, a, "full")
	keyB, _ := newKey(t, b, "full")
	tests := []struct {
		name    string
		path    string
		headers []string
		want    string
	}{
		{"header key beats bearer", "/auth/me/", append(apiKey(keyA), bearer(b.Access)...), a.Username},
		{"header key beats query key", "/auth/me/?api_key=" + keyB, apiKey(keyA), a.Username},
		{"query key beats bearer", "/auth/me/?api_key=" + keyA, bearer(b.Access), a.Username},
		{"bearer alone", "/auth/me/", bearer(b.Access), b.Username},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := call(t, "GET", tt.path, nil, tt.headers...)
			if r.Status != 200 || r.JSON(t)["username"] != tt.want {
				t.Fatalf("got %d %s, want %s", r.Status, r.Body, tt.want)
			}
		})
	}
	// The deprecated query transport works but says so.
	r := call(t, "GET", "/auth/me/?api_key="+keyA, nil)
	if r.Status != 200 || r.Header.Get("Deprecation") == "" {
		t.Fatalf("api_key query: %d, Deprecation header %q", r.Status, r.Header.Get("Deprecation"))
	}
}

// Rule 2: no credential, the caller is served anonymously (the handler runs: here a 501 stub).
func TestRule2NoCredentialIsAnonymous(t *testing.T) {
	if r := call(t, "GET", "/collections", nil); r.Status == 401 || r.Status == 403 {
		t.Fatalf("anonymous read of an anonymous-allowed operation answered %d", r.Status)
	}
	if r := call(t, "GET", "/auth/me/", nil); r.Status != 401 {
		t.Fatalf("anonymous /auth/me/ answered %d, want 401", r.Status)
	}
}

// Rule 3: a credential that cannot be resolved answers 401, also where anonymous callers are served.
func TestRule3UnresolvableCredentialIs401(t *testing.T) {
	u := newUser(t, "viewer")
	key, keyID := newKey(t, u, "full")
	if r := call(t, "DELETE", "/auth/api-keys/"+keyID, nil, bearer(u.Access)...); r.Status != 204 {
		t.Fatalf("revoke: %d %s", r.Status, r.Body)
	}
	creds := map[string][]string{
		"revoked key":     apiKey(key),
		"mistyped key":    apiKey("not-a-key-0123456789abcdef"),
		"revoked key (q)": {"X-Query", "api_key=" + key},
		"mistyped bearer": bearer("eyJhbGciOiJIUzI1NiJ9.e30.bad"),
		"basic auth":      {"Authorization", "Basic dXNlcjpwYXNz"},
	}
	for name, h := range creds {
		for _, path := range []string{"/collections", "/auth/me/", "/datasets/"} {
			t.Run(name+" "+path, func(t *testing.T) {
				p, hs := path, h
				if hs[0] == "X-Query" {
					p, hs = p+"?"+hs[1], nil
				}
				r := call(t, "GET", p, nil, hs...)
				if r.Status != 401 {
					t.Fatalf("answered %d, want 401: %s", r.Status, r.Body)
				}
				if !strings.Contains(r.Header.Get("WWW-Authenticate"), "Bearer") {
					t.Errorf("no WWW-Authenticate challenge")
				}
			})
		}
	}
}

// Rule 4a: logout accepts a dead access token and falls back to the refresh credential.
func TestRule4aLogoutFallsBackToRefreshCredential(t *testing.T) {
	u := newUser(t, "viewer")
	dead := bearer("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.invalid")
	r := call(t, "POST", "/auth/logout/", map[string]any{"refresh_token": u.Refresh}, dead...)
	if r.Status != 204 {
		t.Fatalf("logout with dead token + refresh: %d %s", r.Status, r.Body)
	}
	// The session is over: its refresh token no longer works.
	if r := call(t, "POST", "/auth/refresh/", map[string]any{"refresh_token": u.Refresh}); r.Status != 401 {
		t.Fatalf("refresh after logout: %d", r.Status)
	}
	// Nothing presented resolves: 401.
	if r := call(t, "POST", "/auth/logout/", map[string]any{"refresh_token": u.Refresh}, dead...); r.Status != 401 {
		t.Fatalf("logout with nothing resolvable: %d", r.Status)
	}
	// A live access token alone ends its own session.
	v := newUser(t, "viewer")
	if r := call(t, "POST", "/auth/logout/", nil, bearer(v.Access)...); r.Status != 204 {
		t.Fatalf("logout with live token: %d %s", r.Status, r.Body)
	}
	if r := call(t, "POST", "/auth/refresh/", map[string]any{"refresh_token": v.Refresh}); r.Status != 401 {
		t.Fatalf("refresh after bearer logout: %d", r.Status)
	}
}

// Rule 4c: the shared map link reads no credential: a junk one changes nothing.
func TestRule4cSharedMapIgnoresCredentials(t *testing.T) {
	r := call(t, "GET", "/maps/shared/some-token", nil, bearer("junk")...)
	if r.Status == 401 {
		t.Fatal("shared map answered 401 to a junk credential")
	}
}

// Rule 5: landing page and conformance read no credential.
func TestRule5LandingAndConformanceReadNoCredential(t *testing.T) {
	for _, p := range []string{"/", "/conformance"} {
		if r := call(t, "GET", p, nil, append(bearer("junk"), apiKey("junk-junk-junk-junk")...)...); r.Status != 200 {
			t.Fatalf("%s with junk credentials: %d", p, r.Status)
		}
	}
}

// Rule 6 / spec 2.2: read_only keys authenticate GET, HEAD, OPTIONS only.
func TestReadOnlyKeyRefusesWrites(t *testing.T) {
	u := newUser(t, "editor")
	key, _ := newKey(t, u, "read_only")
	if code, name := meName(t, apiKey(key)...); code != 200 || name != u.Username {
		t.Fatalf("read_only key GET: %d", code)
	}
	r := call(t, "POST", "/auth/api-keys/", map[string]any{"name": "x"}, apiKey(key)...)
	if r.Status != 403 {
		t.Fatalf("read_only key POST: %d %s", r.Status, r.Body)
	}
	full, _ := newKey(t, u, "full")
	if r := call(t, "POST", "/auth/api-keys/", map[string]any{"name": "x"}, apiKey(full)...); r.Status != 201 {
		t.Fatalf("full key POST: %d %s", r.Status, r.Body)
	}
}

func TestLoginAnswersAlikeForUnknownUserAndWrongPassword(t *testing.T) {
	u := newUser(t, "viewer")
	a := call(t, "POST", "/auth/login", url.Values{"username": {"nobody-" + randomHex(3)}, "password": {"Whatever-123"}})
	b := call(t, "POST", "/auth/login", url.Values{"username": {u.Username}, "password": {"Wrong-password-1"}})
	if a.Status != 401 || b.Status != 401 {
		t.Fatalf("statuses %d %d", a.Status, b.Status)
	}
	if a.JSON(t)["detail"] != b.JSON(t)["detail"] {
		t.Fatalf("details differ: %s vs %s", a.Body, b.Body)
	}
	// Email works as the login name too, without regard to case.
	if r := call(t, "POST", "/auth/login", url.Values{"username": {strings.ToUpper(u.Username) + "@EXAMPLE.ORG"}, "password": {u.Password}}); r.Status != 200 {
		t.Fatalf("login by email: %d %s", r.Status, r.Body)
	}
}

func TestRefreshRotatesAndDetectsReuse(t *testing.T) {
	u := newUser(t, "viewer")
	first := call(t, "POST", "/auth/refresh/", map[string]any{"refresh_token": u.Refresh})
	if first.Status != 200 {
		t.Fatalf("refresh: %d %s", first.Status, first.Body)
	}
	next := first.JSON(t)["refresh_token"].(string)
	if next == u.Refresh {
		t.Fatal("refresh token was not rotated")
	}
	// Within the grace window the rotated token works once more (a second tab)...
	if r := call(t, "POST", "/auth/refresh/", map[string]any{"refresh_token": u.Refresh}); r.Status != 200 {
		t.Fatalf("grace reuse: %d %s", r.Status, r.Body)
	}
	// ...and a further reuse is theft: the whole family dies, the newest token included.
	if r := call(t, "POST", "/auth/refresh/", map[string]any{"refresh_token": u.Refresh}); r.Status != 401 {
		t.Fatalf("second reuse: %d", r.Status)
	}
	if r := call(t, "POST", "/auth/refresh/", map[string]any{"refresh_token": next}); r.Status != 401 {
		t.Fatalf("newest token after reuse detection: %d, want 401", r.Status)
	}
}

func TestRefreshCookieTransport(t *testing.T) {
	u := newUser(t, "viewer")
	r := call(t, "POST", "/auth/login", url.Values{"username": {u.Username}, "password": {u.Password}}, "X-Service-Auth-Mode", "cookie")
	if r.Status != 200 {
		t.Fatalf("cookie login: %d %s", r.Status, r.Body)
	}
	if r.JSON(t)["refresh_token"] != nil {
		t.Fatalf("cookie mode returned the refresh token in the body: %s", r.Body)
	}
	cookies := (&http.Response{Header: r.Header}).Cookies()
	var refresh, csrf *http.Cookie
	for _, c := range cookies {
		switch c.Name {
		case "service_refresh":
			refresh = c
		case "service_csrf":
			csrf = c
		}
	}
	if refresh == nil || csrf == nil || !refresh.HttpOnly || csrf.HttpOnly {
		t.Fatalf("cookies %v", cookies)
	}
	jar := "service_refresh=" + refresh.Value + "; service_csrf=" + csrf.Value
	if r := call(t, "POST", "/auth/refresh/", nil, "X-Service-Auth-Mode", "cookie", "Cookie", jar, "X-CSRF-Token", "wrong"); r.Status != 403 {
		t.Fatalf("wrong CSRF token: %d", r.Status)
	}
	ok := call(t, "POST", "/auth/refresh/", nil, "X-Service-Auth-Mode", "cookie", "Cookie", jar, "X-CSRF-Token", csrf.Value)
	if ok.Status != 200 || ok.JSON(t)["refresh_token"] != nil || !strings.Contains(strings.Join(ok.Header.Values("Set-Cookie"), ";"), "service_refresh=") {
		t.Fatalf("cookie refresh: %d %s %v", ok.Status, ok.Body, ok.Header.Values("Set-Cookie"))
	}
	// An older session migrates: cookie mode, no cookie yet, token in the body.
	mig := call(t, "POST", "/auth/refresh/", map[string]any{"refresh_token": u.Refresh}, "X-Service-Auth-Mode", "cookie")
	if mig.Status != 200 || mig.JSON(t)["refresh_token"] != nil {
		t.Fatalf("migration fallback: %d %s", mig.Status, mig.Body)
	}
}

func TestChangePasswordInvalidatesTokensKeysAndSessions(t *testing.T) {
	u := newUser(t, "editor")
	key, _ := newKey(t, u, "full")
	tests := []struct {
		name          string
		current, next string
		status        int
	}{
		{"wrong current password", "Not-the-password-1", "Brand-new-pass-1", 400},
		{"new password too short for the schema", u.Password, "Ab1!xyz", 422},
		{"new password against the policy", u.Password, "alllowercase", 422},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := call(t, "POST", "/auth/change-password/", map[string]any{"current_password": tt.current, "new_password": tt.next}, bearer(u.Access)...)
			if r.Status != tt.status {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
		})
	}
	r := call(t, "POST", "/auth/change-password/", map[string]any{"current_password": u.Password, "new_password": "Brand-new-pass-1"}, bearer(u.Access)...)
	if r.Status != 204 {
		t.Fatalf("change: %d %s", r.Status, r.Body)
	}
	if code, _ := meName(t, bearer(u.Access)...); code != 401 {
		t.Errorf("old access token: %d", code)
	}
	if code, _ := meName(t, apiKey(key)...); code != 401 {
		t.Errorf("old API key: %d", code)
	}
	if r := call(t, "POST", "/auth/refresh/", map[string]any{"refresh_token": u.Refresh}); r.Status != 401 {
		t.Errorf("old refresh token: %d", r.Status)
	}
	login(t, u.Username, "Brand-new-pass-1")
}

func TestRoleChangeInvalidatesKeysButLogoutDoesNot(t *testing.T) {
	u := newUser(t, "viewer")
	key, _ := newKey(t, u, "full")
	if r := call(t, "POST", "/auth/logout/", map[string]any{"refresh_token": u.Refresh}); r.Status != 204 {
		t.Fatalf("logout: %d", r.Status)
	}
	if code, _ := meName(t, apiKey(key)...); code != 200 {
		t.Fatalf("API key after web logout: %d, want 200", code)
	}
	if r := call(t, "PATCH", "/admin/users/"+u.ID, map[string]any{"role": "editor"}, bearer(admin(t).Access)...); r.Status != 200 {
		t.Fatalf("role change: %d %s", r.Status, r.Body)
	}
	if code, _ := meName(t, apiKey(key)...); code != 401 {
		t.Fatalf("API key after role change: %d, want 401", code)
	}
}

func TestPermissionsByRole(t *testing.T) {
	for role, want := range map[string][]string{
		"viewer": {"export"},
		"editor": {"export", "upload", "create_layers", "edit_metadata", "manage_collections", "use_ai_chat"},
	} {
		u := newUser(t, role)
		m := call(t, "GET", "/auth/me/permissions/", nil, bearer(u.Access)...).JSON(t)
		got := m["capabilities"].([]any)
		if m["role"] != role || len(got) != len(want) {
			t.Errorf("%s: %v", role, m)
		}
	}
	m := call(t, "GET", "/auth/me/permissions/", nil, bearer(admin(t).Access)...).JSON(t)
	if !strings.Contains(strings.Join(anyStrings(m["capabilities"]), ","), "manage_settings") {
		t.Errorf("admin lacks manage_settings: %v", m)
	}
}

func anyStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

func TestAdminAPIKeys(t *testing.T) {
	u := newUser(t, "viewer")
	a := admin(t)
	if r := call(t, "POST", "/admin/api-keys/", map[string]any{"user_id": u.ID, "name": "ci"}, bearer(u.Access)...); r.Status != 403 {
		t.Fatalf("viewer creating an admin key: %d", r.Status)
	}
	r := call(t, "POST", "/admin/api-keys/", map[string]any{"user_id": u.ID, "name": "ci", "scope": "read_only"}, bearer(a.Access)...)
	if r.Status != 201 {
		t.Fatalf("admin create key: %d %s", r.Status, r.Body)
	}
	m := r.JSON(t)
	key, id, fp := m["key"].(string), m["id"].(string), m["fingerprint"].(string)
	if fp != key[:8]+"…"+key[len(key)-4:] {
		t.Errorf("fingerprint %q does not match the key", fp)
	}
	if code, name := meName(t, apiKey(key)...); code != 200 || name != u.Username {
		t.Fatalf("key acts as its owner: %d %s", code, name)
	}
	list := call(t, "GET", "/admin/api-keys/?user_id="+u.ID, nil, bearer(a.Access)...).JSON(t)
	if list["total"].(float64) != 1 || strings.Contains(string(call(t, "GET", "/admin/api-keys/", nil, bearer(a.Access)...).Body), key) {
		t.Fatalf("list: %v (must never contain the secret)", list)
	}
	// Another user cannot revoke it through their own endpoint: 404, not 403.
	other := newUser(t, "viewer")
	if r := call(t, "DELETE", "/auth/api-keys/"+id, nil, bearer(other.Access)...); r.Status != 404 {
		t.Fatalf("revoking another user's key: %d", r.Status)
	}
	if r := call(t, "DELETE", "/admin/api-keys/"+id, nil, bearer(a.Access)...); r.Status != 204 {
		t.Fatalf("admin revoke: %d", r.Status)
	}
	if code, _ := meName(t, apiKey(key)...); code != 401 {
		t.Fatalf("revoked key still works: %d", code)
	}
	if r := call(t, "POST", "/admin/api-keys/", map[string]any{"user_id": "5f0c8a52-3d3c-4f43-9b7e-1d2a6c0f9e11", "name": "x"}, bearer(a.Access)...); r.Status != 404 {
		t.Fatalf("key for unknown user: %d", r.Status)
	}
}

// Section 8 limits of this area, at their edges.
func TestIdentityLimits(t *testing.T) {
	u := newUser(t, "viewer")
	tests := []struct {
		name   string
		method string
		path   string
		body   map[string]any
		status int
	}{
		{"key name of 255", "POST", "/auth/api-keys/", map[string]any{"name": strings.Repeat("k", 255)}, 201},
		{"key name of 256", "POST", "/auth/api-keys/", map[string]any{"name": strings.Repeat("k", 256)}, 422},
		{"empty key name", "POST", "/auth/api-keys/", map[string]any{"name": ""}, 422},
		{"refresh token of 512", "POST", "/auth/refresh/", map[string]any{"refresh_token": strings.Repeat("r", 512)}, 401},
		{"refresh token of 513", "POST", "/auth/refresh/", map[string]any{"refresh_token": strings.Repeat("r", 513)}, 422},
		{"current password of 256", "POST", "/auth/change-password/", map[string]any{"current_password": strings.Repeat("p", 256), "new_password": "Another-pass-123"}, 400},
		{"current password of 257", "POST", "/auth/change-password/", map[string]any{"current_password": strings.Repeat("p", 257), "new_password": "Another-pass-123"}, 422},
		{"empty current password", "POST", "/auth/change-password/", map[string]any{"current_password": "", "new_password": "Another-pass-123"}, 422},
		{"new password of 257", "POST", "/auth/change-password/", map[string]any{"current_password": "x", "new_password": strings.Repeat("Aa1!", 64) + "x"}, 422},
		{"scope outside the enum", "POST", "/auth/api-keys/", map[string]any{"name": "x", "scope": "admin"}, 422},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := call(t, tt.method, tt.path, tt.body, bearer(u.Access)...)
			if r.Status != tt.status {
				t.Fatalf("%d, want %d: %s", r.Status, tt.status, r.Body)
			}
		})
	}
}

func TestViewerCannotUseAdminOperations(t *testing.T) {
	u := newUser(t, "editor")
	for _, op := range []struct{ method, path string }{{"GET", "/admin/api-keys/"}, {"GET", "/admin/users/" + u.ID}} {
		if r := call(t, op.method, op.path, nil, bearer(u.Access)...); r.Status != 403 {
			t.Errorf("%s %s as editor: %d", op.method, op.path, r.Status)
		}
	}
}

func TestLoginIsThrottled(t *testing.T) {
	s := startFresh(t)
	var last reply
	for i := 0; i < 6; i++ {
		last = callAt(t, plain, s.APIRoot, "POST", "/auth/login", url.Values{"username": {"admin"}, "password": {"Wrong-pass-123"}})
	}
	if last.Status != 429 {
		t.Fatalf("6th failed login answered %d, want 429", last.Status)
	}
	if n, err := strconv.Atoi(last.Header.Get("Retry-After")); err != nil || n < 1 {
		t.Fatalf("Retry-After %q", last.Header.Get("Retry-After"))
	}
}

func TestAdminUserLifecycle(t *testing.T) {
	a := admin(t)
	u := newUser(t, "viewer")
	key, _ := newKey(t, u, "full")

	// Deactivation ends every session and key at once.
	r := call(t, "POST", "/admin/users/"+u.ID+"/deactivate/", nil, bearer(a.Access)...)
	if r.Status != 200 || r.JSON(t)["status"] != "deactivated" || r.JSON(t)["is_active"] != false {
		t.Fatalf("deactivate: %d %s", r.Status, r.Body)
	}
	for name, h := range map[string][]string{"access token": bearer(u.Access), "API key": apiKey(key)} {
		if code, _ := meName(t, h...); code != 401 {
			t.Errorf("%s after deactivation: %d", name, code)
		}
	}
	if r := call(t, "POST", "/auth/refresh/", map[string]any{"refresh_token": u.Refresh}); r.Status != 401 {
		t.Errorf("refresh after deactivation: %d", r.Status)
	}
	if r := call(t, "POST", "/auth/login", url.Values{"username": {u.Username}, "password": {u.Password}}); r.Status != 403 {
		t.Errorf("login of a deactivated user: %d", r.Status)
	}

	// Approve and reject apply to pending accounts only (registrations in approval mode).
	allowRegistration(t)
	if r := call(t, "POST", "/admin/users/"+newUser(t, "viewer").ID+"/approve/", nil, bearer(a.Access)...); r.Status != 409 {
		t.Fatalf("approving an active user: %d", r.Status)
	}
	pendingID := func(name string) string {
		if r := register(t, name, "Good-password-1"); r.Status != 201 {
			t.Fatalf("register: %d %s", r.Status, r.Body)
		}
		list := call(t, "GET", "/admin/users/?status=pending&q="+name, nil, bearer(a.Access)...).JSON(t)
		return list["users"].([]any)[0].(map[string]any)["id"].(string)
	}
	p1, p2 := "pend"+randomHex(3), "rej"+randomHex(3)
	id1, id2 := pendingID(p1), pendingID(p2)
	if r := call(t, "POST", "/auth/login", url.Values{"username": {p1}, "password": {"Good-password-1"}}); r.Status != 403 {
		t.Fatalf("login of a pending user: %d", r.Status)
	}
	if r := call(t, "POST", "/admin/users/"+id1+"/approve/", nil, bearer(a.Access)...); r.Status != 200 || r.JSON(t)["status"] != "active" {
		t.Fatalf("approve: %d %s", r.Status, r.Body)
	}
	login(t, p1, "Good-password-1")
	if r := call(t, "POST", "/admin/users/"+id2+"/reject/", nil, bearer(a.Access)...); r.Status != 204 {
		t.Fatalf("reject: %d %s", r.Status, r.Body)
	}
	if r := call(t, "POST", "/auth/login", url.Values{"username": {p2}, "password": {"Good-password-1"}}); r.Status != 403 {
		t.Fatalf("login of a rejected user: %d", r.Status)
	}

	// Listing, names and the CSV export see the accounts.
	list := call(t, "GET", "/admin/users/?status=deactivated&q="+u.Username, nil, bearer(a.Access)...).JSON(t)
	if list["total"].(float64) != 1 {
		t.Fatalf("filtered list: %v", list)
	}
	names := call(t, "GET", "/admin/users/names/?include_inactive=true&q="+u.Username, nil, bearer(a.Access)...)
	if !strings.Contains(string(names.Body), u.Username) {
		t.Fatalf("names: %s", names.Body)
	}
	csv := call(t, "GET", "/admin/users/export.csv?q="+u.Username, nil, bearer(a.Access)...)
	if csv.Status != 200 || !strings.HasPrefix(string(csv.Body), "id,username,email") || !strings.Contains(string(csv.Body), u.Username+"@example.org") {
		t.Fatalf("csv: %d %s", csv.Status, csv.Body)
	}

	// Duplicates, self-protection and deletion.
	dup := call(t, "POST", "/admin/users/", map[string]any{"username": strings.ToUpper(u.Username), "email": "other-" + u.Username + "@example.org"}, bearer(a.Access)...)
	if dup.Status != 409 {
		t.Fatalf("duplicate username (other case): %d", dup.Status)
	}
	if r := call(t, "DELETE", "/admin/users/"+a.ID, nil, bearer(a.Access)...); r.Status != 409 {
		t.Fatalf("admin deleting themselves: %d", r.Status)
	}
	if r := call(t, "PATCH", "/admin/users/"+a.ID, map[string]any{"role": "viewer"}, bearer(a.Access)...); r.Status != 409 {
		t.Fatalf("demoting the last admin: %d %s", r.Status, r.Body)
	}
	if r := call(t, "DELETE", "/admin/users/"+u.ID, nil, bearer(a.Access)...); r.Status != 204 {
		t.Fatalf("delete: %d", r.Status)
	}
	if r := call(t, "GET", "/admin/users/"+u.ID, nil, bearer(a.Access)...); r.Status != 404 {
		t.Fatalf("deleted user: %d", r.Status)
	}
}

func TestAPIKeyStatusNeverShowsKeys(t *testing.T) {
	a := admin(t)
	if r := call(t, "PUT", "/settings/", map[string]any{"settings": map[string]any{"provider_keys": map[string]any{"stadia": "stadia-settings-secret"}}},
		bearer(a.Access)...); r.Status != 200 {
		t.Fatalf("store a key: %d %s", r.Status, r.Body)
	}
	defer call(t, "POST", "/settings/reset/", map[string]any{"keys": []string{"provider_keys.stadia"}}, bearer(a.Access)...)
	r := call(t, "GET", "/settings/api-key-status/", nil, bearer(a.Access)...)
	if r.Status != 200 || strings.Contains(string(r.Body), "secret") {
		t.Fatalf("status: %d %s", r.Status, r.Body)
	}
	got := map[string]any{}
	for _, p := range r.JSON(t)["providers"].([]any) {
		m := p.(map[string]any)
		got[m["provider"].(string)] = m["source"]
	}
	if got["maptiler"] != "environment" || got["stadia"] != "settings" || got["geocoding"] != nil {
		t.Fatalf("sources: %v", got)
	}
	if r := call(t, "GET", "/settings/api-key-status/", nil, bearer(newUser(t, "editor").Access)...); r.Status != 403 {
		t.Fatalf("editor: %d", r.Status)
	}
}

func TestExpiredAPIKeyStopsAuthenticating(t *testing.T) {
	u := newUser(t, "viewer")
	if r := call(t, "POST", "/auth/api-keys/", map[string]any{"name": "past", "expires_at": "2020-01-01T00:00:00Z"}, bearer(u.Access)...); r.Status != 422 {
		t.Fatalf("key expiring in the past: %d", r.Status)
	}
	exp := time.Now().Add(1500 * time.Millisecond).UTC().Format(time.RFC3339Nano)
	r := call(t, "POST", "/auth/api-keys/", map[string]any{"name": "short", "expires_at": exp}, bearer(u.Access)...)
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	key := r.JSON(t)["key"].(string)
	if code, _ := meName(t, apiKey(key)...); code != 200 {
		t.Fatalf("before expiry: %d", code)
	}
	time.Sleep(2 * time.Second)
	if code, _ := meName(t, apiKey(key)...); code != 401 {
		t.Fatalf("after expiry: %d", code)
	}
}

// TestClientShapesOfTheSignedInUser: the calls every client makes first answer the shapes they
// parse: roles and quota usage on Get Me, permissions by name, usage with caps, the auth
// configuration's flags, and API keys in a paged envelope.
func TestClientShapesOfTheSignedInUser(t *testing.T) {
	u := newUser(t, "editor")
	me := call(t, "GET", "/auth/me/", nil, bearer(u.Access)...).JSON(t)
	roles, _ := me["roles"].([]any)
	if len(roles) != 1 || roles[0] != "editor" || me["quota_usage"].(map[string]any)["dataset_count"] != float64(0) {
		t.Fatalf("me: %v", me)
	}
	perms := call(t, "GET", "/auth/me/permissions/", nil, bearer(u.Access)...).JSON(t)["permissions"].(map[string]any)
	if perms["upload"] != true || perms["manage_users"] != false {
		t.Fatalf("permissions: %v", perms)
	}
	usage := call(t, "GET", "/auth/me/usage/", nil, bearer(u.Access)...).JSON(t)
	if usage["bytes_used"] != usage["storage_bytes"] || usage["storage_cap"] != float64(0) {
		t.Fatalf("usage: %v", usage)
	}
	cfg := call(t, "GET", "/auth/config/", nil).JSON(t)
	if methods, _ := cfg["auth_methods"].([]any); len(methods) == 0 || methods[0] != "password" || cfg["password_login_enabled"] != true {
		t.Fatalf("auth config: %v", cfg)
	}
	for range 3 {
		newKey(t, u, "full")
	}
	keys := call(t, "GET", "/auth/api-keys/?skip=1&limit=1", nil, bearer(u.Access)...).JSON(t)
	if keys["total"] != float64(3) || len(keys["items"].([]any)) != 1 {
		t.Fatalf("api keys page: %v", keys)
	}
	// Clients of the password grant send client_id and client_secret with the form.
	if r := call(t, "POST", "/auth/login", url.Values{"username": {u.Username}, "password": {u.Password}, "client_id": {"web"}, "client_secret": {""}}); r.Status != 200 {
		t.Fatalf("login with client_id: %d %s", r.Status, r.Body)
	}
}

// TestAdminListsClientShapes: the admin lists answer the envelopes clients read (`users`,
// `logs`, `jobs`) and honour the parameters they send (search, sort, order, user_id, dates).
func TestAdminListsClientShapes(t *testing.T) {
	a := admin(t)
	tag := "shp" + randomHex(3)
	for _, n := range []string{"b", "a", "c"} {
		r := call(t, "POST", "/admin/users/", map[string]any{"username": tag + n, "email": tag + n + "@example.org", "role": "viewer"}, bearer(a.Access)...)
		if r.Status != 201 {
			t.Fatalf("create %s: %d %s", n, r.Status, r.Body)
		}
		time.Sleep(5 * time.Millisecond) // distinct creation times
	}
	if r := call(t, "POST", "/admin/users/", map[string]any{"username": tag + "x"}, bearer(a.Access)...); r.Status != 422 {
		t.Fatalf("create without email: %d %s", r.Status, r.Body)
	}
	names := func(query string) []string {
		t.Helper()
		r := call(t, "GET", "/admin/users/?search="+tag+"&"+query, nil, bearer(a.Access)...)
		if r.Status != 200 {
			t.Fatalf("users %s: %d %s", query, r.Status, r.Body)
		}
		var out []string
		for _, u := range r.JSON(t)["users"].([]any) {
			out = append(out, strings.TrimPrefix(u.(map[string]any)["username"].(string), tag))
		}
		return out
	}
	if got := strings.Join(names("sort=username&order=desc"), ""); got != "cba" {
		t.Fatalf("users by username desc: %q", got)
	}
	if got := strings.Join(names("sort=created_at"), ""); got != "bac" {
		t.Fatalf("users by creation: %q", got)
	}
	logs := call(t, "GET", "/admin/audit-logs/?search=user.&order=asc&limit=2", nil, bearer(a.Access)...).JSON(t)
	entries := logs["logs"].([]any)
	if len(entries) != 2 || !strings.Contains(entries[0].(map[string]any)["action"].(string), "user.") || entries[0].(map[string]any)["created_at"] == nil {
		t.Fatalf("audit logs: %v", logs)
	}
	first, second := entries[0].(map[string]any)["occurred_at"].(string), entries[1].(map[string]any)["occurred_at"].(string)
	if first > second {
		t.Fatalf("order=asc: %s before %s", first, second)
	}
	jobs := call(t, "GET", "/admin/jobs/?user_id="+uuid.NewString(), nil, bearer(a.Access)...).JSON(t)
	if jobs["total"] != float64(0) || len(jobs["jobs"].([]any)) != 0 {
		t.Fatalf("jobs of nobody: %v", jobs)
	}
	c := call(t, "POST", "/jobs/cleanup/stale/", map[string]any{"dry_run": true}, bearer(a.Access)...).JSON(t)
	if _, ok := c["total_affected"].(float64); !ok || c["total_cleaned"] != c["cleaned_count"] {
		t.Fatalf("cleanup counters: %v", c)
	}
}

// TestAnnouncedUserChangeEndsKeptSessions: a bearer's principal is kept once read, and a change
// made outside this server (on another replica, or by an operator's SQL) reaches it through
// PostgreSQL's announcement (migration 143) within a second, not when the token expires: a
// deactivated user, then a revoked session.
func TestAnnouncedUserChangeEndsKeptSessions(t *testing.T) {
	conn := connect(t, server.DBURL)
	for _, change := range []string{
		"UPDATE catalog.users SET status = 'deactivated' WHERE id = $1",
		"UPDATE catalog.refresh_tokens SET revoked_at = now() WHERE user_id = $1",
	} {
		u := newUser(t, "viewer")
		for range 2 { // the second is answered from what the server keeps
			if code, _ := meName(t, bearer(u.Access)...); code != 200 {
				t.Fatalf("before %q: %d", change, code)
			}
		}
		if _, err := conn.Exec(t.Context(), change, u.ID); err != nil {
			t.Fatal(err)
		}
		converges(t, "the token refused after "+change, func() bool { code, _ := meName(t, bearer(u.Access)...); return code == 401 })
	}
}
