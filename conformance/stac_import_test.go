package conformance

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// stacRemote is a remote STAC catalog served from memory: documents and data files by path,
// each with an ETag and a modification time, HEAD and ranges included (http.ServeContent).
type stacRemote struct {
	mu    sync.Mutex
	files map[string]fixtureFile
	srv   *httptest.Server
}

type fixtureFile struct {
	body  []byte
	ctype string
	mod   time.Time
}

func newStacRemote(t *testing.T) *stacRemote {
	t.Helper()
	f := &stacRemote{files: map[string]fixtureFile{}}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		file, ok := f.files[r.URL.Path]
		f.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		sum := sha256.Sum256(file.body)
		w.Header().Set("Content-Type", file.ctype)
		w.Header().Set("ETag", `"`+hex.EncodeToString(sum[:8])+`"`)
		http.ServeContent(w, r, "", file.mod, bytes.NewReader(file.body))
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *stacRemote) put(path, ctype string, body []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.files[path] = fixtureFile{body: body, ctype: ctype, mod: time.Now().UTC().Truncate(time.Second)}
}

func (f *stacRemote) putJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	f.put(path, "application/json", b)
}

func (f *stacRemote) url(path string) string { return f.srv.URL + path }

const cogType = "image/tiff; application=geotiff; profile=cloud-optimized"

// stacItem is an item document of the fixture: its self link absolute, its asset relative.
func stacItem(f *stacRemote, id string, bbox []float64, props map[string]any, assets map[string]any) map[string]any {
	dir := "/scenes/" + id + "/"
	return map[string]any{"type": "Feature", "stac_version": "1.0.0", "id": id, "collection": "scenes", "bbox": bbox,
		"geometry": map[string]any{"type": "Polygon", "coordinates": [][][]float64{{{bbox[0], bbox[1]}, {bbox[2], bbox[1]},
			{bbox[2], bbox[3]}, {bbox[0], bbox[3]}, {bbox[0], bbox[1]}}}},
		"properties": props, "assets": assets,
		"links": []map[string]any{{"rel": "self", "href": f.url(dir + id + ".json"), "type": "application/geo+json"},
			{"rel": "collection", "href": "../collection.json", "type": "application/json"},
			{"rel": "parent", "href": "../collection.json"}, {"rel": "root", "href": "../../catalog.json"}}}
}

// staticCatalog lays out a static catalog: a root catalog, one collection ("scenes") with its
// provider, licence and keywords, and four items: a COG scene, a GeoJSON layer, an item whose
// asset is missing (404) and one whose asset is a file URL.
func staticCatalog(t *testing.T, f *stacRemote, cog, roads []byte) {
	t.Helper()
	f.putJSON(t, "/catalog.json", map[string]any{"type": "Catalog", "stac_version": "1.0.0", "id": "fixture",
		"title": "Fixture catalog", "description": "A static catalog served by the test",
		"links": []map[string]any{{"rel": "self", "href": f.url("/catalog.json")}, {"rel": "root", "href": "./catalog.json"},
			{"rel": "child", "href": "./scenes/collection.json", "type": "application/json"}}})
	f.putJSON(t, "/scenes/collection.json", map[string]any{"type": "Collection", "stac_version": "1.0.0", "id": "scenes",
		"title": "Fixture scenes " + randomHex(3), "description": "Scenes of the fixture", "license": "CC-BY-4.0",
		"keywords": []string{"fixture"}, "providers": []map[string]any{{"name": "Fixture Agency", "roles": []string{"producer", "host"}}},
		"extent": map[string]any{"spatial": map[string]any{"bbox": [][]float64{{5, 47, 11, 51}}},
			"temporal": map[string]any{"interval": [][]any{{"2020-01-01T00:00:00Z", nil}}}},
		"links": []map[string]any{{"rel": "self", "href": f.url("/scenes/collection.json")}, {"rel": "root", "href": "../catalog.json"},
			{"rel": "item", "href": "./scene-a/scene-a.json"}, {"rel": "item", "href": "./roads-b/roads-b.json"},
			{"rel": "item", "href": "./broken-c/broken-c.json"}, {"rel": "item", "href": "./local-d/local-d.json"}}})
	f.putJSON(t, "/scenes/scene-a/scene-a.json", stacItem(f, "scene-a", []float64{10, 47.8, 10.3, 48},
		map[string]any{"datetime": "2021-06-01T10:00:00Z", "title": "Scene A", "description": "An RGB scene",
			"license": "CC-BY-SA-4.0", "keywords": []string{"optical", "rgb"}, "updated": "2024-01-01T00:00:00Z",
			"providers": []map[string]any{{"name": "Scene Maker", "roles": []string{"licensor", "producer"}}}},
		map[string]any{"visual": map[string]any{"href": "./scene-a.tif", "type": cogType, "roles": []string{"data"}},
			"thumbnail": map[string]any{"href": "./thumb.png", "type": "image/png", "roles": []string{"thumbnail"}}}))
	f.put("/scenes/scene-a/scene-a.tif", "image/tiff", cog)
	f.putJSON(t, "/scenes/roads-b/roads-b.json", stacItem(f, "roads-b", []float64{5, 50, 5.5, 50.5},
		map[string]any{"datetime": nil, "start_datetime": "2020-01-01T00:00:00Z", "end_datetime": "2020-12-31T00:00:00Z",
			"title": "Roads B", "updated": "2024-01-01T00:00:00Z"},
		map[string]any{"data": map[string]any{"href": "./roads-b.geojson", "type": "application/geo+json", "roles": []string{"data"}}}))
	f.put("/scenes/roads-b/roads-b.geojson", "application/geo+json", roads)
	f.putJSON(t, "/scenes/broken-c/broken-c.json", stacItem(f, "broken-c", []float64{10, 47.8, 10.3, 48},
		map[string]any{"datetime": "2021-07-01T00:00:00Z"},
		map[string]any{"data": map[string]any{"href": "./missing.tif", "type": cogType, "roles": []string{"data"}}}))
	f.putJSON(t, "/scenes/local-d/local-d.json", stacItem(f, "local-d", []float64{10, 47.8, 10.3, 48},
		map[string]any{"datetime": "2021-08-01T00:00:00Z"},
		map[string]any{"data": map[string]any{"href": "file:///etc/passwd", "type": "image/tiff", "roles": []string{"data"}}}))
}

