package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// Issue 28: the last escapes and resource bounds of the service, one test per rule.

// embedAnon is the headers of an anonymous page that embeds a map with raw.
func embedAnon(raw string) []string {
	return []string{"X-Embed-Token", raw, "Origin", "https://example.org"}
}

// A grant lets its holder read a restricted dataset, never widen its audience: share links and
// embed tokens lend only what their creator could publish (their own datasets, or public and
// published ones; admins any). Checked when an embed token is made, at each of its uses, and each
// time a share link is opened.
func TestGrantsNeverWidenADatasetsAudience(t *testing.T) {
	owner, grantee := newUser(t, "editor"), newUser(t, "editor")
	grant := func(id string) {
		t.Helper()
		wantStatus(t, "grant", call(t, "POST", "/datasets/"+id+"/grants/", map[string]any{"user_id": grantee.ID, "level": "read"},
			bearer(owner.Access)...), 201)
	}
	restrict := func(id string) {
		t.Helper()
		wantStatus(t, "restrict", call(t, "PATCH", "/datasets/"+id, map[string]any{"visibility": "restricted"}, bearer(owner.Access)...), 200)
		grant(id)
	}
	closed := func(what, raw, id string) {
		t.Helper()
		h := embedAnon(raw)
		wantStatus(t, what+": features", call(t, "GET", "/datasets/"+id+"/features.geojson", nil, h...), 404)
		wantStatus(t, what+": items", call(t, "GET", "/collections/"+id+"/items", nil, h...), 404)
		wantStatus(t, what+": record", call(t, "GET", "/datasets/"+id, nil, h...), 404)
		getTile(t, server.APIRoot, "/tiles/"+id+"/0/0/0.pbf", 404, h...)
		wantStatus(t, what+": tile token", call(t, "GET", "/tiles/token/"+id+"/", nil, h...), 404)
	}
	newMap := func(visibility string, ids ...string) string {
		t.Helper()
		m := call(t, "POST", "/maps/", map[string]any{"name": "Lent " + randomHex(3), "visibility": visibility}, bearer(grantee.Access)...).JSON(t)
		for _, id := range ids {
			wantStatus(t, "add layer", call(t, "POST", "/maps/"+m["id"].(string)+"/layers", map[string]any{"dataset_id": id}, bearer(grantee.Access)...), 201)
		}
		return m["id"].(string)
	}
	embed := func(mapID string, as session) map[string]any {
		t.Helper()
		r := call(t, "POST", "/maps/"+mapID+"/embed-tokens/", map[string]any{"name": "page"}, bearer(as.Access)...)
		wantStatus(t, "embed token", r, 201)
		return r.JSON(t)
	}

	// Made while restricted: the token's scope leaves the dataset out, and nothing of it is read
	// through the token, while the grantee himself still reads it.
	restricted := ogcDataset(t, owner, "public")
	restrict(restricted)
	mapID := newMap("internal", restricted)
	tok := embed(mapID, grantee)
	if slices.Contains(anyStrings(tok["scoped_dataset_ids"]), restricted) {
		t.Fatalf("the grantee's token lends the restricted dataset: %v", tok["scoped_dataset_ids"])
	}
	closed("made while restricted", tok["raw_token"].(string), restricted)
	if m := call(t, "GET", "/maps/"+mapID, nil, embedAnon(tok["raw_token"].(string))...).JSON(t); len(mapLayers(t, m)) != 0 {
		t.Fatalf("the map through the token shows the restricted layer: %v", m)
	}
	wantStatus(t, "the grantee reads it", call(t, "GET", "/datasets/"+restricted+"/features.geojson", nil, bearer(grantee.Access)...), 200)

	// Made while public, restricted afterwards: the token lends it no more (checked at use).
	later := ogcDataset(t, owner, "public")
	tok = embed(newMap("internal", later), grantee)
	raw := tok["raw_token"].(string)
	wantStatus(t, "public features through the token", call(t, "GET", "/datasets/"+later+"/features.geojson", nil, embedAnon(raw)...), 200)
	restrict(later)
	closed("restricted after the token was made", raw, later)

	// A share link of the grantee's public map: the layer of a dataset restricted since is left
	// out, with its columns' sample values and its tile template.
	shared := ogcDataset(t, owner, "public")
	public := ogcDataset(t, owner, "public")
	pub := newMap("public", shared, public)
	link := call(t, "POST", "/maps/"+pub+"/share/", map[string]any{}, bearer(grantee.Access)...)
	wantStatus(t, "share", link, 200)
	token := link.JSON(t)["token"].(string)
	restrict(shared)
	r := call(t, "GET", "/maps/shared/"+url.PathEscape(token), nil)
	wantStatus(t, "shared map", r, 200)
	var ids []string
	for _, l := range mapLayers(t, r.JSON(t)) {
		ids = append(ids, l["dataset_id"].(string))
	}
	if !slices.Equal(ids, []string{public}) {
		t.Fatalf("shared map layers %v, want only the public dataset %s", ids, public)
	}
	columns := len(mapLayers(t, r.JSON(t))[0]["column_info"].([]any))
	if strings.Contains(string(r.Body), shared) || strings.Count(string(r.Body), `"sample_values"`) != columns {
		t.Fatalf("the shared map shows the restricted dataset or its sample values: %s", r.Body)
	}

	// Own datasets: the owner lends their restricted dataset through their own token.
	own := call(t, "POST", "/maps/", map[string]any{"name": "Own " + randomHex(3)}, bearer(owner.Access)...).JSON(t)["id"].(string)
	wantStatus(t, "own layer", call(t, "POST", "/maps/"+own+"/layers", map[string]any{"dataset_id": restricted}, bearer(owner.Access)...), 201)
	tok = embed(own, owner)
	if !slices.Contains(anyStrings(tok["scoped_dataset_ids"]), restricted) {
		t.Fatalf("the owner's token leaves out the owner's dataset: %v", tok["scoped_dataset_ids"])
	}
	wantStatus(t, "the owner's restricted features through the owner's token",
		call(t, "GET", "/datasets/"+restricted+"/features.geojson", nil, embedAnon(tok["raw_token"].(string))...), 200)
}

