package conformance

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// What the administration pages, the settings pages and the browser upload of the existing
// clients expect (client-semantics.md, "Administration pages" and "Uploads from a browser").

// settingsPages are the tabs of the web UI's settings pages with exactly their keys and, as JSON,
// their defaults; "env" marks a value the environment fixes (source env_only).
var settingsPages = []struct {
	tab  string
	keys [][2]string
}{
	{"general", [][2]string{{"require_metadata_for_publish", `false`}, {"enable_dataset_editing", `false`}, {"banner_enabled", `false`},
		{"banner_text", `""`}, {"banner_color", `"warning"`}, {"public_app_url", `""`}, {"public_api_url", `""`}, {"privacy_url", `""`},
		{"log_level", `"INFO"`}, {"log_json", `false`}}},
	{"auth", [][2]string{{"registration_enabled", `false`}, {"landing_first", `false`}, {"password_login_enabled", `true`},
		{"allowed_email_domains", `[]`}, {"access_token_expire_minutes", `env:15`}, {"refresh_token_expire_days", `env:7`},
		{"login_rate_limit", `env:5`}}},
	{"ai", [][2]string{{"ai_enabled", `true`}, {"ai_send_sample_values", `true`}, {"max_ai_tokens_per_user_per_day", `0`},
		{"llm_provider", `"anthropic"`}, {"llm_model", `""`}, {"openai_base_url", `""`}, {"embedding_model", `""`},
		{"embedding_base_url", `""`}, {"embedding_dims", `"0"`}}},
	{"network", [][2]string{{"cors_allowed_origins", `env:""`}, {"global_rate_limit", `env:60`}, {"ogc_items_max_page_size", `1000`}}},
	{"storage", [][2]string{{"upload_max_size_mb", `500`}, {"upload_allowed_extensions", `".zip,.gpkg,.geojson,.json,.csv,.tif,.tiff,.xlsx,.xls"`},
		{"tile_cache_ttl", `300`}, {"max_storage_bytes_per_user", `0`}, {"max_datasets_per_user", `0`}}},
	{"map", [][2]string{{"basemaps", `[]`}, {"map_defaults", `{"center_lat": 20, "center_lng": 0, "zoom": 2}`}, {"enabled_plugins", `[]`}}},
	{"permissions", nil},
	{"appearance", nil},
}