// importItems is the STAC Import body for search summaries, as a client sends it.
func importItems(catalog string, items []any, visibility string) map[string]any {
	var out []map[string]any
	for _, raw := range items {
		it := raw.(map[string]any)
		out = append(out, map[string]any{"id": it["id"], "title": it["title"], "collection": it["collection"],
			"item_href": it["item_href"], "data_asset_href": it["data_asset_href"], "data_asset_key": it["data_asset_key"]})
	}
	return map[string]any{"url": catalog, "items": out, "visibility": visibility}
}

// byID indexes an array of objects by a member.
func byID(list []any, member string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, raw := range list {
		m := raw.(map[string]any)
		out[fmt.Sprint(m[member])] = m
	}
	return out
}

// stacSession is a signed-in editor on a server of the test's own.
type stacSession struct {
	hc          *http.Client
	root, token string
}

func (s stacSession) call(t *testing.T, method, path string, body any) reply {
	t.Helper()
	return callAt(t, s.hc, s.root, method, path, body, bearer(s.token)...)
}

func (s stacSession) post(t *testing.T, path string, body any, want int) map[string]any {
	t.Helper()
	r := s.call(t, "POST", path, body)
	if r.Status != want {
		t.Fatalf("POST %s: %d, want %d: %s", path, r.Status, want, r.Body)
	}
	return r.JSON(t)
}

// wait follows an import's parent job until it ends.
func (s stacSession) wait(t *testing.T, job string) map[string]any {
	t.Helper()
	return waitJob(t, s.hc, s.root, s.token, job, 3*time.Minute, func(j map[string]any) bool {
		return j["status"] == "complete" || j["status"] == "failed"
	})
}

