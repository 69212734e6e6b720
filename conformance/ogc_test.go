package conformance

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// ogcPlaces is a GeoJSON fixture whose values the OGC tests can predict: 30 points, some on both
// sides of the antimeridian, with text, integer, float, category and date properties.
func ogcPlaces() []byte {
	var b strings.Builder
	b.WriteString(`{"type":"FeatureCollection","features":[`)
	for i := 0; i < 30; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		lon, lat := -170+float64(i)*10, -40+float64(i)*2.5 // -170..70
		if i >= 25 {
			lon = 175 + float64(i-25) // 175..179: just west of the antimeridian
		}
		fmt.Fprintf(&b, `{"type":"Feature","properties":{"name":"place %02d","rank":%d,"score":%g,"kind":"%s","day":"2020-01-%02d"},"geometry":{"type":"Point","coordinates":[%g,%g]}}`,
			i, i, float64(i)/4, []string{"town", "city", "village"}[i%3], i%28+1, lon, lat)
	}
	b.WriteString("]}")
	return []byte(b.String())
}

// publishAs gives a dataset the visibility and walks it to published (an import is published
// already: the walk is then a no-op).
func publishAs(t *testing.T, s session, id, visibility string) {
	t.Helper()
	if r := call(t, "PATCH", "/datasets/"+id, map[string]any{"visibility": visibility}, bearer(s.Access)...); r.Status != 200 {
		t.Fatalf("set visibility: %d %s", r.Status, r.Body)
	}
	if r := call(t, "PATCH", "/datasets/"+id+"/target-status/", map[string]any{"status": "published"}, bearer(s.Access)...); r.Status != 200 {
		t.Fatalf("publish: %d %s", r.Status, r.Body)
	}
}

// ogcDataset imports the places fixture as s and publishes it; it returns the dataset id.
func ogcDataset(t *testing.T, s session, visibility string) string {
	t.Helper()
	job := importFile(t, s, "places.geojson", ogcPlaces(), map[string]any{"title": "Places " + randomHex(3)})
	if job["status"] != "complete" {
		t.Fatalf("import: %v", job)
	}
	id := job["dataset_id"].(string)
	publishAs(t, s, id, visibility)
	return id
}

// features decodes an items page into its features' ids and properties.
func features(t *testing.T, r reply) (ids []int, props []map[string]any, page map[string]any) {
	t.Helper()
	if r.Status != 200 {
		t.Fatalf("items: %d %s", r.Status, r.Body)
	}
	page = r.JSON(t)
	for _, f := range page["features"].([]any) {
		f := f.(map[string]any)
		if n, ok := f["id"].(float64); ok { // string ids (registered tables) are read by the caller
			ids = append(ids, int(n))
		}
		props = append(props, f["properties"].(map[string]any))
	}
	return ids, props, page
}

func linkHref(page map[string]any, rel string) string {
	for _, l := range page["links"].([]any) {
		if l := l.(map[string]any); l["rel"] == rel {
			return l["href"].(string)
		}
	}
	return ""
}

// rel turns an absolute link into a path under the API root.
func rel(t *testing.T, href string) string {
	t.Helper()
	if !strings.HasPrefix(href, server.APIRoot) {
		t.Fatalf("link %s is not under %s", href, server.APIRoot)
	}
	return strings.TrimPrefix(href, server.APIRoot)
}

// firstPosition is the first position of the first feature (points are imported as MultiPoint).
func firstPosition(t *testing.T, r reply) []float64 {
	t.Helper()
	c := r.JSON(t)["features"].([]any)[0].(map[string]any)["geometry"].(map[string]any)["coordinates"].([]any)
	for {
		if _, ok := c[0].([]any); !ok {
			break
		}
		c = c[0].([]any)
	}
	out := make([]float64, len(c))
	for i, v := range c {
		out[i] = v.(float64)
	}
	return out
}