// TestAdministrationOfAFreshServer: on a server nothing was changed on, Get All Settings answers
// the settings pages' tabs with exactly their keys and defaults, feature writes are refused until
// an admin switches editing on, Get Infrastructure and Validate Configuration report an empty set of
// identity providers, and uploads from a browser go through the API's own origin.
func TestAdministrationOfAFreshServer(t *testing.T) {
	s := startFresh(t, "TRUST_FORWARDED_HEADERS=true", "RATE_LIMIT_ENABLED=false")
	c, _ := NewContract(mustDoc(t), s.APIRoot)
	hc := c.Client()
	tok := loginAt(t, hc, s.APIRoot, "admin", AdminPassword)
	at := func(t *testing.T, method, path string, body any, headers ...string) reply {
		t.Helper()
		return callAt(t, hc, s.APIRoot, method, path, body, append(bearer(tok), headers...)...)
	}

	t.Run("settings pages", func(t *testing.T) {
		r := at(t, "GET", "/settings/all/", nil)
		wantStatus(t, "all settings", r, 200)
		var all struct {
			EnvOnly bool                        `json:"env_only"`
			Tabs    map[string][]map[string]any `json:"tabs"`
		}
		if err := json.Unmarshal(r.Body, &all); err != nil {
			t.Fatal(err)
		}
		if all.EnvOnly {
			t.Errorf("env_only: true")
		}
		for _, page := range settingsPages {
			items, ok := all.Tabs[page.tab]
			if !ok || items == nil {
				t.Errorf("tab %s is missing", page.tab)
				continue
			}
			var keys []string
			for _, it := range items {
				keys = append(keys, it["key"].(string))
			}
			var want []string
			for _, kv := range page.keys {
				want = append(want, kv[0])
			}
			if !slices.Equal(keys, want) {
				t.Errorf("tab %s has keys %v, want exactly %v", page.tab, keys, want)
				continue
			}
			for i, kv := range page.keys {
				it, def, source := items[i], kv[1], "default"
				if rest, ok := strings.CutPrefix(def, "env:"); ok {
					def, source = rest, "env_only"
				}
				var wantValue any
				_ = json.Unmarshal([]byte(def), &wantValue)
				got, _ := json.Marshal(it["value"])
				var gotValue any
				_ = json.Unmarshal(got, &gotValue)
				if !jsonEqual(gotValue, wantValue) || it["source"] != source || it["label"] == "" {
					t.Errorf("%s.%s: value %s source %v label %q, want %s from %s", page.tab, kv[0], got, it["source"], it["label"], def, source)
				}
			}
		}
		pages := map[string]bool{}
		for _, p := range settingsPages {
			pages[p.tab] = true
		}
		for tab, items := range all.Tabs {
			for _, it := range items {
				if key := it["key"].(string); !pages[tab] && !strings.Contains(key, ".") {
					t.Errorf("tab %s of the server's own: key %q is not a full setting name", tab, key)
				}
			}
		}
		if strings.Contains(string(r.Body), "mt-env-secret-value") {
			t.Errorf("a secret is in the settings: %s", r.Body)
		}
	})

	t.Run("feature editing is off until an admin switches it on", func(t *testing.T) {
		if f := callAt(t, hc, s.APIRoot, "GET", "/settings/feature-flags/", nil).JSON(t); f["enable_dataset_editing"] != false {
			t.Fatalf("feature flags: %v", f)
		}
		d := at(t, "POST", "/datasets/create/", map[string]any{"title": "Fresh", "columns": []map[string]any{{"name": "n", "type": "integer"}}})
		wantStatus(t, "create dataset", d, 200)
		features := "/datasets/" + d.JSON(t)["id"].(string) + "/features/"
		add := map[string]any{"geometry": point(1, 2), "properties": map[string]any{"n": 1}}
		wantStatus(t, "a feature write while editing is off", at(t, "POST", features, add), 403, "editing is disabled")
		wantStatus(t, "switch editing on", at(t, "PUT", "/settings/", map[string]any{"settings": map[string]any{"enable_dataset_editing": true}}), 200)
		if f := callAt(t, hc, s.APIRoot, "GET", "/settings/feature-flags/", nil).JSON(t); f["enable_dataset_editing"] != true {
			t.Fatalf("feature flags after switching on: %v", f)
		}
		wantStatus(t, "a feature write once editing is on", at(t, "POST", features, add), 201)
	})

	t.Run("no identity provider", func(t *testing.T) {
		infra := at(t, "GET", "/admin/infrastructure/", nil)
		wantStatus(t, "infrastructure", infra, 200)
		m := infra.JSON(t)
		if p, ok := m["oidc_providers"].(map[string]any); !ok || len(p) != 0 {
			t.Fatalf("oidc_providers without providers: %s", infra.Body)
		}
		if db := m["health"].(map[string]any)["database"].(map[string]any); db["status"] != "ok" {
			t.Fatalf("database health: %v", db)
		}
		v := at(t, "POST", "/config-ops/validate/", nil)
		wantStatus(t, "validate configuration without a body", v, 200)
		m = v.JSON(t)
		st, cache := m["storage"].(map[string]any), m["cache"].(map[string]any)
		if st["name"] != "local" || st["status"] != "ok" || cache["status"] != "ok" || len(m["oidc_providers"].(map[string]any)) != 0 {
			t.Fatalf("validation of the configuration in force: %s", v.Body)
		}
	})

	t.Run("uploads from a browser without S3", func(t *testing.T) {
		cfg := at(t, "GET", "/ingest/upload/config", nil).JSON(t)
		if cfg["presigned_uploads"] != false {
			t.Fatalf("presigned uploads offered without object storage: %v", cfg)
		}
		// A browser posts the file to /ingest/upload.
		if r := uploadAt(t, hc, s.APIRoot, tok, "browser.geojson", pointsGeoJSON(2)); r.Status != 201 {
			t.Fatalf("multipart upload: %d %s", r.Status, r.Body)
		}
		// Local presigned targets, where offered, are under the API's own root at the request's
		// public address: BASE_URL, or what a trusted proxy was asked for.
		for _, tc := range []struct {
			name    string
			headers []string
			base    string
		}{
			{"direct", nil, s.APIRoot},
			{"behind a proxy", []string{"X-Forwarded-Host", "maps.example.org", "X-Forwarded-Proto", "https", "X-Forwarded-Prefix", "/gis"},
				"https://maps.example.org/gis/api"},
		} {
			content := pointsGeoJSON(3)
			r := at(t, "POST", "/ingest/upload/presigned", map[string]any{"filename": "direct.geojson", "file_size": len(content)}, tc.headers...)
			wantStatus(t, "presign "+tc.name, r, 200)
			u := r.JSON(t)["urls"].([]any)[0].(string)
			if !strings.HasPrefix(u, tc.base+"/storage/uploads/") {
				t.Fatalf("%s: part URL %s is not under %s/", tc.name, u, tc.base)
			}
			// The proxy would forward the PUT to this server's /api path.
			local := s.APIRoot + strings.TrimPrefix(u, tc.base)
			if code, etag := putPart(t, local, content); code != 200 || etag == "" {
				t.Fatalf("%s: PUT to %s: %d", tc.name, local, code)
			}
			id := r.JSON(t)["job_id"].(string)
			wantStatus(t, "complete "+tc.name, at(t, "POST", "/ingest/upload/presigned/"+id+"/complete", map[string]any{}), 200)
		}
		if r, _ := http.NewRequest(http.MethodPut, strings.TrimSuffix(s.APIRoot, "/api")+"/storage/uploads/x/1", nil); r != nil {
			res, err := plain.Do(r)
			if err == nil {
				res.Body.Close()
				if res.StatusCode != 404 {
					t.Fatalf("parts are still taken outside /api: %d", res.StatusCode)
				}
			}
		}
	})
}

