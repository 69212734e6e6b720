package conformance

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// stacFixture is a catalog of a collection with public, published datasets of known vintages and
// a private one, made by one editor.
type stacFixture struct {
	owner      session
	collection string
	public     []string // ids, in the order made
	private    string
	tag        string
}

func newStacFixture(t *testing.T) stacFixture {
	t.Helper()
	f := stacFixture{owner: newUser(t, "editor"), tag: "stac" + randomHex(4)}
	vintages := [][2]string{{"2019-01-01", "2019-12-31"}, {"2021-06-01", "2021-06-01"}, {"2023-03-01", ""}}
	for i, v := range vintages {
		id := publishedImport(t, f.owner, fmt.Sprintf("%s harbour %d", f.tag, i), 3)
		body := map[string]any{"data_vintage_start": v[0], "license": "CC BY 4.0"}
		if v[1] != "" {
			body["data_vintage_end"] = v[1]
		}
		wantStatus(t, "vintage", call(t, "PATCH", "/datasets/"+id, body, bearer(f.owner.Access)...), 200)
		f.public = append(f.public, id)
	}
	f.private = createDataset(t, f.owner, "private", true)["id"].(string)
	col := call(t, "POST", "/catalog/collections/", map[string]any{"name": f.tag + " harbours", "description": "Ports"},
		bearer(f.owner.Access)...).JSON(t)
	f.collection = col["id"].(string)
	wantStatus(t, "members", call(t, "POST", "/catalog/collections/"+f.collection+"/datasets/",
		map[string]any{"dataset_ids": []string{f.public[0], f.public[1], f.private}}, bearer(f.owner.Access)...), 200)
	return f
}

// stacIDs are the ids of an ItemCollection's features.
func stacIDs(t *testing.T, page map[string]any) []string {
	t.Helper()
	var out []string
	for _, ft := range page["features"].([]any) {
		out = append(out, ft.(map[string]any)["id"].(string))
	}
	return out
}

// stacNext is the next link of a page, nil at the end.
func stacNext(page map[string]any) map[string]any {
	for _, l := range page["links"].([]any) {
		if m := l.(map[string]any); m["rel"] == "next" {
			return m
		}
	}
	return nil
}

// A STAC client's walk: landing page, conformance, collections, a collection, its items, an item,
// every document valid against the STAC 1.0.0 schemas; what the caller may not see never shows.
func TestSTACWalk(t *testing.T) {
	f := newStacFixture(t)
	var docs []reply
	get := func(path string, who ...string) map[string]any {
		t.Helper()
		r := call(t, "GET", path, nil, who...)
		if r.Status != 200 {
			t.Fatalf("%s: %d %s", path, r.Status, r.Body)
		}
		docs = append(docs, r)
		return r.JSON(t)
	}
	landing := get("/stac/")
	classes := fmt.Sprint(landing["conformsTo"])
	for _, c := range []string{"https://api.stacspec.org/v1.0.0/core", "https://api.stacspec.org/v1.0.0/item-search",
		"https://api.stacspec.org/v1.0.0/collections", "https://api.stacspec.org/v1.0.0/item-search#sort"} {
		if !strings.Contains(classes, c) {
			t.Errorf("conformsTo lacks %s", c)
		}
	}
	rels := map[string]int{}
	for _, l := range landing["links"].([]any) {
		rels[l.(map[string]any)["rel"].(string)]++
	}
	for _, rel := range []string{"self", "root", "conformance", "data", "search", "service-desc", "child"} {
		if rels[rel] == 0 {
			t.Errorf("landing page lacks a %s link: %v", rel, rels)
		}
	}
	if c := get("/stac/conformance"); fmt.Sprint(c["conformsTo"]) != classes {
		t.Errorf("conformance differs from the landing page's")
	}
	cols := get("/stac/collections")
	var ids []string
	for _, c := range cols["collections"].([]any) {
		ids = append(ids, c.(map[string]any)["id"].(string))
	}
	if !slices.Contains(ids, "datasets") || !slices.Contains(ids, f.collection) {
		t.Fatalf("collections %v", ids)
	}
	col := get("/stac/collections/" + f.collection)
	if col["license"] != "CC-BY-4.0" || col["meridian:dataset_count"].(float64) != 2 {
		t.Errorf("collection for anonymous: license %v, members %v", col["license"], col["meridian:dataset_count"])
	}
	items := get("/stac/collections/" + f.collection + "/items")
	if got := stacIDs(t, items); len(got) != 2 || slices.Contains(got, f.private) || items["numberMatched"].(float64) != 2 {
		t.Errorf("collection items for anonymous: %v (matched %v)", got, items["numberMatched"])
	}
	item := get("/stac/collections/" + f.collection + "/items/" + f.public[0])
	p := item["properties"].(map[string]any)
	if p["datetime"] != nil || p["start_datetime"] != "2019-01-01T00:00:00Z" || p["end_datetime"] != "2019-12-31T00:00:00Z" || p["license"] != "CC-BY-4.0" {
		t.Errorf("item properties %v", p)
	}
	assets := item["assets"].(map[string]any)
	if assets["gpkg"] == nil || assets["features"] == nil || assets["tiles"] == nil {
		t.Fatalf("assets %v", assets)
	}
	href := assets["gpkg"].(map[string]any)["href"].(string)
	if r := call(t, "GET", strings.TrimPrefix(href, server.APIRoot), nil); r.Status != 200 {
		t.Errorf("the gpkg asset %s: %d", href, r.Status)
	}
	one := get("/stac/items/" + f.public[1])
	if one["properties"].(map[string]any)["datetime"] != "2021-06-01T00:00:00Z" {
		t.Errorf("a one-day vintage: %v", one["properties"])
	}
	wantStatus(t, "a private item, anonymously", call(t, "GET", "/stac/items/"+f.private, nil), 404)
	wantStatus(t, "an item of another collection", call(t, "GET", "/stac/collections/"+f.collection+"/items/"+f.public[2], nil), 404)
	wantStatus(t, "an unknown collection", call(t, "GET", "/stac/collections/nope", nil), 404)
	// The owner sees the private member, counts included.
	if mine := get("/stac/collections/"+f.collection+"/items", bearer(f.owner.Access)...); mine["numberMatched"].(float64) != 3 {
		t.Errorf("the owner's collection items: %v", mine["numberMatched"])
	}
	get("/stac/search?collections=datasets&q=x&limit=5")
	validateSTAC(t, docs)
}

