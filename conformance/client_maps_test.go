package conformance

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// What the web UI and the desktop plugin expect of maps, share links, embeds and tiles beyond the
// shapes (client-semantics.md, issue #27).

// TestUpdateMapAppliesOnlyPresentFields: the map builder's save sends neither the visibility nor
// (after a fit) the view; what it leaves out keeps its value, and an explicit null clears.
func TestUpdateMapAppliesOnlyPresentFields(t *testing.T) {
	owner := newUser(t, "editor")
	ds := ogcDataset(t, owner, "public")
	created := call(t, "POST", "/maps/", map[string]any{"name": "Builder", "visibility": "public", "description": "about",
		"center_lng": 7.5, "center_lat": 46.9, "zoom": 8, "bearing": 15, "pitch": 30, "legend_title": "Legend",
		"basemap_config": map[string]any{"opacity": 0.5}, "layers": []any{map[string]any{"dataset_id": ds, "display_name": "Places"}}},
		bearer(owner.Access)...)
	wantStatus(t, "create a public map with a view", created, 201)
	m := created.JSON(t)
	base := "/maps/" + m["id"].(string)
	layer := mapLayers(t, m)[0]

	// What the builder saves: settings and layers, no visibility, no view.
	builder := map[string]any{"name": "Builder saved", "description": "about", "basemap_style": "carto-dark-matter",
		"show_basemap_labels": false, "legend_title": "Legend", "expected_updated_at": m["updated_at"],
		"layers": []any{map[string]any{"id": layer["id"], "dataset_id": ds, "display_name": "Places", "opacity": 0.4}}}
	r := call(t, "PUT", base, builder, bearer(owner.Access)...)
	wantStatus(t, "builder save", r, 200)
	got := r.JSON(t)
	kept := map[string]any{"visibility": "public", "center_lng": 7.5, "center_lat": 46.9, "zoom": float64(8), "bearing": float64(15),
		"pitch": float64(30), "name": "Builder saved", "basemap_style": "carto-dark-matter", "show_basemap_labels": false}
	for k, v := range kept {
		if got[k] != v {
			t.Errorf("after the builder's save %s = %v, want %v", k, got[k], v)
		}
	}
	if bc, _ := got["basemap_config"].(map[string]any); bc["opacity"] != 0.5 {
		t.Errorf("basemap_config not kept: %v", got["basemap_config"])
	}
	if l := mapLayers(t, got); len(l) != 1 || l[0]["id"] != layer["id"] || l[0]["opacity"] != 0.4 {
		t.Errorf("layers after the builder's save: %v", got["layers"])
	}

	// Explicit nulls: cleared where a field may be empty, no change where it may not.
	r = call(t, "PUT", base, map[string]any{"description": nil, "zoom": nil, "center_lng": nil, "center_lat": nil,
		"basemap_config": nil, "visibility": nil, "name": nil, "bearing": nil}, bearer(owner.Access)...)
	wantStatus(t, "nulls", r, 200)
	got = r.JSON(t)
	for _, k := range []string{"description", "zoom", "center_lng", "center_lat", "basemap_config"} {
		if got[k] != nil {
			t.Errorf("%s after an explicit null: %v", k, got[k])
		}
	}
	if got["visibility"] != "public" || got["name"] != "Builder saved" || got["bearing"] != float64(15) || got["legend_title"] != "Legend" ||
		got["pitch"] != float64(30) {
		t.Errorf("fields that cannot be empty, or were not sent, changed: %s", r.Body)
	}

	// A map made without a view keeps it null (the builder fits its layers); the map defaults
	// are what clients show a new empty map at.
	plain := call(t, "POST", "/maps/", map[string]any{"name": "No view"}, bearer(owner.Access)...).JSON(t)
	if plain["center_lng"] != nil || plain["center_lat"] != nil || plain["zoom"] != nil || plain["bearing"] != float64(0) {
		t.Fatalf("a map made without a view: %v", plain)
	}
	if d := call(t, "GET", "/settings/map-defaults/", nil).JSON(t); d["zoom"] != float64(2) {
		t.Fatalf("map defaults: %v", d)
	}
}