func TestOGCLandingConformanceAndCollections(t *testing.T) {
	owner := newUser(t, "editor")
	public := ogcDataset(t, owner, "public")
	private := ogcDataset(t, owner, "private")

	// Desktop clients open the API root without a slash; the document names it "/" under the
	// server URL, so only the slash form goes through the validating client.
	if res, err := http.Get(server.APIRoot); err != nil || res.StatusCode != 200 {
		t.Fatalf("GET /api: %v %v", err, res)
	}
	for _, path := range []string{"/"} {
		r := call(t, "GET", path, nil)
		if r.Status != 200 {
			t.Fatalf("landing %q: %d", path, r.Status)
		}
		var rels []string
		for _, l := range r.JSON(t)["links"].([]any) {
			rels = append(rels, l.(map[string]any)["rel"].(string))
		}
		for _, want := range []string{"self", "alternate", "service-desc", "service-doc", "conformance", "data"} {
			if !slices.Contains(rels, want) {
				t.Errorf("landing page has no %q link: %v", want, rels)
			}
		}
	}
	conf := call(t, "GET", "/conformance", nil).JSON(t)["conformsTo"].([]any)
	for _, want := range []string{
		"http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/core",
		"http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/geojson",
		"http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/oas30",
		"http://www.opengis.net/spec/ogcapi-features-2/1.0/conf/crs",
		"http://www.opengis.net/spec/ogcapi-features-3/1.0/conf/filter",
		"http://www.opengis.net/spec/ogcapi-features-3/1.0/conf/features-filter",
		"http://www.opengis.net/spec/cql2/1.0/conf/cql2-text",
		"http://www.opengis.net/spec/cql2/1.0/conf/cql2-json",
	} {
		if !slices.Contains(conf, any(want)) {
			t.Errorf("conformance lacks %s", want)
		}
	}

	ids := func(headers ...string) []string {
		r := call(t, "GET", "/collections", nil, headers...)
		if r.Status != 200 {
			t.Fatalf("collections: %d %s", r.Status, r.Body)
		}
		var out []string
		for _, c := range r.JSON(t)["collections"].([]any) {
			out = append(out, c.(map[string]any)["id"].(string))
		}
		return out
	}
	anon := ids()
	if !slices.Contains(anon, public) || slices.Contains(anon, private) || anon[0] != "datasets" {
		t.Errorf("anonymous collections: %v (public %s, private %s)", anon, public, private)
	}
	if mine := ids(bearer(owner.Access)...); !slices.Contains(mine, private) {
		t.Errorf("the owner does not see the private collection")
	}
	if r := call(t, "GET", "/collections/"+private, nil); r.Status != 404 {
		t.Errorf("private collection, anonymous: %d", r.Status)
	}

	c := call(t, "GET", "/collections/"+public, nil).JSON(t)
	if c["itemType"] != "feature" || c["storageCrs"] != "http://www.opengis.net/def/crs/OGC/1.3/CRS84" {
		t.Errorf("collection: %v", c)
	}
	bbox := c["extent"].(map[string]any)["spatial"].(map[string]any)["bbox"].([]any)[0].([]any)
	record := call(t, "GET", "/datasets/"+public, nil).JSON(t)["extent_bbox"].([]any)
	if fmt.Sprint(bbox) != fmt.Sprint(record) {
		t.Errorf("collection extent %v, record extent %v", bbox, record)
	}
	interval := c["extent"].(map[string]any)["temporal"].(map[string]any)["interval"].([]any)[0].([]any)
	if !strings.HasPrefix(interval[0].(string), "2020-01-01") || !strings.HasPrefix(interval[1].(string), "2020-01-28") {
		t.Errorf("temporal extent: %v", interval)
	}

	q := call(t, "GET", "/collections/"+public+"/queryables", nil)
	if ct := q.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/schema+json") {
		t.Errorf("queryables content type %q", ct)
	}
	qp := q.JSON(t)["properties"].(map[string]any)
	if qp["rank"].(map[string]any)["type"] != "integer" || qp["day"].(map[string]any)["format"] != "date" ||
		qp["geometry"].(map[string]any)["format"] != "geometry-multipoint" || qp["name"].(map[string]any)["type"] != "string" {
		t.Errorf("queryables: %v", qp)
	}
	sp := call(t, "GET", "/collections/"+public+"/sortables", nil).JSON(t)["properties"].(map[string]any)
	if _, ok := sp["gid"]; !ok || sp["score"] == nil || sp["geometry"] != nil {
		t.Errorf("sortables: %v", sp)
	}
	sc := call(t, "GET", "/collections/"+public+"/schema", nil).JSON(t)["properties"].(map[string]any)
	if sc["gid"].(map[string]any)["x-ogc-role"] != "id" || sc["day"].(map[string]any)["x-ogc-role"] != "primary-instant" ||
		sc["geometry"].(map[string]any)["x-ogc-role"] != "primary-geometry" {
		t.Errorf("schema roles: %v", sc)
	}
}

