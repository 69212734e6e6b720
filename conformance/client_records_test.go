package conformance

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// What the catalog's clients do with a record (client-semantics.md, "Catalog records and search"):
// they take a search result's id as the dataset's and go on from there.

// publishedImport imports n points as a public dataset of s (an import commit publishes it).
func publishedImport(t *testing.T, s session, title string, n int) string {
	t.Helper()
	job := importFile(t, s, "places.geojson", pointsGeoJSON(n), map[string]any{"title": title, "visibility": "public"})
	if job["status"] != "complete" {
		t.Fatalf("import: %v", job)
	}
	id := job["dataset_id"].(string)
	if st := call(t, "GET", "/datasets/"+id, nil, bearer(s.Access)...).JSON(t)["record_status"]; st != "published" {
		t.Fatalf("an import's record is %v, not published", st)
	}
	return id
}

func TestSearchResultIDIsTheDatasetID(t *testing.T) {
	owner := newUser(t, "editor")
	title := "Lighthouses " + randomHex(4)
	id := publishedImport(t, owner, title, 3)
	dataset := call(t, "GET", "/datasets/"+id, nil, bearer(owner.Access)...).JSON(t)

	page := call(t, "GET", "/search/datasets/?q="+url.QueryEscape(title), nil, bearer(owner.Access)...).JSON(t)
	features := page["features"].([]any)
	if len(features) == 0 {
		t.Fatalf("search found nothing: %v", page)
	}
	rec := features[0].(map[string]any)
	got := rec["id"].(string)
	if got != id || got == dataset["record_id"] {
		t.Fatalf("a search result's id is %s; the dataset is %s (record_id %s)", got, id, dataset["record_id"])
	}
	// Everything a client does next with that id works.
	wantStatus(t, "Get Dataset by the result's id", call(t, "GET", "/datasets/"+got, nil, bearer(owner.Access)...), 200)
	wantStatus(t, "Get Tile Token", call(t, "GET", "/tiles/token/"+got+"/", nil, bearer(owner.Access)...), 200)
	wantStatus(t, "its features", call(t, "GET", "/collections/"+got+"/items", nil, bearer(owner.Access)...), 200)
	m := call(t, "POST", "/maps/", map[string]any{"name": "Coast " + randomHex(3)}, bearer(owner.Access)...).JSON(t)
	wantStatus(t, "Add Layer", call(t, "POST", "/maps/"+m["id"].(string)+"/layers", map[string]any{"dataset_id": got}, bearer(owner.Access)...), 201)
	col := call(t, "POST", "/catalog/collections/", map[string]any{"name": "Coasts " + randomHex(3)}, bearer(owner.Access)...).JSON(t)
	wantStatus(t, "collection member", call(t, "POST", "/catalog/collections/"+col["id"].(string)+"/datasets/",
		map[string]any{"dataset_ids": []string{got}}, bearer(owner.Access)...), 200)

	// The record's own links and lookups take the dataset id.
	self := ""
	for _, l := range rec["links"].([]any) {
		if l.(map[string]any)["rel"] == "self" {
			self = l.(map[string]any)["href"].(string)
		}
	}
	if !strings.HasSuffix(self, "/collections/datasets/items/"+id) {
		t.Errorf("self link %q", self)
	}
	one := call(t, "GET", "/collections/datasets/items/"+id, nil)
	if one.Status != 200 || one.JSON(t)["id"] != id {
		t.Errorf("record by the dataset id: %d %s", one.Status, one.Body)
	}
	byIDs := call(t, "GET", "/collections/datasets/items?ids="+id, nil).JSON(t)
	if byIDs["numberMatched"].(float64) != 1 || byIDs["features"].([]any)[0].(map[string]any)["id"] != id {
		t.Errorf("ids= by the dataset id: %v", byIDs)
	}
	// The record's own uuid, as older links have it, redirects to the record.
	old := call(t, "GET", "/collections/datasets/items/"+dataset["record_id"].(string), nil)
	if old.Status != 301 || !strings.HasSuffix(old.Header.Get("Location"), "/api/collections/datasets/items/"+id) {
		t.Errorf("old record id: %d Location %q", old.Status, old.Header.Get("Location"))
	}
	// ... but never for a record the caller may not see, and never for an unknown one.
	private := createDataset(t, owner, "private", true)
	wantStatus(t, "a private record's old id, anonymously", call(t, "GET", "/collections/datasets/items/"+private["record_id"].(string), nil), 404)
	wantStatus(t, "a private record, anonymously", call(t, "GET", "/collections/datasets/items/"+private["id"].(string), nil), 404)
	wantStatus(t, "unknown record", call(t, "GET", "/collections/datasets/items/"+uuid.NewString(), nil), 404)
}