// TestPatchMapLayersNullClears: in Patch Map Layers' updated, an absent member keeps its value
// and an explicit null clears it.
func TestPatchMapLayersNullClears(t *testing.T) {
	owner := newUser(t, "editor")
	ds := ogcDataset(t, owner, "private")
	m := call(t, "POST", "/maps/", map[string]any{"name": "Layers " + randomHex(3)}, bearer(owner.Access)...).JSON(t)
	base := "/maps/" + m["id"].(string)
	full := map[string]any{"display_name": "Towns", "filter": []any{"==", []any{"get", "kind"}, "town"},
		"label_config": map[string]any{"field": "name"}, "popup_config": map[string]any{"enabled": true, "visible_fields": []string{"name"}},
		"style_config": map[string]any{"mode": "simple"}}
	for member := range full {
		t.Run(member, func(t *testing.T) {
			body := map[string]any{"dataset_id": ds}
			for k, v := range full {
				body[k] = v
			}
			r := call(t, "POST", base+"/layers", body, bearer(owner.Access)...)
			wantStatus(t, "add layer", r, 201)
			id := r.JSON(t)["id"]
			layerOf := func(r reply) map[string]any {
				t.Helper()
				wantStatus(t, "patch", r, 200)
				for _, l := range mapLayers(t, r.JSON(t)) {
					if l["id"] == id {
						return l
					}
				}
				t.Fatalf("layer %v missing: %s", id, r.Body)
				return nil
			}
			// Absent: kept.
			l := layerOf(call(t, "PATCH", base+"/layers", map[string]any{"updated": []any{map[string]any{"id": id, "visible": false}}}, bearer(owner.Access)...))
			if l[member] == nil || l["visible"] != false {
				t.Fatalf("%s after a patch without it: %v", member, l[member])
			}
			// Null: cleared, the others kept.
			l = layerOf(call(t, "PATCH", base+"/layers", map[string]any{"updated": []any{map[string]any{"id": id, member: nil}}}, bearer(owner.Access)...))
			if l[member] != nil {
				t.Fatalf("%s after an explicit null: %v", member, l[member])
			}
			for other := range full {
				if other != member && l[other] == nil {
					t.Fatalf("%s cleared by a null of %s", other, member)
				}
			}
		})
	}
}

// TestPublicMapsHoldPublicDatasets: a public map shows only public datasets; every way to break
// that answers 400 naming the datasets (title and id) and changes nothing.
func TestPublicMapsHoldPublicDatasets(t *testing.T) {
	owner := newUser(t, "editor")
	public, private := ogcDataset(t, owner, "public"), ogcDataset(t, owner, "private")
	title := call(t, "GET", "/datasets/"+private, nil, bearer(owner.Access)...).JSON(t)["title"].(string)
	m := call(t, "POST", "/maps/", map[string]any{"name": "Mixed " + randomHex(3), "layers": []any{
		map[string]any{"dataset_id": public}, map[string]any{"dataset_id": private}}}, bearer(owner.Access)...).JSON(t)
	base := "/maps/" + m["id"].(string)
	var privateLayer any
	for _, l := range mapLayers(t, m) {
		if l["dataset_id"] == private {
			privateLayer = l["id"]
		}
	}

	refused := func(what string, r reply) {
		t.Helper()
		wantStatus(t, what, r, 400, title, private)
		if d := problemDetailOf(t, r); strings.Contains(d, public) {
			t.Fatalf("%s: the public dataset is named too: %s", what, d)
		}
	}
	refused("make the map public", call(t, "PUT", base, map[string]any{"visibility": "public"}, bearer(owner.Access)...))
	if v := call(t, "GET", base, nil, bearer(owner.Access)...).JSON(t)["visibility"]; v != "private" {
		t.Fatalf("visibility after the refusal: %v", v)
	}
	wantStatus(t, "internal is fine", call(t, "PUT", base, map[string]any{"visibility": "internal"}, bearer(owner.Access)...), 200)
	wantStatus(t, "remove the private layer", call(t, "DELETE", base+"/layers/"+privateLayer.(string), nil, bearer(owner.Access)...), 204)
	wantStatus(t, "make public", call(t, "PUT", base, map[string]any{"visibility": "public"}, bearer(owner.Access)...), 200)

	// Adding a layer of a dataset that is not public to the public map: the same guard.
	refused("add layer", call(t, "POST", base+"/layers", map[string]any{"dataset_id": private}, bearer(owner.Access)...))
	refused("patch layers, added", call(t, "PATCH", base+"/layers", map[string]any{"added": []any{map[string]any{"dataset_id": private}}}, bearer(owner.Access)...))
	refused("update with layers", call(t, "PUT", base, map[string]any{"layers": []any{map[string]any{"dataset_id": private}}}, bearer(owner.Access)...))
	refused("create public", call(t, "POST", "/maps/", map[string]any{"name": "x", "visibility": "public",
		"layers": []any{map[string]any{"dataset_id": private}}}, bearer(owner.Access)...))
	wantStatus(t, "create a layer on the public map", call(t, "POST", "/layers/", map[string]any{"title": "Sketch", "geometry_type": "Point",
		"map_id": m["id"]}, bearer(owner.Access)...), 400)
	if n := call(t, "GET", base, nil, bearer(owner.Access)...).JSON(t)["layer_count"]; n != float64(1) {
		t.Fatalf("layers after the refusals: %v", n)
	}
	if l := call(t, "GET", "/maps/?mine=true&visibility=public", nil, bearer(owner.Access)...).JSON(t); l["total"] != float64(1) {
		t.Fatalf("a refused public map was made: %v", l)
	}
}