// Sign out everywhere: all_sessions ends every session of the user, by the refresh credential or
// by a live access token, and the access tokens of those sessions die with them; the user's API
// keys are no session and keep working (spec section 5, rule 6). Without it only the session
// presented ends.
func TestLogoutAllSessionsEndsEverySession(t *testing.T) {
	for _, by := range []string{"refresh_token", "access_token"} {
		t.Run(by, func(t *testing.T) {
			a := newUser(t, "viewer")
			b, c := login(t, a.Username, a.Password), login(t, a.Username, a.Password)
			key, _ := newKey(t, a, "full")
			// Without all_sessions, one session ends and the others stay.
			wantStatus(t, "logout of c", call(t, "POST", "/auth/logout/", map[string]any{"refresh_token": c.Refresh}), 204)
			if code, _ := meName(t, bearer(c.Access)...); code != 401 {
				t.Fatalf("c's access token after its logout: %d", code)
			}
			if code, _ := meName(t, bearer(b.Access)...); code != 200 {
				t.Fatalf("b's access token after c's logout: %d", code)
			}
			body, headers := map[string]any{"all_sessions": true, "refresh_token": a.Refresh}, []string(nil)
			if by == "access_token" {
				body, headers = map[string]any{"all_sessions": true}, bearer(a.Access)
			}
			wantStatus(t, "logout everywhere", call(t, "POST", "/auth/logout/", body, headers...), 204)
			for name, s := range map[string]session{"a": a, "b": b} {
				if code, _ := meName(t, bearer(s.Access)...); code != 401 {
					t.Errorf("%s's access token after signing out everywhere: %d", name, code)
				}
				wantStatus(t, name+"'s refresh token", call(t, "POST", "/auth/refresh/", map[string]any{"refresh_token": s.Refresh}), 401)
			}
			if code, _ := meName(t, apiKey(key)...); code != 200 {
				t.Errorf("API key after signing out everywhere: %d, want 200", code)
			}
			login(t, a.Username, a.Password) // signing in again opens a new session
		})
	}
}

