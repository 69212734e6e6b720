package conformance

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// A record's keywords: added and removed by who may change the dataset, each change a new version
// with a history entry, and seen at once by search, the keywords facet and the OGC record item.
func TestRecordKeywords(t *testing.T) {
	owner, viewer := newUser(t, "editor"), newUser(t, "viewer")
	d := createDataset(t, owner, "public", true)
	id, record := d["id"].(string), d["record_id"].(string)
	word := "zeolith" + randomHex(3)
	before := call(t, "GET", "/datasets/"+id, nil, bearer(owner.Access)...).JSON(t)

	r := call(t, "POST", "/records/"+record+"/keywords/", map[string]any{"keyword": " " + word + " ",
		"vocabulary_uri": "http://www.eionet.europa.eu/gemet/concept/4065"}, bearer(owner.Access)...)
	if r.Status != 201 || r.JSON(t)["keyword"] != word || r.JSON(t)["keyword_type"] != "theme" || r.JSON(t)["record_id"] != record {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	kid := r.JSON(t)["id"].(string)
	for _, tc := range []struct {
		body   map[string]any
		who    []string
		status int
	}{
		{map[string]any{"keyword": strings.ToUpper(word), "vocabulary_uri": "http://www.eionet.europa.eu/gemet/concept/4065"}, bearer(owner.Access), 409},
		{map[string]any{"keyword": "   "}, bearer(owner.Access), 422},
		{map[string]any{"keyword": ""}, bearer(owner.Access), 422},
		{map[string]any{"keyword": strings.Repeat("k", 501)}, bearer(owner.Access), 422},
		{map[string]any{"keyword": "x"}, bearer(viewer.Access), 403},
		{map[string]any{"keyword": "x"}, nil, 401},
	} {
		if r := call(t, "POST", "/records/"+record+"/keywords/", tc.body, tc.who...); r.Status != tc.status {
			t.Errorf("create %.40v: %d, want %d", tc.body, r.Status, tc.status)
		}
	}
	// The same keyword without a vocabulary is another keyword.
	if r := call(t, "POST", "/records/"+record+"/keywords/", map[string]any{"keyword": word, "keyword_type": "place"}, bearer(owner.Access)...); r.Status != 201 {
		t.Fatalf("same word, no vocabulary: %d %s", r.Status, r.Body)
	}
	list := call(t, "GET", "/records/"+id+"/keywords/", nil).JSON(t) // by the dataset's id too, and anonymously (public)
	if list["total"].(float64) != 2 || list["keywords"].([]any)[0].(map[string]any)["vocabulary_uri"] != nil {
		t.Fatalf("list: %v", list)
	}
	after := call(t, "GET", "/datasets/"+id, nil, bearer(owner.Access)...).JSON(t)
	// Keywords are metadata: no data version (current_version stays), but the record moves on.
	if after["current_version"].(float64) != before["current_version"].(float64) || after["updated_at"] == before["updated_at"] {
		t.Errorf("version %v -> %v, updated_at %v -> %v", before["current_version"], after["current_version"], before["updated_at"], after["updated_at"])
	}
	found := func() bool {
		res := call(t, "GET", "/search/datasets/?q="+word, nil).JSON(t)
		return res["numberMatched"].(float64) == 1
	}
	item := call(t, "GET", "/collections/datasets/items/"+id, nil).JSON(t)
	kws := fmt.Sprint(item["properties"].(map[string]any)["keywords"])
	facets := call(t, "GET", "/search/facets/?keywords="+word, nil).JSON(t)
	if !found() || !strings.Contains(kws, word) || fmt.Sprint(facets["keywords"]) != fmt.Sprintf("[map[count:1 value:%s]]", word) {
		t.Fatalf("keyword not seen: search %v, item keywords %s, facets %v", found(), kws, facets["keywords"])
	}

	if r := call(t, "DELETE", "/records/"+record+"/keywords/"+kid+"/", nil, bearer(viewer.Access)...); r.Status != 403 {
		t.Errorf("viewer delete: %d", r.Status)
	}
	for _, k := range list["keywords"].([]any) {
		if r := call(t, "DELETE", "/records/"+record+"/keywords/"+k.(map[string]any)["id"].(string)+"/", nil, bearer(owner.Access)...); r.Status != 204 {
			t.Fatalf("delete: %d", r.Status)
		}
	}
	if r := call(t, "DELETE", "/records/"+record+"/keywords/"+kid+"/", nil, bearer(owner.Access)...); r.Status != 404 {
		t.Errorf("second delete: %d", r.Status)
	}
	if found() {
		t.Errorf("a removed keyword still finds the record")
	}
	var actions []string
	for _, e := range call(t, "GET", "/datasets/"+id+"/history", nil, bearer(owner.Access)...).JSON(t)["logs"].([]any) {
		actions = append(actions, e.(map[string]any)["action"].(string))
	}
	if slices.Index(actions, "keyword.add") < 0 || slices.Index(actions, "keyword.remove") < 0 {
		t.Errorf("history: %v", actions)
	}
	// A private dataset's record is not found by someone who may not read it.
	priv := createDataset(t, owner, "private", false)["record_id"].(string)
	if r := call(t, "GET", "/records/"+priv+"/keywords/", nil, bearer(viewer.Access)...); r.Status != 404 {
		t.Errorf("keywords of an unreadable record: %d", r.Status)
	}
}

// A record's contacts: ISO role codes, a name or an organization, valid e-mail addresses; a
// partial update changes the members sent (null clears); each change shows in the OGC record
// item and in search at once.
func TestRecordContacts(t *testing.T) {
	owner, viewer := newUser(t, "editor"), newUser(t, "viewer")
	d := createDataset(t, owner, "public", true)
	record := d["record_id"].(string)
	org := "Hydrografische Dienst " + randomHex(3)
	r := call(t, "POST", "/records/"+record+"/contacts/", map[string]any{"role": "pointOfContact", "name": "Ada", "email": "ada@example.org",
		"organization": org, "phone": "+31 20 555 0100", "extra_json": map[string]any{"position": "Data steward"}}, bearer(owner.Access)...)
	if r.Status != 201 || r.JSON(t)["organization"] != org || r.JSON(t)["sort_order"].(float64) != 0 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	cid := r.JSON(t)["id"].(string)
	for _, tc := range []struct {
		body   map[string]any
		who    []string
		status int
	}{
		{map[string]any{"role": "boss", "name": "x"}, bearer(owner.Access), 422},
		{map[string]any{"role": "owner"}, bearer(owner.Access), 422},
		{map[string]any{"role": "owner", "name": "x", "email": "not an address"}, bearer(owner.Access), 422},
		{map[string]any{"role": "owner", "name": "x", "sort_order": 10000}, bearer(owner.Access), 422},
		{map[string]any{"role": "owner", "name": "x"}, bearer(viewer.Access), 403},
	} {
		if r := call(t, "POST", "/records/"+record+"/contacts/", tc.body, tc.who...); r.Status != tc.status {
			t.Errorf("create %v: %d, want %d", tc.body, r.Status, tc.status)
		}
	}
	// Partial update: phone cleared, email kept, role changed; the organization cannot go with no name.
	u := call(t, "PATCH", "/records/"+record+"/contacts/"+cid+"/", map[string]any{"phone": nil, "role": "custodian"}, bearer(owner.Access)...)
	if u.Status != 200 || u.JSON(t)["phone"] != nil || u.JSON(t)["email"] != "ada@example.org" || u.JSON(t)["role"] != "custodian" {
		t.Fatalf("update: %d %s", u.Status, u.Body)
	}
	if r := call(t, "PATCH", "/records/"+record+"/contacts/"+cid+"/", map[string]any{"name": nil, "organization": nil}, bearer(owner.Access)...); r.Status != 422 {
		t.Errorf("clearing name and organization: %d", r.Status)
	}
	if r := call(t, "PATCH", "/records/"+record+"/contacts/"+cid+"/", map[string]any{"role": nil}, bearer(owner.Access)...); r.Status != 422 {
		t.Errorf("clearing the role: %d", r.Status)
	}
	item := call(t, "GET", "/collections/datasets/items/"+d["id"].(string), nil).JSON(t)
	contacts := item["properties"].(map[string]any)["contacts"].([]any)
	if len(contacts) != 1 || fmt.Sprint(contacts[0].(map[string]any)["roles"]) != "[custodian]" || contacts[0].(map[string]any)["phones"] != nil {
		t.Fatalf("record item contacts: %v", contacts)
	}
	if res := call(t, "GET", "/search/datasets/?q="+strings.Fields(org)[2], nil).JSON(t); res["numberMatched"].(float64) != 1 {
		t.Fatalf("search by the contact's organization: %v", res["numberMatched"])
	}
	if l := call(t, "GET", "/records/"+record+"/contacts/", nil).JSON(t); l["total"].(float64) != 1 || len(l["contacts"].([]any)) != 1 {
		t.Fatalf("list: %v", l)
	}
	if r := call(t, "DELETE", "/records/"+record+"/contacts/"+cid+"/", nil, bearer(owner.Access)...); r.Status != 204 {
		t.Fatalf("delete: %d", r.Status)
	}
	if res := call(t, "GET", "/search/datasets/?q="+strings.Fields(org)[2], nil).JSON(t); res["numberMatched"].(float64) != 0 {
		t.Errorf("a removed contact still finds the record")
	}
	if r := call(t, "PATCH", "/records/"+record+"/contacts/"+cid+"/", map[string]any{"name": "y"}, bearer(owner.Access)...); r.Status != 404 {
		t.Errorf("update of a removed contact: %d", r.Status)
	}
}

// A record's distributions: absolute http(s) URLs, one primary at most, partial updates where
// null clears the optional members and the required ones cannot be cleared.
func TestRecordDistributions(t *testing.T) {
	owner, viewer := newUser(t, "editor"), newUser(t, "viewer")
	d := createDataset(t, owner, "public", true)
	record, id := d["record_id"].(string), d["id"].(string)
	add := func(body map[string]any, who ...string) reply {
		return call(t, "POST", "/records/"+record+"/distributions/", body, who...)
	}
	first := add(map[string]any{"distribution_type": "download", "format": "GPKG", "url": "https://data.example.org/a.gpkg",
		"title": "Full download", "is_primary": true}, bearer(owner.Access)...)
	if first.Status != 201 || first.JSON(t)["is_primary"] != true || first.JSON(t)["auto_generated"] != false {
		t.Fatalf("create: %d %s", first.Status, first.Body)
	}
	for _, tc := range []struct {
		body   map[string]any
		status int
	}{
		{map[string]any{"distribution_type": "download", "format": "CSV", "url": "ftp://data.example.org/a.csv"}, 422},
		{map[string]any{"distribution_type": "download", "format": "CSV", "url": "/relative.csv"}, 422},
		{map[string]any{"distribution_type": "", "format": "CSV", "url": "https://x.example.org"}, 422},
		{map[string]any{"format": "CSV", "url": "https://x.example.org"}, 422},
	} {
		if r := add(tc.body, bearer(owner.Access)...); r.Status != tc.status {
			t.Errorf("create %v: %d, want %d", tc.body, r.Status, tc.status)
		}
	}
	if r := add(map[string]any{"distribution_type": "access", "format": "WMS", "url": "https://x.example.org/wms"}, bearer(viewer.Access)...); r.Status != 403 {
		t.Errorf("viewer create: %d", r.Status)
	}
	// A second primary takes the place of the first.
	second := add(map[string]any{"distribution_type": "access", "format": "OGC API", "url": "https://data.example.org/ogc",
		"is_primary": true}, bearer(owner.Access)...).JSON(t)
	list := call(t, "GET", "/records/"+id+"/distributions/", nil).JSON(t)
	var primaries []string
	own := 0
	for _, x := range list["distributions"].([]any) {
		if x.(map[string]any)["is_primary"] == true {
			primaries = append(primaries, x.(map[string]any)["id"].(string))
		}
		if x.(map[string]any)["auto_generated"] == false {
			own++
		}
	}
	if own != 2 || len(primaries) != 1 || primaries[0] != second["id"] {
		t.Fatalf("primaries after a second primary: %v", list)
	}
	fid := first.JSON(t)["id"].(string)
	u := call(t, "PATCH", "/records/"+record+"/distributions/"+fid+"/", map[string]any{"title": nil, "format": "GeoPackage"}, bearer(owner.Access)...)
	if u.Status != 200 || u.JSON(t)["title"] != nil || u.JSON(t)["format"] != "GeoPackage" || u.JSON(t)["url"] != "https://data.example.org/a.gpkg" {
		t.Fatalf("update: %d %s", u.Status, u.Body)
	}
	for _, body := range []map[string]any{{"url": nil}, {"format": nil}, {"url": "mailto:x@example.org"}} {
		if r := call(t, "PATCH", "/records/"+record+"/distributions/"+fid+"/", body, bearer(owner.Access)...); r.Status != 422 {
			t.Errorf("update %v: %d, want 422", body, r.Status)
		}
	}
	if r := call(t, "DELETE", "/records/"+record+"/distributions/"+fid+"/", nil, bearer(owner.Access)...); r.Status != 204 {
		t.Fatalf("delete: %d", r.Status)
	}
	if r := call(t, "DELETE", "/records/"+record+"/distributions/"+fid+"/", nil, bearer(owner.Access)...); r.Status != 404 {
		t.Errorf("second delete: %d", r.Status)
	}
	var actions []string
	for _, e := range call(t, "GET", "/datasets/"+id+"/history", nil, bearer(owner.Access)...).JSON(t)["logs"].([]any) {
		actions = append(actions, e.(map[string]any)["action"].(string))
	}
	for _, a := range []string{"distribution.add", "distribution.update", "distribution.remove"} {
		if !slices.Contains(actions, a) {
			t.Errorf("history lacks %s: %v", a, actions)
		}
	}
}

// Translations: canonical tags, the record's own language refused, searchable at once in their
// language, and record items come translated for a caller who asks in that language.
func TestRecordTranslations(t *testing.T) {
	owner := newUser(t, "editor")
	d := createDataset(t, owner, "public", true)
	id, record := d["id"].(string), d["record_id"].(string)
	call(t, "PATCH", "/datasets/"+id, map[string]any{"language": "en", "title": "Rivers " + randomHex(3)}, bearer(owner.Access)...)
	word := "flussgebiet" + randomHex(3)
	put := func(lang string, body map[string]any) reply {
		return call(t, "PUT", "/records/"+record+"/translations/"+lang+"/", body, bearer(owner.Access)...)
	}
	r := put("DE_at", map[string]any{"title": "Flüsse " + word, "summary": "Die Gewässer"})
	if r.Status != 200 || r.JSON(t)["language"] != "de-AT" {
		t.Fatalf("upsert: %d %s", r.Status, r.Body)
	}
	if r := put("de-AT", map[string]any{"title": "Flüsse und Seen " + word}); r.Status != 200 || r.JSON(t)["summary"] != nil {
		t.Fatalf("replace: %d %s", r.Status, r.Body)
	}
	for lang, status := range map[string]int{"EN": 409, "x": 422, "e1": 422} {
		if r := put(lang, map[string]any{"title": "t"}); r.Status != status && !(status == 422 && r.Status == 400) {
			t.Errorf("upsert %s: %d, want %d", lang, r.Status, status)
		}
	}
	if r := put("fr", map[string]any{"title": "   "}); r.Status != 422 {
		t.Errorf("blank title: %d", r.Status)
	}
	list := call(t, "GET", "/records/"+record+"/translations/", nil).JSON(t)
	if list["total"].(float64) != 1 || list["translations"].([]any)[0].(map[string]any)["title"] != "Flüsse und Seen "+word {
		t.Fatalf("list: %v", list)
	}
	if res := call(t, "GET", "/search/datasets/?q="+word, nil).JSON(t); res["numberMatched"].(float64) != 1 {
		t.Fatalf("search by a translated word: %v", res["numberMatched"])
	}
	item := func(lang string) map[string]any {
		r := call(t, "GET", "/collections/datasets/items/"+id, nil, "Accept-Language", lang)
		return r.JSON(t)["properties"].(map[string]any)
	}
	if p := item("de-AT,de;q=0.8,en;q=0.5"); p["title"] != "Flüsse und Seen "+word || p["language"] != "de-AT" {
		t.Errorf("item in de-AT: %v %v", p["title"], p["language"])
	}
	if p := item("de"); p["title"] != "Flüsse und Seen "+word {
		t.Errorf("item in de (same primary language): %v", p["title"])
	}
	if p := item("fr, en;q=0.9"); !strings.HasPrefix(p["title"].(string), "Rivers ") || p["language"] != "en" {
		t.Errorf("item in fr (no translation): %v %v", p["title"], p["language"])
	}
	if r := call(t, "DELETE", "/records/"+record+"/translations/de-at/", nil, bearer(owner.Access)...); r.Status != 204 {
		t.Fatalf("delete: %d", r.Status)
	}
	if r := call(t, "DELETE", "/records/"+record+"/translations/de-AT/", nil, bearer(owner.Access)...); r.Status != 404 {
		t.Errorf("second delete: %d", r.Status)
	}
	if res := call(t, "GET", "/search/datasets/?q="+word, nil).JSON(t); res["numberMatched"].(float64) != 0 {
		t.Errorf("a removed translation still finds the record")
	}
}

// The attribute catalogue: seeded from the import's profile, edits kept and listed, reset to
// the detected values, entries of dropped columns only with include_removed.
func TestAttributeCatalogue(t *testing.T) {
	owner, viewer := newUser(t, "editor"), newUser(t, "viewer")
	job := importFile(t, owner, "attrs.geojson", pointsGeoJSON(3), map[string]any{"title": "Attributes"})
	id := job["dataset_id"].(string)
	list := call(t, "GET", "/datasets/"+id+"/attributes/", nil, bearer(owner.Access)...).JSON(t)
	attrs := list["attributes"].([]any)
	byName := map[string]map[string]any{}
	for _, a := range attrs {
		byName[a.(map[string]any)["field_name"].(string)] = a.(map[string]any)
	}
	rank, name := byName["rank"], byName["name"]
	if list["total"].(float64) != 2 || rank == nil || name == nil || rank["domain_type"] != "discrete" || rank["is_current"] != true ||
		rank["ordinal_position"] == nil || len(rank["example_values"].([]any)) == 0 {
		t.Fatalf("catalogue: %v", list)
	}
	aid := rank["id"].(string)
	path := "/datasets/" + id + "/attributes/" + aid + "/"
	u := call(t, "PATCH", path, map[string]any{"title": "Rank", "units": "place", "domain_type": "coded"}, bearer(owner.Access)...)
	if u.Status != 200 || u.JSON(t)["title"] != "Rank" || u.JSON(t)["domain_type"] != "coded" ||
		fmt.Sprint(u.JSON(t)["user_modified_fields"]) != "[title units domain_type]" {
		t.Fatalf("update: %d %s", u.Status, u.Body)
	}
	if r := call(t, "PATCH", path, map[string]any{"units": nil}, bearer(owner.Access)...); r.Status != 200 || r.JSON(t)["units"] != nil || r.JSON(t)["title"] != "Rank" {
		t.Fatalf("clearing units: %d %s", r.Status, r.Body)
	}
	if r := call(t, "PATCH", path, map[string]any{"domain_type": "nonsense"}, bearer(owner.Access)...); r.Status != 422 {
		t.Errorf("unknown domain type: %d", r.Status)
	}
	if r := call(t, "PATCH", path, map[string]any{"title": "x"}, bearer(viewer.Access)...); r.Status != 404 {
		t.Errorf("viewer on a private dataset: %d", r.Status)
	}
	if g := call(t, "GET", path, nil, bearer(owner.Access)...).JSON(t); g["title"] != "Rank" {
		t.Errorf("get after update: %v", g)
	}
	reset := call(t, "POST", path+"reset/", nil, bearer(owner.Access)...)
	if reset.Status != 200 || reset.JSON(t)["title"] != nil || reset.JSON(t)["domain_type"] != "discrete" || len(reset.JSON(t)["user_modified_fields"].([]any)) != 0 {
		t.Fatalf("reset: %d %s", reset.Status, reset.Body)
	}
	var actions []string
	for _, e := range call(t, "GET", "/datasets/"+id+"/history", nil, bearer(owner.Access)...).JSON(t)["logs"].([]any) {
		actions = append(actions, e.(map[string]any)["action"].(string))
	}
	if !slices.Contains(actions, "attribute.update") || !slices.Contains(actions, "attribute.reset") {
		t.Errorf("history: %v", actions)
	}
	if r := call(t, "GET", "/datasets/"+id+"/attributes/"+byName["name"]["id"].(string)+"x/", nil, bearer(owner.Access)...); r.Status != 422 {
		t.Errorf("malformed attribute id: %d", r.Status)
	}
	// A column that goes away (here: taken out of the catalog's column list) keeps its entry, not current.
	if _, err := dbConn(t).Exec(context.Background(), `UPDATE catalog.datasets SET column_info =
		(SELECT jsonb_agg(c) FROM jsonb_array_elements(column_info) c WHERE c->>'name' <> 'name') WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	if l := call(t, "GET", "/datasets/"+id+"/attributes/", nil, bearer(owner.Access)...).JSON(t); l["total"].(float64) != 1 {
		t.Errorf("after the column went: %v", l)
	}
	all := call(t, "GET", "/datasets/"+id+"/attributes/?include_removed=true", nil, bearer(owner.Access)...).JSON(t)["attributes"].([]any)
	if len(all) != 2 || all[1].(map[string]any)["field_name"] != "name" || all[1].(map[string]any)["is_current"] != false {
		t.Errorf("include_removed: %v", all)
	}
}

// Relationships: declared from a dataset the caller may change to one it may read, columns that
// exist and compare; followed from a feature at either end with keyset paging; listed with the
// related datasets; gone with either dataset.
func TestDatasetRelationships(t *testing.T) {
	owner := newUser(t, "editor")
	// Parcels refer to zones by zone code; the zones table keys its rows by gid.
	zones := importFile(t, owner, "zones.geojson", []byte(`{"type":"FeatureCollection","features":[`+
		`{"type":"Feature","properties":{"code":"A","label":"Zone A"},"geometry":{"type":"Point","coordinates":[1,1]}},`+
		`{"type":"Feature","properties":{"code":"B","label":"Zone B"},"geometry":{"type":"Point","coordinates":[2,2]}}]}`), map[string]any{"title": "Zones"})["dataset_id"].(string)
	var feats []string
	for i := 0; i < 5; i++ {
		zone := "A"
		if i == 4 {
			zone = "B"
		}
		feats = append(feats, fmt.Sprintf(`{"type":"Feature","properties":{"zone":"%s","n":%d},"geometry":{"type":"Point","coordinates":[%d,1]}}`, zone, i, i))
	}
	parcels := importFile(t, owner, "parcels.geojson", []byte(`{"type":"FeatureCollection","features":[`+strings.Join(feats, ",")+`]}`),
		map[string]any{"title": "Parcels"})["dataset_id"].(string)

	rel := func(body map[string]any) reply {
		return call(t, "POST", "/datasets/"+parcels+"/relationships/", body, bearer(owner.Access)...)
	}
	r := rel(map[string]any{"target_dataset_id": zones, "source_column": "zone", "target_column": "code", "label": "in zone"})
	if r.Status != 201 || r.JSON(t)["target_dataset_title"] != "Zones" {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	rid := r.JSON(t)["id"].(string)
	for _, tc := range []struct {
		body   map[string]any
		status int
	}{
		{map[string]any{"target_dataset_id": zones, "source_column": "zone", "target_column": "code"}, 409},
		{map[string]any{"target_dataset_id": zones, "source_column": "nope", "target_column": "code"}, 422},
		{map[string]any{"target_dataset_id": zones, "source_column": "n", "target_column": "code"}, 422}, // integer against text
		{map[string]any{"target_dataset_id": zones, "source_column": "zone", "target_column": "nope"}, 422},
	} {
		if r := rel(tc.body); r.Status != tc.status {
			t.Errorf("create %v: %d, want %d", tc.body, r.Status, tc.status)
		}
	}
	if r := call(t, "POST", "/datasets/"+parcels+"/relationships/", map[string]any{"target_dataset_id": zones, "source_column": "zone",
		"target_column": "label"}, bearer(newUser(t, "editor").Access)...); r.Status != 404 {
		t.Errorf("another user on a private dataset: %d", r.Status)
	}
	// From a zone (the target end) to its parcels, two per page.
	var got []any
	after := ""
	for pages := 0; pages < 5; pages++ {
		pg := call(t, "GET", "/datasets/"+zones+"/features/1/related/"+rid+"/?limit=2"+after, nil, bearer(owner.Access)...).JSON(t)
		if pg["approximate_total"].(float64) != 4 {
			t.Fatalf("related parcels of zone A: %v", pg)
		}
		for _, row := range pg["rows"].([]any) {
			got = append(got, row.(map[string]any)["n"])
		}
		if pg["next_cursor"] == nil {
			break
		}
		after = fmt.Sprintf("&after=%v", pg["next_cursor"])
	}
	if fmt.Sprint(got) != "[0 1 2 3]" {
		t.Fatalf("parcels of zone A: %v", got)
	}
	// From a parcel (the source end) to its zone.
	z := call(t, "GET", "/datasets/"+parcels+"/features/5/related/"+rid+"/", nil, bearer(owner.Access)...).JSON(t)
	if rows := z["rows"].([]any); len(rows) != 1 || rows[0].(map[string]any)["label"] != "Zone B" {
		t.Fatalf("zone of parcel 5: %v", z)
	}
	if r := call(t, "GET", "/datasets/"+parcels+"/features/99/related/"+rid+"/", nil, bearer(owner.Access)...); r.Status != 404 {
		t.Errorf("a missing feature: %d", r.Status)
	}
	for _, dir := range []string{"outgoing", "incoming"} {
		l := call(t, "GET", "/datasets/"+zones+"/relationships/?direction="+dir, nil, bearer(owner.Access)...).JSON(t)
		if want := map[string]float64{"outgoing": 0, "incoming": 1}[dir]; l["total"].(float64) != want {
			t.Errorf("zones' %s relationships: %v", dir, l)
		}
	}
	related := call(t, "GET", "/datasets/"+parcels+"/related/", nil, bearer(owner.Access)...).JSON(t)
	if items := related["items"].([]any); len(items) != 1 || items[0].(map[string]any)["id"] != zones || items[0].(map[string]any)["similarity"].(float64) != 1 {
		t.Errorf("related datasets: %v", related)
	}
	if r := call(t, "DELETE", "/datasets/relationships/"+rid+"/", nil, bearer(owner.Access)...); r.Status != 204 {
		t.Fatalf("delete: %d", r.Status)
	}
	if l := call(t, "GET", "/datasets/"+parcels+"/relationships/", nil, bearer(owner.Access)...).JSON(t); l["total"].(float64) != 0 {
		t.Errorf("after delete: %v", l)
	}
	// Deleting either dataset removes its relationships.
	rid = rel(map[string]any{"target_dataset_id": zones, "source_column": "zone", "target_column": "code"}).JSON(t)["id"].(string)
	if r := call(t, "DELETE", "/datasets/"+zones, nil, bearer(owner.Access)...); r.Status != 204 {
		t.Fatalf("delete zones: %d", r.Status)
	}
	if r := call(t, "DELETE", "/datasets/relationships/"+rid+"/", nil, bearer(owner.Access)...); r.Status != 404 {
		t.Errorf("relationship of a deleted dataset: %d", r.Status)
	}
}

// The column DDL feed reads the table's schema changes from the history: newest first, paged,
// since a time, to those who may change the dataset.
func TestColumnDDLFeed(t *testing.T) {
	owner := newUser(t, "editor")
	d := createDataset(t, owner, "public", true)
	id := d["id"].(string)
	// No operation changes columns yet: the entries they will write are put in the history here.
	conn := dbConn(t)
	for i, action := range []string{"column.add", "metadata.edit", "column.rename", "column.drop"} {
		_, err := conn.Exec(context.Background(), `INSERT INTO catalog.dataset_history (dataset_id, version, action, actor_id, actor_display, changes, occurred_at)
			VALUES ($1, 1, $2, $3, $4, jsonb_build_object('columns', jsonb_build_object('new', $5::text)), now() - make_interval(mins => $6))`,
			id, action, owner.ID, owner.Username, action, 10-i)
		if err != nil {
			t.Fatal(err)
		}
	}
	feed := call(t, "GET", "/audit/datasets/"+id+"/column-ddl", nil, bearer(owner.Access)...).JSON(t)
	var actions []string
	for _, e := range feed["items"].([]any) {
		actions = append(actions, e.(map[string]any)["action"].(string))
	}
	if feed["total"].(float64) != 3 || strings.Join(actions, ",") != "column.drop,column.rename,column.add" ||
		feed["items"].([]any)[0].(map[string]any)["username"] != owner.Username {
		t.Fatalf("feed: %v", feed)
	}
	if p := call(t, "GET", "/audit/datasets/"+id+"/column-ddl?limit=1&skip=1", nil, bearer(owner.Access)...).JSON(t); len(p["items"].([]any)) != 1 ||
		p["items"].([]any)[0].(map[string]any)["action"] != "column.rename" || p["offset"].(float64) != 1 {
		t.Errorf("second page: %v", p)
	}
	// Halfway between the entries of 9 and 8 minutes ago: the second the RFC 3339 form cuts off
	// cannot move it past either.
	since := time.Now().Add(-8*time.Minute - 30*time.Second).UTC().Format(time.RFC3339)
	if p := call(t, "GET", "/audit/datasets/"+id+"/column-ddl?since="+url.QueryEscape(since), nil, bearer(owner.Access)...).JSON(t); p["total"].(float64) != 2 {
		t.Errorf("since: %v", p)
	}
	// Readers of the (public) dataset who may not change it are refused.
	if r := call(t, "GET", "/audit/datasets/"+id+"/column-ddl", nil, bearer(newUser(t, "viewer").Access)...); r.Status != 403 {
		t.Errorf("a viewer: %d", r.Status)
	}
}

// The distributions the service generates come first in List Distributions, page with the
// record's own, resolve, and cannot be changed.
func TestGeneratedDistributions(t *testing.T) {
	owner := newUser(t, "editor")
	id := publishedImport(t, owner, "Piers "+randomHex(3), 2)
	wantStatus(t, "own", call(t, "POST", "/records/"+id+"/distributions/", map[string]any{"distribution_type": "access",
		"format": "WFS", "url": "https://example.org/wfs"}, bearer(owner.Access)...), 201)
	list := call(t, "GET", "/records/"+id+"/distributions/", nil).JSON(t)
	all := list["distributions"].([]any)
	if list["total"].(float64) != 8 || len(all) != 8 {
		t.Fatalf("7 generated and 1 own: %v", list)
	}
	var generated []map[string]any
	for i, x := range all {
		d := x.(map[string]any)
		if (i < 7) != (d["auto_generated"] == true) {
			t.Fatalf("distribution %d: %v", i, d)
		}
		if i < 7 {
			generated = append(generated, d)
		}
	}
	for _, d := range generated {
		u := d["url"].(string)
		if !strings.HasPrefix(u, server.APIRoot+"/") {
			t.Errorf("generated url %q is not under %s", u, server.APIRoot)
		}
		if d["distribution_type"] == "vector_tiles" {
			u = strings.NewReplacer("{z}", "0", "{x}", "0", "{y}", "0").Replace(u)
		}
		if r := call(t, "GET", strings.TrimPrefix(u, server.APIRoot), nil); r.Status != 200 {
			t.Errorf("%s %s: %d", d["distribution_type"], u, r.Status)
		}
	}
	// Ids are stable across reads; paging spans both kinds.
	again := call(t, "GET", "/records/"+id+"/distributions/", nil).JSON(t)["distributions"].([]any)
	if again[0].(map[string]any)["id"] != generated[0]["id"] {
		t.Errorf("generated ids change between reads")
	}
	page := call(t, "GET", "/records/"+id+"/distributions/?skip=6&limit=2", nil).JSON(t)
	items := page["distributions"].([]any)
	if page["total"].(float64) != 8 || len(items) != 2 || items[0].(map[string]any)["auto_generated"] != true ||
		items[1].(map[string]any)["format"] != "WFS" {
		t.Errorf("page across both kinds: %v", page)
	}
	gid := generated[0]["id"].(string)
	wantStatus(t, "change a generated distribution", call(t, "PATCH", "/records/"+id+"/distributions/"+gid+"/",
		map[string]any{"title": "x"}, bearer(owner.Access)...), 409)
	wantStatus(t, "delete a generated distribution", call(t, "DELETE", "/records/"+id+"/distributions/"+gid+"/", nil,
		bearer(owner.Access)...), 409)
}