// TestUnpublishedMapsTakeBackTheirLinks: a public map made private or internal revokes its
// share links (which then answer 404, as any link of a map that is not public) and embed tokens.
func TestUnpublishedMapsTakeBackTheirLinks(t *testing.T) {
	owner := newUser(t, "editor")
	ds := ogcDataset(t, owner, "public")
	for _, to := range []string{"private", "internal"} {
		t.Run(to, func(t *testing.T) {
			m := call(t, "POST", "/maps/", map[string]any{"name": "Unpublished", "visibility": "public",
				"layers": []any{map[string]any{"dataset_id": ds}}}, bearer(owner.Access)...).JSON(t)
			base := "/maps/" + m["id"].(string)
			token := call(t, "POST", base+"/share/", nil, bearer(owner.Access)...).JSON(t)["token"].(string)
			embed := call(t, "POST", base+"/embed-tokens/", map[string]any{"name": "site"}, bearer(owner.Access)...).JSON(t)
			headers := []string{"X-Embed-Token", embed["raw_token"].(string), "Origin", "https://example.org"}
			wantStatus(t, "shared map", call(t, "GET", "/maps/shared/"+token, nil), 200)

			wantStatus(t, "make "+to, call(t, "PUT", base, map[string]any{"visibility": to}, bearer(owner.Access)...), 200)
			wantStatus(t, "link of a map no longer public", call(t, "GET", "/maps/shared/"+token, nil), 404)
			if r := call(t, "GET", base+"/share/", nil, bearer(owner.Access)...); strings.TrimSpace(string(r.Body)) != "null" {
				t.Fatalf("share link after unpublishing: %s", r.Body)
			}
			list := call(t, "GET", base+"/embed-tokens/", nil, bearer(owner.Access)...).JSON(t)["tokens"].([]any)
			if tok := list[0].(map[string]any); tok["is_active"] != false {
				t.Fatalf("embed token after unpublishing: %v", tok)
			}
			wantStatus(t, "map through the revoked embed token", call(t, "GET", base+"/access/", nil, headers...), 404)
			wantStatus(t, "share a "+to+" map", call(t, "POST", base+"/share/", nil, bearer(owner.Access)...), 400, "Map must be public before sharing")

			// Public again: the old link stays revoked.
			wantStatus(t, "public again", call(t, "PUT", base, map[string]any{"visibility": "public"}, bearer(owner.Access)...), 200)
			wantStatus(t, "the old link", call(t, "GET", "/maps/shared/"+token, nil), 410)
		})
	}
}

