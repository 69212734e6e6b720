package conformance

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// Maps tag: maps, layers, history, access, duplicates and share links.

func mapLayers(t *testing.T, m map[string]any) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range m["layers"].([]any) {
		out = append(out, l.(map[string]any))
	}
	return out
}

func TestMapLifecycle(t *testing.T) {
	owner, viewer := newUser(t, "editor"), newUser(t, "viewer")
	public, private := ogcDataset(t, owner, "public"), ogcDataset(t, owner, "private")
	stranger := ogcDataset(t, newUser(t, "editor"), "private")

	wantStatus(t, "anonymous create", call(t, "POST", "/maps/", map[string]any{"name": "x"}), 401)
	r := call(t, "POST", "/maps/", map[string]any{"name": "Rivers", "notes": "draft"}, bearer(owner.Access)...)
	wantStatus(t, "create", r, 201)
	m := r.JSON(t)
	id := m["id"].(string)
	if m["visibility"] != "private" || m["zoom"] != nil || m["basemap_style"] != "carto-positron" || m["layer_count"] != float64(0) ||
		m["created_by"] != owner.ID || m["notes"] != "draft" {
		t.Fatalf("created map: %s", r.Body)
	}
	base := "/maps/" + id

	// Layers: only of datasets the caller may read.
	wantStatus(t, "layer of a stranger's private dataset", call(t, "POST", base+"/layers", map[string]any{"dataset_id": stranger}, bearer(owner.Access)...), 404)
	r = call(t, "POST", base+"/layers", map[string]any{"dataset_id": public, "display_name": "Open places", "opacity": 0.5}, bearer(owner.Access)...)
	wantStatus(t, "add layer", r, 201)
	l := r.JSON(t)
	if l["dataset_id"] != public || l["opacity"] != 0.5 || !strings.HasPrefix(l["dataset_table_name"].(string), "ds_") ||
		!strings.HasPrefix(l["dataset_name"].(string), "Places ") || l["tile_version"] == nil || l["dataset_visibility"] != "public" {
		t.Fatalf("added layer: %s", r.Body)
	}
	long := strings.Repeat("x", 501)
	wantStatus(t, "popup expression too long", call(t, "PATCH", base+"/layers", map[string]any{"updated": []map[string]any{
		{"id": l["id"], "popup_config": map[string]any{"enabled": true, "expression": long}}}}, bearer(owner.Access)...), 422)
	r = call(t, "PATCH", base+"/layers", map[string]any{
		"added":   []map[string]any{{"dataset_id": private, "display_name": "Closed places"}},
		"updated": []map[string]any{{"id": l["id"], "visible": false}}}, bearer(owner.Access)...)
	wantStatus(t, "patch layers", r, 200)
	layers := mapLayers(t, r.JSON(t))
	if len(layers) != 2 || layers[0]["visible"] != false || layers[1]["display_name"] != "Closed places" {
		t.Fatalf("after patch: %s", r.Body)
	}
	r = call(t, "PATCH", base+"/layers", map[string]any{"order": []any{layers[1]["id"], layers[0]["id"]}}, bearer(owner.Access)...)
	if layers := mapLayers(t, r.JSON(t)); layers[0]["display_name"] != "Closed places" || layers[0]["sort_order"] != float64(0) {
		t.Fatalf("after reorder: %s", r.Body)
	}

	// Private: the viewer does not see it. Internal: they do, without the private layer or notes.
	wantStatus(t, "viewer, private map", call(t, "GET", base, nil, bearer(viewer.Access)...), 404)
	saved := call(t, "GET", base, nil, bearer(owner.Access)...).JSON(t)
	put := map[string]any{"name": "Rivers", "visibility": "internal", "notes": "draft", "expected_updated_at": saved["updated_at"]}
	r = call(t, "PUT", base, put, bearer(owner.Access)...)
	wantStatus(t, "update", r, 200)
	wantStatus(t, "update with a stale expected_updated_at", call(t, "PUT", base, put, bearer(owner.Access)...), 409)
	r = call(t, "GET", base, nil, bearer(viewer.Access)...)
	wantStatus(t, "viewer, internal map", r, 200)
	v := r.JSON(t)
	if v["layer_count"] != float64(1) || v["excluded_layer_count"] != float64(1) || v["notes"] != nil || mapLayers(t, v)[0]["dataset_id"] != public {
		t.Fatalf("the viewer's map: %s", r.Body)
	}
	wantStatus(t, "viewer update", call(t, "PUT", base, map[string]any{"name": "mine now"}, bearer(viewer.Access)...), 403)
	wantStatus(t, "viewer history", call(t, "GET", base+"/history", nil, bearer(viewer.Access)...), 403)

	acc := call(t, "GET", base+"/access/", nil, bearer(viewer.Access)...).JSON(t)
	own := call(t, "GET", base+"/access/", nil, bearer(owner.Access)...).JSON(t)
	if acc["can_view"] != true || acc["can_edit"] != false || acc["reason"] != "internal_map" || own["can_edit"] != true || own["reason"] != "owner" {
		t.Fatalf("access: viewer %v, owner %v", acc, own)
	}
	vc := call(t, "GET", base+"/visibility-check/?target_visibility=public", nil, bearer(owner.Access)...).JSON(t)
	if vc["has_non_public"] != true || len(vc["non_public_datasets"].([]any)) != 1 {
		t.Fatalf("visibility check: %v", vc)
	}

	// A duplicate by the viewer: their own private map, without the layer they cannot read.
	r = call(t, "POST", base+"/duplicate/", nil, bearer(viewer.Access)...)
	wantStatus(t, "duplicate", r, 200)
	dup := r.JSON(t)
	if dup["created_by"] != viewer.ID || dup["visibility"] != "private" || dup["forked_from_id"] != id || dup["forked_from_name"] != "Rivers" ||
		dup["layer_count"] != float64(1) || dup["excluded_layer_count"] != float64(1) || dup["notes"] != nil {
		t.Fatalf("duplicate: %s", r.Body)
	}

	// Lists.
	list := call(t, "GET", "/maps/?mine=true&q=rivers", nil, bearer(owner.Access)...).JSON(t)
	if list["total"] != float64(1) || list["maps"].([]any)[0].(map[string]any)["layer_count"] != float64(2) {
		t.Fatalf("owner's maps: %v", list)
	}
	dm := call(t, "GET", "/datasets/"+private+"/maps/", nil, bearer(owner.Access)...).JSON(t)
	if dm["total"] != float64(1) {
		t.Fatalf("maps of the private dataset: %v", dm)
	}
	wantStatus(t, "maps of a dataset the viewer cannot read", call(t, "GET", "/datasets/"+private+"/maps/", nil, bearer(viewer.Access)...), 404)

	// Removing layers; deleting a dataset takes its layer along and says so in the history.
	missing := uuid.NewString()
	r = call(t, "POST", base+"/layers/bulk-delete", map[string]any{"layer_ids": []any{layers[0]["id"], missing}}, bearer(owner.Access)...)
	if b := r.JSON(t); len(b["deleted"].([]any)) != 1 || len(b["failed"].([]any)) != 1 {
		t.Fatalf("bulk delete: %s", r.Body)
	}
	wantStatus(t, "remove a missing layer", call(t, "DELETE", base+"/layers/"+missing, nil, bearer(owner.Access)...), 404)
	wantStatus(t, "delete the private dataset", call(t, "DELETE", "/datasets/"+private, nil, bearer(owner.Access)...), 204)
	m = call(t, "GET", base, nil, bearer(owner.Access)...).JSON(t)
	if m["layer_count"] != float64(0) {
		t.Fatalf("layers after their datasets went: %v", m["layers"])
	}
	h := call(t, "GET", base+"/history", nil, bearer(owner.Access)...).JSON(t)
	events := h["events"].([]any)
	if first := events[0].(map[string]any); first["action"] != "layer_removed" || !strings.Contains(first["summary"].(string), "dataset was deleted") {
		t.Fatalf("history after the dataset went: %v", events[0])
	}
	if last := events[len(events)-1].(map[string]any); last["action"] != "map_created" || last["actor_username"] != owner.Username {
		t.Fatalf("first history entry: %v", last)
	}

	wantStatus(t, "viewer deletes", call(t, "DELETE", base, nil, bearer(viewer.Access)...), 403)
	wantStatus(t, "delete", call(t, "DELETE", base, nil, bearer(owner.Access)...), 204)
	wantStatus(t, "deleted map", call(t, "GET", base, nil, bearer(owner.Access)...), 404)

	d := call(t, "GET", "/settings/map-defaults/", nil).JSON(t)
	if d["zoom"] != float64(2) || d["projection"] != "mercator" {
		t.Fatalf("map defaults: %v", d)
	}
}