// TestStacImportStaticCatalog: a static catalog served by the test is connected, listed,
// searched and imported by a server that may reach loopback (REMOTE_ALLOW_PRIVATE). The COG
// becomes a raster dataset whose tiles work, the GeoJSON a vector dataset with its features;
// the record keeps the item's metadata and link, and the collection becomes a catalog collection
// holding both. The item whose asset 404s and the one whose asset is a file URL fail alone.
// A re-import of unchanged items skips them (also when an item is read at another address: the
// key is its self link), a changed item updates its dataset in place. A host on
// REMOTE_DENY_HOSTS is refused even though private addresses are allowed.
func TestStacImportStaticCatalog(t *testing.T) {
	f := newStacRemote(t)
	cog := converted(t, rgbTIFF(t), "scene.tif", "-of", "COG")
	staticCatalog(t, f, cog, pointsGeoJSON(5))
	srv := startFresh(t, "REMOTE_ALLOW_PRIVATE=true", "REMOTE_DENY_HOSTS=localhost", "RATE_LIMIT_ENABLED=false")
	hc := contractAt(t, srv)
	admin := loginAt(t, hc, srv.APIRoot, "admin", AdminPassword)
	s := stacSession{hc: hc, root: srv.APIRoot, token: newUserAt(t, hc, srv.APIRoot, admin, "editor")}
	catalog := f.url("/catalog.json")

	// The deny list wins over REMOTE_ALLOW_PRIVATE: the same catalog under a denied name is refused.
	if r := s.call(t, "POST", "/services/stac/connect", map[string]any{"url": strings.Replace(catalog, "127.0.0.1", "localhost", 1)}); r.Status != 422 ||
		!strings.Contains(string(r.Body), "REMOTE_DENY_HOSTS") {
		t.Fatalf("a denied host: %d %s", r.Status, r.Body)
	}

	conn := s.post(t, "/services/stac/connect", map[string]any{"url": catalog}, 200)
	if conn["catalog_id"] != "fixture" || conn["static"] != true || conn["item_search"] != false || conn["stac_version"] != "1.0.0" {
		t.Fatalf("connect: %v", conn)
	}
	cols := s.post(t, "/services/stac/collections", map[string]any{"url": catalog}, 200)["collections"].([]any)
	if len(cols) != 1 || cols[0].(map[string]any)["id"] != "scenes" || cols[0].(map[string]any)["license"] != "CC-BY-4.0" {
		t.Fatalf("collections: %v", cols)
	}
	all := s.post(t, "/services/stac/search", map[string]any{"url": catalog, "collections": []string{"scenes"}}, 200)
	items := byID(all["items"].([]any), "id")
	if len(items) != 4 || items["scene-a"]["data_asset_key"] != "visual" || items["scene-a"]["data_asset_type"] != cogType ||
		items["roads-b"]["data_asset_href"] != f.url("/scenes/roads-b/roads-b.geojson") || items["scene-a"]["thumbnail_href"] == nil {
		t.Fatalf("search: %v", all)
	}
	// The filters of a static catalog's search apply here: the box holds only the roads, the
	// time only the scenes of 2021 after June.
	if got := s.post(t, "/services/stac/search", map[string]any{"url": catalog, "bbox": []float64{4, 49, 6, 51}}, 200); got["returned"] != 1.0 {
		t.Fatalf("bbox search: %v", got)
	}
	if got := s.post(t, "/services/stac/search", map[string]any{"url": catalog, "datetime_range": "2021-06-15T00:00:00Z/.."}, 200); got["returned"] != 2.0 {
		t.Fatalf("datetime search: %v", got)
	}

	res := s.post(t, "/services/stac/import", importItems(catalog, all["items"].([]any), "public"), 200)
	results := byID(res["results"].([]any), "item_id")
	if res["created"] != 3.0 || res["errors"] != 1.0 || results["local-d"]["status"] != "error" ||
		!strings.Contains(fmt.Sprint(results["local-d"]["error"]), "http or https") {
		t.Fatalf("import: %v", res)
	}
	job := s.wait(t, res["job_id"].(string))
	if job["status"] != "complete" || job["rows_processed"] != 2.0 || job["rows_failed"] != 2.0 || job["progress"] != 1.0 ||
		!strings.Contains(fmt.Sprint(job["warnings"]), "broken-c") || !strings.Contains(fmt.Sprint(job["warnings"]), "404") {
		t.Fatalf("the import's job: %v", job)
	}
	datasets := stacDatasets(t, s, cols[0].(map[string]any)["title"].(string))
	if len(datasets) != 2 {
		t.Fatalf("the collection holds %d datasets: %v", len(datasets), datasets)
	}
	scene, roads := datasets[f.url("/scenes/scene-a/scene-a.json")], datasets[f.url("/scenes/roads-b/roads-b.json")]
	if scene == nil || roads == nil {
		t.Fatalf("datasets by source_url: %v", datasets)
	}
	// The record keeps the item's metadata: title, description, vintage, licence, producer,
	// keywords, provider contact, link back and origin.
	if scene["record_type"] != "raster_dataset" || scene["title"] != "Scene A" || scene["summary"] != "An RGB scene" ||
		scene["license"] != "CC-BY-SA-4.0" || scene["source_organization"] != "Scene Maker" || scene["origin"] != "stac" ||
		scene["origin_uri"] != f.url("/scenes/scene-a/scene-a.json") || scene["data_vintage_start"] != "2021-06-01" {
		t.Fatalf("the scene's record: %v", scene)
	}
	if roads["record_type"] != "vector_dataset" || roads["feature_count"] != 5.0 || roads["data_vintage_start"] != "2020-01-01" ||
		roads["data_vintage_end"] != "2020-12-31" || roads["license"] != "CC-BY-4.0" || roads["source_organization"] != "Fixture Agency" {
		t.Fatalf("the roads' record: %v", roads)
	}
	sceneID, roadsID := scene["id"].(string), roads["id"].(string)
	kw := s.call(t, "GET", "/records/"+scene["record_id"].(string)+"/keywords/", nil)
	if kw.Status != 200 || !strings.Contains(string(kw.Body), `"optical"`) || !strings.Contains(string(kw.Body), `"rgb"`) {
		t.Fatalf("keywords: %d %s", kw.Status, kw.Body)
	}
	if c := s.call(t, "GET", "/records/"+scene["record_id"].(string)+"/contacts/", nil); !strings.Contains(string(c.Body), "Scene Maker") ||
		!strings.Contains(string(c.Body), "rightsHolder") {
		t.Fatalf("contacts: %s", c.Body)
	}
	// The raster's tiles work; the vector's features are there.
	tok := s.call(t, "GET", "/tiles/token/"+sceneID+"/", nil).JSON(t)
	z := int(tok["maxzoom"].(float64))
	x, y := rasterTileAt(10.15, 47.9, z)
	if r := callAt(t, hc, "", "GET", tileURL(tok["tile_url"].(string), z, x, y), nil); r.Status != 200 || r.Header.Get("Content-Type") != "image/png" {
		t.Fatalf("a tile of the imported COG: %d %s", r.Status, r.Header.Get("Content-Type"))
	}
	if r := s.call(t, "GET", "/collections/"+roadsID+"/items?limit=10", nil); r.Status != 200 || len(r.JSON(t)["features"].([]any)) != 5 {
		t.Fatalf("features: %d %s", r.Status, r.Body)
	}

	// Again, unchanged: skipped, the same datasets, nothing new; the record still follows the
	// item's metadata (a new title without a new `updated`).
	sceneDoc := stacItem(f, "scene-a", []float64{10, 47.8, 10.3, 48},
		map[string]any{"datetime": "2021-06-01T10:00:00Z", "title": "Scene A, renamed", "description": "An RGB scene",
			"license": "CC-BY-SA-4.0", "keywords": []string{"optical"}, "updated": "2024-01-01T00:00:00Z"},
		map[string]any{"visual": map[string]any{"href": "./scene-a.tif", "type": cogType, "roles": []string{"data"}}})
	f.putJSON(t, "/scenes/scene-a/scene-a.json", sceneDoc)
	// The scene is read this time at another address of the same document: the re-import is
	// matched by the item's self link, not by where it was read.
	f.putJSON(t, "/scenes/scene-a/alias.json", sceneDoc)
	alias := map[string]any{}
	for k, v := range items["scene-a"] {
		alias[k] = v
	}
	alias["item_href"] = f.url("/scenes/scene-a/alias.json")
	two := []any{alias, items["roads-b"]}
	again := s.post(t, "/services/stac/import", importItems(catalog, two, "public"), 200)
	if again["skipped"] != 2.0 || again["created"] != 0.0 {
		t.Fatalf("an unchanged re-import: %v", again)
	}
	for _, r := range again["results"].([]any) {
		if id := r.(map[string]any)["dataset_id"]; id != sceneID && id != roadsID {
			t.Fatalf("a skipped item names dataset %v", id)
		}
	}
	if j := s.wait(t, again["job_id"].(string)); j["status"] != "complete" {
		t.Fatalf("the unchanged re-import's job: %v", j)
	}
	if d := s.call(t, "GET", "/datasets/"+sceneID, nil).JSON(t); d["title"] != "Scene A, renamed" {
		t.Fatalf("metadata not refreshed on a skip: %v", d["title"])
	}
	if kw := s.call(t, "GET", "/records/"+scene["record_id"].(string)+"/keywords/", nil); strings.Contains(string(kw.Body), `"rgb"`) {
		t.Fatalf("a keyword the item dropped stayed: %s", kw.Body)
	}

	// Changed data (a new `updated`, more features): the same dataset gets the new data.
	f.put("/scenes/roads-b/roads-b.geojson", "application/geo+json", pointsGeoJSON(8))
	roadsDoc := stacItem(f, "roads-b", []float64{5, 50, 5.5, 50.5},
		map[string]any{"datetime": "2022-03-01T00:00:00Z", "title": "Roads B", "updated": "2024-05-01T00:00:00Z"},
		map[string]any{"data": map[string]any{"href": "./roads-b.geojson", "type": "application/geo+json", "roles": []string{"data"}}})
	f.putJSON(t, "/scenes/roads-b/roads-b.json", roadsDoc)
	third := s.post(t, "/services/stac/import", importItems(catalog, []any{items["roads-b"]}, "public"), 200)
	r0 := third["results"].([]any)[0].(map[string]any)
	if third["created"] != 1.0 || r0["updated"] != true || r0["dataset_id"] != roadsID {
		t.Fatalf("a changed re-import: %v", third)
	}
	if j := s.wait(t, third["job_id"].(string)); j["status"] != "complete" {
		t.Fatalf("the changed re-import's job: %v", j)
	}
	d := s.call(t, "GET", "/datasets/"+roadsID, nil).JSON(t)
	if d["feature_count"] != 8.0 || d["current_version"].(float64) < 2 || d["data_vintage_start"] != "2022-03-01" {
		t.Fatalf("the updated dataset: %v", d)
	}
	if r := s.call(t, "GET", "/collections/"+roadsID+"/items?limit=20", nil); len(r.JSON(t)["features"].([]any)) != 8 {
		t.Fatalf("features after the update: %s", r.Body)
	}
	if n := len(stacDatasets(t, s, cols[0].(map[string]any)["title"].(string))); n != 2 {
		t.Fatalf("after re-imports the collection holds %d datasets, want the same 2", n)
	}
	// The collection was made once: one catalog collection of that name.
	if r := s.call(t, "GET", "/catalog/collections/?q="+strings.ReplaceAll(cols[0].(map[string]any)["title"].(string), " ", "%20"), nil); r.JSON(t)["total"] != 1.0 {
		t.Fatalf("collections after re-imports: %s", r.Body)
	}
	// A mode of neither kind: the schema's enum refuses it (mode register: stac_register_test.go).
	odd := importItems(catalog, []any{items["scene-a"]}, "private")
	odd["mode"] = "link"
	if r := s.call(t, "POST", "/services/stac/import", odd); r.Status != 422 && r.Status != 400 {
		t.Fatalf("mode link: %d %s", r.Status, r.Body)
	}
}