// A signed tile template stops serving the moment its dataset's audience narrows (a grant
// removed, a lower visibility), not when it expires; templates issued afterwards serve, and a
// change that narrows nothing (a title, a wider visibility) keeps the old ones.
func TestSignedTilesEndWhenTheAudienceNarrows(t *testing.T) {
	owner, grantee := newUser(t, "editor"), newUser(t, "viewer")
	tile := func(id string, tok map[string]any, want int) {
		t.Helper()
		getTile(t, server.APIRoot, "/tiles/"+id+"/0/0/0.pbf?"+signedQuery(tok), want)
	}

	restricted := ogcDataset(t, owner, "restricted")
	g := call(t, "POST", "/datasets/"+restricted+"/grants/", map[string]any{"user_id": grantee.ID, "level": "read"}, bearer(owner.Access)...)
	wantStatus(t, "grant", g, 201)
	theirs := tileToken(t, restricted, bearer(grantee.Access)...)
	tile(restricted, theirs, 200)
	wantStatus(t, "revoke the grant", call(t, "DELETE", "/datasets/"+restricted+"/grants/"+g.JSON(t)["id"].(string), nil, bearer(owner.Access)...), 204)
	tile(restricted, theirs, 404)
	fresh := tileToken(t, restricted, bearer(owner.Access)...)
	if fresh["exp"].(float64) <= theirs["exp"].(float64) {
		t.Fatalf("a template issued after the narrowing shares the void one's expiry: %v, %v", fresh, theirs)
	}
	tile(restricted, fresh, 200)

	public := ogcDataset(t, owner, "internal")
	before := tileToken(t, public, bearer(grantee.Access)...)
	wantStatus(t, "widen to public", call(t, "PATCH", "/datasets/"+public, map[string]any{"visibility": "public"}, bearer(owner.Access)...), 200)
	wantStatus(t, "retitle", call(t, "PATCH", "/datasets/"+public, map[string]any{"title": "Renamed " + randomHex(2)}, bearer(owner.Access)...), 200)
	tile(public, before, 200)
	anon := tileToken(t, public)
	tile(public, anon, 200)
	wantStatus(t, "make private", call(t, "PATCH", "/datasets/"+public, map[string]any{"visibility": "private"}, bearer(owner.Access)...), 200)
	tile(public, anon, 404)
	tile(public, before, 404)
	tile(public, tileToken(t, public, bearer(owner.Access)...), 200)
}