// validateSTAC runs the served documents through stac-node-validator with the STAC 1.0.0 schemas
// of ../shared/data (offline), and ItemCollections' features one by one.
func validateSTAC(t *testing.T, docs []reply) {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(root, "..", "shared", "data")
	if _, err := os.Stat(filepath.Join(data, "stac", "v1.0.0")); err != nil {
		t.Fatalf("the STAC schemas are not at %s: %v", data, err)
	}
	dir := t.TempDir()
	var files []string
	write := func(v any) {
		raw, _ := json.Marshal(v)
		name := filepath.Join(dir, fmt.Sprintf("doc%03d.json", len(files)))
		if err := os.WriteFile(name, raw, 0o600); err != nil {
			t.Fatal(err)
		}
		files = append(files, name)
	}
	for _, d := range docs {
		m := d.JSON(t)
		switch {
		case m["type"] == "FeatureCollection":
			for _, ft := range m["features"].([]any) {
				write(ft)
			}
		case m["collections"] != nil:
			for _, c := range m["collections"].([]any) {
				write(c)
			}
		case m["type"] != nil:
			write(m)
		}
	}
	if err := stacValidator(root, data, files); err != nil {
		t.Fatal(err)
	}
}

// stacValidator validates files with stac-node-validator against the schemas under data.
func stacValidator(root, data string, files []string) error {
	geo := filepath.Join(data, "geojson-schema")
	args := append([]string{"--no-install", "stac-node-validator"}, files...)
	args = append(args, "--schemas", filepath.Join(data, "stac", "v1.0.0"),
		"--schemaMap", "https://geojson.org/schema/Feature.json="+filepath.Join(geo, "Feature.json"),
		"--schemaMap", "https://geojson.org/schema/Geometry.json="+filepath.Join(geo, "Geometry.json"))
	cmd := exec.Command("npx", args...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), fmt.Sprintf("Valid: %d", len(files))) {
		return fmt.Errorf("stac-node-validator (%d documents): %v\n%s", len(files), err, tail(string(out), 6000))
	}
	return nil
}

// The validator is not asleep: the shared invalid fixture fails, the valid ones pass.
func TestSTACValidatorCatchesInvalid(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(root, "..", "shared", "data")
	fixtures := filepath.Join(data, "stac", "fixtures")
	if err := stacValidator(root, data, []string{filepath.Join(fixtures, "item-invalid.json")}); err == nil {
		t.Fatal("an item without datetime passed")
	}
	if err := stacValidator(root, data, []string{filepath.Join(fixtures, "item-valid.json"), filepath.Join(fixtures, "collection-valid.json")}); err != nil {
		t.Fatal(err)
	}
}