// stacDatasets are the datasets of the caller's catalog collection named name, by source_url.
func stacDatasets(t *testing.T, s stacSession, name string) map[string]map[string]any {
	t.Helper()
	r := s.call(t, "GET", "/catalog/collections/?q="+strings.ReplaceAll(name, " ", "%20"), nil)
	list := r.JSON(t)["collections"].([]any)
	if len(list) != 1 {
		t.Fatalf("collections named %q: %s", name, r.Body)
	}
	id := list[0].(map[string]any)["id"].(string)
	ds := s.call(t, "GET", "/catalog/collections/"+id+"/datasets/", nil)
	if ds.Status != 200 {
		t.Fatalf("collection datasets: %d %s", ds.Status, ds.Body)
	}
	out := map[string]map[string]any{}
	for _, raw := range ds.JSON(t)["datasets"].([]any) {
		d := s.call(t, "GET", "/datasets/"+raw.(map[string]any)["id"].(string), nil).JSON(t)
		out[fmt.Sprint(d["source_url"])] = d
	}
	return out
}

// TestStacImportRefusesPrivateAddressesByDefault: the shared server runs with the default remote
// policy; a catalog on loopback is refused by every STAC Import operation with 422 naming the
// setting that would allow it, before anything is queued.
func TestStacImportRefusesPrivateAddressesByDefault(t *testing.T) {
	f := newStacRemote(t)
	staticCatalog(t, f, []byte("II*\x00"), pointsGeoJSON(1))
	editor := newUser(t, "editor")
	catalog := f.url("/catalog.json")
	item := map[string]any{"id": "scene-a", "title": "Scene A", "item_href": f.url("/scenes/scene-a/scene-a.json"),
		"data_asset_href": f.url("/scenes/scene-a/scene-a.tif")}
	for _, tc := range []struct {
		path string
		body map[string]any
	}{
		{"/services/stac/connect", map[string]any{"url": catalog}},
		{"/services/stac/collections", map[string]any{"url": catalog}},
		{"/services/stac/search", map[string]any{"url": catalog}},
		{"/services/stac/import", map[string]any{"url": catalog, "items": []any{item}}},
		{"/services/stac/connect", map[string]any{"url": "file:///etc/passwd"}},
		{"/services/stac/connect", map[string]any{"url": "http://169.254.169.254/latest/meta-data/"}},
	} {
		r := call(t, "POST", tc.path, tc.body, bearer(editor.Access)...)
		want := "REMOTE_ALLOW_PRIVATE"
		if strings.HasPrefix(fmt.Sprint(tc.body["url"]), "file:") {
			want = "http or https"
		}
		if r.Status != 422 || !strings.Contains(string(r.Body), want) {
			t.Errorf("%s %v: %d %s, want 422 naming %s", tc.path, tc.body["url"], r.Status, r.Body, want)
		}
	}
	// Browsing and importing need the upload capability.
	viewer := newUser(t, "viewer")
	if r := call(t, "POST", "/services/stac/connect", map[string]any{"url": catalog}, bearer(viewer.Access)...); r.Status != 403 {
		t.Errorf("a viewer connecting: %d %s", r.Status, r.Body)
	}
}

