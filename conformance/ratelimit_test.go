package conformance

import (
	"net/http"
	"strconv"
	"testing"
)

// Previews run GDAL on the server: a signed-in user gets a quota of their own, whatever address
// they come from, and other users behind the same address keep theirs.
func TestPreviewRateLimitPerUser(t *testing.T) {
	const quota = 4
	s := startFresh(t, "RATE_LIMITS_PER_USER=previewFile="+strconv.Itoa(quota))
	hc := contractAt(t, s)
	admin := loginAt(t, hc, s.APIRoot, "admin", AdminPassword)
	other := newUserAt(t, hc, s.APIRoot, admin, "editor")
	job := "/ingest/preview/" + "00000000-0000-4000-8000-" + randomHex(6)
	for i := 0; i < quota; i++ {
		if r := callAt(t, hc, s.APIRoot, "POST", job, map[string]any{}, bearer(admin)...); r.Status != 404 {
			t.Fatalf("preview %d within the quota: %d %s", i+1, r.Status, r.Body)
		}
	}
	r := callAt(t, hc, s.APIRoot, "POST", job, map[string]any{}, bearer(admin)...)
	if r.Status != 429 {
		t.Fatalf("preview over the quota: %d %s", r.Status, r.Body)
	}
	if n, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || n < 1 {
		t.Fatalf("Retry-After %q is not a positive integer", r.Header.Get("Retry-After"))
	}
	if p := r.JSON(t); p["status"].(float64) != 429 {
		t.Fatalf("429 problem: %v", p)
	}
	// Same address, another user: their own quota.
	if r := callAt(t, hc, s.APIRoot, "POST", job, map[string]any{}, bearer(other)...); r.Status != 404 {
		t.Fatalf("another user's first preview: %d %s", r.Status, r.Body)
	}
}

// newUserAt creates a user with role on another server and returns its access token.
func newUserAt(t *testing.T, hc *http.Client, root, adminToken, role string) string {
	t.Helper()
	name := "u" + randomHex(4)
	password := "Pass-word-" + randomHex(4)
	r := callAt(t, hc, root, "POST", "/admin/users/", map[string]any{"username": name, "email": name + "@example.org",
		"password": password, "role": role, "email_verified": true}, bearer(adminToken)...)
	if r.Status != 201 {
		t.Fatalf("create user: %d %s", r.Status, r.Body)
	}
	return loginAt(t, hc, root, name, password)
}