func TestMapShareLinks(t *testing.T) {
	owner, viewer, adm := newUser(t, "editor"), newUser(t, "viewer"), admin(t)
	public := ogcDataset(t, owner, "public")
	m := call(t, "POST", "/maps/", map[string]any{"name": "Shared " + randomHex(3)}, bearer(owner.Access)...).JSON(t)
	base := "/maps/" + m["id"].(string)
	wantStatus(t, "add layer", call(t, "POST", base+"/layers", map[string]any{"dataset_id": public}, bearer(owner.Access)...), 201)

	// No link: 200 null. A map that is not public is not shared, in the words clients translate.
	if r := call(t, "GET", base+"/share/", nil, bearer(owner.Access)...); r.Status != 200 || strings.TrimSpace(string(r.Body)) != "null" {
		t.Fatalf("no link yet: %d %q", r.Status, r.Body)
	}
	r := call(t, "POST", base+"/share/", map[string]any{"expires_in_days": 7}, bearer(owner.Access)...)
	if r.Status != 400 || problemDetailOf(t, r) != "Map must be public before sharing" {
		t.Fatalf("share a private map: %d %s", r.Status, r.Body)
	}
	wantStatus(t, "make public", call(t, "PUT", base, map[string]any{"visibility": "public"}, bearer(owner.Access)...), 200)
	wantStatus(t, "both expiries", call(t, "POST", base+"/share/", map[string]any{"expires_in_days": 7,
		"expires_at": time.Now().Add(time.Hour).Format(time.RFC3339)}, bearer(owner.Access)...), 422)
	wantStatus(t, "viewer shares another's map", call(t, "POST", base+"/share/", map[string]any{}, bearer(viewer.Access)...), 403)
	r = call(t, "POST", base+"/share/", map[string]any{"expires_in_days": 7}, bearer(owner.Access)...)
	wantStatus(t, "share", r, 200)
	sh := r.JSON(t)
	token := sh["token"].(string)
	wantURL := strings.TrimSuffix(server.APIRoot, "/api") + "/m/" + token
	if len(token) != 43 || sh["share_url"] != wantURL || sh["is_active"] != true {
		t.Fatalf("share: %s", r.Body)
	}
	// Read again: a hint of the token, never the token; the same link.
	if got := call(t, "GET", base+"/share/", nil, bearer(owner.Access)...).JSON(t); got["token"] != token[:4]+"…"+token[39:] ||
		got["share_url"] != wantURL || got["is_active"] != true {
		t.Fatalf("get share: %v", got)
	}
	wantStatus(t, "viewer reads the link", call(t, "GET", base+"/share/", nil, bearer(viewer.Access)...), 403)

	// Anyone with the link sees the map and its layer, whose tiles its template opens.
	r = call(t, "GET", "/maps/shared/"+url.PathEscape(token), nil)
	wantStatus(t, "shared map", r, 200)
	shared := r.JSON(t)
	layers := mapLayers(t, shared)
	if len(layers) != 1 || shared["has_non_public_layers"] != false || shared["zoom"] != float64(2) {
		t.Fatalf("shared map (a map without a view shows the map defaults): %s", r.Body)
	}
	tile := strings.NewReplacer("{z}", "0", "{x}", "0", "{y}", "0").Replace(layers[0]["tile_url"].(string))
	if _, l := getTile(t, server.APIRoot, strings.TrimPrefix(tile, server.APIRoot), 200); len(l[0].Features) != 30 {
		t.Fatalf("tile of the shared layer: %d features", len(l[0].Features))
	}
	wantStatus(t, "unknown link", call(t, "GET", "/maps/shared/"+strings.Repeat("A", 43), nil), 404)

	// Admins list and revoke links; a revoked link is gone (410) whatever the credential.
	wantStatus(t, "viewer lists links", call(t, "GET", "/admin/share-tokens/", nil, bearer(viewer.Access)...), 403)
	all := call(t, "GET", "/admin/share-tokens/?map_id="+m["id"].(string), nil, bearer(adm.Access)...).JSON(t)
	if all["total"] != float64(1) || all["tokens"].([]any)[0].(map[string]any)["token"] != token {
		t.Fatalf("admin list: %v", all)
	}
	upd := call(t, "PATCH", base+"/share/", map[string]any{"expires_at": nil}, bearer(owner.Access)...).JSON(t)
	if upd["expires_at"] != nil || upd["is_active"] != true || upd["token"] == token {
		t.Fatalf("update expiry: %v", upd)
	}
	wantStatus(t, "revoke", call(t, "DELETE", base+"/share/", nil, bearer(owner.Access)...), 204)
	for _, h := range [][]string{nil, bearer(owner.Access), bearer("dead")} {
		wantStatus(t, fmt.Sprintf("revoked link with %v", h), call(t, "GET", "/maps/shared/"+token, nil, h...), 410)
	}
	if r := call(t, "GET", base+"/share/", nil, bearer(owner.Access)...); strings.TrimSpace(string(r.Body)) != "null" {
		t.Fatalf("share after revoking: %d %s", r.Status, r.Body)
	}
	again := call(t, "POST", base+"/share/", nil, bearer(owner.Access)...).JSON(t)
	id := call(t, "GET", "/admin/share-tokens/?map_id="+m["id"].(string)+"&is_active=true", nil, bearer(adm.Access)...).JSON(t)["tokens"].([]any)[0].(map[string]any)["id"].(string)
	wantStatus(t, "admin revoke", call(t, "DELETE", "/admin/share-tokens/"+id, nil, bearer(adm.Access)...), 204)
	wantStatus(t, "link revoked by an admin", call(t, "GET", "/maps/shared/"+again["token"].(string), nil), 410)
}