// TestShareURLsFollowThePublicAppURL: share links point at the web app, {public_app_url}/m/{token},
// and Get Tile Config tells the same address.
func TestShareURLsFollowThePublicAppURL(t *testing.T) {
	owner := newUser(t, "editor")
	setSetting(t, "general.public_app_url", `"https://maps.example.org/"`)
	defer setSetting(t, "general.public_app_url", `""`)
	m := call(t, "POST", "/maps/", map[string]any{"name": "Linked", "visibility": "public"}, bearer(owner.Access)...).JSON(t)
	sh := call(t, "POST", "/maps/"+m["id"].(string)+"/share/", nil, bearer(owner.Access)...).JSON(t)
	if sh["share_url"] != "https://maps.example.org/m/"+sh["token"].(string) {
		t.Fatalf("share_url with public_app_url set: %v", sh)
	}
	if c := call(t, "GET", "/settings/tile-config/", nil).JSON(t); c["public_app_url"] != "https://maps.example.org" {
		t.Fatalf("tile config public_app_url: %v", c["public_app_url"])
	}
}

// TestTileConfigIsPublic: viewers of public, shared and embedded maps read the tile config without
// signing in; the operator's part is for admins and no secret reaches anyone.
func TestTileConfigIsPublic(t *testing.T) {
	public := []string{"public_app_url", "public_api_url", "public_base_url", "mvt_source_layer_prefix", "extent", "buffer",
		"min_zoom", "max_zoom", "max_features_per_tile", "simplify_tolerance"}
	operator := []string{"cache_max_bytes", "cache_used_bytes", "cache_tiles", "max_concurrent", "token_ttl_seconds"}
	secrets := []string{serverSecret(t, server), "mt-env-secret-value"}
	cases := []struct {
		name     string
		headers  []string
		operator bool
	}{
		{"anonymous", nil, false},
		{"viewer", bearer(newUser(t, "viewer").Access), false},
		{"editor", bearer(newUser(t, "editor").Access), false},
		{"admin", bearer(admin(t).Access), true},
	}
	for _, c := range cases {
		r := call(t, "GET", "/settings/tile-config/", nil, c.headers...)
		wantStatus(t, c.name, r, 200)
		got := r.JSON(t)
		if got["mvt_source_layer_prefix"] != "data" || got["public_api_url"] != server.APIRoot {
			t.Errorf("%s: %s", c.name, r.Body)
		}
		for _, k := range public {
			if _, ok := got[k]; !ok {
				t.Errorf("%s: no %s", c.name, k)
			}
		}
		for _, k := range operator {
			if _, ok := got[k]; ok != c.operator {
				t.Errorf("%s: %s present %v, want %v", c.name, k, ok, c.operator)
			}
		}
		for _, s := range secrets {
			if strings.Contains(string(r.Body), s) {
				t.Errorf("%s: a secret in the tile config", c.name)
			}
		}
	}
	wantStatus(t, "dead credential", call(t, "GET", "/settings/tile-config/", nil, bearer("not-a-token")...), 401)
}

// TestTileTokensAskForSignIn: an anonymous caller asking for the tile token of a dataset that is
// not public is told to sign in (401 with WWW-Authenticate), a signed-in one without access gets
// 404; the batch reports the same per dataset among its tokens.
func TestTileTokensAskForSignIn(t *testing.T) {
	owner, viewer := newUser(t, "editor"), newUser(t, "viewer")
	private, public := ogcDataset(t, owner, "private"), ogcDataset(t, owner, "public")
	missing := "00000000-0000-4000-8000-000000000000"
	cases := []struct {
		name, id string
		headers  []string
		want     int
	}{
		{"anonymous, private", private, nil, 401},
		{"anonymous, no such dataset", missing, nil, 401},
		{"viewer without access", private, bearer(viewer.Access), 404},
		{"anonymous, public", public, nil, 200},
		{"owner", private, bearer(owner.Access), 200},
	}
	for _, c := range cases {
		r := call(t, "GET", "/tiles/token/"+c.id+"/", nil, c.headers...)
		if r.Status != c.want {
			t.Errorf("%s: %d, want %d: %s", c.name, r.Status, c.want, r.Body)
		}
		if h := r.Header.Get("WWW-Authenticate"); (c.want == 401) != strings.HasPrefix(h, "Bearer") {
			t.Errorf("%s: WWW-Authenticate %q", c.name, h)
		}
	}
	b := call(t, "POST", "/tiles/tokens/", map[string]any{"dataset_ids": []string{private, public}}, nil...).JSON(t)
	toks := b["tokens"].(map[string]any)
	e, _ := toks[private].(map[string]any)
	if pub, _ := toks[public].(map[string]any); e["status"] != float64(401) || e["error"] == nil || pub["sig"] == nil {
		t.Fatalf("anonymous batch: %v", b)
	}
}

