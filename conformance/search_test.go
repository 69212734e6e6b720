package conformance

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// searchFixture is a public collection of five published datasets by one owner, one per
// visibility (and a private draft), with titles, keywords and summaries to search.
type searchFixture struct {
	owner, viewer session
	collection    string
	ids           map[string]string // by visibility
}

func newSearchFixture(t *testing.T) searchFixture {
	t.Helper()
	f := searchFixture{owner: newUser(t, "editor"), viewer: newUser(t, "viewer"), ids: map[string]string{}}
	r := call(t, "POST", "/catalog/collections/", map[string]any{"name": "Search " + randomHex(4), "visibility": "public"}, bearer(f.owner.Access)...)
	if r.Status != 201 {
		t.Fatalf("collection: %d %s", r.Status, r.Body)
	}
	f.collection = r.JSON(t)["id"].(string)
	meta := map[string]map[string]any{
		"public": {"title": "Hydrography of the Rhine basin", "theme_category": []string{"Water", "Inland waters"},
			"summary": "Rivers, canals and lakes", "source_organization": "Rijkswaterstaat"},
		"internal":   {"title": "Road network", "summary": "Motorways and the hydrography they cross", "theme_category": []string{"Transport"}},
		"restricted": {"title": "Hydrography restricted survey", "theme_category": []string{"Water"}},
		"private":    {"title": "Private hydrography notes", "theme_category": []string{"Water"}},
	}
	var ids []any
	for vis, m := range meta {
		id := createDataset(t, f.owner, vis, vis != "private")["id"].(string)
		if r := call(t, "PATCH", "/datasets/"+id, m, bearer(f.owner.Access)...); r.Status != 200 {
			t.Fatalf("metadata of %s: %d %s", vis, r.Status, r.Body)
		}
		f.ids[vis] = id
		ids = append(ids, id)
	}
	if r := call(t, "POST", "/catalog/collections/"+f.collection+"/datasets/", map[string]any{"dataset_ids": ids}, bearer(f.owner.Access)...); r.Status != 200 {
		t.Fatalf("members: %d %s", r.Status, r.Body)
	}
	return f
}

// search answers the ids of a search in its order.
func (f searchFixture) search(t *testing.T, query string, who ...string) []string {
	t.Helper()
	r := call(t, "GET", "/search/datasets/?collection_id="+f.collection+"&"+query, nil, who...)
	if r.Status != 200 {
		t.Fatalf("search %s: %d %s", query, r.Status, r.Body)
	}
	var out []string
	body := r.JSON(t)
	features := body["features"].([]any)
	for _, ft := range features {
		// A text search's first page ends with the collections it matches (records of type
		// collection), which are not datasets.
		if p := ft.(map[string]any)["properties"].(map[string]any); p["type"] == "dataset" {
			out = append(out, fmt.Sprint(p["dataset_id"]))
		}
	}
	if int(body["numberMatched"].(float64)) < len(out) || int(body["numberReturned"].(float64)) != len(features) {
		t.Fatalf("search %s: counts %v/%v for %d features", query, body["numberMatched"], body["numberReturned"], len(features))
	}
	return out
}