// jsonEqual compares decoded JSON values (numbers as float64).
func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// TestUploadConfigWithS3: with object storage configured, Upload Config offers presigned uploads
// and Validate Configuration probes the bucket; an unreachable one is reported as an error.
func TestUploadConfigWithS3(t *testing.T) {
	backend := s3mem.New()
	if err := backend.CreateBucket("meridian-uploads"); err != nil {
		t.Fatal(err)
	}
	fake := httptest.NewServer(gofakes3.New(backend).Server())
	defer fake.Close()
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close() // nothing listens there any more
	for _, tc := range []struct {
		name, endpoint, status string
	}{
		{"reachable bucket", strings.TrimPrefix(fake.URL, "http://"), "ok"},
		{"unreachable storage", strings.TrimPrefix(gone.URL, "http://"), "error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startFresh(t, "S3_ENDPOINT="+tc.endpoint, "S3_USE_SSL=false", "S3_BUCKET=meridian-uploads", "S3_ACCESS_KEY=test",
				"S3_SECRET_KEY=test-secret", "RATE_LIMIT_ENABLED=false")
			c, _ := NewContract(mustDoc(t), s.APIRoot)
			hc := c.Client()
			tok := loginAt(t, hc, s.APIRoot, "admin", AdminPassword)
			if cfg := callAt(t, hc, s.APIRoot, "GET", "/ingest/upload/config", nil, bearer(tok)...).JSON(t); cfg["presigned_uploads"] != true {
				t.Fatalf("upload config with S3: %v", cfg)
			}
			v := callAt(t, hc, s.APIRoot, "POST", "/config-ops/validate/", nil, bearer(tok)...)
			wantStatus(t, "validate", v, 200)
			if st := v.JSON(t)["storage"].(map[string]any); st["name"] != "s3" || st["status"] != tc.status {
				t.Fatalf("storage probe: %s", v.Body)
			}
			if infra := callAt(t, hc, s.APIRoot, "GET", "/admin/infrastructure/", nil, bearer(tok)...).JSON(t); infra["config"].(map[string]any)["storage_provider"] != "s3" {
				t.Fatalf("infrastructure: %v", infra)
			}
		})
	}
}