func TestOGCItemsQueries(t *testing.T) {
	owner := newUser(t, "editor")
	id := ogcDataset(t, owner, "public")
	items := "/collections/" + id + "/items"

	// Paging: default 10, next and prev links, numberMatched.
	ids, props, page := features(t, call(t, "GET", items, nil))
	if len(ids) != 10 || page["numberReturned"].(float64) != 10 || page["numberMatched"].(float64) != 30 || page["timeStamp"] == nil {
		t.Fatalf("first page: %v ids, %v", len(ids), page["numberMatched"])
	}
	if props[0]["name"] != "place 00" || props[0]["rank"].(float64) != 0 || props[3]["score"].(float64) != 0.75 || props[1]["day"] != "2020-01-02" {
		t.Errorf("properties: %v", props[:4])
	}
	if linkHref(page, "prev") != "" {
		t.Errorf("first page has a prev link")
	}
	seen := map[int]bool{}
	next := linkHref(page, "next")
	for pages := 1; next != ""; pages++ {
		ids, _, page = features(t, call(t, "GET", rel(t, next), nil))
		for _, i := range ids {
			seen[i] = true
		}
		if linkHref(page, "prev") == "" {
			t.Errorf("page %d has no prev link", pages+1)
		}
		next = linkHref(page, "next")
	}
	if len(seen) != 20 {
		t.Errorf("paging by links reached %d more features, want 20", len(seen))
	}
	if _, _, p := features(t, call(t, "GET", items+"?limit=7&offset=28", nil)); p["numberReturned"].(float64) != 2 || p["numberMatched"].(float64) != 30 {
		t.Errorf("last page: %v %v", p["numberReturned"], p["numberMatched"])
	}

	count := func(query string) int {
		t.Helper()
		ids, _, _ := features(t, call(t, "GET", items+"?limit=100&"+query, nil))
		return len(ids)
	}
	cases := []struct {
		query string
		want  int
	}{
		{"bbox=-180,-90,180,90", 30},
		{"bbox=0,-90,180,90", 13},   // lon 0..70 and 175..179
		{"bbox=170,-90,-160,90", 7}, // across the antimeridian: 175..179, -170, -160
		{"bbox=-90,170,90,-160&bbox-crs=" + url.QueryEscape("http://www.opengis.net/def/crs/EPSG/0/4326"), 7}, // lat,lon order
		{"bbox=170,-90,0,-160,90,0", 7}, // six numbers: heights ignored
		{"datetime=2020-01-05", 1},
		{"datetime=2020-01-05/2020-01-07", 3},
		{"datetime=../2020-01-02", 4}, // days 1 and 2, each twice (i = 0, 1, 28, 29)
		{"datetime=2020-01-27/..", 2},
		{"kind=city", 10},
		{"rank=7", 1},
		{"kind=city&rank=7", 1},
		{"kind=town&rank=7", 0},
	}
	for _, c := range cases {
		if got := count(c.query); got != c.want {
			t.Errorf("%s: %d features, want %d", c.query, got, c.want)
		}
	}

	// CQL2 filters, text and JSON, alone and with the other parameters.
	filters := []struct {
		lang, filter string
		want         int
	}{
		{"cql2-text", "kind = 'city'", 10},
		{"cql2-text", "kind = 'city' AND rank >= 10", 7},
		{"cql2-text", "rank BETWEEN 3 AND 5 OR name LIKE 'place 2%'", 13},
		{"cql2-text", "kind IN ('town', 'village') AND NOT (score > 2)", 6},
		{"cql2-text", "CASEI(name) = CASEI('PLACE 07')", 1},
		{"cql2-text", "score * 4 = rank + 0", 30},
		{"cql2-text", "day IS NULL", 0},
		{"cql2-text", "S_INTERSECTS(geometry, BBOX(170, -90, -160, 90))", 7},
		{"cql2-text", "S_WITHIN(geometry, POLYGON((-180 -90, 0 -90, 0 90, -180 90, -180 -90)))", 17}, // lon 0 is on the boundary
		{"cql2-text", "T_BEFORE(day, DATE('2020-01-03'))", 4},
		{"cql2-text", "T_DURING(day, INTERVAL('2020-01-05', '2020-01-07'))", 1},     // strictly inside
		{"cql2-text", "T_INTERSECTS(day, INTERVAL('2020-01-05', '2020-01-07'))", 3}, // ends included
		{"cql2-json", `{"op":"=","args":[{"property":"kind"},"city"]}`, 10},
		{"cql2-json", `{"op":"and","args":[{"op":"s_intersects","args":[{"property":"geometry"},{"bbox":[170,-90,-160,90]}]},{"op":"<","args":[{"property":"rank"},1]}]}`, 1},
	}
	for _, f := range filters {
		q := url.Values{"filter": {f.filter}, "filter-lang": {f.lang}}.Encode()
		if got := count(q); got != f.want {
			t.Errorf("%s %s: %d features, want %d", f.lang, f.filter, got, f.want)
		}
	}
	if got := count("kind=city&" + url.Values{"filter": {"rank < 10"}}.Encode() + "&bbox=-180,-90,0,90"); got != 3 {
		t.Errorf("filter with bbox and a property: %d, want 3", got)
	}
	for filter, want := range map[string]string{
		"kind = ":                           "position",
		"nosuch = 1":                        "nosuch",
		"kind = 3":                          "kind",
		"S_INTERSECTS(kind, BBOX(0,0,1,1))": "kind",
		"T_BEFORE(day, DATE('2020-13-45'))": "2020-13-45",
		"score * 1e308 * 1e308 > 1":         "out of range", // PostgreSQL refuses the value: 400, not 500
	} {
		r := call(t, "GET", items+"?"+url.Values{"filter": {filter}}.Encode(), nil)
		if r.Status != 400 || !strings.Contains(r.JSON(t)["detail"].(string), want) {
			t.Errorf("filter %q: %d %s", filter, r.Status, r.Body)
		}
	}

	// Sorting and property selection.
	_, props, _ = features(t, call(t, "GET", items+"?limit=3&sortby=-score&properties=name,score", nil))
	if props[0]["name"] != "place 29" || props[2]["name"] != "place 27" || len(props[0]) != 2 {
		t.Errorf("sortby -score with properties: %v", props)
	}
	_, props, _ = features(t, call(t, "GET", items+"?limit=2&sortby=kind,-rank", nil))
	if props[0]["kind"] != "city" || props[0]["rank"].(float64) != 28 {
		t.Errorf("sortby kind,-rank: %v", props)
	}

	// Output CRS.
	r := call(t, "GET", items+"?limit=1&crs="+url.QueryEscape("http://www.opengis.net/def/crs/EPSG/0/3857"), nil)
	if r.Header.Get("Content-Crs") != "<http://www.opengis.net/def/crs/EPSG/0/3857>" {
		t.Errorf("Content-Crs %q", r.Header.Get("Content-Crs"))
	}
	x := firstPosition(t, r)[0]
	if math.Abs(x-(-170*20037508.342789244/180)) > 1 {
		t.Errorf("EPSG:3857 x = %v", x)
	}
	r = call(t, "GET", items+"?limit=1&crs="+url.QueryEscape("http://www.opengis.net/def/crs/EPSG/0/4326"), nil)
	if c := firstPosition(t, r); c[0] != -40 || c[1] != -170 {
		t.Errorf("EPSG:4326 is latitude first: %v", c)
	}
	if r := call(t, "GET", items, nil); r.Header.Get("Content-Crs") != "<http://www.opengis.net/def/crs/OGC/1.3/CRS84>" || r.Header.Get("Content-Type") != "application/geo+json" {
		t.Errorf("default headers: %v", r.Header)
	}

	// One feature.
	ids, _, _ = features(t, call(t, "GET", items+"?limit=1&offset=4", nil))
	f := call(t, "GET", fmt.Sprintf("%s/%d", items, ids[0]), nil)
	if f.Status != 200 || f.JSON(t)["properties"].(map[string]any)["name"] != "place 04" || linkHref(f.JSON(t), "collection") == "" {
		t.Errorf("single feature: %d %s", f.Status, f.Body)
	}
	for _, missing := range []string{"999999", "abc"} {
		if r := call(t, "GET", items+"/"+missing, nil); r.Status != 404 || !strings.Contains(r.Header.Get("Content-Type"), "problem+json") {
			t.Errorf("unknown feature %s: %d", missing, r.Status)
		}
	}

	// Bad input: 400 problems naming the parameter.
	for query, want := range map[string]string{
		"bbox=1,2,3":                     "bbox",
		"bbox=0,10,10,0":                 "bbox",
		"datetime=yesterday":             "datetime",
		"datetime=2020-02-01/2020-01-01": "datetime",
		"sortby=nosuch":                  "sortby",
		"properties=nosuch":              "properties",
		"nosuch=1":                       "nosuch",
		"rank=seven":                     "rank",
		"crs=" + url.QueryEscape("http://www.opengis.net/def/crs/EPSG/0/2056"): "crs",
	} {
		r := call(t, "GET", items+"?"+query, nil)
		if r.Status != 400 || !strings.Contains(r.JSON(t)["detail"].(string), want) {
			t.Errorf("%s: %d %s", query, r.Status, r.Body)
		}
	}
}