func TestEmbedTokens(t *testing.T) {
	owner, viewer, adm := newUser(t, "editor"), newUser(t, "viewer"), admin(t)
	private, later := ogcDataset(t, owner, "private"), ogcDataset(t, owner, "private")
	m := call(t, "POST", "/maps/", map[string]any{"name": "Embedded " + randomHex(3)}, bearer(owner.Access)...).JSON(t)
	mapID := m["id"].(string)
	base := "/maps/" + mapID
	wantStatus(t, "add layer", call(t, "POST", base+"/layers", map[string]any{"dataset_id": private}, bearer(owner.Access)...), 201)

	wantStatus(t, "bad origin", call(t, "POST", base+"/embed-tokens/", map[string]any{"allowed_origins": []string{"javascript:alert(1)"}}, bearer(owner.Access)...), 422)
	wantStatus(t, "viewer makes a token", call(t, "POST", base+"/embed-tokens/", map[string]any{}, bearer(viewer.Access)...), 404)
	r := call(t, "POST", base+"/embed-tokens/", map[string]any{"name": "site", "expires_in_days": 7,
		"allowed_origins": []string{"https://example.org"}}, bearer(owner.Access)...)
	wantStatus(t, "create", r, 201)
	tok := r.JSON(t)
	raw := tok["raw_token"].(string)
	if !strings.HasPrefix(raw, "emb_") || tok["token_hint"] != "emb_…"+raw[len(raw)-4:] || len(tok["scoped_dataset_ids"].([]any)) != 1 ||
		tok["is_active"] != true {
		t.Fatalf("created token: %s", r.Body)
	}
	// A layer added afterwards is outside the token's scope.
	wantStatus(t, "add a later layer", call(t, "POST", base+"/layers", map[string]any{"dataset_id": later}, bearer(owner.Access)...), 201)

	embed := func(origin string) []string { return []string{"X-Embed-Token", raw, "Origin", origin} }
	r = call(t, "GET", base, nil, embed("https://example.org")...)
	wantStatus(t, "map through the token", r, 200)
	if got := r.JSON(t); got["layer_count"] != float64(1) || got["excluded_layer_count"] != float64(1) || got["notes"] != nil {
		t.Fatalf("map through the token: %s", r.Body)
	}
	if a := call(t, "GET", base+"/access/", nil, embed("https://example.org")...).JSON(t); a["reason"] != "embed_token" || a["can_edit"] != false {
		t.Fatalf("access through the token: %v", a)
	}
	b := call(t, "POST", "/tiles/tokens/", map[string]any{"dataset_ids": []string{private, later}}, embed("https://example.org")...).JSON(t)
	if toks := b["tokens"].(map[string]any); toks[private].(map[string]any)["kind"] != "vector" || toks[later].(map[string]any)["status"] != float64(404) ||
		b["errors"].(map[string]any)[later] == nil {
		t.Fatalf("tile tokens through the embed token: %v", b)
	}
	getTile(t, server.APIRoot, "/tiles/"+private+"/0/0/0.pbf", 200, embed("https://example.org")...)
	wantStatus(t, "features through the token", call(t, "GET", "/datasets/"+private+"/features.geojson", nil, embed("https://example.org")...), 200)
	wantStatus(t, "features of a later layer", call(t, "GET", "/datasets/"+later+"/features.geojson", nil, embed("https://example.org")...), 404)
	getTile(t, server.APIRoot, "/tiles/"+later+"/0/0/0.pbf", 404, embed("https://example.org")...)
	// From another origin, the token is no capability: the request is anonymous.
	wantStatus(t, "map from another origin", call(t, "GET", base, nil, embed("https://evil.example")...), 404)
	getTile(t, server.APIRoot, "/tiles/"+private+"/0/0/0.pbf", 404, embed("https://evil.example")...)
	wantStatus(t, "forged token", call(t, "GET", base, nil, "X-Embed-Token", "emb_"+strings.Repeat("A", 43), "Origin", "https://example.org"), 404)

	list := call(t, "GET", base+"/embed-tokens/", nil, bearer(owner.Access)...).JSON(t)
	if first := list["tokens"].([]any)[0].(map[string]any); list["total"] != float64(1) || first["use_count"].(float64) < 5 || first["raw_token"] != nil {
		t.Fatalf("token list: %v", list)
	}
	id := tok["id"].(string)
	upd := call(t, "PATCH", base+"/embed-tokens/"+id+"/", map[string]any{"allowed_origins": []string{"https://evil.example"}}, bearer(owner.Access)...)
	wantStatus(t, "update origins", upd, 200)
	wantStatus(t, "map from the newly allowed origin", call(t, "GET", base, nil, embed("https://evil.example")...), 200)

	all := call(t, "GET", "/admin/embed-tokens/?map_id="+mapID, nil, bearer(adm.Access)...).JSON(t)
	if all["total"] != float64(1) || all["tokens"].([]any)[0].(map[string]any)["creator_username"] != owner.Username {
		t.Fatalf("admin list: %v", all)
	}
	wantStatus(t, "revoke", call(t, "DELETE", base+"/embed-tokens/"+id+"/", nil, bearer(owner.Access)...), 200)
	wantStatus(t, "map through a revoked token", call(t, "GET", base, nil, embed("https://evil.example")...), 404)
	wantStatus(t, "update a revoked token", call(t, "PATCH", base+"/embed-tokens/"+id+"/", map[string]any{"allowed_origins": []string{}}, bearer(owner.Access)...), 409)

	second := call(t, "POST", base+"/embed-tokens/", map[string]any{}, bearer(owner.Access)...).JSON(t)
	wantStatus(t, "viewer bulk revoke", call(t, "POST", "/admin/embed-tokens/bulk-revoke/", map[string]any{"token_ids": []string{second["id"].(string)}}, bearer(viewer.Access)...), 403)
	br := call(t, "POST", "/admin/embed-tokens/bulk-revoke/", map[string]any{"token_ids": []string{second["id"].(string), id, "nonsense"}}, bearer(adm.Access)...).JSON(t)
	if br["revoked_count"] != float64(1) {
		t.Fatalf("bulk revoke: %v", br)
	}
}