// TestIdentityProvidersProbed: Get Infrastructure and Validate Configuration report every enabled
// identity provider by slug, ok when its discovery document loads and error when it does not;
// Validate Configuration probes a document's providers instead when one is sent.
func TestIdentityProvidersProbed(t *testing.T) {
	a := admin(t)
	op := startOpenIDProvider(t)
	up, down := "up"+randomHex(2), "down"+randomHex(2)
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	for slug, issuer := range map[string]string{up: op.issuer, down: gone.URL} {
		p := createProvider(t, slug, issuer, "viewer")
		defer call(t, "DELETE", "/settings/oauth-providers/"+p["provider_id"].(string), nil, bearer(a.Access)...)
	}
	check := func(what string, providers map[string]any, want map[string]string) {
		t.Helper()
		for slug, status := range want {
			p, _ := providers[slug].(map[string]any)
			if p == nil || p["status"] != status || (status == "error") != (p["error"] != nil) {
				t.Errorf("%s: provider %s is %v, want %s", what, slug, p, status)
			}
		}
		for slug, p := range providers {
			if st := p.(map[string]any)["status"]; st != "ok" && st != "error" {
				t.Errorf("%s: provider %s has status %v", what, slug, st)
			}
		}
	}
	infra := call(t, "GET", "/admin/infrastructure/", nil, bearer(a.Access)...)
	wantStatus(t, "infrastructure", infra, 200)
	check("infrastructure", infra.JSON(t)["oidc_providers"].(map[string]any), map[string]string{up: "ok", down: "error"})
	v := call(t, "POST", "/config-ops/validate/", nil, bearer(a.Access)...)
	wantStatus(t, "validate", v, 200)
	check("validate", v.JSON(t)["oidc_providers"].(map[string]any), map[string]string{up: "ok", down: "error"})

	doc := map[string]any{"format_version": 1, "oauth_providers": []map[string]any{{"slug": "candidate", "display_name": "Candidate",
		"provider_type": "oidc", "client_id": "meridian", "discovery_url": op.issuer + "/.well-known/openid-configuration"}}}
	v = call(t, "POST", "/config-ops/validate/", doc, bearer(a.Access)...)
	wantStatus(t, "validate a document", v, 200)
	if got := v.JSON(t)["oidc_providers"].(map[string]any); len(got) != 1 || got["candidate"].(map[string]any)["status"] != "ok" {
		t.Fatalf("providers of a document: %s", v.Body)
	}
	wantStatus(t, "validate something else", call(t, "POST", "/config-ops/validate/", map[string]any{"format_version": 7}, bearer(a.Access)...), 422)
	wantStatus(t, "validate as a viewer", call(t, "POST", "/config-ops/validate/", nil, bearer(newUser(t, "viewer").Access)...), 403)
}

