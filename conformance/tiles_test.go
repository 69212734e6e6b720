package conformance

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// Tiles tag: signed templates, vector and cluster tiles decoded, visibility, caching.

// serverSecret is the JWT secret the shared server runs with, which also signs its tile templates.
func serverSecret(t *testing.T, s *Server) string {
	t.Helper()
	for i := len(s.env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(s.env[i], "JWT_SECRET_KEY="); ok {
			return v
		}
	}
	t.Fatal("the server has no JWT_SECRET_KEY")
	return ""
}

func signTile(secret, scope string, exp int64) string {
	m := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(m, "%s:%d", scope, exp)
	return hex.EncodeToString(m.Sum(nil))
}

// tileToken asks for the vector token of dataset id.
func tileToken(t *testing.T, id string, headers ...string) map[string]any {
	t.Helper()
	r := call(t, "GET", "/tiles/token/"+id+"/", nil, headers...)
	if r.Status != 200 {
		t.Fatalf("tile token: %d %s", r.Status, r.Body)
	}
	return r.JSON(t)
}

func signedQuery(tok map[string]any) string {
	return "sig=" + tok["sig"].(string) + "&exp=" + strconv.FormatInt(int64(tok["exp"].(float64)), 10) + "&scope=" + url.QueryEscape(tok["scope"].(string))
}

// getTile fetches a tile and decodes it; a 204 is no layer.
func getTile(t *testing.T, root, path string, want int, headers ...string) (reply, []mvtLayer) {
	t.Helper()
	hc := httpc
	if root != server.APIRoot {
		hc = http.DefaultClient // the contract check knows the shared server only
	}
	r := callAt(t, hc, root, "GET", path, nil, headers...)
	if r.Status != want {
		t.Fatalf("GET %s: %d, want %d: %s", path, r.Status, want, r.Body)
	}
	if r.Status != 200 {
		return r, nil
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/vnd.mapbox-vector-tile" {
		t.Fatalf("tile content type %q", ct)
	}
	return r, decodeMVT(t, r.Body)
}

