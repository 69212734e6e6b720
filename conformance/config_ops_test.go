package conformance

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// as checks a reply's status and decodes its body.
func as(t *testing.T, r reply, want int) map[string]any {
	t.Helper()
	if r.Status != want {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if len(r.Body) == 0 {
		return nil
	}
	return r.JSON(t)
}

// comparable drops what differs between deployments by nature: the time of the export and the
// collections' ids (each deployment makes its own).
func comparable(doc map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range doc {
		if k != "exported_at" {
			out[k] = v
		}
	}
	var cols []any
	for _, c := range doc["collections"].([]any) {
		m := map[string]any{}
		for k, v := range c.(map[string]any) {
			if k != "id" {
				m[k] = v
			}
		}
		cols = append(cols, m)
	}
	out["collections"] = cols
	return out
}

// Configuration as code: export from one deployment, dry run and import into an empty one, and
// its export is the same document; an import is all or nothing; a preview token pins the plan.
func TestConfigurationRoundTrip(t *testing.T) {
	a, b := startBounded(t), startBounded(t)
	as(t, a.call(t, "PUT", "/settings/", a.admin, map[string]any{"settings": map[string]any{"branding": map[string]any{"site_name": "Atlas of A", "show_badge": false},
		"tile_config": map[string]any{"max_concurrent": 7}}}), 200)
	as(t, a.call(t, "POST", "/settings/oauth-providers/", a.admin, map[string]any{"slug": "corp", "display_name": "Corp", "provider_type": "oidc", "client_id": "cid",
		"client_secret": "s3cret", "discovery_url": "https://id.example.org/.well-known/openid-configuration"}), 201)
	as(t, a.call(t, "POST", "/catalog/collections/", a.admin, map[string]any{"name": "Base maps", "description": "Reference layers"}), 201)

	doc := as(t, a.call(t, "GET", "/config-ops/export/", a.admin, nil), 200)
	raw, _ := json.Marshal(doc)
	if json.Valid(raw) && (len(doc["oauth_providers"].([]any)) != 1 || strings.Contains(string(raw), "s3cret") || doc["format_version"] != 1.0) {
		t.Fatalf("export: %s", raw)
	}
	// The secret is the operator's to give: documents never carry it.
	doc["oauth_providers"].([]any)[0].(map[string]any)["client_secret"] = "s3cret"

	plan := as(t, b.call(t, "POST", "/config-ops/dry-run/", b.admin, doc), 200)
	if plan["settings"].(map[string]any)["branding.site_name"] == nil || plan["oauth_providers"].(map[string]any)["corp"] != "create" ||
		plan["collections"].(map[string]any)["Base maps"] != "create" {
		t.Fatalf("dry run: %v", plan)
	}
	if again := as(t, b.call(t, "GET", "/config-ops/export/", b.admin, nil), 200); again["settings"].(map[string]any)["branding"].(map[string]any)["site_name"] == "Atlas of A" {
		t.Fatal("the dry run wrote")
	}
	r := callAt(t, b.hc, b.s.APIRoot, "POST", "/config-ops/import/", doc, append(bearer(b.admin), "X-Config-Preview-Token", plan["preview_token"].(string))...)
	res := r.JSON(t)
	if r.Status != 200 || res["oauth_created"] != 1.0 || res["collections_created"] != 1.0 || res["settings_applied"].(float64) < 3 {
		t.Fatalf("import: %d %s", r.Status, r.Body)
	}
	if got, want := comparable(as(t, b.call(t, "GET", "/config-ops/export/", b.admin, nil), 200)), comparable(as(t, a.call(t, "GET", "/config-ops/export/", a.admin, nil), 200)); !reflect.DeepEqual(got, want) {
		t.Fatalf("the round trip differs:\n%v\n%v", got, want)
	}
	// Importing the same document again changes nothing.
	if res := as(t, b.call(t, "POST", "/config-ops/import/", b.admin, doc), 200); res["settings_applied"] != 0.0 || res["oauth_created"] != 0.0 || res["collections_created"] != 0.0 {
		t.Fatalf("a second import: %v", res)
	}

	t.Run("all or nothing", func(t *testing.T) {
		bad := map[string]any{"settings": map[string]any{"branding": map[string]any{"site_name": "Half written"}},
			"oauth_providers": []any{map[string]any{"slug": "new", "display_name": "New", "provider_type": "oidc", "client_id": "x"}}} // no secret
		as(t, b.call(t, "POST", "/config-ops/import/", b.admin, bad), 422)
		if name := as(t, b.call(t, "GET", "/config-ops/export/", b.admin, nil), 200)["settings"].(map[string]any)["branding"].(map[string]any)["site_name"]; name != "Atlas of A" {
			t.Fatalf("a refused import wrote a setting: %v", name)
		}
	})
	t.Run("a preview token of another state", func(t *testing.T) {
		change := map[string]any{"settings": map[string]any{"branding": map[string]any{"site_name": "Planned"}}}
		tok := as(t, b.call(t, "POST", "/config-ops/dry-run/", b.admin, change), 200)["preview_token"].(string)
		as(t, b.call(t, "PUT", "/settings/", b.admin, map[string]any{"settings": map[string]any{"branding": map[string]any{"site_name": "Changed meanwhile"}}}), 200)
		if r := callAt(t, b.hc, b.s.APIRoot, "POST", "/config-ops/import/", change, append(bearer(b.admin), "X-Config-Preview-Token", tok)...); r.Status != 409 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	})
	t.Run("replace deletes what the document leaves out", func(t *testing.T) {
		as(t, b.call(t, "POST", "/catalog/collections/", b.admin, map[string]any{"name": "Only on B"}), 201)
		plan := as(t, b.call(t, "POST", "/config-ops/dry-run/?mode=replace&sections=collections", b.admin, doc), 200)
		if plan["collections"].(map[string]any)["Only on B"] != "delete" {
			t.Fatalf("%v", plan)
		}
		if res := as(t, b.call(t, "POST", "/config-ops/import/?mode=replace&sections=collections", b.admin, doc), 200); res["collections_deleted"] != 1.0 {
			t.Fatalf("%v", res)
		}
	})
	t.Run("unknown members are skipped with a warning", func(t *testing.T) {
		withMember := map[string]any{"collections": []any{map[string]any{"name": "Base maps", "dataset_ids": []any{"6a0f9a8e-2c1b-4e55-9d1e-3f6b8c7a5d42"}}}}
		if res := as(t, b.call(t, "POST", "/config-ops/import/?sections=collections", b.admin, withMember), 200); len(res["warnings"].([]any)) != 1 {
			t.Fatalf("%v", res)
		}
	})
	t.Run("admins only", func(t *testing.T) {
		if r := b.call(t, "GET", "/config-ops/export/", b.user(t, "editor"), nil); r.Status != 403 {
			t.Fatalf("%d", r.Status)
		}
	})
}