// freshDataset starts a server with env, creates an empty dataset there as its admin and fills
// its table with rows: a SELECT of (n, geom), so tests can make large datasets quickly.
func freshDataset(t *testing.T, rows string, env ...string) (srv *Server, token, id string) {
	t.Helper()
	srv = startFresh(t, env...)
	token = callAt(t, plain, srv.APIRoot, "POST", "/auth/login", url.Values{"username": {"admin"}, "password": {AdminPassword}}).JSON(t)["access_token"].(string)
	d := callAt(t, plain, srv.APIRoot, "POST", "/datasets/create/", map[string]any{"title": "Generated", "columns": []map[string]any{{"name": "n", "type": "integer"}}}, bearer(token)...)
	if d.Status != 200 {
		t.Fatalf("create: %d %s", d.Status, d.Body)
	}
	id = d.JSON(t)["id"].(string)
	conn, err := pgx.Connect(context.Background(), srv.DBURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), "INSERT INTO "+pgx.Identifier{"data", d.JSON(t)["table_name"].(string)}.Sanitize()+" (n, geom) "+rows); err != nil {
		t.Fatal(err)
	}
	return srv, token, id
}

func TestOGCLimitIsClamped(t *testing.T) {
	srv, tok, id := freshDataset(t, "SELECT i, ST_SetSRID(ST_MakePoint(i, i), 4326) FROM generate_series(1, 10) i", "OGC_MAX_LIMIT=4")
	r := callAt(t, plain, srv.APIRoot, "GET", "/collections/"+id+"/items?limit=1000", nil, bearer(tok)...)
	ids, _, page := features(t, r)
	next := linkHref(page, "next")
	if len(ids) != 4 || !strings.Contains(next, "limit=4") || !strings.Contains(next, "offset=4") {
		t.Errorf("limit=1000 over a maximum of 4: %d features, next %s", len(ids), next)
	}
}