// TestSettingsPagesDriveTheServer: a value saved under a key of the settings pages is the one the
// server uses (read back by the operation that reads it) and shows as overridden; a value saved
// under the server's own name shows under the page's key; what the environment fixes is refused.
func TestSettingsPagesDriveTheServer(t *testing.T) {
	adm, viewer, editor := admin(t), newUser(t, "viewer"), newUser(t, "editor")
	items := "/collections/" + ogcDataset(t, editor, "public") + "/items?limit=100"
	put := func(settings map[string]any) reply {
		t.Helper()
		return call(t, "PUT", "/settings/", map[string]any{"settings": settings}, bearer(adm.Access)...)
	}
	tabs := make([]string, 0, len(settingsPages))
	for _, p := range settingsPages {
		tabs = append(tabs, p.tab)
	}
	t.Cleanup(func() {
		call(t, "POST", "/settings/reset/", map[string]any{"keys": tabs}, bearer(adm.Access)...)
		put(map[string]any{"enable_dataset_editing": true})
	})
	get := func(path string) map[string]any {
		t.Helper()
		r := call(t, "GET", path, nil, bearer(adm.Access)...)
		wantStatus(t, path, r, 200)
		var m map[string]any
		if err := json.Unmarshal(r.Body, &m); err != nil {
			var list []any // plugins, basemaps
			_ = json.Unmarshal(r.Body, &list)
			m = map[string]any{"list": list}
		}
		return m
	}
	cases := []struct {
		tab, key string
		value    any
		read     func() any // what the server uses now
		want     any
	}{
		{"general", "enable_dataset_editing", false, func() any { return get("/settings/feature-flags/")["enable_dataset_editing"] }, false},
		{"general", "require_metadata_for_publish", true, func() any { return get("/settings/feature-flags/")["require_metadata_for_publish"] }, true},
		{"general", "banner_enabled", true, func() any { return get("/auth/config/")["banner_enabled"] }, true},
		{"general", "banner_text", "Maintenance tonight", func() any { return get("/auth/config/")["banner_text"] }, "Maintenance tonight"},
		{"general", "banner_color", "info", func() any { return get("/auth/config/")["banner_color"] }, "info"},
		{"general", "privacy_url", "https://example.org/privacy", func() any { return get("/settings/branding/")["privacy_url"] }, "https://example.org/privacy"},
		{"general", "log_level", "DEBUG", nil, nil},
		{"auth", "registration_enabled", true, func() any {
			c := get("/auth/config/")
			return []any{c["registration_enabled"], c["registration_mode"]}
		}, []any{true, "approval"}},
		{"auth", "landing_first", true, func() any { return get("/auth/config/")["landing_first"] }, true},
		{"auth", "password_login_enabled", false, func() any { return get("/auth/config/")["password_login_enabled"] }, false},
		{"ai", "llm_provider", "openai", func() any { return get("/admin/ai-status/")["provider"] }, "openai"},
		{"ai", "llm_model", "gpt-test", func() any { return get("/admin/ai-status/")["model"] }, "gpt-test"},
		{"storage", "upload_max_size_mb", 1, func() any { return get("/ingest/upload/config")["max_file_size_bytes"] }, float64(1 << 20)},
		{"storage", "upload_allowed_extensions", ".csv,.gpkg", func() any { return get("/ingest/upload/config")["allowed_extensions"] }, ".gpkg,.csv"},
		{"storage", "max_datasets_per_user", 3, func() any { return get("/auth/me/usage/")["count_cap"] }, float64(3)},
		{"map", "map_defaults", map[string]any{"center_lat": 10.0, "center_lng": 5.0, "zoom": 4.0}, func() any {
			d := get("/settings/map-defaults/")
			return []any{d["center_lat"], d["center_lng"], d["zoom"]}
		}, []any{10.0, 5.0, 4.0}},
		{"map", "enabled_plugins", []any{"measure"}, func() any { return get("/settings/enabled-plugins/")["list"] }, []any{"measure"}},
	}
	for _, tc := range cases {
		t.Run(tc.key, func(t *testing.T) {
			r := put(map[string]any{tc.key: tc.value})
			wantStatus(t, "save "+tc.key, r, 200)
			if it := settingOf(t, r.JSON(t), tc.tab, tc.key); !jsonEqual(it["value"], tc.value) || it["source"] != "overridden" {
				t.Fatalf("after saving: %v", it)
			}
			if tc.read != nil {
				if got := tc.read(); !jsonEqual(got, tc.want) {
					t.Fatalf("the server uses %v, want %v", got, tc.want)
				}
			}
		})
	}

	// One value each: saved under the server's own name, it shows under the page's key.
	r := put(map[string]any{"feature_flags.enable_dataset_editing": true, "map_defaults": map[string]any{"zoom": 6}})
	wantStatus(t, "save by the server's own names", r, 200)
	if it := settingOf(t, r.JSON(t), "general", "enable_dataset_editing"); it["value"] != true {
		t.Fatalf("enable_dataset_editing after saving feature_flags.enable_dataset_editing: %v", it)
	}
	if d := get("/settings/map-defaults/"); d["zoom"] != 6.0 || d["center_lat"] != 10.0 {
		t.Fatalf("a partial map_defaults: %v", d)
	}

	// Values the environment fixes are shown and refused; so is an unknown key.
	for _, key := range []string{"access_token_expire_minutes", "refresh_token_expire_days", "login_rate_limit", "global_rate_limit", "cors_allowed_origins"} {
		wantStatus(t, "write "+key, put(map[string]any{key: 1}), 409, "environment")
	}
	wantStatus(t, "an unknown key", put(map[string]any{"no_such_key": 1}), 422)
	wantStatus(t, "a wrong type", put(map[string]any{"registration_enabled": "yes"}), 422)

	// Enforced at once: password sign-in off refuses everyone but admins.
	wantStatus(t, "a viewer signs in with a password while it is off", call(t, "POST", "/auth/login",
		url.Values{"username": {viewer.Username}, "password": {viewer.Password}}), 403, "password sign-in")
	login(t, "admin", AdminPassword)
	wantStatus(t, "password sign-in on", put(map[string]any{"password_login_enabled": true}), 200)
	login(t, viewer.Username, viewer.Password)

	// allowed_email_domains limits self-registration (registration is on from the table above).
	wantStatus(t, "domains", put(map[string]any{"allowed_email_domains": []any{"example.net"}}), 200)
	name := "dom" + randomHex(3)
	wantStatus(t, "register at another domain", call(t, "POST", "/auth/register/", map[string]any{"username": name,
		"email": name + "@example.org", "password": "Good-password-1"}), 422, "example.net")
	wantStatus(t, "register at the domain", call(t, "POST", "/auth/register/", map[string]any{"username": name,
		"email": name + "@example.net", "password": "Good-password-1"}), 201)

	// Upload limits: the type and the size (1 MB, from the table above).
	wantStatus(t, "a type the setting leaves out", upload(t, editor, "places.geojson", pointsGeoJSON(2)), 422, "not accepted")
	wantStatus(t, "a file over upload_max_size_mb", call(t, "POST", "/ingest/upload/presigned",
		map[string]any{"filename": "big.csv", "file_size": 2 << 20}, bearer(editor.Access)...), 413)
	wantStatus(t, "at most two datasets", put(map[string]any{"upload_allowed_extensions": nil, "max_datasets_per_user": 2}), 200)
	createDataset(t, editor, "private", false) // the editor's second, beside the OGC one
	if cfg := get("/ingest/upload/config"); cfg["remaining_dataset_quota"] != nil {
		t.Fatalf("an admin is held to the dataset quota: %v", cfg)
	}
	if cfg := call(t, "GET", "/ingest/upload/config", nil, bearer(editor.Access)...).JSON(t); cfg["remaining_dataset_quota"] != 0.0 {
		t.Fatalf("upload config of an editor at the quota: %v", cfg)
	}
	wantStatus(t, "an upload over the dataset quota", upload(t, editor, "places.geojson", pointsGeoJSON(2)), 422, "quota")

	// The OGC items page follows ogc_items_max_page_size.
	wantStatus(t, "page size", put(map[string]any{"ogc_items_max_page_size": 3}), 200)
	if ids, _, _ := features(t, call(t, "GET", items, nil, bearer(editor.Access)...)); len(ids) != 3 {
		t.Fatalf("limit=100 over a page size of 3: %d features", len(ids))
	}
	wantStatus(t, "page size back", put(map[string]any{"ogc_items_max_page_size": nil}), 200)
	if ids, _, _ := features(t, call(t, "GET", items, nil, bearer(editor.Access)...)); len(ids) <= 3 {
		t.Fatalf("after the reset: %d features", len(ids))
	}
}

