package conformance

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// Admin tag: the web UI's frame (edition, branding, plugins), settings round trips, statistics,
// AI and embedding status, notifications.

// settingOf finds a setting in an all-settings answer.
func settingOf(t *testing.T, all map[string]any, tab, key string) map[string]any {
	t.Helper()
	items, _ := all["tabs"].(map[string]any)[tab].([]any)
	for _, it := range items {
		if it := it.(map[string]any); it["key"] == key {
			return it
		}
	}
	t.Fatalf("no setting %s.%s in %v", tab, key, all["tabs"])
	return nil
}

func TestWebUIFrame(t *testing.T) {
	ed := call(t, "GET", "/settings/edition/", nil).JSON(t)
	if ed["edition"] != "community" || !slices.Contains(toStrings(ed["features"]), "vector_tiles") || slices.Contains(toStrings(ed["features"]), "ai") {
		t.Fatalf("edition: %v", ed)
	}
	if b := call(t, "GET", "/settings/branding/", nil).JSON(t); b["site_name"] != "Meridian" || b["show_badge"] != true {
		t.Fatalf("branding: %v", b)
	}
	if p := call(t, "GET", "/settings/enabled-plugins/", nil); p.Status != 200 || string(p.Body) != "[]\n" {
		t.Fatalf("plugins: %d %q", p.Status, p.Body)
	}
	// The server's root leads people to the documentation.
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := noFollow.Get(strings.TrimSuffix(server.APIRoot, "/api") + "/")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusFound || res.Header.Get("Location") != "/api/docs" {
		t.Fatalf("root: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
}

func toStrings(v any) []string {
	var out []string
	for _, s := range v.([]any) {
		out = append(out, s.(string))
	}
	return out
}

func TestSettingsRoundTrip(t *testing.T) {
	adm, viewer, editor := admin(t), newUser(t, "viewer"), newUser(t, "editor")
	wantStatus(t, "viewer reads settings", call(t, "GET", "/settings/all/", nil, bearer(viewer.Access)...), 403)
	wantStatus(t, "anonymous reads settings", call(t, "GET", "/settings/all/", nil), 401)
	all := call(t, "GET", "/settings/all/", nil, bearer(adm.Access)...).JSON(t)
	if s := settingOf(t, all, "tile_config", "tile_config.max_concurrent"); s["value"] != float64(8) || s["source"] != "default" {
		t.Fatalf("default setting: %v", s)
	}
	if s := settingOf(t, all, "provider_keys", "provider_keys.maptiler_set"); s["value"] != true || s["source"] != "env_only" {
		t.Fatalf("pinned key: %v", s)
	}
	put := func(body map[string]any) reply {
		t.Helper()
		return call(t, "PUT", "/settings/", map[string]any{"settings": body}, bearer(adm.Access)...)
	}
	defer func() {
		call(t, "POST", "/settings/reset/", map[string]any{"keys": []string{"branding", "provider_keys.stadia",
			"provider_keys.thunderforest", "ai"}}, bearer(adm.Access)...)
		wantStatus(t, "editing back on", put(map[string]any{"enable_dataset_editing": true}), 200)
	}()

	// Validated as a whole: one bad value, nothing written.
	wantStatus(t, "a bad value", put(map[string]any{"branding.site_name": "Atlas", "tile_config.max_concurrent": 0}), 422, "max_concurrent")
	if b := call(t, "GET", "/settings/branding/", nil).JSON(t); b["site_name"] != "Meridian" {
		t.Fatalf("half a refused update was written: %v", b)
	}
	wantStatus(t, "an unknown key", put(map[string]any{"branding.motto": "x"}), 422)
	wantStatus(t, "a key the environment sets", put(map[string]any{"provider_keys.maptiler": "x"}), 409)
	wantStatus(t, "a viewer writes", call(t, "PUT", "/settings/", map[string]any{"settings": map[string]any{}}, bearer(viewer.Access)...), 403)

	// A secret is stored, used, and never shown; the audit log says it changed, not what it is.
	r := put(map[string]any{"branding.site_name": "Atlas", "branding.primary_color": "#112233",
		"provider_keys.stadia": "stadia-secret-value", "enable_dataset_editing": false})
	wantStatus(t, "update", r, 200)
	if strings.Contains(string(r.Body), "stadia-secret-value") || settingOf(t, r.JSON(t), "provider_keys", "provider_keys.stadia_set")["value"] != true {
		t.Fatalf("settings after update: %s", r.Body)
	}
	if b := call(t, "GET", "/settings/branding/", nil).JSON(t); b["site_name"] != "Atlas" || b["primary_color"] != "#112233" {
		t.Fatalf("branding after update: %v", b)
	}
	var stadia string
	var basemaps []map[string]any
	if err := json.Unmarshal(call(t, "GET", "/settings/basemaps/", nil).Body, &basemaps); err != nil {
		t.Fatal(err)
	}
	for _, b := range basemaps {
		if b["id"] == "stadia-alidade-smooth" {
			stadia = b["url"].(string)
		}
	}
	if !strings.Contains(stadia, "api_key=stadia-secret-value") {
		t.Fatalf("the stored key is not used for its basemap: %q", stadia)
	}
	// A stored key that does not open (another JWT_SECRET_KEY sealed it) is left unused, not fatal.
	setSetting(t, "provider_keys.thunderforest", `"not-a-sealed-key"`)
	wantStatus(t, "basemaps beside an unusable key", call(t, "GET", "/settings/basemaps/", nil), 200)
	logs := call(t, "GET", "/admin/audit-logs/?action=settings.*&limit=200", nil, bearer(adm.Access)...)
	if !strings.Contains(string(logs.Body), "provider_keys.stadia") || !strings.Contains(string(logs.Body), `"new":"Atlas"`) ||
		strings.Contains(string(logs.Body), "stadia-secret-value") {
		t.Fatalf("audit of settings: %s", logs.Body)
	}
	// A feature flag takes effect on the next request.
	d := createDataset(t, editor, "private", false)
	wantStatus(t, "edit while editing is off", call(t, "POST", "/datasets/"+d["id"].(string)+"/features/", map[string]any{"geometry": point(1, 1),
		"properties": map[string]any{}}, bearer(editor.Access)...), 403, "disabled")
	r = call(t, "POST", "/settings/reset/", map[string]any{"keys": []string{"enable_dataset_editing"}}, bearer(adm.Access)...)
	wantStatus(t, "reset", r, 200)
	if s := settingOf(t, r.JSON(t), "general", "enable_dataset_editing"); s["value"] != false || s["source"] != "default" {
		t.Fatalf("after reset: %v", s)
	}
	wantStatus(t, "editing on", put(map[string]any{"enable_dataset_editing": true}), 200)
	wantStatus(t, "edit once editing is on", call(t, "POST", "/datasets/"+d["id"].(string)+"/features/", map[string]any{"geometry": point(1, 1),
		"properties": map[string]any{}}, bearer(editor.Access)...), 201)
	wantStatus(t, "reset of nothing known", call(t, "POST", "/settings/reset/", map[string]any{"keys": []string{"nonsense"}}, bearer(adm.Access)...), 422)

	mode := call(t, "GET", "/settings/config-mode/", nil, bearer(adm.Access)...).JSON(t)
	pinned := toStrings(mode["pinned_keys"])
	if mode["mode"] != "hybrid" || !slices.Contains(pinned, "provider_keys.maptiler") || !slices.Contains(pinned, "access_token_expire_minutes") {
		t.Fatalf("config mode: %v", mode)
	}
}

func TestAdminStatusReads(t *testing.T) {
	adm, viewer := admin(t), newUser(t, "viewer")
	ogcDataset(t, newUser(t, "editor"), "public")
	for _, path := range []string{"/admin/stats/", "/admin/ai-status/", "/admin/embedding-stats/", "/admin/infrastructure/", "/settings/notifications/status/"} {
		wantStatus(t, "viewer reads "+path, call(t, "GET", path, nil, bearer(viewer.Access)...), 403)
	}
	st := call(t, "GET", "/admin/stats/", nil, bearer(adm.Access)...).JSON(t)
	if st["total_datasets"].(float64) < 1 || st["datasets_by_visibility"].(map[string]any)["public"] == nil || st["total_users"].(float64) < 2 {
		t.Fatalf("stats: %v", st)
	}
	ai := call(t, "GET", "/admin/ai-status/?probe=true", nil, bearer(adm.Access)...).JSON(t)
	if ai["configured"] != false || ai["enabled"] != false || ai["probe"].(map[string]any)["chat"].(map[string]any)["ok"] != false {
		t.Fatalf("AI status without a provider: %v", ai)
	}
	defer call(t, "POST", "/settings/reset/", map[string]any{"keys": []string{"ai"}}, bearer(adm.Access)...)
	if ai := call(t, "PATCH", "/admin/ai-status/", map[string]any{"enabled": true}, bearer(adm.Access)...).JSON(t); ai["enabled"] != false {
		t.Fatalf("AI switched on without a provider: %v", ai)
	}
	if e := call(t, "GET", "/admin/embedding-stats/", nil, bearer(adm.Access)...).JSON(t); e["embedded_records"] != float64(0) || e["missing_records"] != e["total_records"] {
		t.Fatalf("embedding stats: %v", e)
	}
	wantStatus(t, "detect dims", call(t, "POST", "/settings/detect-embedding-dims/", nil, bearer(adm.Access)...), 409, "embedding")
	wantStatus(t, "backfill", call(t, "POST", "/admin/backfill-embeddings/", nil, bearer(adm.Access)...), 409, "embedding")
	infra := call(t, "GET", "/admin/infrastructure/", nil, bearer(adm.Access)...)
	if h := infra.JSON(t)["health"].(map[string]any)["database"].(map[string]any); h["status"] != "ok" || strings.Contains(string(infra.Body), "postgres://") {
		t.Fatalf("infrastructure: %s", infra.Body)
	}

	// Notifications: the shared server sends through the in-test mail server.
	if n := call(t, "GET", "/settings/notifications/status/", nil, bearer(adm.Access)...).JSON(t); n["smtp_configured"] != true || n["notifications_enabled"] != true {
		t.Fatalf("notification status: %v", n)
	}
	before := mails.count()
	r := call(t, "POST", "/settings/notifications/test/", map[string]any{"recipient": "ops@example.org"}, bearer(adm.Access)...)
	wantStatus(t, "test notification", r, 200)
	if body := mails.waitFor(t, "ops@example.org", before); !strings.Contains(body, "Email notifications work") {
		t.Fatalf("test mail: %q", body)
	}
}

// TestLinksBehindAProxy: with TRUST_FORWARDED_HEADERS, absolute links follow the address the
// proxy was asked for; without it they follow BASE_URL whatever a client sends.
func TestLinksBehindAProxy(t *testing.T) {
	headers := []string{"X-Forwarded-Host", "maps.example.org", "X-Forwarded-Proto", "https", "X-Forwarded-Prefix", "/gis"}
	selfOf := func(r reply) string {
		t.Helper()
		for _, l := range r.JSON(t)["links"].([]any) {
			if l := l.(map[string]any); l["rel"] == "self" {
				return l["href"].(string)
			}
		}
		t.Fatalf("no self link: %s", r.Body)
		return ""
	}
	if self := selfOf(call(t, "GET", "/", nil, headers...)); self != server.APIRoot+"/" {
		t.Fatalf("untrusted proxy headers moved the links: %s", self)
	}
	proxied := startFresh(t, "TRUST_FORWARDED_HEADERS=true")
	if self := selfOf(callAt(t, http.DefaultClient, proxied.APIRoot, "GET", "/", nil, headers...)); self != "https://maps.example.org/gis/api/" {
		t.Fatalf("links behind a trusted proxy: %s", self)
	}
	if self := selfOf(callAt(t, http.DefaultClient, proxied.APIRoot, "GET", "/", nil, "X-Forwarded-Host", "evil.example/path")); self != proxied.APIRoot+"/" {
		t.Fatalf("a malformed forwarded host: %s", self)
	}
}