func TestOGCRecords(t *testing.T) {
	owner := newUser(t, "editor")
	public := ogcDataset(t, owner, "public")
	private := ogcDataset(t, owner, "private")
	title := call(t, "GET", "/datasets/"+public, nil).JSON(t)["title"].(string)

	datasetsOf := func(r reply) []string {
		t.Helper()
		if r.Status != 200 {
			t.Fatalf("records: %d %s", r.Status, r.Body)
		}
		var out []string
		for _, f := range r.JSON(t)["features"].([]any) {
			out = append(out, f.(map[string]any)["properties"].(map[string]any)["dataset_id"].(string))
		}
		return out
	}
	all := datasetsOf(call(t, "GET", "/collections/datasets/items?limit=1000", nil))
	if !slices.Contains(all, public) || slices.Contains(all, private) {
		t.Errorf("anonymous records: %v", all)
	}
	if mine := datasetsOf(call(t, "GET", "/collections/datasets/items?limit=1000", nil, bearer(owner.Access)...)); !slices.Contains(mine, private) {
		t.Errorf("the owner's records lack the private dataset")
	}
	if got := datasetsOf(call(t, "GET", "/collections/datasets/items?q="+url.QueryEscape(title), nil)); len(got) != 1 || got[0] != public {
		t.Errorf("q=%s: %v", title, got)
	}
	if got := datasetsOf(call(t, "GET", "/collections/datasets/items?limit=1000&type=raster_dataset", nil)); slices.Contains(got, public) {
		t.Errorf("type=raster_dataset returned a vector dataset")
	}
	// The fixture's extent reaches from -170 to 179 and -40 to 32.5.
	if got := datasetsOf(call(t, "GET", "/collections/datasets/items?limit=1000&bbox=-100,0,-90,10", nil)); !slices.Contains(got, public) {
		t.Errorf("bbox inside the extent: %v", got)
	}
	if got := datasetsOf(call(t, "GET", "/collections/datasets/items?limit=1000&bbox=0,60,10,70", nil)); slices.Contains(got, public) {
		t.Errorf("bbox outside the extent returned the dataset")
	}

	page := call(t, "GET", "/collections/datasets/items?limit=1000&q="+url.QueryEscape(title), nil).JSON(t)
	rec := page["features"].([]any)[0].(map[string]any)
	if page["numberMatched"].(float64) != 1 || rec["geometry"].(map[string]any)["type"] != "Polygon" {
		t.Errorf("record page: %v", page)
	}
	one := call(t, "GET", "/collections/datasets/items/"+rec["id"].(string), nil)
	if one.Status != 200 || one.JSON(t)["properties"].(map[string]any)["title"] != title {
		t.Errorf("one record: %d %s", one.Status, one.Body)
	}
	privateRecord := call(t, "GET", "/datasets/"+private, nil, bearer(owner.Access)...).JSON(t)["record_id"]
	if privateRecord != nil {
		if r := call(t, "GET", "/collections/datasets/items/"+privateRecord.(string), nil); r.Status != 404 {
			t.Errorf("a private record, anonymous: %d", r.Status)
		}
	}
	if r := call(t, "GET", "/collections/datasets/items/"+uuid.NewString(), nil); r.Status != 404 {
		t.Errorf("unknown record: %d", r.Status)
	}
	for _, path := range []string{"", "/queryables", "/sortables", "/schema"} {
		if r := call(t, "GET", "/collections/datasets"+path, nil); r.Status != 200 {
			t.Errorf("/collections/datasets%s: %d", path, r.Status)
		}
	}
	q := call(t, "GET", "/collections/datasets/queryables", nil).JSON(t)["properties"].(map[string]any)
	if q["title"] == nil || q["geometry"] == nil || q["updated"].(map[string]any)["format"] != "date-time" {
		t.Errorf("record queryables: %v", q)
	}
	if r := call(t, "GET", "/collections/datasets/items?sortby=-title&limit=2", nil); r.Status != 200 {
		t.Errorf("sortby -title: %d", r.Status)
	}
	if got := datasetsOf(call(t, "GET", "/collections/datasets/items?limit=1000&dataset_id="+public, nil)); len(got) != 1 || got[0] != public {
		t.Errorf("dataset_id=%s: %v", public, got)
	}
	if r := call(t, "GET", "/collections/datasets/items?nosuch=1", nil); r.Status != 400 {
		t.Errorf("an unknown parameter: %d", r.Status)
	}
	if got := datasetsOf(call(t, "GET", "/collections/datasets/items?limit=1000&"+url.Values{"filter": {"title = '" + title + "' AND feature_count = 30"}}.Encode(), nil)); len(got) != 1 || got[0] != public {
		t.Errorf("a CQL2 filter on records: %v", got)
	}
	if r := call(t, "GET", "/collections/datasets/items?sortby=description", nil); r.Status != 400 {
		t.Errorf("sortby on a non-sortable: %d", r.Status)
	}
}