// TestRetryAnyFailedJob: Retry Job re-queues a failed job whose staging file exists, also when the
// same file failed before; can_retry says exactly that, and turns false once the file is gone.
func TestRetryAnyFailedJob(t *testing.T) {
	u := newUser(t, "editor")
	// A collection without features passes the commit's checks and fails in the import.
	job := importFile(t, u, "empty.geojson", []byte(`{"type":"FeatureCollection","features":[]}`), nil)
	id := job["id"].(string)
	failed := func(j map[string]any) bool { return j["status"] == "failed" }
	for round := 1; round <= 2; round++ {
		if !failed(job) || job["can_retry"] != true {
			t.Fatalf("round %d: a failed job with its staging file: %v", round, job)
		}
		r := call(t, "POST", "/jobs/"+id+"/retry", nil, bearer(u.Access)...)
		wantStatus(t, "retry", r, 200)
		if r.JSON(t)["status"] != "pending" || r.JSON(t)["job_id"] != id {
			t.Fatalf("round %d: retry answered %s", round, r.Body)
		}
		job = waitJob(t, httpc, server.APIRoot, u.Access, id, time.Minute, failed)
	}
	if err := os.RemoveAll(filepath.Join(server.dataDir, "staging", id)); err != nil {
		t.Fatal(err)
	}
	if j := call(t, "GET", "/jobs/"+id, nil, bearer(u.Access)...).JSON(t); j["can_retry"] != false || j["status"] != "failed" {
		t.Fatalf("without its staging file: %v", j)
	}
	wantStatus(t, "retry without the staging file", call(t, "POST", "/jobs/"+id+"/retry", nil, bearer(u.Access)...), 409, "staging file")
}