// TestStacImportRemotePolicy: a server that allows one host by name (REMOTE_ALLOW_HOSTS) reads
// the catalog there, but not what a redirect sends to another address, neither for a document
// nor for an asset; a catalog slower than REMOTE_TIMEOUT answers 502 naming it; an asset over
// REMOTE_ASSET_MAX_BYTES, and one that stalls past REMOTE_ASSET_TIMEOUT, fail their items and
// leave no dataset; the other item of the same import is imported.
func TestStacImportRemotePolicy(t *testing.T) {
	f := newStacRemote(t)
	staticCatalog(t, f, []byte("unused"), pointsGeoJSON(3))
	local := strings.Replace(f.srv.URL, "127.0.0.1", "localhost", 1)
	f.srv.Config.Handler = stalling(redirecting(f.srv.Config.Handler, f.srv.URL))
	f.put("/scenes/big/big.tif", "image/tiff", bytes.Repeat([]byte{1}, 300_000))
	f.putJSON(t, "/scenes/big/big.json", stacItem(f, "big", []float64{10, 47.8, 10.3, 48}, map[string]any{"datetime": "2021-01-01T00:00:00Z"},
		map[string]any{"data": map[string]any{"href": local + "/scenes/big/big.tif", "type": cogType, "roles": []string{"data"}}}))
	f.putJSON(t, "/scenes/moved/moved.json", stacItem(f, "moved", []float64{10, 47.8, 10.3, 48}, map[string]any{"datetime": "2021-01-01T00:00:00Z"},
		map[string]any{"data": map[string]any{"href": local + "/redirect/roads.geojson", "type": "application/geo+json", "roles": []string{"data"}}}))
	f.putJSON(t, "/scenes/stalled/stalled.json", stacItem(f, "stalled", []float64{10, 47.8, 10.3, 48}, map[string]any{"datetime": "2021-01-01T00:00:00Z"},
		map[string]any{"data": map[string]any{"href": local + "/stall/roads.geojson", "type": "application/geo+json", "roles": []string{"data"}}}))
	srv := startFresh(t, "REMOTE_ALLOW_HOSTS=localhost", "REMOTE_ASSET_MAX_BYTES=200000", "RATE_LIMIT_ENABLED=false",
		"REMOTE_TIMEOUT=2s", "REMOTE_ASSET_TIMEOUT=3s")
	hc := contractAt(t, srv)
	admin := loginAt(t, hc, srv.APIRoot, "admin", AdminPassword)
	s := stacSession{hc: hc, root: srv.APIRoot, token: newUserAt(t, hc, srv.APIRoot, admin, "editor")}

	if c := s.post(t, "/services/stac/connect", map[string]any{"url": local + "/catalog.json"}, 200); c["catalog_id"] != "fixture" {
		t.Fatalf("connect to an allowed host: %v", c)
	}
	// The same server under its address: not on the allow list.
	if r := s.call(t, "POST", "/services/stac/connect", map[string]any{"url": f.url("/catalog.json")}); r.Status != 422 ||
		!strings.Contains(string(r.Body), "REMOTE_ALLOW_HOSTS") {
		t.Fatalf("a host off the allow list: %d %s", r.Status, r.Body)
	}
	if r := s.call(t, "POST", "/services/stac/connect", map[string]any{"url": local + "/redirect/catalog.json"}); r.Status != 422 ||
		!strings.Contains(string(r.Body), "redirect") {
		t.Fatalf("a redirect to a private address not allowed: %d %s", r.Status, r.Body)
	}
	// A document that does not come in time: the remote's failure (502), naming the bound.
	if r := s.call(t, "POST", "/services/stac/connect", map[string]any{"url": local + "/stall/catalog.json"}); r.Status != 502 ||
		!strings.Contains(string(r.Body), "REMOTE_TIMEOUT") {
		t.Fatalf("a catalog slower than REMOTE_TIMEOUT: %d %s", r.Status, r.Body)
	}
	items := []any{
		map[string]any{"id": "stalled", "title": "Stalled", "item_href": local + "/scenes/stalled/stalled.json",
			"data_asset_href": local + "/stall/roads.geojson"},
		map[string]any{"id": "big", "title": "Big", "item_href": local + "/scenes/big/big.json", "data_asset_href": local + "/scenes/big/big.tif"},
		map[string]any{"id": "moved", "title": "Moved", "item_href": local + "/scenes/moved/moved.json", "data_asset_href": local + "/redirect/roads.geojson"},
		map[string]any{"id": "roads-b", "title": "Roads", "item_href": local + "/scenes/roads-b/roads-b.json",
			"data_asset_href": local + "/scenes/roads-b/roads-b.geojson"},
	}
	res := s.post(t, "/services/stac/import", importItems(local+"/catalog.json", items, "private"), 200)
	results := byID(res["results"].([]any), "item_id")
	// Both refusals come with the download, in the background: the request queued all three.
	if res["created"] != 4.0 || results["big"]["status"] != "created" || results["moved"]["status"] != "created" {
		t.Fatalf("import: %v", res)
	}
	job := s.wait(t, res["job_id"].(string))
	warnings := fmt.Sprint(job["warnings"])
	if job["status"] != "complete" || job["rows_processed"] != 1.0 || job["rows_failed"] != 3.0 ||
		!strings.Contains(warnings, "REMOTE_ASSET_MAX_BYTES") || !strings.Contains(warnings, "item moved") || !strings.Contains(warnings, "redirect") ||
		!strings.Contains(warnings, "item stalled") || !strings.Contains(warnings, "REMOTE_ASSET_TIMEOUT") {
		t.Fatalf("the import's job: %v", job)
	}
	if r := s.call(t, "GET", "/datasets/?q=Big", nil); r.JSON(t)["total"] != 0.0 {
		t.Fatalf("a dataset of the refused asset: %s", r.Body)
	}
}

