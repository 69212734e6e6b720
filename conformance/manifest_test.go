package conformance

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// manifestSources serves files by path (changeable during a test) and counts the requests.
type manifestSources struct {
	mu    sync.Mutex
	files map[string][]byte
	hits  atomic.Int32
}

func (m *manifestSources) set(path string, b []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.files[path] = b
}

func (m *manifestSources) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.hits.Add(1)
	m.mu.Lock()
	b, ok := m.files[r.URL.Path]
	m.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	_, _ = w.Write(b)
}

// manifestEntry is one dataset of a manifest.
func manifestEntry(key, uri, typ string, meta map[string]any, intent string) map[string]any {
	e := map[string]any{"key": key, "title": "Title of " + key, "description": "About " + key,
		"sources": []any{map[string]any{"type": typ, "uri": uri}}, "publication": map[string]any{"intent": intent}}
	if meta != nil {
		e["metadata"] = meta
	}
	return e
}

func manifestBody(title string, dryRun bool, entries ...map[string]any) map[string]any {
	ds := make([]any, len(entries))
	for i, e := range entries {
		ds[i] = e
	}
	return map[string]any{"manifest_version": "1", "catalog": map[string]any{"title": title, "organization": "Survey Office"},
		"datasets": ds, "dry_run": dryRun}
}

// manifestResults are the results of an apply by key.
func manifestResults(t *testing.T, r reply) (bool, map[string]map[string]any) {
	t.Helper()
	if r.Status != 200 {
		t.Fatalf("apply: %d %s", r.Status, r.Body)
	}
	b := r.JSON(t)
	out := map[string]map[string]any{}
	for _, x := range b["results"].([]any) {
		e := x.(map[string]any)
		out[e["dataset_key"].(string)] = e
	}
	return b["accepted"].(bool), out
}

func actionsOf(res map[string]map[string]any) string {
	var s []string
	for k, e := range res {
		s = append(s, k+"="+e["action"].(string))
	}
	sort.Strings(s)
	return strings.Join(s, " ")
}