func TestSignedVectorTiles(t *testing.T) {
	owner := newUser(t, "editor")
	id := ogcDataset(t, owner, "private")
	rec := call(t, "GET", "/datasets/"+id, nil, bearer(owner.Access)...).JSON(t)
	table := rec["table_name"].(string)

	// The token: exp on a 900-second boundary, at least a minute away, signed as open-points says.
	before := time.Now().Unix()
	tok := tileToken(t, id, bearer(owner.Access)...)
	exp := int64(tok["exp"].(float64))
	if tok["kind"] != "vector" || tok["scope"] != table || exp%900 != 0 || exp-before < 60 || exp-before > 3600+900+60 ||
		int64(tok["expires_in"].(float64)) < exp-time.Now().Unix()-1 || tok["sig"] != signTile(serverSecret(t, server), table, exp) {
		t.Fatalf("token %v (issued at %d)", tok, before)
	}
	// The desktop plugin's template: data.{scope}, no credential.
	signed := signedQuery(tok)
	r, layers := getTile(t, server.APIRoot, "/tiles/data."+table+"/0/0/0.pbf?"+signed, 200)
	if len(layers) != 1 || layers[0].Name != "data."+table || layers[0].Extent != 4096 || len(layers[0].Features) != 30 {
		t.Fatalf("tile layers: %+v", layers)
	}
	var ids []int
	for _, f := range layers[0].Features {
		if f.ID == nil || f.Type != 1 || len(f.Props) != 0 {
			t.Fatalf("feature without id, not a point, or with properties nobody asked for: %+v", f)
		}
		ids = append(ids, int(*f.ID))
	}
	slices.Sort(ids)
	if ids[0] != 1 || ids[29] != 30 {
		t.Fatalf("feature ids %v", ids)
	}
	// The dataset is private: no shared cache may keep its tiles, which it would hand to anyone.
	if cc := r.Header.Get("Cache-Control"); !strings.HasPrefix(cc, "private, max-age=") || r.Header.Get("ETag") == "" {
		t.Fatalf("cache headers of a signed tile of a private dataset: %q %q", cc, r.Header.Get("ETag"))
	}
	// Place 00 lies at (-170, -40): x = 10/360 of the extent at zoom 0.
	for _, f := range layers[0].Features {
		if *f.ID == 1 && (f.X < 112 || f.X > 116) {
			t.Fatalf("place 00 at x=%d, want about 114", f.X)
		}
	}

	// The dataset id as path, and chosen columns as properties.
	_, layers = getTile(t, server.APIRoot, "/tiles/"+id+"/0/0/0.pbf?cols=name,rank&"+signed, 200)
	for _, f := range layers[0].Features {
		if *f.ID == 3 && (f.Props["name"] != "place 02" || f.Props["rank"] != int64(2) || len(f.Props) != 2) {
			t.Fatalf("properties of feature 3: %v", f.Props)
		}
	}
	// From zoom 10 the tile_columns of the record are the default; below it, geometry only.
	if r := call(t, "PATCH", "/datasets/"+id, map[string]any{"tile_columns": []string{"kind"}}, bearer(owner.Access)...); r.Status != 200 {
		t.Fatalf("set tile_columns: %d %s", r.Status, r.Body)
	}
	x, y := tileAt(-170, -40, 10)
	_, layers = getTile(t, server.APIRoot, fmt.Sprintf("/tiles/data.%s/10/%d/%d.pbf?%s", table, x, y, signed), 200)
	if f := layers[0].Features[0]; len(f.Props) != 1 || f.Props["kind"] != "town" {
		t.Fatalf("default properties at z10 after tile_columns: %v", f.Props)
	}
	r, layers = getTile(t, server.APIRoot, "/tiles/data."+table+"/0/0/0.pbf?"+signed, 200)
	if f := layers[0].Features[0]; len(f.Props) != 0 {
		t.Fatalf("default properties at z0 after tile_columns: %v", f.Props)
	}

	// 304 for the ETag held; another tile of the same dataset is another ETag.
	etag := r.Header.Get("ETag")
	getTile(t, server.APIRoot, "/tiles/data."+table+"/0/0/0.pbf?"+signed, 304, "If-None-Match", etag)
	r2, _ := getTile(t, server.APIRoot, "/tiles/data."+table+"/1/0/1.pbf?"+signed, 200)
	if r2.Header.Get("ETag") == etag {
		t.Fatal("two tiles share an ETag")
	}
	// An empty tile: 204 without a body. (z10 over the South Pacific.)
	getTile(t, server.APIRoot, "/tiles/data."+table+"/10/20/700.pbf?"+signed, 204)

	// An edit shows in the next tile, under a new ETag.
	add := call(t, "POST", "/datasets/"+id+"/features/", map[string]any{"geometry": point(10, 10), "properties": map[string]any{"name": "new"}}, bearer(owner.Access)...)
	wantStatus(t, "add a feature", add, 201)
	r3, layers := getTile(t, server.APIRoot, "/tiles/data."+table+"/0/0/0.pbf?"+signed, 200, "If-None-Match", etag)
	if len(layers[0].Features) != 31 || r3.Header.Get("ETag") == etag {
		t.Fatalf("after an edit: %d features, ETag %s (was %s)", len(layers[0].Features), r3.Header.Get("ETag"), etag)
	}
}