// TestOGCItemsStreamInBoundedMemory asks a fresh server for a 10000-feature page of large
// polygons, about 40 MB of GeoJSON: the page arrives chunked (no Content-Length: it was not
// built before sending) and the server's peak memory grows by far less than the page.
func TestOGCItemsStreamInBoundedMemory(t *testing.T) {
	// 10000 circles of 200 vertices each.
	srv, tok, id := freshDataset(t, "SELECT i, ST_Buffer(ST_SetSRID(ST_MakePoint((i % 360) - 179.5, (i / 360) % 170 - 84.5), 4326), 0.4, 50) FROM generate_series(1, 10000) i")
	if err := putSettingsAt(srv.APIRoot, map[string]any{"ogc_items_max_page_size": 10000}); err != nil { // the default page bound is 1000
		t.Fatal(err)
	}
	pid := srv.cmd.Process.Pid
	get := func(limit int) (int64, *http.Response) {
		req, _ := http.NewRequest("GET", fmt.Sprintf("%s/collections/%s/items?limit=%d", srv.APIRoot, id, limit), nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		res, err := http.DefaultTransport.RoundTrip(req) // no transparent decompression: count the bytes sent
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		n, err := io.Copy(io.Discard, res.Body)
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("items limit %d: %d %v", limit, res.StatusCode, err)
		}
		return n, res
	}
	get(10)
	before := procStatusKB(t, pid, "VmHWM")
	size, res := get(10000)
	grew := procStatusKB(t, pid, "VmHWM") - before
	if size < 30<<20 {
		t.Fatalf("the page is %d bytes; the test needs a page far larger than the memory bound", size)
	}
	if res.ContentLength != -1 || len(res.TransferEncoding) == 0 {
		t.Errorf("the page was not streamed: Content-Length %d, Transfer-Encoding %v", res.ContentLength, res.TransferEncoding)
	}
	if grew*1024 > float64(size)/4 {
		t.Errorf("peak memory grew by %.1f MB for a %.1f MB page", grew/1024, float64(size)/(1<<20))
	}
	t.Logf("page %.1f MB, server peak memory grew by %.1f MB", float64(size)/(1<<20), grew/1024)
}