// TestErrorDetailsClientsTranslate: the details clients map to translated messages, exactly.
func TestErrorDetailsClientsTranslate(t *testing.T) {
	u := newUser(t, "editor")
	allowRegistration(t)
	pending := "wait" + randomHex(3)
	wantStatus(t, "register", call(t, "POST", "/auth/register/", map[string]any{"username": pending, "email": pending + "@example.org",
		"password": "Good-password-1"}), 201)
	job := upload(t, u, "twice.geojson", pointsGeoJSON(2)).JSON(t)["job_id"].(string)
	wantStatus(t, "first commit", call(t, "POST", "/ingest/commit/"+job, map[string]any{}, bearer(u.Access)...), 202)
	for _, tc := range []struct {
		name   string
		r      reply
		status int
		detail string
		exact  bool
	}{
		{"wrong password", call(t, "POST", "/auth/login", url.Values{"username": {u.Username}, "password": {"Wrong-password-1"}}), 401,
			"Incorrect username or password", true},
		{"unknown user", call(t, "POST", "/auth/login", url.Values{"username": {"nobody" + randomHex(3)}, "password": {"Wrong-password-1"}}), 401,
			"Incorrect username or password", true},
		{"pending account", call(t, "POST", "/auth/login", url.Values{"username": {pending}, "password": {"Good-password-1"}}), 403,
			"Your account is awaiting approval", true},
		{"second commit", call(t, "POST", "/ingest/commit/"+job, map[string]any{}, bearer(u.Access)...), 409, "already processed", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := problemDetailOf(t, tc.r)
			if tc.r.Status != tc.status || (tc.exact && d != tc.detail) || !strings.Contains(d, tc.detail) {
				t.Fatalf("%d %q, want %d %q", tc.r.Status, d, tc.status, tc.detail)
			}
		})
	}
}