func TestSearchDatasets(t *testing.T) {
	f := newSearchFixture(t)
	name := func(ids []string) []string {
		var out []string
		for _, id := range ids {
			for vis, v := range f.ids {
				if v == id {
					out = append(out, vis)
				}
			}
		}
		return out
	}
	tests := []struct {
		name, query string
		who         []string
		want        []string // visibilities, in order; nil: compared as a set
		set         []string
	}{
		// Visibility: the read policy of datasets, over search.
		{name: "anonymous sees the public one", query: "q=hydrography", want: []string{"public"}},
		{name: "signed-in sees internal too, title match first", query: "q=hydrography", who: bearer(f.viewer.Access), want: []string{"public", "internal"}},
		{name: "owner sees all four", query: "q=hydrography", who: bearer(f.owner.Access), set: []string{"public", "internal", "restricted", "private"}},
		// Stemming, keywords and typos.
		{name: "stemmed summary word", query: "q=river", want: []string{"public"}},
		{name: "keyword", query: "q=inland", want: []string{"public"}},
		{name: "typo in a title word", query: "q=hydrografy", want: []string{"public"}},
		{name: "organization", query: "q=rijkswaterstaat", want: []string{"public"}},
		{name: "excluded word", query: "q=" + url.QueryEscape("hydrography -rivers"), who: bearer(f.viewer.Access), want: []string{"internal"}},
		{name: "no match", query: "q=volcano", want: nil},
		// Filters.
		{name: "keywords filter, any case", query: "keywords=water", who: bearer(f.owner.Access), set: []string{"public", "restricted", "private"}},
		{name: "theme filter", query: "theme=Transport", who: bearer(f.viewer.Access), want: []string{"internal"}},
		{name: "organization filter", query: "source_organization=rijkswaterstaat", want: []string{"public"}},
		{name: "sorted by title", query: "sort=title", who: bearer(f.owner.Access), want: []string{"public", "restricted", "private", "internal"}},
		{name: "sort_by title descending", query: "sort_by=title&sort_desc=true", who: bearer(f.owner.Access), want: []string{"internal", "private", "restricted", "public"}},
		{name: "CQL2 filter", query: "filter=" + url.QueryEscape("title LIKE 'Road%'"), who: bearer(f.viewer.Access), want: []string{"internal"}},
		{name: "paging", query: "sort=title&limit=1&offset=1", who: bearer(f.owner.Access), want: []string{"restricted"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := name(f.search(t, tt.query, tt.who...))
			if tt.set != nil {
				slices.Sort(got)
				slices.Sort(tt.set)
				tt.want = tt.set
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
	for _, bad := range []string{"q=" + strings.Repeat("a", 1001), "sort_by=nope", "filter=" + url.QueryEscape("title LIKE"),
		"limit=0", "bbox=1,2,3", "collection=" + f.ids["public"]} {
		if r := call(t, "GET", "/search/datasets/?collection_id="+f.collection+"&"+bad, nil); r.Status != 400 && r.Status != 422 {
			t.Errorf("%.60s: %d, want 400 or 422", bad, r.Status)
		}
	}
}

// Facet counts are over the same visible set as the search: a record the caller may not read
// is in no count.
func TestSearchFacets(t *testing.T) {
	f := newSearchFixture(t)
	facets := func(who ...string) map[string]any {
		r := call(t, "GET", "/search/facets/?collection_id="+f.collection, nil, who...)
		if r.Status != 200 {
			t.Fatalf("facets: %d %s", r.Status, r.Body)
		}
		return r.JSON(t)
	}
	count := func(list any, value string) float64 {
		for _, b := range list.([]any) {
			if b := b.(map[string]any); b["value"] == value {
				return b["count"].(float64)
			}
		}
		return 0
	}
	for _, tc := range []struct {
		who          []string
		water, types float64
	}{{nil, 1, 1}, {bearer(f.viewer.Access), 1, 2}, {bearer(f.owner.Access), 3, 4}} {
		fc := facets(tc.who...)
		if count(fc["keywords"], "Water") != tc.water || fc["record_type"].(map[string]any)["vector_dataset"].(float64) != tc.types {
			t.Errorf("facets for %v: %v", tc.who != nil, fc)
		}
		cols := fc["collections"].([]any)
		if len(cols) != 1 || cols[0].(map[string]any)["dataset_count"].(float64) != tc.types {
			t.Errorf("collection facet: %v", cols)
		}
	}
	fc := facets()
	if gt := fc["geometry_type"].([]any); count(fc["source_organization"], "Rijkswaterstaat") != 1 || len(gt) != 1 || gt[0].(map[string]any)["count"].(float64) != 1 {
		t.Errorf("anonymous facets: %v", fc)
	}
	narrowed := call(t, "GET", "/search/facets/?collection_id="+f.collection+"&q=road&fields=keywords", nil, bearer(f.viewer.Access)...).JSON(t)
	if count(narrowed["keywords"], "Transport") != 1 || count(narrowed["keywords"], "Water") != 0 || len(narrowed["record_type"].(map[string]any)) != 0 {
		t.Errorf("facets of q=road, keywords only: %v", narrowed)
	}
}

// Saved searches belong to their user; their params replay through Search Datasets.
func TestSavedSearches(t *testing.T) {
	f := newSearchFixture(t)
	other := newUser(t, "viewer")
	params := map[string]any{"q": "hydrography", "collection_id": f.collection, "sort": "title"}
	r := call(t, "POST", "/search/saved/", map[string]any{"name": "Rivers", "params": params}, bearer(f.viewer.Access)...)
	if r.Status != 201 || r.JSON(t)["name"] != "Rivers" || r.JSON(t)["params"].(map[string]any)["q"] != "hydrography" {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	id := r.JSON(t)["id"].(string)
	for _, bad := range []map[string]any{{"name": "", "params": params}, {"name": strings.Repeat("n", 256), "params": params},
		{"name": "x"}, {"name": "x", "params": []any{1}}} {
		if r := call(t, "POST", "/search/saved/", bad, bearer(f.viewer.Access)...); r.Status != 422 {
			t.Errorf("create %.40v: %d, want 422", bad, r.Status)
		}
	}
	if r := call(t, "POST", "/search/saved/", map[string]any{"name": "x", "params": params}); r.Status != 401 {
		t.Errorf("anonymous create: %d", r.Status)
	}
	// Replaying: the stored params as the query of Search Datasets.
	got := call(t, "GET", "/search/saved/"+id, nil, bearer(f.viewer.Access)...).JSON(t)
	query := url.Values{}
	for k, v := range got["params"].(map[string]any) {
		query.Set(k, fmt.Sprint(v))
	}
	res := call(t, "GET", "/search/datasets/?"+query.Encode(), nil, bearer(f.viewer.Access)...).JSON(t)
	if res["numberMatched"].(float64) != 2 {
		t.Errorf("replayed search: %v", res["numberMatched"])
	}
	// Private to the owner: another user neither lists, reads nor deletes it.
	if l := call(t, "GET", "/search/saved/", nil, bearer(other.Access)...).JSON(t); l["total"].(float64) != 0 {
		t.Errorf("another user's list: %v", l)
	}
	for _, m := range []string{"GET", "DELETE"} {
		if r := call(t, m, "/search/saved/"+id, nil, bearer(other.Access)...); r.Status != 404 {
			t.Errorf("%s by another user: %d", m, r.Status)
		}
	}
	call(t, "POST", "/search/saved/", map[string]any{"name": "Second", "params": map[string]any{}}, bearer(f.viewer.Access)...)
	l := call(t, "GET", "/search/saved/?limit=1", nil, bearer(f.viewer.Access)...).JSON(t)
	if l["total"].(float64) != 2 || len(l["searches"].([]any)) != 1 || l["searches"].([]any)[0].(map[string]any)["name"] != "Second" {
		t.Errorf("list: %v", l)
	}
	if l := call(t, "GET", "/search/saved/?skip=5", nil, bearer(f.viewer.Access)...).JSON(t); l["total"].(float64) != 2 {
		t.Errorf("past the last page: %v", l)
	}
	if r := call(t, "DELETE", "/search/saved/"+id, nil, bearer(f.viewer.Access)...); r.Status != 204 {
		t.Fatalf("delete: %d", r.Status)
	}
	if r := call(t, "GET", "/search/saved/"+id, nil, bearer(f.viewer.Access)...); r.Status != 404 {
		t.Errorf("deleted: %d", r.Status)
	}
}

// What a record the caller may not see holds must not change what the caller finds: a private
// record with the very (misspelt) word searched for does not turn off the typo matching that
// finds a public record for an anonymous caller.
func TestSearchHiddenRecordsDoNotSteerTypoMatching(t *testing.T) {
	owner := newUser(t, "editor")
	word := "hydrografy"
	priv := createDataset(t, owner, "private", false)["id"].(string)
	if r := call(t, "PATCH", "/datasets/"+priv, map[string]any{"title": "Notes on " + word}, bearer(owner.Access)...); r.Status != 200 {
		t.Fatal(r.Status)
	}
	pub := createDataset(t, owner, "public", true)["id"].(string)
	call(t, "PATCH", "/datasets/"+pub, map[string]any{"title": "Hydrography survey"}, bearer(owner.Access)...)
	c := call(t, "POST", "/catalog/collections/", map[string]any{"name": "Typo " + randomHex(4), "visibility": "public"}, bearer(owner.Access)...).JSON(t)["id"].(string)
	call(t, "POST", "/catalog/collections/"+c+"/datasets/", map[string]any{"dataset_ids": []any{pub}}, bearer(owner.Access)...)
	res := call(t, "GET", "/search/datasets/?collection_id="+c+"&q="+word, nil).JSON(t)
	if res["numberMatched"].(float64) != 1 {
		t.Fatalf("anonymous typo search beside a hidden exact match: %v", res["numberMatched"])
	}
}

// A search decides visibility on its documents' copies of the record's fields (migrations 34 and
// 35): a record made private or internal is found (or not) by the next search exactly as the
// record now says, in the page, in its count and in its facets. (The copied extents: TestRecordsBBoxMatchesTheExtentGeometry
// in internal/catalog, which moves half of its extents after their records are made.)
func TestSearchFollowsRecordChanges(t *testing.T) {
	f := newSearchFixture(t)
	matched := func(query string, who ...string) float64 {
		t.Helper()
		r := call(t, "GET", "/search/datasets/?collection_id="+f.collection+"&"+query, nil, who...)
		if r.Status != 200 {
			t.Fatalf("search %s: %d %s", query, r.Status, r.Body)
		}
		return r.JSON(t)["numberMatched"].(float64)
	}
	patch := func(body map[string]any) {
		t.Helper()
		if r := call(t, "PATCH", "/datasets/"+f.ids["public"], body, bearer(f.owner.Access)...); r.Status != 200 {
			t.Fatalf("patch %v: %d %s", body, r.Status, r.Body)
		}
	}
	if n := matched("q=rhine"); n != 1 {
		t.Fatalf("anonymous, public record: %v matched", n)
	}
	patch(map[string]any{"visibility": "private"})
	if n, v := matched("q=rhine"), matched("q=rhine", bearer(f.viewer.Access)...); n != 0 || v != 0 {
		t.Errorf("made private: anonymous %v, viewer %v matched", n, v)
	}
	if n := matched("q=rhine", bearer(f.owner.Access)...); n != 1 {
		t.Errorf("made private: its owner %v matched", n)
	}
	patch(map[string]any{"visibility": "internal"})
	if n, v := matched("q=rhine"), matched("q=rhine", bearer(f.viewer.Access)...); n != 0 || v != 1 {
		t.Errorf("made internal: anonymous %v, viewer %v matched", n, v)
	}
	// The facets of a search count the same copies: a changed organization is counted at once.
	patch(map[string]any{"source_organization": "Waterschap Rivierenland"})
	fc := call(t, "GET", "/search/facets/?collection_id="+f.collection+"&q=rhine", nil, bearer(f.viewer.Access)...).JSON(t)
	orgs := fmt.Sprint(fc["source_organization"])
	if orgs != "[map[count:1 value:Waterschap Rivierenland]]" || fmt.Sprint(fc["record_type"]) != "map[vector_dataset:1]" {
		t.Errorf("facets after the change: organizations %s, record types %v", orgs, fc["record_type"])
	}
}