// TestOGCRegisteredTableWithTextKeys serves a registered table whose key is text and whose
// geometry is stored in Web Mercator: ids are strings, coordinates come out in CRS84, and a
// bbox in CRS84 finds the features.
func TestOGCRegisteredTableWithTextKeys(t *testing.T) {
	a := admin(t)
	conn := dbConn(t)
	ctx := context.Background()
	table := "stations_" + strings.ToLower(randomHex(3))
	for _, sql := range []string{
		`CREATE TABLE public.` + table + ` (code text PRIMARY KEY, label text, geom geometry(Point, 3857))`,
		`INSERT INTO public.` + table + ` VALUES ('ZRH', 'Zurich', ST_Transform(ST_SetSRID(ST_MakePoint(8.54, 47.37), 4326), 3857)),
			('GVA', 'Geneva', ST_Transform(ST_SetSRID(ST_MakePoint(6.14, 46.20), 4326), 3857))`,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _, _ = conn.Exec(ctx, "DROP TABLE IF EXISTS public."+table) })
	r := call(t, "POST", "/ingest/register/", map[string]any{"table_path": "public." + table, "title": "Stations"}, bearer(a.Access)...)
	if r.Status != 201 {
		t.Fatalf("register: %d %s", r.Status, r.Body)
	}
	id := r.JSON(t)["id"].(string)
	c := call(t, "GET", "/collections/"+id, nil, bearer(a.Access)...).JSON(t)
	if c["storageCrs"] != "http://www.opengis.net/def/crs/EPSG/0/3857" {
		t.Errorf("storageCrs %v", c["storageCrs"])
	}
	page := call(t, "GET", "/collections/"+id+"/items?bbox=8,47,9,48&sortby=label", nil, bearer(a.Access)...)
	_, props, _ := features(t, page)
	f := page.JSON(t)["features"].([]any)
	if len(f) != 1 || f[0].(map[string]any)["id"] != "ZRH" || props[0]["label"] != "Zurich" {
		t.Fatalf("bbox page: %s", page.Body)
	}
	if p := firstPosition(t, page); math.Abs(p[0]-8.54) > 1e-9 || math.Abs(p[1]-47.37) > 1e-9 {
		t.Errorf("CRS84 position %v", p)
	}
	one := call(t, "GET", "/collections/"+id+"/items/GVA", nil, bearer(a.Access)...)
	if one.Status != 200 || one.JSON(t)["id"] != "GVA" {
		t.Errorf("feature GVA: %d %s", one.Status, one.Body)
	}
	if r := call(t, "GET", "/collections/"+id+"/items/BER", nil, bearer(a.Access)...); r.Status != 404 {
		t.Errorf("unknown key: %d", r.Status)
	}
}