// TestAuditActionsOfAdministration: each write of the administration pages leaves its audit record
// under the name the clients read, with its actor and resource.
func TestAuditActionsOfAdministration(t *testing.T) {
	a := admin(t)
	allowRegistration(t)
	type want struct{ action, actor, resource string }
	var wants []want
	expect := func(action, actor, resource string) { wants = append(wants, want{action, actor, resource}) }

	// Sign-in, password, sign-out.
	u := newUser(t, "viewer")
	expect("user.create", a.ID, u.ID)
	expect("user.login.success", u.ID, u.ID)
	call(t, "POST", "/auth/login", url.Values{"username": {u.Username}, "password": {"Wrong-password-1"}})
	expect("user.login.failure", u.ID, u.ID)
	wantStatus(t, "change password", call(t, "POST", "/auth/change-password/", map[string]any{"current_password": u.Password,
		"new_password": "Another-pass-123"}, bearer(u.Access)...), 204)
	expect("user.change_password", u.ID, u.ID)
	u2 := login(t, u.Username, "Another-pass-123")
	wantStatus(t, "logout", call(t, "POST", "/auth/logout/", map[string]any{"refresh_token": u2.Refresh}, bearer(u2.Access)...), 204)
	expect("user.logout", u.ID, u.ID)

	// Keys.
	r := call(t, "POST", "/admin/api-keys/", map[string]any{"user_id": u.ID, "name": "audited"}, bearer(a.Access)...)
	wantStatus(t, "create key", r, 201)
	key := r.JSON(t)["id"].(string)
	expect("api_key.create", a.ID, key)
	wantStatus(t, "revoke key", call(t, "DELETE", "/admin/api-keys/"+key, nil, bearer(a.Access)...), 204)
	expect("api_key.revoke", a.ID, key)

	// Accounts.
	wantStatus(t, "update user", call(t, "PATCH", "/admin/users/"+u.ID, map[string]any{"role": "editor"}, bearer(a.Access)...), 200)
	expect("user.update", a.ID, u.ID)
	wantStatus(t, "deactivate", call(t, "POST", "/admin/users/"+u.ID+"/deactivate/", nil, bearer(a.Access)...), 200)
	expect("user.deactivate", a.ID, u.ID)
	gone := newUser(t, "viewer") // deleting a user clears the actor of its own records: not u
	wantStatus(t, "delete", call(t, "DELETE", "/admin/users/"+gone.ID, nil, bearer(a.Access)...), 204)
	expect("user.delete", a.ID, gone.ID)
	for _, verb := range []string{"approve", "reject"} {
		name := verb + randomHex(3)
		wantStatus(t, "register", register(t, name, "Good-password-1"), 201)
		id := call(t, "GET", "/admin/users/?status=pending&q="+name, nil, bearer(a.Access)...).JSON(t)["users"].([]any)[0].(map[string]any)["id"].(string)
		r := call(t, "POST", "/admin/users/"+id+"/"+verb+"/", nil, bearer(a.Access)...)
		if r.Status != 200 && r.Status != 204 {
			t.Fatalf("%s: %d %s", verb, r.Status, r.Body)
		}
		expect("user."+verb, a.ID, id)
	}

	// Identity providers.
	p := createProvider(t, "audit"+randomHex(2), "https://idp.example.org", "viewer")
	pid := p["provider_id"].(string)
	expect("oauth_provider.create", a.ID, pid)
	wantStatus(t, "update provider", call(t, "PATCH", "/settings/oauth-providers/"+pid, map[string]any{"enabled": false}, bearer(a.Access)...), 200)
	expect("oauth_provider.update", a.ID, pid)
	wantStatus(t, "delete provider", call(t, "DELETE", "/settings/oauth-providers/"+pid, nil, bearer(a.Access)...), 204)
	expect("oauth_provider.delete", a.ID, pid)

	// A job retried, and the audit download.
	editor := newUser(t, "editor")
	job := importFile(t, editor, "empty.geojson", []byte(`{"type":"FeatureCollection","features":[]}`), nil)["id"].(string)
	wantStatus(t, "retry", call(t, "POST", "/jobs/"+job+"/retry", nil, bearer(editor.Access)...), 200)
	expect("job.retry", editor.ID, job)
	wantStatus(t, "download", call(t, "GET", "/admin/audit-logs/export/csv?action=user.*", nil, bearer(a.Access)...), 200)
	expect("audit.export", a.ID, "csv")

	for _, w := range wants {
		q := url.Values{"action": {w.action}, "resource_id": {w.resource}, "limit": {"200"}}
		r := call(t, "GET", "/admin/audit-logs/?"+q.Encode(), nil, bearer(a.Access)...)
		wantStatus(t, "list "+w.action, r, 200)
		found := false
		for _, it := range r.JSON(t)["logs"].([]any) {
			it := it.(map[string]any)
			found = found || (it["action"] == w.action && it["actor_id"] == w.actor && it["resource_id"] == w.resource)
		}
		if !found {
			t.Errorf("no %s record by %s on %s: %s", w.action, w.actor, w.resource, r.Body)
		}
	}
}