// TestSignedTilesOfNonPublicDatasetsStayPrivate: a signed tile may sit in shared caches only
// when its dataset is public.
func TestSignedTilesOfNonPublicDatasetsStayPrivate(t *testing.T) {
	owner := newUser(t, "editor")
	for _, c := range []struct{ visibility, want string }{
		{"public", "public, max-age="}, {"internal", "private, max-age="}, {"private", "private, max-age="}, {"restricted", "private, max-age="},
	} {
		id := ogcDataset(t, owner, c.visibility)
		tok := tileToken(t, id, bearer(owner.Access)...)
		r, _ := getTile(t, server.APIRoot, "/tiles/"+id+"/0/0/0.pbf?"+signedQuery(tok), 200)
		if cc := r.Header.Get("Cache-Control"); !strings.HasPrefix(cc, c.want) {
			t.Errorf("signed tile of a %s dataset: Cache-Control %q, want %s...", c.visibility, cc, c.want)
		}
	}
}

// TestTilesCarryAttributesFromZoom10: map popups read the features' attributes from the tiles;
// from zoom 10 up a tile carries every attribute column unasked (or the dataset's tile_columns),
// below it only the geometry unless cols asks.
func TestTilesCarryAttributesFromZoom10(t *testing.T) {
	owner := newUser(t, "editor")
	id := ogcDataset(t, owner, "public")
	all := []string{"day", "kind", "name", "rank", "score"}
	props := func(z int, query string) []string {
		t.Helper()
		x, y := tileAt(-170, -40, z) // place 00
		_, layers := getTile(t, server.APIRoot, fmt.Sprintf("/tiles/%s/%d/%d/%d.pbf%s", id, z, x, y, query), 200)
		for _, f := range layers[0].Features {
			if *f.ID == 1 {
				var keys []string
				for k := range f.Props {
					keys = append(keys, k)
				}
				slices.Sort(keys)
				if len(keys) > 0 && (f.Props["name"] != nil && f.Props["name"] != "place 00") {
					t.Fatalf("z%d: properties of place 00: %v", z, f.Props)
				}
				return keys
			}
		}
		t.Fatalf("z%d: place 00 not in its tile", z)
		return nil
	}
	for _, c := range []struct {
		z     int
		query string
		want  []string
	}{
		{10, "", all},
		{14, "", all},
		{9, "", nil},
		{0, "", nil},
		{9, "?cols=name", []string{"name"}},
		{10, "?cols=rank", []string{"rank"}},
	} {
		if got := props(c.z, c.query); !slices.Equal(got, c.want) {
			t.Errorf("z%d%s: properties %v, want %v", c.z, c.query, got, c.want)
		}
	}
	wantStatus(t, "tile_columns", call(t, "PATCH", "/datasets/"+id, map[string]any{"tile_columns": []string{"name", "rank"}}, bearer(owner.Access)...), 200)
	if got := props(10, ""); !slices.Equal(got, []string{"name", "rank"}) {
		t.Errorf("z10 with tile_columns: %v", got)
	}
	if got := props(9, ""); got != nil {
		t.Errorf("z9 with tile_columns: %v", got)
	}
}