func TestTileAuthorization(t *testing.T) {
	owner, viewer, other := newUser(t, "editor"), newUser(t, "viewer"), newUser(t, "viewer")
	private := ogcDataset(t, owner, "private")
	public := ogcDataset(t, owner, "public")
	restricted := ogcDataset(t, owner, "restricted")
	if r := call(t, "POST", "/datasets/"+restricted+"/grants/", map[string]any{"user_id": viewer.ID, "level": "read"}, bearer(owner.Access)...); r.Status != 201 {
		t.Fatalf("grant: %d %s", r.Status, r.Body)
	}
	tok := tileToken(t, private, bearer(owner.Access)...)
	scope, exp := tok["scope"].(string), int64(tok["exp"].(float64))
	path := "/tiles/data." + scope + "/0/0/0.pbf"
	secret := serverSecret(t, server)
	cases := []struct {
		name    string
		path    string
		headers []string
		want    int
	}{
		{"signed, anonymous", path + "?" + signedQuery(tok), nil, 200},
		{"signed beside a dead bearer token (rule 4b)", path + "?" + signedQuery(tok), bearer("not-a-token"), 200},
		{"dead bearer token, unsigned", path, bearer("not-a-token"), 401},
		{"anonymous, unsigned", path, nil, 404},
		{"forged signature", path + "?sig=" + strings.Repeat("0", 64) + "&exp=" + strconv.FormatInt(exp, 10) + "&scope=" + scope, nil, 404},
		{"expired signature", path + "?sig=" + signTile(secret, scope, 1000) + "&exp=1000&scope=" + scope, nil, 404},
		{"signature of another dataset", "/tiles/" + public + "/0/0/0.pbf?" + signedQuery(tok), bearer(other.Access), 200}, // public anyway
		{"signature of another dataset, private target", "/tiles/" + restricted + "/0/0/0.pbf?" + signedQuery(tok), nil, 404},
		{"owner by credential", path, bearer(owner.Access), 200},
		{"viewer of a private dataset", path, bearer(viewer.Access), 404},
		{"anonymous, public", "/tiles/" + public + "/0/0/0.pbf", nil, 200},
		{"granted viewer, restricted", "/tiles/" + restricted + "/0/0/0.pbf", bearer(viewer.Access), 200},
		{"viewer without grant, restricted", "/tiles/" + restricted + "/0/0/0.pbf", bearer(other.Access), 404},
		{"a table that is no dataset", "/tiles/data.no_such_table/0/0/0.pbf", nil, 404},
		{"a path that is neither", "/tiles/nonsense/0/0/0.pbf", nil, 404},
		{"z beyond 24", path + "?" + signedQuery(tok), nil, 200},
	}
	cases[len(cases)-1].path = "/tiles/data." + scope + "/25/0/0.pbf?" + signedQuery(tok)
	cases[len(cases)-1].want = 422 // the contract's bound
	for _, c := range cases {
		r, _ := getTile(t, server.APIRoot, c.path, c.want, c.headers...)
		if c.want >= 400 && !strings.HasPrefix(r.Header.Get("Content-Type"), "application/problem+json") {
			t.Fatalf("%s: %d without a problem body", c.name, r.Status)
		}
	}
	getTile(t, server.APIRoot, "/tiles/data."+scope+"/1/2/0.pbf?"+signedQuery(tok), 400)
	getTile(t, server.APIRoot, "/tiles/"+public+"/0/0/0.pbf?cols=name,no_such_column", 400)
	getTile(t, server.APIRoot, "/tiles/"+public+"/0/0/0.pbf?filter=rank%20%3E", 400)
	_, layers := getTile(t, server.APIRoot, "/tiles/"+public+"/0/0/0.pbf?filter=rank%20%3C%205", 200)
	if len(layers[0].Features) != 5 {
		t.Fatalf("filtered tile: %d features, want 5", len(layers[0].Features))
	}
	// Public tiles revalidate in shared caches; a credential's tile stays private.
	r, _ := getTile(t, server.APIRoot, "/tiles/"+public+"/0/0/0.pbf", 200)
	r2, _ := getTile(t, server.APIRoot, path, 200, bearer(owner.Access)...)
	if r.Header.Get("Cache-Control") != "public, no-cache" || r2.Header.Get("Cache-Control") != "private, no-cache" {
		t.Fatalf("Cache-Control: public %q, private %q", r.Header.Get("Cache-Control"), r2.Header.Get("Cache-Control"))
	}

	// Tokens follow read access; the batch answers each id once, failures among the tokens (and
	// again in errors).
	missing := uuid.NewString()
	b := call(t, "POST", "/tiles/tokens/", map[string]any{"dataset_ids": []string{private, public, private, missing}}, bearer(viewer.Access)...)
	wantStatus(t, "batch", b, 200)
	out := b.JSON(t)
	tokens, errs := out["tokens"].(map[string]any), out["errors"].(map[string]any)
	failed := func(id string, status int) bool {
		e, _ := tokens[id].(map[string]any)
		detail, _ := e["error"].(string)
		return detail != "" && e["status"] == float64(status) && e["sig"] == nil && errs[id].(map[string]any)["status"] == float64(status)
	}
	if len(tokens) != 3 || tokens[public].(map[string]any)["kind"] != "vector" || len(errs) != 2 || !failed(private, 404) || !failed(missing, 404) {
		t.Fatalf("batch: %s", b.Body)
	}
	many := make([]string, 51)
	for i := range many {
		many[i] = uuid.NewString()
	}
	for _, ids := range [][]string{{}, many} {
		if r := call(t, "POST", "/tiles/tokens/", map[string]any{"dataset_ids": ids}, bearer(viewer.Access)...); r.Status != 400 && r.Status != 422 {
			t.Fatalf("batch of %d ids: %d %s", len(ids), r.Status, r.Body)
		}
	}
}