func TestColumnOperations(t *testing.T) {
	owner, viewer := newUser(t, "editor"), newUser(t, "viewer")
	m := call(t, "POST", "/maps/", map[string]any{"name": "Sketch " + randomHex(3)}, bearer(owner.Access)...).JSON(t)
	body := map[string]any{"title": "Sketch points", "geometry_type": "point", "map_id": m["id"],
		"columns": []map[string]any{{"name": "name", "type": "text"}, {"name": "note", "type": "text"}}}
	wantStatus(t, "viewer creates a layer", call(t, "POST", "/layers/", body, bearer(viewer.Access)...), 403)
	wantStatus(t, "unknown geometry type", call(t, "POST", "/layers/", map[string]any{"title": "x", "geometry_type": "Blob"}, bearer(owner.Access)...), 422)
	r := call(t, "POST", "/layers/", body, bearer(owner.Access)...)
	wantStatus(t, "create layer", r, 201)
	created := r.JSON(t)
	id := created["id"].(string)
	layer := created["layer"].(map[string]any)
	if created["geometry_type"] != "Point" || layer["dataset_id"] != id {
		t.Fatalf("created layer: %s", r.Body)
	}
	for i, note := range []string{"12", "abc"} {
		wantStatus(t, "add feature", call(t, "POST", "/datasets/"+id+"/features/", map[string]any{"geometry": point(float64(i), 1),
			"properties": map[string]any{"name": fmt.Sprint("p", i), "note": note}}, bearer(owner.Access)...), 201)
	}
	wantStatus(t, "a line into a point layer", call(t, "POST", "/datasets/"+id+"/features/", map[string]any{"geometry": map[string]any{
		"type": "LineString", "coordinates": [][]float64{{0, 0}, {1, 1}}}, "properties": map[string]any{}}, bearer(owner.Access)...), 422)
	cols := "/layers/" + id + "/columns/"

	r = call(t, "POST", cols, map[string]any{"column": map[string]any{"name": "rank", "type": "integer"}}, bearer(owner.Access)...)
	wantStatus(t, "add column", r, 201)
	if n := len(r.JSON(t)["columns"].([]any)); n != 3 {
		t.Fatalf("columns after add: %s", r.Body)
	}
	wantStatus(t, "add it again", call(t, "POST", cols, map[string]any{"column": map[string]any{"name": "rank", "type": "integer"}}, bearer(owner.Access)...), 409)
	wantStatus(t, "add gid", call(t, "POST", cols, map[string]any{"column": map[string]any{"name": "gid", "type": "integer"}}, bearer(owner.Access)...), 422)
	wantStatus(t, "viewer adds", call(t, "POST", cols, map[string]any{"column": map[string]any{"name": "x", "type": "text"}}, bearer(viewer.Access)...), 404)

	// The map layer uses "name": filter, popup, label.
	patch := map[string]any{"updated": []map[string]any{{"id": layer["id"], "filter": []any{"==", []any{"get", "name"}, "p0"},
		"popup_config": map[string]any{"enabled": true, "visible_fields": []string{"name", "note"}, "expression": "{name}!"},
		"label_config": map[string]any{"field": "name"}}}}
	wantStatus(t, "style the layer", call(t, "PATCH", "/maps/"+m["id"].(string)+"/layers", patch, bearer(owner.Access)...), 200)
	if refs := call(t, "GET", cols+"name/references", nil, bearer(owner.Access)...).JSON(t); refs["map_count"] != float64(1) {
		t.Fatalf("references: %v", refs)
	}
	r = call(t, "PATCH", cols+"name/name", map[string]any{"new_name": "title"}, bearer(owner.Access)...)
	wantStatus(t, "rename", r, 200)
	if rn := r.JSON(t); rn["updated_references"] != float64(1) {
		t.Fatalf("rename: %s", r.Body)
	}
	l := mapLayers(t, call(t, "GET", "/maps/"+m["id"].(string), nil, bearer(owner.Access)...).JSON(t))[0]
	if fmt.Sprint(l["filter"]) != "[== [get title] p0]" || fmt.Sprint(l["popup_config"]) != "map[enabled:true expression:{title}! visible_fields:[note title]]" ||
		fmt.Sprint(l["label_config"]) != "map[field:title]" {
		t.Fatalf("layer after rename: %v", l)
	}
	if f := call(t, "GET", "/datasets/"+id+"/features/1", nil, bearer(owner.Access)...).JSON(t); f["properties"].(map[string]any)["title"] != "p0" {
		t.Fatalf("feature after rename: %v", f)
	}

	// Retype: "abc" is no integer.
	wantStatus(t, "retype, cast", call(t, "PATCH", cols+"note/type", map[string]any{"new_type": "integer"}, bearer(owner.Access)...), 422, "gid 2")
	r = call(t, "PATCH", cols+"note/type", map[string]any{"new_type": "integer", "using": "null_on_error"}, bearer(owner.Access)...)
	wantStatus(t, "retype, null on error", r, 200)
	if r.JSON(t)["nulled_values"] != float64(1) {
		t.Fatalf("retype: %s", r.Body)
	}
	if f := call(t, "GET", "/datasets/"+id+"/features/1", nil, bearer(owner.Access)...).JSON(t); f["properties"].(map[string]any)["note"] != float64(12) {
		t.Fatalf("feature after retype: %v", f)
	}

	// Drop: refused while the layer uses the column, unless forced.
	wantStatus(t, "drop a used column", call(t, "DELETE", cols+"title", nil, bearer(owner.Access)...), 409)
	wantStatus(t, "drop the key", call(t, "DELETE", cols+"gid", nil, bearer(owner.Access)...), 422)
	wantStatus(t, "drop, forced", call(t, "DELETE", cols+"title?force=true", nil, bearer(owner.Access)...), 200)
	l = mapLayers(t, call(t, "GET", "/maps/"+m["id"].(string), nil, bearer(owner.Access)...).JSON(t))[0]
	if l["filter"] != nil || l["label_config"] != nil || fmt.Sprint(l["popup_config"]) != "map[enabled:true expression:! visible_fields:[note]]" ||
		l["tile_version"].(float64) < 4 {
		t.Fatalf("layer after the drop: %v", l)
	}
	feed := call(t, "GET", "/audit/datasets/"+id+"/column-ddl", nil, bearer(owner.Access)...).JSON(t)
	var actions []string
	for _, e := range feed["items"].([]any) {
		actions = append(actions, e.(map[string]any)["action"].(string))
	}
	if fmt.Sprint(actions) != "[column.drop column.alter_type column.rename column.add]" {
		t.Fatalf("column DDL feed: %v", actions)
	}
}