// A manifest of two vector sources and a COG served over HTTP: a dry run answers the actions
// and creates nothing; the first apply imports each source as a job and gives the records their
// metadata and one collection; an unchanged apply skips; changed metadata updates the record in
// place; a changed source reuploads into the same dataset; an invalid entry applies nothing.
func TestApplyManifest(t *testing.T) {
	src := &manifestSources{files: map[string][]byte{"/roads.geojson": pointsGeoJSON(12), "/trees": pointsGeoJSON(7), "/ortho": rgbTIFF(t)}}
	hs := httptest.NewServer(src)
	defer hs.Close()
	s := startFresh(t, "RATE_LIMIT_ENABLED=false", "REMOTE_ALLOW_PRIVATE=true")
	hc := contractAt(t, s)
	tok := loginAt(t, hc, s.APIRoot, "admin", AdminPassword)
	apply := func(body map[string]any) reply {
		return callAt(t, hc, s.APIRoot, "POST", "/ingest/manifest/apply", body, bearer(tok)...)
	}
	get := func(path string) map[string]any {
		t.Helper()
		r := callAt(t, hc, s.APIRoot, "GET", path, nil, bearer(tok)...)
		if r.Status != 200 {
			t.Fatalf("GET %s: %d %s", path, r.Status, r.Body)
		}
		return r.JSON(t)
	}
	total := func() float64 { return get("/datasets/")["total"].(float64) }
	keywords := func(id string) []string {
		var out []string
		for _, k := range get("/records/" + id + "/keywords/")["keywords"].([]any) {
			out = append(out, k.(map[string]any)["keyword"].(string))
		}
		sort.Strings(out)
		return out
	}
	roadsMeta := map[string]any{"tags": []any{"roads", "transport"}, "license": "CC-BY-4.0", "attribution": "© Survey", "crs": "EPSG:4326",
		"bbox": []any{5, 50, 6, 51}}
	entries := func(roads map[string]any, roadsIntent string) []map[string]any {
		return []map[string]any{
			manifestEntry("roads", hs.URL+"/roads.geojson", "vector", roads, roadsIntent),
			{"key": "trees", "title": "Trees", "sources": []any{map[string]any{"type": "vector", "uri": hs.URL + "/trees", "format": "geojson"}},
				"metadata":    map[string]any{"organization": "Parks Department", "tags": []any{"trees"}, "crs": "EPSG:3857"},
				"publication": map[string]any{"intent": "draft"}},
			manifestEntry("ortho", hs.URL+"/ortho", "raster_cog", map[string]any{"license": "ODbL"}, "published"),
		}
	}

	t.Run("a dry run answers the actions and creates nothing", func(t *testing.T) {
		ok, res := manifestResults(t, apply(manifestBody("City Data", true, entries(roadsMeta, "published")...)))
		if !ok || actionsOf(res) != "ortho=create roads=create trees=create" || res["roads"]["job_id"] != nil {
			t.Fatalf("%v %v", ok, res)
		}
		if n := total(); n != 0 || src.hits.Load() != 0 || len(get("/catalog/collections/")["collections"].([]any)) != 0 {
			t.Fatalf("a dry run changed something: %v datasets, %d fetches", n, src.hits.Load())
		}
	})

	ids := map[string]string{}
	t.Run("the first apply creates each dataset with its metadata", func(t *testing.T) {
		ok, res := manifestResults(t, apply(manifestBody("City Data", false, entries(roadsMeta, "published")...)))
		if !ok || actionsOf(res) != "ortho=create roads=create trees=create" {
			t.Fatalf("%v %v", ok, res)
		}
		for k, e := range res {
			job := waitJob(t, hc, s.APIRoot, tok, e["job_id"].(string), 2*time.Minute, func(j map[string]any) bool { return j["status"] == "complete" || j["status"] == "failed" })
			if job["status"] != "complete" {
				t.Fatalf("%s: %v", k, job)
			}
			ids[k] = job["dataset_id"].(string)
		}
		roads, trees, ortho := get("/datasets/"+ids["roads"]), get("/datasets/"+ids["trees"]), get("/datasets/"+ids["ortho"])
		if roads["title"] != "Title of roads" || roads["summary"] != "About roads" || roads["license"] != "CC-BY-4.0" || roads["attribution"] != "© Survey" ||
			roads["source_organization"] != "Survey Office" || roads["record_status"] != "published" || roads["feature_count"] != 12.0 {
			t.Fatalf("roads: %v", roads)
		}
		// The CRS of the manifest wins over GeoJSON's WGS 84: metres from 0,0, a few microdegrees.
		box, _ := trees["extent_bbox"].([]any)
		if trees["record_status"] != "draft" || trees["source_organization"] != "Parks Department" || trees["feature_count"] != 7.0 ||
			trees["original_srid"] != 3857.0 || len(box) != 4 || box[2].(float64) > 0.01 {
			t.Fatalf("trees: %v", trees)
		}
		if ortho["record_type"] != "raster_dataset" || ortho["license"] != "ODbL" {
			t.Fatalf("ortho: %v", ortho)
		}
		if k := keywords(ids["roads"]); !slices.Equal(k, []string{"roads", "transport"}) {
			t.Fatalf("roads keywords: %v", k)
		}
		cols := get("/catalog/collections/")["collections"].([]any)
		if len(cols) != 1 || cols[0].(map[string]any)["name"] != "City Data" {
			t.Fatalf("collections: %v", cols)
		}
		in := get(fmt.Sprintf("/catalog/collections/%s/datasets/", cols[0].(map[string]any)["id"]))
		if in["total"] != 3.0 {
			t.Fatalf("collection datasets: %v", in)
		}
	})

	t.Run("an unchanged apply skips every entry", func(t *testing.T) {
		before := src.hits.Load()
		ok, res := manifestResults(t, apply(manifestBody("City Data", false, entries(roadsMeta, "published")...)))
		if !ok || actionsOf(res) != "ortho=skip roads=skip trees=skip" || res["roads"]["dataset_id"] != ids["roads"] || src.hits.Load() != before {
			t.Fatalf("%v %v", ok, res)
		}
	})

	t.Run("changed metadata updates the record in place", func(t *testing.T) {
		changed := map[string]any{"tags": []any{"roads", "streets"}, "license": "CC0-1.0", "crs": "EPSG:4326", "bbox": []any{5, 50, 6, 51}}
		ok, res := manifestResults(t, apply(manifestBody("City Data", false, entries(changed, "internal")...)))
		if !ok || actionsOf(res) != "ortho=skip roads=update trees=skip" || res["roads"]["dataset_id"] != ids["roads"] {
			t.Fatalf("%v %v", ok, res)
		}
		roads := get("/datasets/" + ids["roads"])
		if roads["license"] != "CC0-1.0" || roads["attribution"] != nil || roads["record_status"] != "internal" || total() != 3 {
			t.Fatalf("roads: %v", roads)
		}
		if k := keywords(ids["roads"]); !slices.Equal(k, []string{"roads", "streets"}) {
			t.Fatalf("roads keywords: %v", k)
		}
	})

	t.Run("a changed source reuploads into the same dataset", func(t *testing.T) {
		src.set("/trees", pointsGeoJSON(9))
		es := entries(roadsMeta, "internal")
		es[1]["sources"] = []any{map[string]any{"type": "vector", "uri": hs.URL + "/trees?v=2", "format": "geojson"}}
		ok, res := manifestResults(t, apply(manifestBody("City Data", false, es...)))
		if !ok || res["trees"]["action"] != "update" || res["trees"]["dataset_id"] != ids["trees"] || res["trees"]["job_id"] == nil {
			t.Fatalf("%v %v", ok, res)
		}
		job := waitJob(t, hc, s.APIRoot, tok, res["trees"]["job_id"].(string), 2*time.Minute, func(j map[string]any) bool { return j["status"] == "complete" || j["status"] == "failed" })
		if job["status"] != "complete" || job["dataset_id"] != ids["trees"] {
			t.Fatalf("%v", job)
		}
		if trees := get("/datasets/" + ids["trees"]); trees["feature_count"] != 9.0 || total() != 3 {
			t.Fatalf("trees: %v", trees)
		}
	})

	t.Run("an import that did not happen is tried again", func(t *testing.T) {
		e := manifestEntry("late", hs.URL+"/roads.geojson", "vector", nil, "draft")
		e["sources"] = []any{map[string]any{"type": "vector", "uri": hs.URL + "/roads.geojson", "layer": "no-such-layer"}}
		ok, res := manifestResults(t, apply(manifestBody("City Data", false, e)))
		if !ok || res["late"]["action"] != "error" {
			t.Fatalf("%v %v", ok, res)
		}
		e["sources"] = []any{map[string]any{"type": "vector", "uri": hs.URL + "/roads.geojson"}}
		ok, res = manifestResults(t, apply(manifestBody("City Data", false, e)))
		if !ok || res["late"]["action"] != "create" || res["late"]["job_id"] == nil {
			t.Fatalf("%v %v", ok, res)
		}
		job := waitJob(t, hc, s.APIRoot, tok, res["late"]["job_id"].(string), 2*time.Minute, func(j map[string]any) bool { return j["status"] == "complete" || j["status"] == "failed" })
		if job["status"] != "complete" {
			t.Fatalf("%v", job)
		}
	})

	for name, bad := range map[string]map[string]any{
		"a relative path":      manifestEntry("local", "data/roads.geojson", "vector", nil, "draft"),
		"an s3 URI":            manifestEntry("bucket", "s3://bucket/roads.gpkg", "vector", nil, "draft"),
		"an unknown status":    manifestEntry("odd", hs.URL+"/roads.geojson", "vector", nil, "archived"),
		"an unknown CRS":       manifestEntry("crs", hs.URL+"/roads.geojson", "vector", map[string]any{"crs": "EPSG:999999"}, "draft"),
		"no format, no suffix": manifestEntry("nosuffix", hs.URL+"/trees", "vector", nil, "draft"),
	} {
		t.Run(name+" errs and nothing is applied", func(t *testing.T) {
			before, hits := total(), src.hits.Load()
			fresh := manifestEntry("fresh", hs.URL+"/roads.geojson", "vector", nil, "draft")
			ok, res := manifestResults(t, apply(manifestBody("City Data", false, fresh, bad)))
			e := res[bad["key"].(string)]
			if ok || e["action"] != "error" || len(e["errors"].([]any)) == 0 || res["fresh"]["action"] != "create" || res["fresh"]["job_id"] != nil {
				t.Fatalf("%v %v", ok, res)
			}
			if total() != before || src.hits.Load() != hits {
				t.Fatalf("something was applied: %v datasets (before %v), %d fetches (before %d)", total(), before, src.hits.Load(), hits)
			}
		})
	}

	t.Run("a key listed twice is refused", func(t *testing.T) {
		e := manifestEntry("twice", hs.URL+"/roads.geojson", "vector", nil, "draft")
		if r := apply(manifestBody("City Data", true, e, e)); r.Status != 422 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	})
}

// On the shared server private addresses stay refused (nothing is fetched), and viewers may
// not apply manifests.
func TestApplyManifestRefusals(t *testing.T) {
	var hits atomic.Int32
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer hs.Close()
	body := manifestBody("Private "+randomHex(4), false, manifestEntry("inside", hs.URL+"/x.geojson", "vector", nil, "draft"))
	ok, res := manifestResults(t, call(t, "POST", "/ingest/manifest/apply", body, bearer(newUser(t, "editor").Access)...))
	if ok || res["inside"]["action"] != "error" || hits.Load() != 0 {
		t.Fatalf("%v %v (requests that reached it: %d)", ok, res, hits.Load())
	}
	if r := call(t, "POST", "/ingest/manifest/apply", body, bearer(newUser(t, "viewer").Access)...); r.Status != 403 {
		t.Fatalf("viewer: %d %s", r.Status, r.Body)
	}
}