// TestMapWritesAreAudited: each write of maps, layers, columns and embed tokens leaves its record
// in the admin audit log, under its action name, with the actor and the resource filled in.
func TestMapWritesAreAudited(t *testing.T) {
	adm, u := admin(t), newUser(t, "editor")
	as := bearer(u.Access)
	ds := ogcDataset(t, u, "public")
	var mapID, layerID, sketchID, embedID string
	mapPath := func() string { return "/maps/" + mapID }
	steps := []struct {
		action string
		do     func() string // the write; answers the resource id the record names
	}{
		{"map.create", func() string {
			mapID = call(t, "POST", "/maps/", map[string]any{"name": "Audited"}, as...).JSON(t)["id"].(string)
			return mapID
		}},
		{"map.update", func() string {
			wantStatus(t, "update", call(t, "PUT", mapPath(), map[string]any{"visibility": "public"}, as...), 200)
			return mapID
		}},
		{"map.add_layer", func() string {
			r := call(t, "POST", mapPath()+"/layers", map[string]any{"dataset_id": ds}, as...)
			wantStatus(t, "add layer", r, 201)
			layerID = r.JSON(t)["id"].(string)
			return mapID
		}},
		{"layer.add", func() string { return layerID }},
		{"map.patch_layers", func() string {
			wantStatus(t, "patch", call(t, "PATCH", mapPath()+"/layers", map[string]any{"order": []string{layerID}}, as...), 200)
			return mapID
		}},
		{"layer.reorder", func() string { return mapID }},
		{"map.share", func() string {
			wantStatus(t, "share", call(t, "POST", mapPath()+"/share/", nil, as...), 200)
			return mapID
		}},
		{"map.revoke_share", func() string {
			wantStatus(t, "revoke share", call(t, "DELETE", mapPath()+"/share/", nil, as...), 204)
			return mapID
		}},
		{"embed_token.create", func() string {
			r := call(t, "POST", mapPath()+"/embed-tokens/", map[string]any{"name": "site"}, as...)
			wantStatus(t, "embed token", r, 201)
			embedID = r.JSON(t)["id"].(string)
			return embedID
		}},
		{"embed_token.update", func() string {
			wantStatus(t, "embed update", call(t, "PATCH", mapPath()+"/embed-tokens/"+embedID+"/", map[string]any{"allowed_origins": []string{"https://example.org"}}, as...), 200)
			return embedID
		}},
		{"embed_token.revoke", func() string {
			wantStatus(t, "embed revoke", call(t, "DELETE", mapPath()+"/embed-tokens/"+embedID+"/", nil, as...), 200)
			return embedID
		}},
		{"map.remove_layer", func() string {
			wantStatus(t, "remove layer", call(t, "DELETE", mapPath()+"/layers/"+layerID, nil, as...), 204)
			return mapID
		}},
		{"layer.remove", func() string { return layerID }},
		{"map.duplicate", func() string {
			r := call(t, "POST", mapPath()+"/duplicate/", nil, as...)
			wantStatus(t, "duplicate", r, 200)
			return r.JSON(t)["id"].(string)
		}},
		{"map.import_style", func() string {
			r := call(t, "POST", "/maps/import", map[string]any{"version": 8, "name": "Imported", "sources": map[string]any{}, "layers": []any{}}, as...)
			wantStatus(t, "import", r, 201)
			return r.JSON(t)["map"].(map[string]any)["id"].(string)
		}},
		{"map.delete", func() string {
			wantStatus(t, "delete", call(t, "DELETE", mapPath(), nil, as...), 204)
			return mapID
		}},
		{"layer.add_column", func() string {
			r := call(t, "POST", "/layers/", map[string]any{"title": "Sketch", "geometry_type": "Point"}, as...)
			wantStatus(t, "create layer", r, 201)
			sketchID = r.JSON(t)["id"].(string)
			wantStatus(t, "add column", call(t, "POST", "/layers/"+sketchID+"/columns/", map[string]any{"column": map[string]any{"name": "note", "type": "text"}}, as...), 201)
			return sketchID
		}},
		{"layer.rename_column", func() string {
			wantStatus(t, "rename", call(t, "PATCH", "/layers/"+sketchID+"/columns/note/name", map[string]any{"new_name": "memo"}, as...), 200)
			return sketchID
		}},
		{"layer.alter_column_type", func() string {
			wantStatus(t, "retype", call(t, "PATCH", "/layers/"+sketchID+"/columns/memo/type", map[string]any{"new_type": "integer"}, as...), 200)
			return sketchID
		}},
		{"layer.drop_column", func() string {
			wantStatus(t, "drop", call(t, "DELETE", "/layers/"+sketchID+"/columns/memo", nil, as...), 200)
			return sketchID
		}},
	}
	for _, s := range steps {
		id := s.do()
		r := call(t, "GET", "/admin/audit-logs/?limit=50&action="+s.action+"&actor_id="+u.ID, nil, bearer(adm.Access)...)
		wantStatus(t, "audit log", r, 200)
		found := false
		for _, it := range r.JSON(t)["logs"].([]any) {
			rec := it.(map[string]any)
			if rec["resource_id"] == id && rec["resource_type"] != "" && rec["actor_id"] == u.ID && rec["outcome"] == "success" {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: no audit record of %s by the actor: %s", s.action, id, r.Body)
		}
	}
}

// TestLayersWithoutSortOrderGoOnTop: a layer added without sort_order is drawn above the others,
// also after a reorder; a layer changed in place by Update Map keeps what the body leaves out.
func TestLayersWithoutSortOrderGoOnTop(t *testing.T) {
	owner := newUser(t, "editor")
	ds := ogcDataset(t, owner, "private")
	m := call(t, "POST", "/maps/", map[string]any{"name": "Stack", "layers": []any{map[string]any{"dataset_id": ds, "display_name": "a"},
		map[string]any{"dataset_id": ds, "display_name": "b"}, map[string]any{"dataset_id": ds, "display_name": "c"}}}, bearer(owner.Access)...).JSON(t)
	base := "/maps/" + m["id"].(string)
	names := func(doc map[string]any) string {
		var out []string
		for _, l := range mapLayers(t, doc) {
			out = append(out, fmt.Sprintf("%v %v", l["display_name"], l["sort_order"]))
		}
		return strings.Join(out, " ")
	}
	if got := names(m); got != "a 0 b 1 c 2" {
		t.Fatalf("layers of a new map: %s", got)
	}
	l := mapLayers(t, m)
	r := call(t, "PATCH", base+"/layers", map[string]any{"order": []any{l[2]["id"], l[1]["id"], l[0]["id"]}}, bearer(owner.Access)...)
	if got := names(r.JSON(t)); got != "c 0 b 1 a 2" {
		t.Fatalf("after the reorder: %s", got)
	}
	wantStatus(t, "add layer", call(t, "POST", base+"/layers", map[string]any{"dataset_id": ds, "display_name": "d"}, bearer(owner.Access)...), 201)
	r = call(t, "PATCH", base+"/layers", map[string]any{"added": []any{map[string]any{"dataset_id": ds, "display_name": "e"}}}, bearer(owner.Access)...)
	doc := r.JSON(t)
	if got := names(doc); got != "c 0 b 1 a 2 d 3 e 4" {
		t.Fatalf("layers added without sort_order: %s", got)
	}

	// The builder's save names its layers by id; what it leaves out of one stays as it is.
	wantStatus(t, "dim a", call(t, "PATCH", base+"/layers", map[string]any{"updated": []any{map[string]any{"id": l[0]["id"], "opacity": 0.3, "visible": false}}},
		bearer(owner.Access)...), 200)
	var saved []any
	for _, x := range mapLayers(t, doc) {
		saved = append(saved, map[string]any{"id": x["id"], "dataset_id": ds})
	}
	r = call(t, "PUT", base, map[string]any{"layers": saved}, bearer(owner.Access)...)
	wantStatus(t, "save", r, 200)
	for _, x := range mapLayers(t, r.JSON(t)) {
		if x["display_name"] == "a" && (x["opacity"] != 0.3 || x["visible"] != false) {
			t.Fatalf("a layer saved in place lost what the save left out: %v", x)
		}
	}
	if got := names(r.JSON(t)); got != "c 0 b 1 a 2 d 3 e 4" {
		t.Fatalf("after the save: %s", got)
	}
}