func TestMapStyleRoundTrip(t *testing.T) {
	owner, viewer := newUser(t, "editor"), newUser(t, "viewer")
	public, private := ogcDataset(t, owner, "public"), ogcDataset(t, owner, "public")
	m := call(t, "POST", "/maps/", map[string]any{"name": "Styled"}, bearer(owner.Access)...).JSON(t)
	base := "/maps/" + m["id"].(string)
	wantStatus(t, "make public", call(t, "PUT", base, map[string]any{"name": "Styled", "visibility": "public"}, bearer(owner.Access)...), 200)
	for _, ds := range []string{public, private} {
		wantStatus(t, "add layer", call(t, "POST", base+"/layers", map[string]any{"dataset_id": ds, "opacity": 0.7,
			"paint": map[string]any{"circle-color": "#ff0000"}, "filter": []any{">", []any{"get", "rank"}, 3}}, bearer(owner.Access)...), 201)
	}
	// Its owner makes the second dataset private once it is on the public map.
	wantStatus(t, "make a layer's dataset private", call(t, "PATCH", "/datasets/"+private, map[string]any{"visibility": "private"}, bearer(owner.Access)...), 200)
	r := call(t, "GET", base+"/style.json", nil, bearer(owner.Access)...)
	wantStatus(t, "export", r, 200)
	style := r.JSON(t)
	layers := style["layers"].([]any)
	if style["version"] != float64(8) || len(style["sources"].(map[string]any)) != 2 || len(layers) != 2 {
		t.Fatalf("style: %s", r.Body)
	}
	first := layers[0].(map[string]any)
	paint := first["paint"].(map[string]any)
	if first["type"] != "circle" || paint["circle-color"] != "#ff0000" || paint["circle-opacity"] != 0.7 ||
		first["metadata"].(map[string]any)["service:dataset_id"] != public || fmt.Sprint(first["filter"]) != "[> [get rank] 3]" {
		t.Fatalf("style layer: %v", first)
	}
	// The sources' templates open the tiles without a credential.
	src := style["sources"].(map[string]any)["dataset-"+private].(map[string]any)["tiles"].([]any)[0].(string)
	tile := strings.NewReplacer("{z}", "0", "{x}", "0", "{y}", "0").Replace(strings.TrimPrefix(src, server.APIRoot))
	if _, l := getTile(t, server.APIRoot, tile, 200); len(l[0].Features) != 30 {
		t.Fatalf("tile of the exported source: %v", l)
	}
	// An anonymous export of the public map leaves out the private layer.
	if anon := call(t, "GET", base+"/style.json", nil).JSON(t); len(anon["layers"].([]any)) != 1 {
		t.Fatalf("anonymous export: %v", anon["layers"])
	}

	// Import: an outside source is reported; the viewer gets only what they can read.
	style["sources"].(map[string]any)["osm"] = map[string]any{"type": "raster", "tiles": []string{"https://tile.example.org/{z}/{x}/{y}.png"}}
	style["layers"] = append(layers, map[string]any{"id": "background-tiles", "type": "raster", "source": "osm"})
	r = call(t, "POST", "/maps/import", style, bearer(owner.Access)...)
	wantStatus(t, "import as owner", r, 201)
	got := r.JSON(t)
	sum := got["summary"].(map[string]any)
	if sum["layers_imported"] != float64(2) || sum["layers_skipped"] != float64(1) || sum["sources_unsupported"] != float64(1) ||
		got["map"].(map[string]any)["name"] != "Styled" || got["map"].(map[string]any)["layer_count"] != float64(2) {
		t.Fatalf("import as owner: %s", r.Body)
	}
	imported := mapLayers(t, got["map"].(map[string]any))[0]
	if fmt.Sprint(imported["filter"]) != "[> [get rank] 3]" || imported["paint"].(map[string]any)["circle-color"] != "#ff0000" {
		t.Fatalf("imported layer: %v", imported)
	}
	r = call(t, "POST", "/maps/import?name=Mine", style, bearer(viewer.Access)...)
	wantStatus(t, "import as viewer", r, 201)
	if got := r.JSON(t); got["summary"].(map[string]any)["layers_imported"] != float64(1) || got["map"].(map[string]any)["name"] != "Mine" {
		t.Fatalf("import as viewer: %s", r.Body)
	}
	style["version"] = 7
	wantStatus(t, "not a version 8 style", call(t, "POST", "/maps/import", style, bearer(owner.Access)...), 422)
}