func TestRecordPropertiesClientsRead(t *testing.T) {
	owner := newUser(t, "editor")
	title := "Tide gauges " + randomHex(4)
	id := publishedImport(t, owner, title, 2)
	wantStatus(t, "vintage", call(t, "PATCH", "/datasets/"+id, map[string]any{"data_vintage_start": "2019-01-01",
		"data_vintage_end": "2020-06-30", "language": "nl"}, bearer(owner.Access)...), 200)
	wantStatus(t, "contact", call(t, "POST", "/records/"+id+"/contacts/", map[string]any{"role": "pointOfContact", "name": "Ada",
		"email": "ada@example.org"}, bearer(owner.Access)...), 201)
	wantStatus(t, "own distribution", call(t, "POST", "/records/"+id+"/distributions/", map[string]any{"distribution_type": "access",
		"format": "WMS", "url": "https://maps.example.org/wms", "title": "WMS"}, bearer(owner.Access)...), 201)

	rec := call(t, "GET", "/collections/datasets/items/"+id, nil).JSON(t)
	p := rec["properties"].(map[string]any)
	if p["type"] != "dataset" || p["record_type"] != "vector_dataset" {
		t.Errorf("type %v, record_type %v", p["type"], p["record_type"])
	}
	if p["license"] != "proprietary" {
		t.Errorf("license without one set: %v", p["license"])
	}
	for _, key := range []string{"band_count", "rights", "datetime", "language"} {
		if _, ok := p[key]; !ok {
			t.Errorf("properties lack %s", key)
		}
	}
	if p["band_count"] != nil || p["language"] != "nl" || p["datetime"] != "2020-06-30T00:00:00Z" {
		t.Errorf("band_count %v, language %v, datetime %v", p["band_count"], p["language"], p["datetime"])
	}
	if fmt.Sprint(p["time"]) != "map[interval:[[2019-01-01 2020-06-30]]]" {
		t.Errorf("time %v", p["time"])
	}
	if c := p["contacts"].([]any); len(c) != 1 || c[0].(map[string]any)["email"] != "ada@example.org" {
		t.Errorf("contacts %v", p["contacts"])
	}
	formats := fmt.Sprint(p["formats"])
	for _, mt := range []string{"application/geopackage+sqlite3", "application/geo+json", "text/csv", "application/flatgeobuf"} {
		if !strings.Contains(formats, mt) {
			t.Errorf("formats %s lack %s", formats, mt)
		}
	}
	conforms := fmt.Sprint(rec["conformsTo"])
	for _, c := range []string{"ogcapi-records-1/1.0/conf/record-core", "ogcapi-records-1/1.0/conf/json"} {
		if !strings.Contains(conforms, c) {
			t.Errorf("conformsTo %s lacks %s", conforms, c)
		}
	}
	// Distributions: generated ones first (absolute, auto_generated), then the record's own.
	var kinds []string
	for _, x := range p["distributions"].([]any) {
		d := x.(map[string]any)
		if !strings.HasPrefix(d["url"].(string), "http") {
			t.Errorf("distribution url not absolute: %v", d)
		}
		kinds = append(kinds, fmt.Sprintf("%v/%v/%v", d["type"], d["format"], d["auto_generated"]))
	}
	want := []string{"download/gpkg/true", "download/geojson/true", "download/csv/true", "download/shp/true", "download/fgb/true",
		"ogc_api_features/geojson/true", "vector_tiles/mvt/true", "access/WMS/false"}
	if !slices.Equal(kinds, want) {
		t.Errorf("distributions %v, want %v", kinds, want)
	}
	assets, _ := rec["assets"].(map[string]any)
	if assets == nil || assets["data"] == nil || assets["tiles"] == nil {
		t.Fatalf("assets %v", rec["assets"])
	}
	data := assets["data"].(map[string]any)["href"].(string)
	r := call(t, "GET", strings.TrimPrefix(data, server.APIRoot), nil)
	if r.Status != 200 || r.Header.Get("Content-Type") != "application/geopackage+sqlite3" {
		t.Errorf("the data asset %s: %d %s", data, r.Status, r.Header.Get("Content-Type"))
	}
}