// stalling answers a GET of /stall/... only after 8 seconds, in the middle of its body: the first
// bytes come at once (a download has begun), the rest too late.
func stalling(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/stall/") || r.Method != http.MethodGet {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/geo+json")
		_, _ = w.Write([]byte(`{"type":"FeatureCollection","features":[`))
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-time.After(8 * time.Second):
			_, _ = w.Write([]byte(`]}`))
		}
	})
}

// redirecting sends /redirect/... to the same path on target (another name of the same server).
func redirecting(next http.Handler, target string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rest, ok := strings.CutPrefix(r.URL.Path, "/redirect/"); ok {
			http.Redirect(w, r, target+"/scenes/"+rest, http.StatusFound)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// TestStacImportFromAPI: the shared server is the remote, as a STAC API with item search; a
// server of the test's own (REMOTE_ALLOW_PRIVATE) connects to it, searches by box, time and
// collection (POST /search), a page at a time too, and imports a public raster and a public vector dataset of it: the raster's
// COG becomes a raster dataset whose tiles work, the vector's data a dataset with its features,
// and the item's self link, title and data vintage stay on the records.
func TestStacImportFromAPI(t *testing.T) {
	owner := newUser(t, "editor")
	tag := randomHex(3)
	// A data vintage no other test gives (the shared server holds every test's public datasets,
	// some of them world-wide): the search by box, time and collection finds these two only.
	day := time.Date(1850+rand.IntN(100), time.Month(1+rand.IntN(12)), 1+rand.IntN(28), 0, 0, 0, 0, time.UTC)
	window := day.Format(time.RFC3339) + "/" + day.Add(24*time.Hour-time.Second).Format(time.RFC3339)
	vintage := func(m map[string]any) map[string]any {
		m["temporal_start"], m["temporal_end"] = day.Format(time.RFC3339), day.Format(time.RFC3339)
		return m
	}
	raster := importRaster(t, owner, "far.tif", createdTIFF(t, "-outsize", "200", "100", "-bands", "3", "-ot", "Byte", "-burn", "30",
		"-burn", "90", "-burn", "200", "-a_srs", "EPSG:4326", "-a_ullr", "121", "-33", "121.3", "-33.15"),
		vintage(map[string]any{"title": "Far scene " + tag, "visibility": "public"}))
	var gj strings.Builder
	gj.WriteString(`{"type":"FeatureCollection","features":[`)
	for i := 0; i < 6; i++ {
		if i > 0 {
			gj.WriteString(",")
		}
		fmt.Fprintf(&gj, `{"type":"Feature","properties":{"n":%d},"geometry":{"type":"Point","coordinates":[%g,-33.1]}}`, i, 121.05+float64(i)*0.01)
	}
	gj.WriteString("]}")
	vjob := importFile(t, owner, "far.geojson", []byte(gj.String()), vintage(map[string]any{"title": "Far points " + tag, "visibility": "public"}))
	if vjob["status"] != "complete" {
		t.Fatalf("vector import: %v", vjob)
	}
	srv := startFresh(t, "REMOTE_ALLOW_PRIVATE=true", "RATE_LIMIT_ENABLED=false")
	hc := contractAt(t, srv)
	admin := loginAt(t, hc, srv.APIRoot, "admin", AdminPassword)
	s := stacSession{hc: hc, root: srv.APIRoot, token: newUserAt(t, hc, srv.APIRoot, admin, "editor")}
	api := server.APIRoot + "/stac/"

	if c := s.post(t, "/services/stac/connect", map[string]any{"url": api}, 200); c["item_search"] != true || c["static"] != false {
		t.Fatalf("connect to a STAC API: %v", c)
	}
	cols := byID(s.post(t, "/services/stac/collections", map[string]any{"url": api}, 200)["collections"].([]any), "id")
	if cols["datasets"] == nil {
		t.Fatalf("the API's collections: %v", cols)
	}
	found := s.post(t, "/services/stac/search", map[string]any{"url": api, "collections": []string{"datasets"},
		"bbox": []float64{120.9, -33.3, 121.4, -33}, "datetime_range": window, "limit": 10}, 200)
	items := byID(found["items"].([]any), "id")
	rid, vid := raster["id"].(string), vjob["dataset_id"].(string)
	if found["returned"] != 2.0 || items[rid] == nil || items[vid] == nil || items[rid]["data_asset_type"] != cogType {
		t.Fatalf("search of the API: %v", found)
	}
	// The same search a page at a time: the API's next link comes back as the cursor, and the
	// second page holds the other item.
	first := s.post(t, "/services/stac/search", map[string]any{"url": api, "collections": []string{"datasets"},
		"bbox": []float64{120.9, -33.3, 121.4, -33}, "datetime_range": window, "limit": 1}, 200)
	next, _ := first["next"].(string)
	if first["returned"] != 1.0 || next == "" {
		t.Fatalf("a first page of one: %v", first)
	}
	second := s.post(t, "/services/stac/search", map[string]any{"url": api, "next": next, "limit": 1}, 200)
	if second["returned"] != 1.0 || second["items"].([]any)[0].(map[string]any)["id"] == first["items"].([]any)[0].(map[string]any)["id"] ||
		second["next"] != nil {
		t.Fatalf("the second page: %v after %v", second, first)
	}
	if r := s.call(t, "POST", "/services/stac/search", map[string]any{"url": api, "next": "not-a-cursor"}); r.Status != 422 {
		t.Fatalf("a forged cursor: %d %s", r.Status, r.Body)
	}
	res := s.post(t, "/services/stac/import", importItems(api, found["items"].([]any), "public"), 200)
	if res["created"] != 2.0 {
		t.Fatalf("import: %v", res)
	}
	if job := s.wait(t, res["job_id"].(string)); job["status"] != "complete" || job["rows_processed"] != 2.0 {
		t.Fatalf("the import's job: %v", job)
	}
	list := s.call(t, "GET", "/datasets/?limit=50", nil).JSON(t)["datasets"].([]any)
	got := map[string]map[string]any{}
	for _, raw := range list {
		d := raw.(map[string]any)
		got[fmt.Sprint(d["title"])] = d
	}
	rd, vd := got["Far scene "+tag], got["Far points "+tag]
	if rd == nil || vd == nil || rd["record_type"] != "raster_dataset" || vd["feature_count"] != 6.0 || vd["origin"] != "stac" ||
		vd["source_url"] != *strPtr(items[vid]["item_href"]) || vd["data_vintage_start"] != itemDate(items[vid]) || vd["summary"] != nil {
		t.Fatalf("imported datasets: %v", got)
	}
	tok := s.call(t, "GET", "/tiles/token/"+rd["id"].(string)+"/", nil).JSON(t)
	z := int(tok["maxzoom"].(float64))
	x, y := rasterTileAt(121.15, -33.07, z)
	if r := callAt(t, hc, "", "GET", tileURL(tok["tile_url"].(string), z, x, y), nil); r.Status != 200 {
		t.Fatalf("a tile of the COG imported from the API: %d %s", r.Status, r.Body)
	}
}

// itemDate is the day of a search summary's datetime (or start).
func itemDate(it map[string]any) string {
	for _, k := range []string{"datetime", "datetime_start"} {
		if v, ok := it[k].(string); ok && len(v) >= 10 {
			return v[:10]
		}
	}
	return ""
}

func strPtr(v any) *string {
	s := fmt.Sprint(v)
	return &s
}

// credentialGate answers only requests that carry the credential (as X-Api-Key or Authorization),
// sends /redirect/... to another origin, and records which credential each request came with,
// by host (as the request named it) and path.
type credentialGate struct {
	mu   sync.Mutex
	seen map[string][]string // "host path" -> the credential headers of each request
}

func (g *credentialGate) record(r *http.Request) string {
	cred := r.Header.Get("X-Api-Key") + r.Header.Get("Authorization")
	g.mu.Lock()
	defer g.mu.Unlock()
	key := strings.Split(r.Host, ":")[0] + " " + r.URL.Path
	g.seen[key] = append(g.seen[key], cred)
	return cred
}

// TestStacImportCredentialsAndProgress: a static catalog that answers only with an API key is
// connected, searched and imported with the key as `credentials`. The key reaches that origin
// (documents, searches, the asset of the held item) and nothing else: not an asset on another
// host, not a redirect there, not the same server under another name (which therefore answers
// 401 and fails that item alone). While one download is held, the parent job is running at 3 of
// 4 items with the credential kept sealed (never in clear) in the database; once it ends the job
// is complete with progress 1 and the credential is gone. No answer carries the key.
func TestStacImportCredentialsAndProgress(t *testing.T) {
	const key = "s3cret-" + "k3y"
	home, away := newStacRemote(t), newStacRemote(t)
	awayURL := strings.Replace(away.srv.URL, "127.0.0.1", "localhost", 1)
	renamed := strings.Replace(home.srv.URL, "127.0.0.1", "localhost", 1)
	gate := &credentialGate{seen: map[string][]string{}}
	release := make(chan struct{})
	heldBody := pointsGeoJSON(4)
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	homeFiles := home.srv.Config.Handler
	home.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cred := gate.record(r)
		if cred != key && cred != "Bearer "+key {
			http.Error(w, "an API key is needed", http.StatusUnauthorized)
			return
		}
		if rest, ok := strings.CutPrefix(r.URL.Path, "/redirect/"); ok {
			http.Redirect(w, r, awayURL+"/"+rest, http.StatusFound)
			return
		}
		if r.URL.Path == "/scenes/held/held.geojson" && r.Method == http.MethodGet {
			// The answer starts at once and its body waits: the download is running, and not
			// bounded by the wait for headers (30 s), which a loaded machine's other three
			// items could outlast.
			w.Header().Set("Content-Type", "application/geo+json")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-release
			w.Write(heldBody)
			return
		}
		homeFiles.ServeHTTP(w, r)
	})
	awayFiles := away.srv.Config.Handler
	away.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gate.record(r)
		awayFiles.ServeHTTP(w, r)
	})
	catalog := home.url("/catalog.json")
	home.putJSON(t, "/catalog.json", map[string]any{"type": "Catalog", "stac_version": "1.0.0", "id": "gated", "description": "Needs a key",
		"links": []map[string]any{{"rel": "self", "href": catalog}, {"rel": "child", "href": "./scenes/collection.json"}}})
	ids := []string{"held", "away", "moved", "renamed"}
	hrefs := map[string]string{"held": "./held.geojson", "away": awayURL + "/away.geojson", "moved": home.url("/redirect/moved.geojson"),
		"renamed": renamed + "/scenes/renamed/renamed.geojson"}
	var links []map[string]any
	for _, id := range ids {
		links = append(links, map[string]any{"rel": "item", "href": "./" + id + "/" + id + ".json"})
		home.putJSON(t, "/scenes/"+id+"/"+id+".json", stacItem(home, id, []float64{5, 50, 5.5, 50.5},
			map[string]any{"datetime": "2022-01-01T00:00:00Z", "title": "Gated " + id},
			map[string]any{"data": map[string]any{"href": hrefs[id], "type": "application/geo+json", "roles": []string{"data"}}}))
	}
	home.putJSON(t, "/scenes/collection.json", map[string]any{"type": "Collection", "stac_version": "1.0.0", "id": "scenes",
		"title": "Gated " + randomHex(3), "description": "Behind a key", "license": "proprietary",
		"extent": map[string]any{"spatial": map[string]any{"bbox": [][]float64{{5, 50, 6, 51}}},
			"temporal": map[string]any{"interval": [][]any{{"2022-01-01T00:00:00Z", nil}}}},
		"links": append(links, map[string]any{"rel": "self", "href": home.url("/scenes/collection.json")})})
	home.put("/scenes/held/held.geojson", "application/geo+json", heldBody)
	home.put("/scenes/renamed/renamed.geojson", "application/geo+json", pointsGeoJSON(4))
	away.put("/away.geojson", "application/geo+json", pointsGeoJSON(3))
	away.put("/moved.geojson", "application/geo+json", pointsGeoJSON(2))

	srv := startFresh(t, "REMOTE_ALLOW_PRIVATE=true", "RATE_LIMIT_ENABLED=false")
	hc := contractAt(t, srv)
	admin := loginAt(t, hc, srv.APIRoot, "admin", AdminPassword)
	s := stacSession{hc: hc, root: srv.APIRoot, token: newUserAt(t, hc, srv.APIRoot, admin, "editor")}
	apiKey := map[string]any{"header": "X-Api-Key", "value": key}

	if r := s.call(t, "POST", "/services/stac/connect", map[string]any{"url": catalog}); r.Status != 502 || !strings.Contains(string(r.Body), "401") {
		t.Fatalf("connect without the key: %d %s", r.Status, r.Body)
	}
	gate.mu.Lock()
	clear(gate.seen) // that request went without a key on purpose
	gate.mu.Unlock()
	if c := s.post(t, "/services/stac/connect", map[string]any{"url": catalog, "credentials": map[string]any{"value": "Bearer " + key}}, 200); c["catalog_id"] != "gated" {
		t.Fatalf("connect with a bearer token (the default header): %v", c)
	}
	for _, bad := range []map[string]any{{"header": "Host", "value": "elsewhere.example"}, {"header": "Content-Length", "value": "0"}} {
		if r := s.call(t, "POST", "/services/stac/connect", map[string]any{"url": catalog, "credentials": bad}); r.Status != 422 {
			t.Errorf("credentials in %v: %d %s", bad["header"], r.Status, r.Body)
		}
	}
	found := s.post(t, "/services/stac/search", map[string]any{"url": catalog, "credentials": apiKey}, 200)
	if found["returned"] != 4.0 {
		t.Fatalf("search with the key: %v", found)
	}
	body := importItems(catalog, found["items"].([]any), "private")
	body["credentials"] = apiKey
	r := s.call(t, "POST", "/services/stac/import", body)
	if r.Status != 200 || r.JSON(t)["created"] != 4.0 || strings.Contains(string(r.Body), key) {
		t.Fatalf("import with the key: %d %s", r.Status, r.Body)
	}
	job := r.JSON(t)["job_id"].(string)

	// Three items end while the fourth's download is held: the parent tells how far it is.
	mid := waitJob(t, hc, srv.APIRoot, s.token, job, 2*time.Minute, func(j map[string]any) bool {
		n, _ := j["rows_processed"].(float64)
		f, _ := j["rows_failed"].(float64)
		return n+f == 3 || j["status"] != "running"
	})
	if mid["status"] != "running" || mid["progress"] != 0.75 || mid["rows_failed"] != 1.0 {
		t.Fatalf("the job with one item left: %v", mid)
	}
	conn := connect(t, srv.DBURL)
	var sealed []byte
	if err := conn.QueryRow(t.Context(), "SELECT credential FROM catalog.stac_imports WHERE job_id = $1", job).Scan(&sealed); err != nil {
		t.Fatal(err)
	}
	if len(sealed) == 0 || bytes.Contains(sealed, []byte(key)) {
		t.Fatalf("the credential while a download needs it: %q", sealed)
	}
	once.Do(func() { close(release) })
	end := s.wait(t, job)
	warnings := fmt.Sprint(end["warnings"])
	if end["status"] != "complete" || end["progress"] != 1.0 || end["rows_processed"] != 3.0 || end["rows_failed"] != 1.0 ||
		!strings.Contains(warnings, "item renamed") || !strings.Contains(warnings, "401") {
		t.Fatalf("the job at its end: %v", end)
	}
	if raw := s.call(t, "GET", "/jobs/"+job, nil); strings.Contains(string(raw.Body), key) {
		t.Fatalf("the job shows the key: %s", raw.Body)
	}
	if err := conn.QueryRow(t.Context(), "SELECT credential FROM catalog.stac_imports WHERE job_id = $1", job).Scan(&sealed); err != nil || sealed != nil {
		t.Fatalf("the credential after the last download: %q %v", sealed, err)
	}

	gate.mu.Lock()
	defer gate.mu.Unlock()
	want := map[string]bool{ // host path -> whether the key went there
		"127.0.0.1 /catalog.json": true, "127.0.0.1 /scenes/held/held.json": true, "127.0.0.1 /scenes/held/held.geojson": true,
		"127.0.0.1 /redirect/moved.geojson": true, "localhost /moved.geojson": false, "localhost /away.geojson": false,
		"localhost /scenes/renamed/renamed.geojson": false,
	}
	for where, sent := range want {
		creds, ok := gate.seen[where]
		if !ok {
			t.Errorf("no request for %s (all: %v)", where, gate.seen)
		}
		for _, c := range creds {
			if (c != "") != sent {
				t.Errorf("%s got credential %q, want sent=%v", where, c, sent)
			}
		}
	}
}