// TestMapDocumentsFollowChangesOnAnotherReplica: servers keep map documents in memory; a change of
// the map or of a layer's dataset made through another server reaches them through PostgreSQL's
// announcements.
func TestMapDocumentsFollowChangesOnAnotherReplica(t *testing.T) {
	owner := newUser(t, "editor")
	public := ogcDataset(t, owner, "public")
	m := call(t, "POST", "/maps/", map[string]any{"name": "Replicated"}, bearer(owner.Access)...).JSON(t)
	base := "/maps/" + m["id"].(string)
	wantStatus(t, "make public", call(t, "PUT", base, map[string]any{"name": "Replicated", "visibility": "public"}, bearer(owner.Access)...), 200)
	second, err := Start(context.Background(), server.DBURL, "RATE_LIMIT_ENABLED=false")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(second.Stop)
	read := func() map[string]any {
		t.Helper()
		r := callAt(t, http.DefaultClient, second.APIRoot, "GET", base, nil)
		if r.Status != 200 {
			t.Fatalf("map on the second server: %d %s", r.Status, r.Body)
		}
		return r.JSON(t)
	}
	for range 2 { // the second read is the kept document
		if n := read()["layer_count"]; n != float64(0) {
			t.Fatalf("layers before: %v", n)
		}
	}
	eventually := func(what string, check func(map[string]any) bool) {
		t.Helper()
		for deadline := time.Now().Add(2 * time.Second); !check(read()); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the second server never showed %s", what)
			}
		}
	}
	wantStatus(t, "add layer", call(t, "POST", base+"/layers", map[string]any{"dataset_id": public}, bearer(owner.Access)...), 201)
	eventually("the new layer", func(m map[string]any) bool { return m["layer_count"] == float64(1) })
	wantStatus(t, "rename the dataset", call(t, "PATCH", "/datasets/"+public, map[string]any{"title": "Renamed places"}, bearer(owner.Access)...), 200)
	eventually("the dataset's new title", func(m map[string]any) bool {
		return m["layer_count"] == float64(1) && mapLayers(t, m)[0]["dataset_name"] == "Renamed places"
	})
	wantStatus(t, "make the dataset private", call(t, "PATCH", "/datasets/"+public, map[string]any{"visibility": "private"}, bearer(owner.Access)...), 200)
	eventually("the layer hidden from anonymous readers", func(m map[string]any) bool {
		return m["layer_count"] == float64(0) && m["excluded_layer_count"] == float64(1)
	})
}