// Item search with each parameter, paged by next links to the end; a POST search too.
func TestSTACSearch(t *testing.T) {
	f := newStacFixture(t)
	search := func(query string) map[string]any {
		t.Helper()
		r := call(t, "GET", "/stac/search?"+query, nil)
		if r.Status != 200 {
			t.Fatalf("search %s: %d %s", query, r.Status, r.Body)
		}
		return r.JSON(t)
	}
	mine := "filter=" + url.QueryEscape("title LIKE '"+f.tag+"%'")
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{mine + "&sortby=title", f.public},
		{mine + "&sortby=-properties.title", []string{f.public[2], f.public[1], f.public[0]}},
		{mine + "&sortby=properties.datetime", f.public},
		{mine + "&datetime=2021-01-01/2021-12-31&sortby=title", []string{f.public[1]}},
		{mine + "&datetime=2022-01-01/..&sortby=title", []string{f.public[2]}},
		{mine + "&ids=" + f.public[0] + "," + f.private, []string{f.public[0]}},
		{mine + "&collections=" + f.collection + "&sortby=title", []string{f.public[0], f.public[1]}},
		{mine + "&bbox=4,49,6,51&sortby=title", f.public},
		{mine + "&bbox=100,0,110,10", nil},
		{mine + "&intersects=" + url.QueryEscape(`{"type":"Point","coordinates":[5.01,50.01]}`) + "&sortby=title", f.public},
	} {
		if got := stacIDs(t, search(tc.query)); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.query, got, tc.want)
		}
	}
	// Paging by next links: every item once, pages stable while a record is added in front.
	seen := map[string]bool{}
	page := search(mine + "&limit=1")
	if page["numberMatched"].(float64) != 3 {
		t.Fatalf("numberMatched %v", page["numberMatched"])
	}
	publishedImport(t, f.owner, f.tag+" harbour new", 2) // now the most recently updated
	for hops := 0; page != nil; hops++ {
		for _, id := range stacIDs(t, page) {
			if seen[id] {
				t.Fatalf("item %s on two pages", id)
			}
			seen[id] = true
		}
		next := stacNext(page)
		if next == nil {
			break
		}
		if hops > 5 || !strings.Contains(next["href"].(string), "token=") {
			t.Fatalf("next link %v", next)
		}
		page = search(strings.SplitN(next["href"].(string), "?", 2)[1])
	}
	for _, id := range f.public {
		if !seen[id] {
			t.Errorf("paging missed %s: %v", id, seen)
		}
	}
	// Fields: asked members only, the required ones always.
	slim := search(mine + "&limit=1&fields=id,properties.title,-assets")
	ft := slim["features"].([]any)[0].(map[string]any)
	props := ft["properties"].(map[string]any)
	if props["title"] == nil || props["license"] != nil || ft["geometry"] == nil || ft["id"] == nil {
		t.Errorf("fields: %v", ft)
	}
	// POST: sortby, fields, a CQL2-JSON filter, next link with a body.
	body := map[string]any{"limit": 2, "sortby": []map[string]any{{"field": "properties.title", "direction": "desc"}},
		"filter": map[string]any{"op": "like", "args": []any{map[string]any{"property": "title"}, f.tag + " harbour _"}}}
	r := call(t, "POST", "/stac/search", body)
	if r.Status != 200 {
		t.Fatalf("POST search: %d %s", r.Status, r.Body)
	}
	first := r.JSON(t)
	if got := stacIDs(t, first); !slices.Equal(got, []string{f.public[2], f.public[1]}) {
		t.Errorf("POST page 1: %v", got)
	}
	next := stacNext(first)
	if next == nil || next["method"] != "POST" {
		t.Fatalf("POST next link %v", next)
	}
	body["token"] = next["body"].(map[string]any)["token"]
	if got := stacIDs(t, call(t, "POST", "/stac/search", body).JSON(t)); !slices.Equal(got, []string{f.public[0]}) {
		t.Errorf("POST page 2: %v", got)
	}
	// Tokens are taken only by the search that made them.
	wantStatus(t, "a token of another search", call(t, "POST", "/stac/search", map[string]any{"token": body["token"]}), 400)
	wantStatus(t, "a forged token", call(t, "GET", "/stac/search?token=abc", nil), 400)
	wantStatus(t, "bbox and intersects", call(t, "GET", "/stac/search?bbox=0,0,1,1&intersects="+url.QueryEscape(`{"type":"Point","coordinates":[0,0]}`), nil), 400)
	wantStatus(t, "an unsortable field", call(t, "GET", "/stac/search?sortby=properties.colour", nil), 400)
}