// iconPNG is a distinct w x h PNG: a line placed after i.
func iconPNG(t *testing.T, w, h, i int) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for x := range w {
		img.Set(x, i%h, color.NRGBA{R: uint8(i), G: uint8(i >> 8), B: 200, A: 255})
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func uploadIconAt(t *testing.T, hc *http.Client, root, token string, data []byte) reply {
	t.Helper()
	return postFileAt(t, hc, root+"/maps/icons", token, "icon.png", data)
}

// Icons have quotas (settings map_icons.*: count and raster pixels, per user and in all), which
// refuse a new icon with 422 naming the setting and touch nothing stored; their uploader or an
// admin deletes them, which makes room. The sprite sheet is built once per icon set, by the
// request that changed it, and stored: anonymous readers load it and never build it.
func TestIconQuotasDeletionAndTheSpriteBuiltOnce(t *testing.T) {
	s := startFresh(t, "RATE_LIMIT_ENABLED=false")
	hc := contractAt(t, s)
	adm := loginAt(t, hc, s.APIRoot, "admin", AdminPassword)
	wantStatus(t, "quotas", callAt(t, hc, s.APIRoot, "PUT", "/settings/", map[string]any{"settings": map[string]any{
		"map_icons.max_per_user": 2, "map_icons.max_total": 4, "map_icons.max_pixels_per_user": 512 * 512}}, bearer(adm)...), 200)
	a, b, c := newUserAt(t, hc, s.APIRoot, adm, "editor"), newUserAt(t, hc, s.APIRoot, adm, "editor"), newUserAt(t, hc, s.APIRoot, adm, "editor")
	conn := connect(t, s.DBURL)
	ctx := context.Background()
	sprite := func() (set, built int64, builtAt time.Time) {
		t.Helper()
		if err := conn.QueryRow(ctx, `SELECT v.version, s.icon_set, s.built_at FROM catalog.map_icon_set v, catalog.map_sprite s`).
			Scan(&set, &built, &builtAt); err != nil {
			t.Fatal(err)
		}
		return set, built, builtAt
	}
	upload := func(token string, data []byte, want int, detail ...string) string {
		t.Helper()
		r := uploadIconAt(t, hc, s.APIRoot, token, data)
		wantStatus(t, "upload", r, want, detail...)
		if want != 201 {
			return ""
		}
		// The request that changed the icon set built its sheet before it answered.
		if set, built, _ := sprite(); set != built {
			t.Fatalf("icon set %d, sheet built from %d", set, built)
		}
		return r.JSON(t)["id"].(string)
	}
	first := upload(a, iconPNG(t, 64, 64, 1), 201)
	upload(a, iconPNG(t, 64, 64, 2), 201)
	upload(a, iconPNG(t, 64, 64, 3), 422, "map_icons.max_per_user")
	upload(b, iconPNG(t, 512, 512, 4), 201)
	upload(b, iconPNG(t, 8, 8, 5), 422, "map_icons.max_pixels_per_user")
	upload(c, iconPNG(t, 8, 8, 6), 201)
	upload(c, iconPNG(t, 8, 8, 7), 422, "map_icons.max_total")
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM catalog.map_icons`).Scan(&n); err != nil || n != 4 {
		t.Fatalf("icons stored: %d %v", n, err)
	}

	// Anonymous readers load the stored sheet: none of them builds it again.
	_, _, builtAt := sprite()
	for range 3 {
		idx := callAt(t, hc, s.APIRoot, "GET", "/maps/sprites/service.json", nil).JSON(t)
		if _, ok := idx["icon-"+first]; !ok || len(idx) != 4 {
			t.Fatalf("sprite index: %v", idx)
		}
		wantStatus(t, "sheet", callAt(t, hc, s.APIRoot, "GET", "/maps/sprites/service.png", nil), 200)
	}
	if _, _, again := sprite(); !again.Equal(builtAt) {
		t.Fatalf("readers built the sheet again: %v, then %v", builtAt, again)
	}

	wantStatus(t, "anonymous delete", callAt(t, hc, s.APIRoot, "DELETE", "/maps/icons/"+first, nil), 401)
	wantStatus(t, "another user's icon", callAt(t, hc, s.APIRoot, "DELETE", "/maps/icons/"+first, nil, bearer(c)...), 403)
	wantStatus(t, "unknown icon", callAt(t, hc, s.APIRoot, "DELETE", "/maps/icons/"+uuid.NewString(), nil, bearer(a)...), 404)
	wantStatus(t, "own icon", callAt(t, hc, s.APIRoot, "DELETE", "/maps/icons/"+first, nil, bearer(a)...), 204)
	wantStatus(t, "its asset", callAt(t, hc, s.APIRoot, "GET", "/maps/icons/"+first+"/asset", nil), 404)
	if idx := callAt(t, hc, s.APIRoot, "GET", "/maps/sprites/service.json", nil).JSON(t); len(idx) != 3 || idx["icon-"+first] != nil {
		t.Fatalf("sprite index after the deletion: %v", idx)
	}
	upload(a, iconPNG(t, 64, 64, 3), 201) // room again
}

// PostgreSQL cannot store NUL in text: a request that holds it anywhere (a JSON string or key, a
// form field, a query or path parameter) is refused with 422 by the request validation (400 on
// the OGC API), before any handler, instead of failing as a server error in whichever statement
// met it first. The text "\u0000" itself (an escaped backslash) is ordinary text.
func TestNULIsRefusedBeforeAnyHandler(t *testing.T) {
	u := newUser(t, "editor")
	ds := createDataset(t, u, "private", false)["id"].(string)
	cases := []struct {
		name, method, path string
		body               any
		headers            []string
		want               int
	}{
		{"map name", "POST", "/maps/", `{"name": "a\u0000b"}`, bearer(u.Access), 422},
		{"nested map member", "POST", "/maps/", `{"name": "ok", "basemap_config": {"label": "x\u0000"}}`, bearer(u.Access), 422},
		{"metadata", "PATCH", "/datasets/" + ds, `{"summary": "\u0000"}`, bearer(u.Access), 422},
		{"object key", "POST", "/search/saved/", `{"name": "s", "params": {"q\u0000": "x"}}`, bearer(u.Access), 422},
		{"form field", "POST", "/auth/login", url.Values{"username": {"ad\x00min"}, "password": {"x"}}, nil, 422},
		{"query parameter", "GET", "/maps/icons?q=%00", nil, bearer(u.Access), 422},
		{"OGC query parameter", "GET", "/collections/" + ds + "/items?filter=name%3D%27%00%27", nil, bearer(u.Access), 400},
		{"escaped backslash", "POST", "/maps/", `{"name": "a\\u0000b"}`, bearer(u.Access), 201},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := call(t, c.method, c.path, c.body, c.headers...)
			if c.want == 201 {
				wantStatus(t, c.name, r, 201)
				if r.JSON(t)["name"] != `a\u0000b` {
					t.Fatalf("name stored as %v", r.JSON(t)["name"])
				}
				return
			}
			wantStatus(t, c.name, r, c.want)
			if !strings.Contains(string(r.Body), "NUL") {
				t.Fatalf("the problem does not name the NUL character: %s", r.Body)
			}
		})
	}
}

// A distribution URL's scheme is case-insensitive: HTTPS:// is accepted and stored lower case
// (it answered 500 from the table's check), on creation and on update.
func TestDistributionSchemesInAnyCase(t *testing.T) {
	owner := newUser(t, "editor")
	record := createDataset(t, owner, "public", true)["record_id"].(string)
	r := call(t, "POST", "/records/"+record+"/distributions/", map[string]any{"distribution_type": "download", "format": "GPKG",
		"url": "HTTPS://Data.Example.org/A.gpkg"}, bearer(owner.Access)...)
	wantStatus(t, "upper-case scheme", r, 201)
	if got := r.JSON(t)["url"]; got != "https://Data.Example.org/A.gpkg" {
		t.Fatalf("stored url %v", got)
	}
	id := r.JSON(t)["id"].(string)
	u := call(t, "PATCH", "/records/"+record+"/distributions/"+id+"/", map[string]any{"url": "Http://data.example.org/b.gpkg"}, bearer(owner.Access)...)
	wantStatus(t, "update with a mixed-case scheme", u, 200)
	if got := u.JSON(t)["url"]; got != "http://data.example.org/b.gpkg" {
		t.Fatalf("updated url %v", got)
	}
	wantStatus(t, "another scheme in upper case", call(t, "POST", "/records/"+record+"/distributions/", map[string]any{
		"distribution_type": "download", "format": "GPKG", "url": "FTP://data.example.org/a.gpkg"}, bearer(owner.Access)...), 422)
}

// source_url and a keyword's vocabulary_uri are absolute http(s) URLs: javascript:, file:,
// data: and relative references answer 422, and nothing is stored.
func TestSourceAndVocabularyURLsAreHTTP(t *testing.T) {
	owner := newUser(t, "editor")
	d := createDataset(t, owner, "public", true)
	id, record := d["id"].(string), d["record_id"].(string)
	for _, bad := range []string{"javascript:alert(1)", "JavaScript://%0aalert(1)", "file:///etc/passwd", "data:text/html,x", "/relative", "https://", "http:/x"} {
		wantStatus(t, "source_url "+bad, call(t, "PATCH", "/datasets/"+id, map[string]any{"source_url": bad}, bearer(owner.Access)...), 422)
		wantStatus(t, "vocabulary_uri "+bad, call(t, "POST", "/records/"+record+"/keywords/", map[string]any{"keyword": "k" + randomHex(2),
			"vocabulary_uri": bad}, bearer(owner.Access)...), 422)
	}
	if got := call(t, "GET", "/datasets/"+id, nil, bearer(owner.Access)...).JSON(t)["source_url"]; got != nil {
		t.Fatalf("a refused source_url was stored: %v", got)
	}
	if kw := call(t, "GET", "/records/"+record+"/keywords/", nil, bearer(owner.Access)...).JSON(t); kw["total"] != float64(0) {
		t.Fatalf("a refused keyword was stored: %v", kw)
	}
	for _, good := range []string{"https://data.example.org/source?x=1#top", "HTTP://example.org"} {
		wantStatus(t, "source_url "+good, call(t, "PATCH", "/datasets/"+id, map[string]any{"source_url": good}, bearer(owner.Access)...), 200)
		wantStatus(t, "vocabulary_uri "+good, call(t, "POST", "/records/"+record+"/keywords/", map[string]any{"keyword": "k" + randomHex(2),
			"vocabulary_uri": good}, bearer(owner.Access)...), 201)
	}
}

// Saved searches have quotas (settings saved_searches.*): params of at most max_params_bytes as
// JSON (422) and max_per_user searches per user (409), each refusal naming its setting; nothing
// stored is lost, and deleting one makes room.
func TestSavedSearchQuotas(t *testing.T) {
	adm, u := admin(t), newUser(t, "viewer")
	set := func(v any) {
		t.Helper()
		wantStatus(t, "quota", call(t, "PUT", "/settings/", map[string]any{"settings": map[string]any{"saved_searches.max_per_user": v}},
			bearer(adm.Access)...), 200)
	}
	set(3)
	t.Cleanup(func() { set(nil) })
	save := func(params map[string]any, want int, detail ...string) reply {
		t.Helper()
		r := call(t, "POST", "/search/saved/", map[string]any{"name": "s", "params": params}, bearer(u.Access)...)
		wantStatus(t, "save", r, want, detail...)
		return r
	}
	save(map[string]any{"q": strings.Repeat("x", 17000)}, 422, "saved_searches.max_params_bytes")
	save(map[string]any{"q": strings.Repeat("x", 16000)}, 201)
	first := save(map[string]any{"q": "a"}, 201).JSON(t)["id"].(string)
	save(map[string]any{"q": "b"}, 201)
	save(map[string]any{"q": "c"}, 409, "saved_searches.max_per_user")
	if l := call(t, "GET", "/search/saved/", nil, bearer(u.Access)...).JSON(t); l["total"] != float64(3) {
		t.Fatalf("saved searches after the refusals: %v", l["total"])
	}
	wantStatus(t, "delete one", call(t, "DELETE", "/search/saved/"+first, nil, bearer(u.Access)...), 204)
	save(map[string]any{"q": "c"}, 201)
}

// No existence oracle: for a caller who may not see a dataset, every dataset-addressed GET
// answers a private dataset exactly as an id nobody uses (status and detail, the id itself aside
// when it is echoed), anonymously and signed in, and so does each entry of the batch tile tokens.
func TestPrivateAndUnknownDatasetsAnswerAlike(t *testing.T) {
	owner, other := newUser(t, "editor"), newUser(t, "editor")
	private := ogcDataset(t, owner, "private")
	record := call(t, "GET", "/datasets/"+private, nil, bearer(owner.Access)...).JSON(t)["record_id"].(string)
	unknown, unknownRecord := uuid.NewString(), uuid.NewString()
	paths := []string{
		"/datasets/{id}", "/datasets/{id}/history", "/datasets/{id}/quicklook", "/datasets/{id}/refresh-runs",
		"/datasets/{id}/export?format=geojson", "/datasets/{id}/maps/", "/datasets/{id}/rows/", "/datasets/{id}/related/",
		"/datasets/{id}/validate/", "/datasets/{id}/download/cog", "/datasets/{id}/dcat/", "/datasets/{id}/dcat-us/3.0/",
		"/datasets/{id}/geodcat-ap/", "/datasets/{id}/dcat/validation/", "/datasets/{id}/dcat-us/3.0/validation/",
		"/datasets/{id}/geodcat-ap/validation/", "/datasets/{id}/attributes/", "/datasets/{id}/attributes/{other}/",
		"/datasets/{id}/columns/name/stats/", "/datasets/{id}/columns/name/values/", "/datasets/{id}/versions/",
		"/datasets/{id}/relationships/", "/datasets/{id}/features/1/related/{other}/", "/datasets/{id}/vrt/status/",
		"/datasets/{id}/vrt/generations/", "/datasets/{id}/vrt-sources/", "/jobs/by-dataset/{id}",
		"/audit/datasets/{id}/column-ddl", "/layers/{id}/columns/name/references", "/datasets/{id}/grants/",
		"/records/{id}/contacts/", "/records/{id}/distributions/", "/records/{id}/keywords/", "/records/{id}/translations/",
		"/records/{record}/contacts/", "/records/{record}/keywords/", "/collections/datasets/items/{id}",
		"/collections/datasets/items/{record}", "/collections/{id}", "/collections/{id}/items", "/collections/{id}/items/1",
		"/collections/{id}/queryables", "/collections/{id}/sortables", "/collections/{id}/schema", "/datasets/{id}/features/",
		"/datasets/{id}/features/1", "/datasets/{id}/features.geojson", "/stac/collections/{id}", "/stac/collections/{id}/items",
		"/stac/collections/{id}/items/1", "/tiles/{id}/0/0/0.pbf", "/tiles/clusters/{id}/0/0/0.pbf",
		"/tiles/raster-proxy/{id}/0/0/0.png", "/tiles/token/{id}/",
	}
	other2 := uuid.NewString()
	answer := func(path, id, rec string, headers []string) (int, string) {
		t.Helper()
		p := strings.NewReplacer("{id}", id, "{record}", rec, "{other}", other2).Replace(path)
		r := callAt(t, http.DefaultClient, server.APIRoot, "GET", p, nil, headers...)
		detail := string(r.Body)
		if strings.HasPrefix(r.Header.Get("Content-Type"), "application/problem+json") {
			var pr map[string]any
			_ = json.Unmarshal(r.Body, &pr)
			b, _ := json.Marshal(pr["detail"])
			detail = string(b)
		}
		return r.Status, strings.NewReplacer(id, "{id}", rec, "{record}").Replace(detail)
	}
	for who, headers := range map[string][]string{"anonymous": nil, "signed in": bearer(other.Access)} {
		for _, path := range paths {
			ps, pd := answer(path, private, record, headers)
			us, ud := answer(path, unknown, unknownRecord, headers)
			if ps != us || pd != ud {
				t.Errorf("%s GET %s: private %d %s, unknown %d %s", who, path, ps, pd, us, ud)
			}
			if ps < 400 {
				t.Errorf("%s GET %s: the private dataset answered %d", who, path, ps)
			}
		}
		b := call(t, "POST", "/tiles/tokens/", map[string]any{"dataset_ids": []string{private, unknown}}, headers...)
		if b.Status == 200 {
			tokens := b.JSON(t)["tokens"].(map[string]any)
			pe, _ := json.Marshal(tokens[private])
			ue, _ := json.Marshal(tokens[unknown])
			if strings.ReplaceAll(string(pe), private, "{id}") != strings.ReplaceAll(string(ue), unknown, "{id}") {
				t.Errorf("%s batch tile tokens: private %s, unknown %s", who, pe, ue)
			}
		}
	}
}