// TestMapLimits: the limits of spec section 8 (and open-points) on maps, layers, share links
// and embed tokens, each refused with 422 and nothing written.
func TestMapLimits(t *testing.T) {
	owner := newUser(t, "editor")
	ds := ogcDataset(t, owner, "private")
	m := call(t, "POST", "/maps/", map[string]any{"name": "Limits"}, bearer(owner.Access)...).JSON(t)
	base := "/maps/" + m["id"].(string)
	fields := make([]string, 101)
	for i := range fields {
		fields[i] = fmt.Sprint("f", i)
	}
	origins := make([]string, 51)
	for i := range origins {
		origins[i] = fmt.Sprintf("https://site%d.example.org", i)
	}
	many := make([]map[string]any, 201)
	for i := range many {
		many[i] = map[string]any{"dataset_id": ds}
	}
	cases := []struct {
		name, method, path string
		body               map[string]any
	}{
		{"201 layers", "PATCH", base + "/layers", map[string]any{"added": many}},
		{"name of 256", "POST", "/maps/", map[string]any{"name": strings.Repeat("n", 256)}},
		{"basemap opacity above 1", "PUT", base, map[string]any{"name": "x", "basemap_config": map[string]any{"opacity": 1.5}}},
		{"terrain exaggeration above 3", "PUT", base, map[string]any{"name": "x", "terrain_config": map[string]any{"exaggeration": 3.5}}},
		{"sublayer width above 20", "PUT", base, map[string]any{"name": "x", "basemap_config": map[string]any{
			"sublayer_overrides": map[string]any{"roads": map[string]any{"stroke_width": 21}}}}},
		{"zoom above 24", "PUT", base, map[string]any{"name": "x", "zoom": 25}},
		{"layer opacity above 1", "POST", base + "/layers", map[string]any{"dataset_id": ds, "opacity": 2}},
		{"popup fields over 100", "POST", base + "/layers", map[string]any{"dataset_id": ds,
			"popup_config": map[string]any{"enabled": true, "visible_fields": fields}}},
		{"share for 2 days", "POST", base + "/share/", map[string]any{"expires_in_days": 2}},
		{"embed token for 366 days", "POST", base + "/embed-tokens/", map[string]any{"expires_in_days": 366}},
		{"embed token of 51 origins", "POST", base + "/embed-tokens/", map[string]any{"allowed_origins": origins}},
		{"embed token name of 256", "POST", base + "/embed-tokens/", map[string]any{"name": strings.Repeat("n", 256)}},
	}
	for _, c := range cases {
		if r := call(t, c.method, c.path, c.body, bearer(owner.Access)...); r.Status != 422 {
			t.Errorf("%s: %d, want 422: %s", c.name, r.Status, r.Body)
		}
	}
	after := call(t, "GET", base, nil, bearer(owner.Access)...).JSON(t)
	if after["layer_count"] != float64(0) || after["name"] != "Limits" || after["zoom"] != nil || after["basemap_config"] != nil {
		t.Fatalf("a refused change was written: %v", after)
	}
	if r := call(t, "GET", base+"/embed-tokens/", nil, bearer(owner.Access)...).JSON(t); r["total"] != float64(0) {
		t.Fatalf("a refused embed token was made: %v", r)
	}
}