// TestOGCRecordsClientParameters: the parameters the web UI and the desktop plugin send to the
// record collection are accepted and do what their names say.
func TestOGCRecordsClientParameters(t *testing.T) {
	owner := newUser(t, "editor")
	public := ogcDataset(t, owner, "public")
	title := call(t, "GET", "/datasets/"+public, nil).JSON(t)["title"].(string)
	items := "/collections/datasets/items?limit=1000&q=" + url.QueryEscape(title) + "&"
	found := func(query string) bool {
		t.Helper()
		r := call(t, "GET", items+query, nil)
		if r.Status != 200 {
			t.Fatalf("%s: %d %s", query, r.Status, r.Body)
		}
		return r.JSON(t)["numberMatched"].(float64) == 1
	}
	// The fixture's extent reaches from -170 to 179 and -40 to 32.5, points in EPSG:4326.
	for query, want := range map[string]bool{
		"geometry_type=multipoint":                      true,
		"geometry_type=polygon":                         false,
		"srid=4326":                                     true,
		"srid=3857":                                     false,
		"record_type=vector_dataset":                    true,
		"record_type=table":                             false,
		"externalIds=abc":                               false,
		"externalId=abc":                                false,
		"exclude_synthetic=false":                       true,
		"sort_by=title&sort_desc=true":                  true,
		"date_from=2000-01-01":                          true,
		"date_to=2000-01-01":                            false,
		"bbox=-100,0,-90,10":                            true,
		"bbox=-100,0,-90,10&spatial_predicate=within":   false,
		"bbox=-180,-60,180,60&spatial_predicate=within": true,
		"geometry=" + url.QueryEscape("POINT(-95 5)"):   true,
		"geometry=" + url.QueryEscape("POINT(0 80)"):    false,
		"geometry=" + url.QueryEscape(`{"type":"Point","coordinates":[-95,5]}`):                                            true,
		"geometry=" + url.QueryEscape("POLYGON((-180 -60,180 -60,180 60,-180 60,-180 -60))") + "&spatial_predicate=within": true,
		"collection_id=" + uuid.NewString(): false,
		"cql2_filter_lang=cql2-json&" + url.Values{"filter": {`{"op":"=","args":[{"property":"feature_count"},30]}`}}.Encode(): true,
	} {
		if got := found(query); got != want {
			t.Errorf("%s: found %v, want %v", query, got, want)
		}
	}
	for _, query := range []string{"geometry=" + url.QueryEscape("POINT(1"), "sort_by=nosuch", "spatial_predicate=touches"} {
		if r := call(t, "GET", items+query, nil); r.Status != 400 {
			t.Errorf("%s: %d, want 400", query, r.Status)
		}
	}
	// A record is found by its own id and by the id of the dataset it describes.
	rec := call(t, "GET", "/collections/datasets/items/"+public, nil)
	if rec.Status != 200 || rec.JSON(t)["properties"].(map[string]any)["dataset_id"] != public {
		t.Fatalf("record by dataset id: %d %s", rec.Status, rec.Body)
	}
	// Every property clients require is there, null or empty where the catalog has nothing.
	m := rec.JSON(t)
	p := m["properties"].(map[string]any)
	for _, k := range []string{"title", "description", "keywords", "license", "themes", "contacts", "time"} {
		if _, ok := p[k]; !ok {
			t.Errorf("record property %q missing: %s", k, rec.Body)
		}
	}
	if _, ok := m["time"].(map[string]any); !ok || p["crs"] != "EPSG:4326" || p["record_type"] != "vector_dataset" || p["row_count"].(float64) != 30 {
		t.Errorf("record: %s", rec.Body)
	}
}

// TestOGCItemsClientParameters: include_geometry, after_gid and a numberMatched on every page.
func TestOGCItemsClientParameters(t *testing.T) {
	owner := newUser(t, "editor")
	id := ogcDataset(t, owner, "public")
	items := "/collections/" + id + "/items"
	r := call(t, "GET", items+"?include_geometry=false&limit=3", nil)
	for _, f := range r.JSON(t)["features"].([]any) {
		if f.(map[string]any)["geometry"] != nil {
			t.Fatalf("include_geometry=false: %s", r.Body)
		}
	}
	all, _, _ := features(t, call(t, "GET", items+"?limit=100", nil))
	ids, _, page := features(t, call(t, "GET", items+"?limit=5&after_gid="+strconv.Itoa(all[9]), nil))
	if len(ids) != 5 || ids[0] != all[10] || page["numberMatched"].(float64) != 30 {
		t.Fatalf("after_gid: %v (want from %d), matched %v", ids, all[10], page["numberMatched"])
	}
	// A filtered page that is not the last: counted alongside the page.
	_, _, page = features(t, call(t, "GET", items+"?limit=2&bbox=0,-90,180,90", nil))
	if page["numberMatched"].(float64) != 13 || page["numberReturned"].(float64) != 2 {
		t.Fatalf("filtered first page: matched %v returned %v", page["numberMatched"], page["numberReturned"])
	}
	if r := call(t, "GET", items+"?after_gid=3&sortby=name", nil); r.Status != 400 {
		t.Errorf("after_gid with sortby: %d", r.Status)
	}
	// The collection list pages when asked to.
	list := call(t, "GET", "/collections?limit=1", nil).JSON(t)
	if n := len(list["collections"].([]any)); n != 1 || linkHref(list, "next") == "" {
		t.Errorf("collections?limit=1: %d collections, next %q", n, linkHref(list, "next"))
	}
}