func TestRecordTypesAndSortMenu(t *testing.T) {
	owner := newUser(t, "editor")
	tag := randomHex(4)
	var ids []string
	for _, name := range []string{"Bravo", "Alpha", "Charlie"} {
		d := createDataset(t, owner, "public", true)
		id := d["id"].(string)
		wantStatus(t, "title", call(t, "PATCH", "/datasets/"+id, map[string]any{"title": name + " " + tag}, bearer(owner.Access)...), 200)
		ids = append(ids, id)
	}
	// Make Bravo the most recently updated.
	wantStatus(t, "touch", call(t, "PATCH", "/datasets/"+ids[0], map[string]any{"summary": "touched"}, bearer(owner.Access)...), 200)
	order := func(query string) []string {
		t.Helper()
		r := call(t, "GET", "/search/datasets/?q="+tag+"&"+query, nil)
		if r.Status != 200 {
			t.Fatalf("%s: %d %s", query, r.Status, r.Body)
		}
		var out []string
		for _, f := range r.JSON(t)["features"].([]any) {
			p := f.(map[string]any)["properties"].(map[string]any)
			if p["type"] == "dataset" {
				out = append(out, strings.Fields(p["title"].(string))[0])
			}
		}
		return out
	}
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"sort_by=name", []string{"Alpha", "Bravo", "Charlie"}},
		{"sort_by=title", []string{"Alpha", "Bravo", "Charlie"}},
		{"sort_by=date_added", []string{"Charlie", "Alpha", "Bravo"}},
		{"sort_by=last_updated", []string{"Bravo", "Charlie", "Alpha"}},
		{"sort_by=date_added&sort_desc=false", []string{"Bravo", "Alpha", "Charlie"}},
		{"record_type=raster_dataset", nil},
	} {
		if got := order(tc.query); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.query, got, tc.want)
		}
	}
	if r := call(t, "GET", "/search/datasets/?sort_by=popularity", nil); r.Status != 400 {
		t.Errorf("unknown sort_by: %d", r.Status)
	}
	all := call(t, "GET", "/collections/datasets/items?type=dataset&q="+tag, nil).JSON(t)
	if all["numberMatched"].(float64) != 3 {
		t.Errorf("type=dataset on the records: %v", all["numberMatched"])
	}
}

func TestTextSearchAppendsMatchingCollections(t *testing.T) {
	owner := newUser(t, "editor")
	tag := "estuary" + randomHex(3)
	pub := createDataset(t, owner, "public", true)["id"].(string)
	priv := createDataset(t, owner, "private", true)["id"].(string)
	wantStatus(t, "title", call(t, "PATCH", "/datasets/"+pub, map[string]any{"title": "Salt marsh " + tag}, bearer(owner.Access)...), 200)
	col := call(t, "POST", "/catalog/collections/", map[string]any{"name": "Wetlands", "description": "Everything about the " + tag},
		bearer(owner.Access)...).JSON(t)
	cid := col["id"].(string)
	wantStatus(t, "members", call(t, "POST", "/catalog/collections/"+cid+"/datasets/", map[string]any{"dataset_ids": []string{pub, priv}},
		bearer(owner.Access)...), 200)

	page := call(t, "GET", "/search/datasets/?q="+tag, nil).JSON(t)
	features := page["features"].([]any)
	if len(features) != 2 || page["numberReturned"].(float64) != 2 || page["numberMatched"].(float64) != 1 {
		t.Fatalf("first page: %v", page)
	}
	last := features[1].(map[string]any)
	p := last["properties"].(map[string]any)
	if last["id"] != cid || p["type"] != "collection" || p["record_type"] != "collection" || p["title"] != "Wetlands" {
		t.Fatalf("appended record: %v", last)
	}
	if p["dataset_count"].(float64) != 1 { // the anonymous caller reads one of its two members
		t.Errorf("dataset_count for anonymous: %v", p["dataset_count"])
	}
	if next := call(t, "GET", "/search/datasets/?q="+tag+"&offset=1", nil).JSON(t); len(next["features"].([]any)) != 0 {
		t.Errorf("a later page appends collections: %v", next)
	}
	if plain := call(t, "GET", "/search/datasets/?q=zzz"+randomHex(4), nil).JSON(t); len(plain["features"].([]any)) != 0 {
		t.Errorf("no match, yet features: %v", plain)
	}
}