// An embed token lends what its creator chose to show and may still lend: when another user's
// public dataset on the map turns private, or the creator loses the map, the token lends it no
// more (what a grant or internal visibility opens is never lent: TestGrantsNeverWidenADatasetsAudience).
func TestEmbedTokensLendOnlyWhatTheirCreatorMayRead(t *testing.T) {
	creator, other := newUser(t, "editor"), newUser(t, "editor")
	theirs := ogcDataset(t, other, "public")
	mapID := call(t, "POST", "/maps/", map[string]any{"name": "Borrowed " + randomHex(3), "visibility": "internal"}, bearer(creator.Access)...).JSON(t)["id"].(string)
	wantStatus(t, "add their layer", call(t, "POST", "/maps/"+mapID+"/layers", map[string]any{"dataset_id": theirs}, bearer(creator.Access)...), 201)
	r := call(t, "POST", "/maps/"+mapID+"/embed-tokens/", map[string]any{"name": "site"}, bearer(creator.Access)...)
	wantStatus(t, "create", r, 201)
	embed := []string{"X-Embed-Token", r.JSON(t)["raw_token"].(string), "Origin", "https://example.org"}
	wantStatus(t, "their features through the token", call(t, "GET", "/datasets/"+theirs+"/features.geojson", nil, embed...), 200)

	wantStatus(t, "they make it private", call(t, "PATCH", "/datasets/"+theirs, map[string]any{"visibility": "private"}, bearer(other.Access)...), 200)
	wantStatus(t, "their private features through the token", call(t, "GET", "/datasets/"+theirs+"/features.geojson", nil, embed...), 404)
	getTile(t, server.APIRoot, "/tiles/"+theirs+"/0/0/0.pbf", 404, embed...)
	wantStatus(t, "the map still", call(t, "GET", "/maps/"+mapID, nil, embed...), 200)
}