// tileAt is the z/x/y tile of web mercator that holds lon, lat.
func tileAt(lon, lat float64, z int) (x, y int) {
	n := math.Exp2(float64(z))
	phi := lat * math.Pi / 180
	return int((lon + 180) / 360 * n), int((1 - math.Log(math.Tan(phi)+1/math.Cos(phi))/math.Pi) / 2 * n)
}

// clusterPoints is a GeoJSON of n points in a small square around (lon, lat).
func clusterPoints(n int, lon, lat float64) []byte {
	var b strings.Builder
	b.WriteString(`{"type":"FeatureCollection","features":[`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"type":"Feature","properties":{"name":"p%d"},"geometry":{"type":"Point","coordinates":[%g,%g]}}`,
			i, lon+float64(i%40)*0.01, lat+float64(i/40)*0.01)
	}
	b.WriteString("]}")
	return []byte(b.String())
}

func TestClusterTiles(t *testing.T) {
	owner := newUser(t, "editor")
	id := ogcDataset(t, owner, "public")
	base := "/tiles/clusters/" + id

	// One cell for the whole world: one cluster of all 30 places, no id.
	_, layers := getTile(t, server.APIRoot, base+"/0/0/0.pbf?cluster_radius=256&cluster_max_zoom=4", 200)
	if f := layers[0].Features; len(f) != 1 || f[0].ID != nil || f[0].Props["cluster"] != true || f[0].Props["point_count"] != int64(30) ||
		f[0].Props["point_count_abbreviated"] != "30" {
		t.Fatalf("one-cell cluster tile: %+v", layers)
	}
	// Cells of one pixel: every place alone, with its id and columns.
	_, layers = getTile(t, server.APIRoot, base+"/0/0/0.pbf?cluster_radius=1&cols=name", 200)
	if f := layers[0].Features; len(f) != 30 || f[0].ID == nil || f[0].Props["name"] == nil || f[0].Props["cluster"] != nil {
		t.Fatalf("one-pixel cells: %d features, first %+v", len(f), f[0])
	}
	// Above cluster_max_zoom: the plain tile.
	_, layers = getTile(t, server.APIRoot, base+"/1/0/1.pbf?cluster_radius=256&cluster_max_zoom=0", 200)
	for _, f := range layers[0].Features {
		if f.Props["cluster"] != nil || f.ID == nil {
			t.Fatalf("tile above cluster_max_zoom holds a cluster: %+v", f)
		}
	}
	getTile(t, server.APIRoot, base+"/0/0/0.pbf?cluster_radius=0", 422)
	getTile(t, server.APIRoot, base+"/0/0/0.pbf?cluster_max_zoom=23", 422)

	// Counts of a thousand and more are abbreviated as map clients label them.
	job := importFile(t, owner, "dense.geojson", clusterPoints(1234, 8.5, 47.3), map[string]any{"title": "Dense " + randomHex(3)})
	dense := job["dataset_id"].(string)
	publishAs(t, owner, dense, "public")
	_, layers = getTile(t, server.APIRoot, "/tiles/clusters/"+dense+"/0/0/0.pbf?cluster_radius=256", 200)
	if f := layers[0].Features; len(f) != 1 || f[0].Props["point_count"] != int64(1234) || f[0].Props["point_count_abbreviated"] != "1.2k" {
		t.Fatalf("dense cluster: %+v", layers)
	}
}

// TestTilesFollowChangesMadeOnAnotherReplica: a server answers repeated tiles from memory; a
// change made through another server reaches it through PostgreSQL's notification.
func TestTilesFollowChangesMadeOnAnotherReplica(t *testing.T) {
	owner := newUser(t, "editor")
	id := ogcDataset(t, owner, "public")
	second, err := Start(context.Background(), server.DBURL, "RATE_LIMIT_ENABLED=false", "TILE_SIGNING_SECRET="+serverSecret(t, server))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(second.Stop)
	tok := tileToken(t, id)
	signed := "/tiles/" + id + "/0/0/0.pbf?" + signedQuery(tok)
	anon := "/tiles/" + id + "/0/0/0.pbf"
	for range 2 { // the second read comes from the cache
		if _, l := getTile(t, second.APIRoot, signed, 200); len(l[0].Features) != 30 {
			t.Fatalf("second server: %d features", len(l[0].Features))
		}
		getTile(t, second.APIRoot, anon, 200)
	}
	// eventually polls the second server until check holds; PostgreSQL delivers notifications
	// in milliseconds, so a second is generous.
	eventually := func(what string, check func() bool) {
		t.Helper()
		for deadline := time.Now().Add(2 * time.Second); !check(); {
			if time.Now().After(deadline) {
				t.Fatalf("the second server never saw %s", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	add := call(t, "POST", "/datasets/"+id+"/features/", map[string]any{"geometry": point(1, 1), "properties": map[string]any{}}, bearer(owner.Access)...)
	wantStatus(t, "add a feature", add, 201)
	eventually("the new feature", func() bool {
		r := callAt(t, http.DefaultClient, second.APIRoot, "GET", signed, nil)
		return r.Status == 200 && len(decodeMVT(t, r.Body)[0].Features) == 31
	})
	if r := call(t, "PATCH", "/datasets/"+id, map[string]any{"visibility": "private"}, bearer(owner.Access)...); r.Status != 200 {
		t.Fatalf("make private: %d", r.Status)
	}
	eventually("the dataset turn private", func() bool {
		return callAt(t, http.DefaultClient, second.APIRoot, "GET", anon, nil).Status == 404
	})
	// The anonymous caller's template ends with the audience it was issued to (issue 28); the
	// owner's new one serves on the other server too.
	eventually("the template issued before turn void", func() bool {
		return callAt(t, http.DefaultClient, second.APIRoot, "GET", signed, nil).Status == 404
	})
	signed = "/tiles/" + id + "/0/0/0.pbf?" + signedQuery(tileToken(t, id, bearer(owner.Access)...))
	getTile(t, second.APIRoot, signed, 200)
	if r := call(t, "DELETE", "/datasets/"+id, nil, bearer(owner.Access)...); r.Status != 200 && r.Status != 204 {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	eventually("the dataset go", func() bool {
		return callAt(t, http.DefaultClient, second.APIRoot, "GET", signed, nil).Status == 404
	})
}

func TestTileConfigAndBasemaps(t *testing.T) {
	adm := admin(t)
	r := call(t, "GET", "/settings/tile-config/", nil, bearer(adm.Access)...)
	wantStatus(t, "tile config", r, 200)
	c := r.JSON(t)
	if c["mvt_source_layer_prefix"] != "data" || c["extent"] != float64(4096) || c["buffer"] != float64(256) ||
		c["token_ttl_seconds"] != float64(3600) || c["cache_max_bytes"].(float64) <= 0 || c["public_api_url"] != server.APIRoot {
		t.Fatalf("tile config: %s", r.Body)
	}

	// Presets first, then custom ones; an admin switched osm off.
	setSetting(t, "basemaps.custom", `[{"id":"own","label":"Our orthophoto","url":"https://tiles.example.org/{z}/{x}/{y}.jpg","attribution":"Us"}]`)
	setSetting(t, "basemaps.disabled", `["osm"]`)
	defer setSetting(t, "basemaps.custom", `[]`)
	defer setSetting(t, "basemaps.disabled", `[]`)
	list := func(root string) map[string]map[string]any {
		t.Helper()
		hc := httpc
		if root != server.APIRoot {
			hc = http.DefaultClient
		}
		r := callAt(t, hc, root, "GET", "/settings/basemaps/", nil)
		wantStatus(t, "basemaps", r, 200)
		var items []map[string]any
		if err := json.Unmarshal(r.Body, &items); err != nil {
			t.Fatal(err)
		}
		out := map[string]map[string]any{}
		for i, b := range items {
			if b["is_preset"] == false && i < 3 {
				t.Fatalf("a custom basemap before the presets: %s", r.Body)
			}
			out[b["id"].(string)] = b
		}
		return out
	}
	// The shared server has a MapTiler key: resolved into the URL.
	got := list(server.APIRoot)
	if u, _ := got["maptiler-streets"]["url"].(string); !strings.Contains(u, "key=mt-env-secret-value") || strings.Contains(u, "{api_key}") {
		t.Fatalf("maptiler basemap with a key: %v", got["maptiler-streets"])
	}
	if got["osm"]["enabled"] != false || got["own"]["is_preset"] != false || got["carto-positron"]["enabled"] != true {
		t.Fatalf("basemaps: %v", got)
	}
	// Without provider keys, basemaps that need one are left out.
	got = list(startFresh(t).APIRoot)
	if got["maptiler-streets"] != nil || got["osm"] == nil {
		t.Fatalf("basemaps without keys: %v", got)
	}
}

// TestTilesOfRegisteredProjectedTables: a registered table keeps its schema, key and reference
// system; its tiles are found by id or schema.table, and the tile envelope is taken to the
// table's SRID (a UTM zone here) so the features are found where they lie.
func TestTilesOfRegisteredProjectedTables(t *testing.T) {
	ctx := context.Background()
	conn := dbConn(t)
	name := "utm_sites_" + strings.ToLower(randomHex(3))
	for _, stmt := range []string{
		"CREATE TABLE public." + name + " (site_id integer PRIMARY KEY, label text, shape geometry(Point, 25832))",
		// Around Frankfurt and Munich, in ETRS89 / UTM 32N.
		"INSERT INTO public." + name + " SELECT g, 'site ' || g, ST_Transform(ST_SetSRID(ST_MakePoint(8.6 + (g % 2) * 3, 50.1 - (g % 2) * 2), 4326), 25832) FROM generate_series(1, 6) g",
		"CREATE INDEX ON public." + name + " USING gist (shape)",
	} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	token := admin(t).Access
	id, err := ogcRegisterPublic(token, name)
	if err != nil {
		t.Fatal(err)
	}
	tok := tileToken(t, id)
	if tok["scope"] != "public."+name {
		t.Fatalf("scope of a registered table: %v", tok["scope"])
	}
	// z4 tile 8/5 holds both places (lon 8.6 and 11.6, lat 50.1 and 48.1).
	for _, path := range []string{"/tiles/" + id + "/4/8/5.pbf?cols=label", "/tiles/public." + name + "/4/8/5.pbf?cols=label",
		"/tiles/data.public." + name + "/4/8/5.pbf?cols=label&" + signedQuery(tok)} {
		_, layers := getTile(t, server.APIRoot, path, 200)
		if len(layers) != 1 || layers[0].Name != "data."+name || len(layers[0].Features) != 6 {
			t.Fatalf("%s: %+v", path, layers)
		}
		for _, f := range layers[0].Features {
			if f.ID == nil || f.Props["label"] != fmt.Sprintf("site %d", *f.ID) {
				t.Fatalf("%s: feature %+v", path, f)
			}
		}
	}
	getTile(t, server.APIRoot, "/tiles/"+id+"/6/0/0.pbf", 204)
}