// TestSearchFindsCollectionsChangedOnAnotherReplica: servers keep the collections' texts so
// that a search matching none asks nothing (internal/catalog/collectionnames.go); a collection
// made or renamed through one server is appended by the other's searches within a second, and by
// its own at once.
func TestSearchFindsCollectionsChangedOnAnotherReplica(t *testing.T) {
	owner := newUser(t, "editor")
	second, err := Start(context.Background(), server.DBURL, "RATE_LIMIT_ENABLED=false")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(second.Stop)
	hc := &http.Client{}
	found := func(root, word, id string) bool {
		t.Helper()
		r := callAt(t, hc, root, "GET", "/search/datasets/?q="+word, nil)
		wantStatus(t, "search "+word, r, 200)
		for _, f := range r.JSON(t)["features"].([]any) {
			if f.(map[string]any)["id"] == id {
				return true
			}
		}
		return false
	}
	withinASecond := func(word, id string) {
		t.Helper()
		start := time.Now()
		for !found(second.APIRoot, word, id) {
			if time.Since(start) > time.Second {
				t.Fatalf("the second server does not find the collection by %q %v after its change", word, time.Since(start).Round(time.Millisecond))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	before, after := "fjord"+randomHex(4), "skerry"+randomHex(4)
	// Both servers searched for the word first: what they keep holds no collection with it.
	if found(server.APIRoot, before, "") || found(second.APIRoot, before, "") {
		t.Fatal("nothing to find yet")
	}
	col := call(t, "POST", "/catalog/collections/", map[string]any{"name": "Coast " + before}, bearer(owner.Access)...)
	wantStatus(t, "collection", col, 201)
	id := col.JSON(t)["id"].(string)
	if !found(server.APIRoot, before, id) {
		t.Fatal("the server that made the collection does not find it at once")
	}
	withinASecond(before, id)

	wantStatus(t, "rename", call(t, "PATCH", "/catalog/collections/"+id, map[string]any{"description": "Islands " + after},
		bearer(owner.Access)...), 200)
	if !found(server.APIRoot, after, id) {
		t.Fatal("the server that described the collection does not find it by its description at once")
	}
	withinASecond(after, id)
}

func TestCatalogSummariesFollowVisibility(t *testing.T) {
	owner := newUser(t, "editor")
	pub, priv := createDataset(t, owner, "public", true)["id"].(string), createDataset(t, owner, "private", true)["id"].(string)
	openOrg, closedOrg := "Open Survey "+randomHex(3), "Closed Survey "+randomHex(3)
	wantStatus(t, "org", call(t, "PATCH", "/datasets/"+pub, map[string]any{"source_organization": openOrg,
		"data_vintage_start": "2001-02-03"}, bearer(owner.Access)...), 200)
	wantStatus(t, "org", call(t, "PATCH", "/datasets/"+priv, map[string]any{"source_organization": closedOrg}, bearer(owner.Access)...), 200)
	publishedImport(t, owner, "Buoys "+randomHex(3), 2)

	summaries := func(who ...string) map[string]any {
		t.Helper()
		c := call(t, "GET", "/collections/datasets", nil, who...).JSON(t)
		if c["extent"] == nil {
			t.Fatalf("no extent: %v", c)
		}
		return c["summaries"].(map[string]any)
	}
	anon, mine := summaries(), summaries(bearer(owner.Access)...)
	orgs := func(s map[string]any) string { return fmt.Sprint(s["source_organization"]) }
	if !strings.Contains(orgs(anon), openOrg) || strings.Contains(orgs(anon), closedOrg) {
		t.Errorf("anonymous organizations: %s", orgs(anon))
	}
	if !strings.Contains(orgs(mine), closedOrg) {
		t.Errorf("the owner's organizations lack the private one: %s", orgs(mine))
	}
	for _, key := range []string{"geometry_type", "srid", "keywords", "record_type"} {
		if _, ok := anon[key].([]any); !ok {
			t.Errorf("summaries.%s: %v", key, anon[key])
		}
	}
	if !strings.Contains(fmt.Sprint(anon["srid"]), "4326") || !strings.Contains(fmt.Sprint(anon["record_type"]), "vector_dataset") {
		t.Errorf("srid %v, record types %v", anon["srid"], anon["record_type"])
	}
	classes := fmt.Sprint(call(t, "GET", "/conformance", nil).JSON(t)["conformsTo"])
	if !strings.Contains(classes, "ogcapi-records-1/1.0/conf/record-core") || !strings.Contains(classes, "ogcapi-records-1/1.0/conf/json") {
		t.Errorf("conformance lacks the Records classes: %s", classes)
	}
}

// never_edited holds while the record is as its import made it; any change ends it.
func TestNeverEditedEndsWithTheFirstChange(t *testing.T) {
	owner := newUser(t, "editor")
	job := importFile(t, owner, "places.geojson", pointsGeoJSON(2), map[string]any{"title": "Quays " + randomHex(3)})
	id := job["dataset_id"].(string)
	edited := func() any {
		r := call(t, "GET", "/collections/datasets/items/"+id, nil, bearer(owner.Access)...)
		if r.Status != 200 {
			t.Fatalf("record: %d %s", r.Status, r.Body)
		}
		return r.JSON(t)["properties"].(map[string]any)["never_edited"]
	}
	if got := edited(); got != true {
		t.Fatalf("a fresh import: never_edited %v", got)
	}
	wantStatus(t, "edit", call(t, "PATCH", "/datasets/"+id, map[string]any{"summary": "Now described."}, bearer(owner.Access)...), 200)
	if got := edited(); got != false {
		t.Errorf("after a metadata edit: never_edited %v", got)
	}
}
