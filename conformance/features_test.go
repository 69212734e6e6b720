package conformance

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// Features tag: single features of a dataset by gid, edits keeping the record in step, and the
// streamed GeoJSON with Z.

func point(lon, lat float64) map[string]any {
	return map[string]any{"type": "Point", "coordinates": []float64{lon, lat}}
}

// historyOf returns the dataset's history entries, newest first, without views (dataset.view,
// which the web UI hides too, are written after the answer and would race the test).
func historyOf(t *testing.T, s session, id string) []map[string]any {
	t.Helper()
	r := call(t, "GET", "/datasets/"+id+"/history?limit=200", nil, bearer(s.Access)...)
	if r.Status != 200 {
		t.Fatalf("history: %d %s", r.Status, r.Body)
	}
	var out []map[string]any
	for _, it := range r.JSON(t)["logs"].([]any) {
		if it.(map[string]any)["action"] != "dataset.view" {
			out = append(out, it.(map[string]any))
		}
	}
	return out
}

// problemDetailOf is the detail of a problem answer as text (a string, or the validation items).
func problemDetailOf(t *testing.T, r reply) string {
	t.Helper()
	return fmt.Sprint(r.JSON(t)["detail"])
}

func wantStatus(t *testing.T, what string, r reply, status int, detailParts ...string) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("%s: %d, want %d: %s", what, r.Status, status, r.Body)
	}
	for _, p := range detailParts {
		if d := problemDetailOf(t, r); !strings.Contains(d, p) {
			t.Fatalf("%s: detail %q does not mention %q", what, d, p)
		}
	}
}

func TestFeatureEditRoundTrip(t *testing.T) {
	owner := newUser(t, "editor")
	d := createDataset(t, owner, "private", false)
	id := d["id"].(string)
	base := "/datasets/" + id + "/features/"
	version := d["current_version"].(float64)

	// Create: 201, Location, the stored feature; an id member is ignored.
	r := call(t, "POST", base, map[string]any{"type": "Feature", "id": 999, "geometry": point(6.1, 46.2),
		"properties": map[string]any{"name": "Geneva", "area": 15.9, "n": 3, "surveyed": "2024-05-01", "ok": true}}, bearer(owner.Access)...)
	wantStatus(t, "create", r, 201)
	f := r.JSON(t)
	gid := int(f["id"].(float64))
	props := f["properties"].(map[string]any)
	if gid == 999 || props["name"] != "Geneva" || props["area"] != 15.9 || props["n"] != float64(3) || props["surveyed"] != "2024-05-01" || props["ok"] != true ||
		fmt.Sprint(f["geometry"]) != "map[coordinates:[6.1 46.2] type:Point]" {
		t.Fatalf("created feature: %s", r.Body)
	}
	if loc := r.Header.Get("Location"); !strings.HasSuffix(loc, "/api"+base+strconv.Itoa(gid)) {
		t.Fatalf("Location: %q", loc)
	}
	rec := call(t, "GET", "/datasets/"+id, nil, bearer(owner.Access)...).JSON(t)
	if rec["feature_count"].(float64) != 1 || fmt.Sprint(rec["extent_bbox"]) != "[6.1 46.2 6.1 46.2]" || rec["last_edited_by_display"] != owner.Username ||
		rec["last_edited_at"] == nil || rec["current_version"].(float64) != version+1 {
		t.Fatalf("record after create: %v", rec)
	}
	h := historyOf(t, owner, id)
	if h[0]["action"] != "feature.insert" || fmt.Sprint(h[0]["changes"].(map[string]any)["gid"]) != fmt.Sprintf("map[new:%d old:<nil>]", gid) ||
		h[0]["version"].(float64) != version+1 || h[0]["actor_display"] != owner.Username {
		t.Fatalf("history after create: %v", h[0])
	}

	// Read it back.
	g := call(t, "GET", base+strconv.Itoa(gid), nil, bearer(owner.Access)...)
	wantStatus(t, "get", g, 200)
	if g.JSON(t)["properties"].(map[string]any)["name"] != "Geneva" {
		t.Fatalf("get: %s", g.Body)
	}

	// A second feature, a GeometryCollection: the dataset's geometry column is generic.
	gc := map[string]any{"type": "GeometryCollection", "geometries": []any{point(7, 47), map[string]any{"type": "LineString", "coordinates": [][]float64{{7, 47}, {8, 48}}}}}
	r = call(t, "POST", base, map[string]any{"geometry": gc, "properties": map[string]any{"name": "both"}}, bearer(owner.Access)...)
	wantStatus(t, "create a GeometryCollection", r, 201)
	gid2 := int(r.JSON(t)["id"].(float64))
	rec = call(t, "GET", "/datasets/"+id, nil, bearer(owner.Access)...).JSON(t)
	if rec["feature_count"].(float64) != 2 || fmt.Sprint(rec["extent_bbox"]) != "[6.1 46.2 8 48]" {
		t.Fatalf("record after the second feature: %v", rec)
	}

	// Patch: named properties change, the rest stays; the geometry stays when not given.
	r = call(t, "PATCH", base+strconv.Itoa(gid), map[string]any{"properties": map[string]any{"name": "Genève", "n": nil}}, bearer(owner.Access)...)
	wantStatus(t, "patch", r, 200)
	props = r.JSON(t)["properties"].(map[string]any)
	if props["name"] != "Genève" || props["n"] != nil || props["area"] != 15.9 || r.JSON(t)["geometry"] == nil {
		t.Fatalf("patched: %s", r.Body)
	}
	h = historyOf(t, owner, id)
	ch := h[0]["changes"].(map[string]any)
	if h[0]["action"] != "feature.update" || fmt.Sprint(ch["properties.name"]) != "map[new:Genève old:Geneva]" || fmt.Sprint(ch["properties.n"]) != "map[new:<nil> old:3]" || ch["geometry"] != nil {
		t.Fatalf("history after patch: %v", h[0])
	}
	// The same patch again changes nothing: no version, no entry.
	before := call(t, "GET", "/datasets/"+id, nil, bearer(owner.Access)...).JSON(t)["current_version"]
	wantStatus(t, "no-op patch", call(t, "PATCH", base+strconv.Itoa(gid), map[string]any{"properties": map[string]any{"name": "Genève"}}, bearer(owner.Access)...), 200)
	if after := call(t, "GET", "/datasets/"+id, nil, bearer(owner.Access)...).JSON(t)["current_version"]; after != before || len(historyOf(t, owner, id)) != len(h) {
		t.Fatalf("a no-op patch moved the version: %v -> %v", before, after)
	}
	// "geometry": null clears the geometry (the extent shrinks to the other feature).
	r = call(t, "PATCH", base+strconv.Itoa(gid), map[string]any{"geometry": nil}, bearer(owner.Access)...)
	wantStatus(t, "patch geometry null", r, 200)
	if _, ok := r.JSON(t)["geometry"]; !ok || r.JSON(t)["geometry"] != nil || r.JSON(t)["properties"].(map[string]any)["name"] != "Genève" {
		t.Fatalf("geometry not cleared: %s", r.Body)
	}
	rec = call(t, "GET", "/datasets/"+id, nil, bearer(owner.Access)...).JSON(t)
	if fmt.Sprint(rec["extent_bbox"]) != "[7 47 8 48]" {
		t.Fatalf("extent after clearing: %v", rec["extent_bbox"])
	}

	// Replace: properties not named become null; the geometry is the new one.
	poly := map[string]any{"type": "Polygon", "coordinates": [][][]float64{{{5, 45}, {6, 45}, {6, 46}, {5, 45}}}}
	r = call(t, "PUT", base+strconv.Itoa(gid), map[string]any{"type": "Feature", "geometry": poly, "properties": map[string]any{"ok": false}}, bearer(owner.Access)...)
	wantStatus(t, "replace", r, 200)
	f = r.JSON(t)
	props = f["properties"].(map[string]any)
	if props["ok"] != false || props["name"] != nil || props["area"] != nil || props["surveyed"] != nil || f["geometry"].(map[string]any)["type"] != "Polygon" || len(props) != 5 {
		t.Fatalf("replaced: %s", r.Body)
	}
	h = historyOf(t, owner, id)
	ch = h[0]["changes"].(map[string]any)
	if h[0]["action"] != "feature.replace" || fmt.Sprint(ch["geometry"]) != "map[new:Polygon old:<nil>]" || ch["properties.area"] == nil || ch["properties.ok"] == nil {
		t.Fatalf("history after replace: %v", ch)
	}
	rec = call(t, "GET", "/datasets/"+id, nil, bearer(owner.Access)...).JSON(t)
	if fmt.Sprint(rec["extent_bbox"]) != "[5 45 8 48]" {
		t.Fatalf("extent after replace: %v", rec["extent_bbox"])
	}

	// Delete: 204, then 404; the record follows.
	wantStatus(t, "delete", call(t, "DELETE", base+strconv.Itoa(gid), nil, bearer(owner.Access)...), 204)
	wantStatus(t, "get deleted", call(t, "GET", base+strconv.Itoa(gid), nil, bearer(owner.Access)...), 404)
	wantStatus(t, "delete twice", call(t, "DELETE", base+strconv.Itoa(gid), nil, bearer(owner.Access)...), 404)
	rec = call(t, "GET", "/datasets/"+id, nil, bearer(owner.Access)...).JSON(t)
	if rec["feature_count"].(float64) != 1 || fmt.Sprint(rec["extent_bbox"]) != "[7 47 8 48]" {
		t.Fatalf("record after delete: %v", rec)
	}
	h = historyOf(t, owner, id)
	ch = h[0]["changes"].(map[string]any)
	if h[0]["action"] != "feature.delete" || fmt.Sprint(ch["gid"]) != fmt.Sprintf("map[new:<nil> old:%d]", gid) || fmt.Sprint(ch["feature_count"]) != "map[new:1 old:2]" {
		t.Fatalf("history after delete: %v", h[0])
	}
	wantStatus(t, "delete the last", call(t, "DELETE", base+strconv.Itoa(gid2), nil, bearer(owner.Access)...), 204)
	rec = call(t, "GET", "/datasets/"+id, nil, bearer(owner.Access)...).JSON(t)
	if rec["feature_count"].(float64) != 0 || rec["extent_bbox"] != nil {
		t.Fatalf("record of an emptied dataset: %v", rec)
	}

	// The row count and the table agree.
	var n int
	if err := dbConn(t).QueryRow(context.Background(), "SELECT count(*) FROM data."+d["table_name"].(string)).Scan(&n); err != nil || n != 0 {
		t.Fatalf("rows left: %d %v", n, err)
	}
}

func TestFeatureWritesRefuseWhatDoesNotFit(t *testing.T) {
	owner := newUser(t, "editor")
	// An imported point layer: ogr2ogr makes its column MultiPoint.
	job := importFile(t, owner, "stops.geojson", pointsGeoJSON(3), map[string]any{"title": "Stops"})
	if job["status"] != "complete" {
		t.Fatalf("import: %v", job)
	}
	pts := "/datasets/" + job["dataset_id"].(string) + "/features/"
	generic := "/datasets/" + createDataset(t, owner, "private", false)["id"].(string) + "/features/"
	post := func(path string, body any) reply { return call(t, "POST", path, body, bearer(owner.Access)...) }

	// A Point is promoted to the MultiPoint column.
	r := post(pts, map[string]any{"geometry": point(5.5, 50.5), "properties": map[string]any{"name": "new", "rank": 7}})
	wantStatus(t, "point into a multipoint dataset", r, 201)
	if g := r.JSON(t)["geometry"].(map[string]any); g["type"] != "MultiPoint" {
		t.Fatalf("promotion: %s", r.Body)
	}

	gc := map[string]any{"type": "GeometryCollection", "geometries": []any{point(1, 2)}}
	wantStatus(t, "collection into a point dataset", post(pts, map[string]any{"geometry": gc}), 422, "GeometryCollection", "generic")
	wantStatus(t, "line into a point dataset", post(pts, map[string]any{"geometry": map[string]any{"type": "LineString", "coordinates": [][]float64{{0, 0}, {1, 1}}}}), 422, "LineString")
	nested := map[string]any{"type": "GeometryCollection", "geometries": []any{gc}}
	wantStatus(t, "nested collection", post(generic, map[string]any{"geometry": nested}), 422)
	bowtie := map[string]any{"type": "Polygon", "coordinates": [][][]float64{{{0, 0}, {1, 1}, {1, 0}, {0, 1}, {0, 0}}}}
	wantStatus(t, "bow-tie polygon", post(generic, map[string]any{"geometry": bowtie}), 422, "invalid", "Self-intersection")
	wantStatus(t, "longitude out of range", post(generic, map[string]any{"geometry": point(181, 10)}), 422, "-180..180")
	wantStatus(t, "latitude out of range", post(pts, map[string]any{"geometry": point(10, -91)}), 422, "latitude")
	wantStatus(t, "unknown properties", post(generic, map[string]any{"geometry": point(1, 1), "properties": map[string]any{"colour": "red", "name": "x"}}),
		422, "unknown property colour")
	wantStatus(t, "wrong-typed value", post(generic, map[string]any{"geometry": point(1, 1), "properties": map[string]any{"n": "seven"}}), 422, "n: ")
	wantStatus(t, "value the column refuses", post(generic, map[string]any{"geometry": point(1, 1), "properties": map[string]any{"surveyed": "2024-02-30"}}), 422, "surveyed: ")
	wantStatus(t, "fraction into an integer", post(pts, map[string]any{"geometry": point(1, 1), "properties": map[string]any{"rank": 1.5}}), 422, "rank")

	// The same rules on patch and replace, and 404 for an unknown gid.
	wantStatus(t, "patch unknown property", call(t, "PATCH", pts+"1", map[string]any{"properties": map[string]any{"nope": 1}}, bearer(owner.Access)...), 422, "nope")
	wantStatus(t, "replace with a collection", call(t, "PUT", pts+"1", map[string]any{"geometry": gc, "properties": map[string]any{}}, bearer(owner.Access)...), 422, "GeometryCollection")
	for _, m := range []string{"GET", "PATCH", "PUT", "DELETE"} {
		var body any
		switch m {
		case "PATCH":
			body = map[string]any{"properties": map[string]any{"name": "x"}}
		case "PUT":
			body = map[string]any{"geometry": point(1, 1), "properties": map[string]any{}}
		}
		wantStatus(t, m+" unknown gid", call(t, m, pts+"987654", body, bearer(owner.Access)...), 404)
	}
	// Nothing above reached the table.
	rec := call(t, "GET", "/datasets/"+job["dataset_id"].(string), nil, bearer(owner.Access)...).JSON(t)
	if rec["feature_count"].(float64) != 4 {
		t.Fatalf("feature_count: %v", rec["feature_count"])
	}

	// Body limit: feature writes take at most 1 MB.
	big := map[string]any{"geometry": point(1, 1), "properties": map[string]any{"name": strings.Repeat("x", 1<<20)}}
	wantStatus(t, "body above 1 MB", post(generic, big), 413)
}

func TestFeatureAccess(t *testing.T) {
	owner, viewer := newUser(t, "editor"), newUser(t, "viewer")
	d := createDataset(t, owner, "internal", true)
	base := "/datasets/" + d["id"].(string) + "/features/"
	r := call(t, "POST", base, map[string]any{"geometry": point(1, 1), "properties": map[string]any{"name": "a"}}, bearer(owner.Access)...)
	wantStatus(t, "create", r, 201)
	one := base + strconv.Itoa(int(r.JSON(t)["id"].(float64)))

	// A viewer reads an internal dataset but may not write it.
	wantStatus(t, "viewer list", call(t, "GET", base, nil, bearer(viewer.Access)...), 200)
	wantStatus(t, "viewer get", call(t, "GET", one, nil, bearer(viewer.Access)...), 200)
	wantStatus(t, "viewer create", call(t, "POST", base, map[string]any{"geometry": point(1, 1)}, bearer(viewer.Access)...), 403)
	wantStatus(t, "viewer patch", call(t, "PATCH", one, map[string]any{"properties": map[string]any{"name": "b"}}, bearer(viewer.Access)...), 403)
	wantStatus(t, "viewer delete", call(t, "DELETE", one, nil, bearer(viewer.Access)...), 403)
	// Anonymous callers do not see an internal dataset, and may not write at all.
	wantStatus(t, "anonymous get", call(t, "GET", one, nil), 404)
	wantStatus(t, "anonymous create", call(t, "POST", base, map[string]any{"geometry": point(1, 1)}), 401)
	// A private dataset of someone else does not exist for the caller.
	private := "/datasets/" + createDataset(t, owner, "private", false)["id"].(string) + "/features/"
	wantStatus(t, "other's private list", call(t, "GET", private, nil, bearer(viewer.Access)...), 404)
	wantStatus(t, "other's private create", call(t, "POST", private, map[string]any{"geometry": point(1, 1)}, bearer(newUser(t, "editor").Access)...), 404)

	// A read_only key reads but may not write, even the owner's.
	ro, _ := newKey(t, owner, "read_only")
	wantStatus(t, "read_only key get", call(t, "GET", one, nil, apiKey(ro)...), 200)
	wantStatus(t, "read_only key create", call(t, "POST", base, map[string]any{"geometry": point(1, 1)}, apiKey(ro)...), 403, "read-only")
	wantStatus(t, "read_only key delete", call(t, "DELETE", one, nil, apiKey(ro)...), 403)
	full, _ := newKey(t, owner, "full")
	wantStatus(t, "full key patch", call(t, "PATCH", one, map[string]any{"properties": map[string]any{"name": "by key"}}, apiKey(full)...), 200)

	// Editing switched off: every write is 403 saying so; reads go on.
	setSetting(t, "feature_flags.enable_dataset_editing", "false")
	defer setSetting(t, "feature_flags.enable_dataset_editing", "true")
	wantStatus(t, "create while disabled", call(t, "POST", base, map[string]any{"geometry": point(1, 1)}, bearer(owner.Access)...), 403, "editing is disabled")
	wantStatus(t, "patch while disabled", call(t, "PATCH", one, map[string]any{"properties": map[string]any{"name": "b"}}, bearer(owner.Access)...), 403, "editing is disabled")
	wantStatus(t, "replace while disabled", call(t, "PUT", one, map[string]any{"geometry": point(1, 1), "properties": map[string]any{}}, bearer(owner.Access)...), 403, "editing is disabled")
	wantStatus(t, "delete while disabled", call(t, "DELETE", one, nil, bearer(admin(t).Access)...), 403, "editing is disabled")
	wantStatus(t, "get while disabled", call(t, "GET", one, nil, bearer(owner.Access)...), 200)
	if f := call(t, "GET", "/settings/feature-flags/", nil).JSON(t); f["enable_dataset_editing"] != false || f["enable_map_sharing"] != true {
		t.Errorf("feature flags while editing is disabled: %v", f)
	}
	setSetting(t, "feature_flags.enable_dataset_editing", "true")
	wantStatus(t, "delete when enabled again", call(t, "DELETE", one, nil, bearer(owner.Access)...), 204)
}

func TestFeatureListPagingAndBBox(t *testing.T) {
	u := newUser(t, "editor")
	job := importFile(t, u, "grid.geojson", pointsGeoJSON(25), map[string]any{"title": "Grid", "visibility": "public"})
	id := job["dataset_id"].(string) // an import is published
	base := "/datasets/" + id + "/features/"
	ids := func(r reply) []int {
		var out []int
		for _, it := range r.JSON(t)["features"].([]any) {
			out = append(out, int(it.(map[string]any)["id"].(float64)))
		}
		return out
	}
	// Anonymous callers read a public, published dataset; 10 by default, by gid, as a
	// FeatureCollection that counts every page.
	r := call(t, "GET", base, nil)
	wantStatus(t, "list", r, 200)
	m := r.JSON(t)
	first := m["features"].([]any)[0].(map[string]any)
	if m["type"] != "FeatureCollection" || m["numberMatched"].(float64) != 25 || m["numberReturned"].(float64) != 10 || len(ids(r)) != 10 ||
		first["type"] != "Feature" || first["properties"].(map[string]any)["rank"] != float64(0) || first["geometry"].(map[string]any)["type"] != "MultiPoint" {
		t.Fatalf("first page: %s", r.Body)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/geo+json" {
		t.Fatalf("content type %q", ct)
	}
	if next := linkHref(m, "next"); !strings.Contains(next, "/features/?limit=10&offset=10") {
		t.Fatalf("next link %q in %s", next, r.Body)
	}
	all := ids(call(t, "GET", base+"?limit=200", nil))
	if len(all) != 25 {
		t.Fatalf("all: %v", all)
	}
	for i := 1; i < len(all); i++ {
		if all[i] <= all[i-1] {
			t.Fatalf("not ordered by gid: %v", all)
		}
	}
	// offset, and skip as its older name, page the same way.
	for _, q := range []string{"?offset=20&limit=10", "?skip=20&limit=10"} {
		if p := ids(call(t, "GET", base+q, nil)); len(p) != 5 || p[0] != all[20] {
			t.Fatalf("last page %s: %v", q, p)
		}
	}
	if r := call(t, "GET", base+"?limit=500", nil); r.Status != 200 || r.JSON(t)["numberReturned"].(float64) != 25 {
		t.Fatalf("limit above the maximum is clamped: %d %s", r.Status, r.Body)
	}
	// Points run from (5, 50) by 0.01: the box keeps the first five; counted over every page.
	r = call(t, "GET", base+"?bbox=4.99,49.99,5.045,50.045&limit=2", nil)
	if r.Status != 200 || r.JSON(t)["numberMatched"].(float64) != 5 || len(ids(r)) != 2 || ids(r)[1] != all[1] {
		t.Fatalf("bbox: %d %s", r.Status, r.Body)
	}
	if r := call(t, "GET", base+"?bbox=170,-10,-170,10", nil); r.Status != 200 || r.JSON(t)["numberMatched"].(float64) != 0 {
		t.Fatalf("antimeridian bbox: %d %s", r.Status, r.Body)
	}
	r = call(t, "GET", base+"?include_geometry=false&limit=1", nil)
	if f := r.JSON(t)["features"].([]any)[0].(map[string]any); r.Status != 200 || f["geometry"] != nil || f["properties"].(map[string]any)["rank"] != float64(0) {
		t.Fatalf("include_geometry=false: %d %s", r.Status, r.Body)
	}
	// The rules and answers of OGC items.
	wantStatus(t, "bbox south above north", call(t, "GET", base+"?bbox=0,10,1,5", nil), 400, "bbox")
	wantStatus(t, "bbox of three numbers", call(t, "GET", base+"?bbox=0,10,1", nil), 400)
}

func TestFeaturesGeoJSONZ(t *testing.T) {
	u := newUser(t, "editor")
	var b strings.Builder
	b.WriteString(`{"type":"FeatureCollection","features":[`)
	for i := 0; i < 3; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"type":"Feature","properties":{"name":"peak%d"},"geometry":{"type":"Point","coordinates":[%d,46,%d]}}`, i, 7+i, 1000*(i+1))
	}
	b.WriteString("]}")
	job := importFile(t, u, "peaks.geojson", []byte(b.String()), map[string]any{"title": "Peaks"})
	if job["status"] != "complete" {
		t.Fatalf("import: %v", job)
	}
	id := job["dataset_id"].(string)
	d := call(t, "GET", "/datasets/"+id, nil, bearer(u.Access)...).JSON(t)
	if d["is_3d"] != true || d["z_max"].(float64) != 3000 {
		t.Fatalf("3D record: %v", d)
	}
	r := call(t, "GET", "/datasets/"+id+"/features.geojson", nil, bearer(u.Access)...)
	wantStatus(t, "features.geojson", r, 200)
	if ct := r.Header.Get("Content-Type"); ct != "application/geo+json" || r.Header.Get("Content-Length") != "" {
		t.Fatalf("headers: %v", r.Header)
	}
	fc := r.JSON(t)
	feats := fc["features"].([]any)
	if fc["type"] != "FeatureCollection" || len(feats) != 3 || fc["bbox"] != nil {
		t.Fatalf("collection: %s", r.Body)
	}
	last := feats[2].(map[string]any)
	if fmt.Sprint(last["geometry"].(map[string]any)["coordinates"]) != "[[9 46 3000]]" && fmt.Sprint(last["geometry"].(map[string]any)["coordinates"]) != "[9 46 3000]" {
		t.Fatalf("Z lost: %v", last)
	}
	if last["properties"].(map[string]any)["name"] != "peak2" {
		t.Fatalf("properties: %v", last)
	}

	// A 3D dataset edited through the API keeps Z, and gets Z 0 where none is sent.
	geomType := d["geometry_type"].(string)
	pt := map[string]any{"type": "Point", "coordinates": []float64{10, 46, 4000}}
	if strings.HasPrefix(geomType, "MULTI") {
		pt = map[string]any{"type": "MultiPoint", "coordinates": [][]float64{{10, 46, 4000}}}
	}
	wantStatus(t, "create a 3D point", call(t, "POST", "/datasets/"+id+"/features/", map[string]any{"geometry": pt}, bearer(u.Access)...), 201)
	wantStatus(t, "create a 2D point in a 3D dataset", call(t, "POST", "/datasets/"+id+"/features/", map[string]any{"geometry": point(11, 46)}, bearer(u.Access)...), 201)
	d = call(t, "GET", "/datasets/"+id, nil, bearer(u.Access)...).JSON(t)
	if d["z_max"].(float64) != 4000 || d["z_min"].(float64) != 0 || d["feature_count"].(float64) != 5 {
		t.Fatalf("3D record after edits: %v", d)
	}
	body := string(call(t, "GET", "/datasets/"+id+"/features.geojson", nil, bearer(u.Access)...).Body)
	if !strings.Contains(body, "10,46,4000") || !strings.Contains(body, "11,46,0") {
		t.Fatalf("3D edits: %s", body)
	}

	// A 2D dataset gets Z 0 on every position; a feature without geometry has null.
	flat := createDataset(t, u, "private", false)["id"].(string)
	wantStatus(t, "2D create", call(t, "POST", "/datasets/"+flat+"/features/", map[string]any{"geometry": point(1, 2), "properties": map[string]any{"name": "a"}}, bearer(u.Access)...), 201)
	wantStatus(t, "no geometry", call(t, "POST", "/datasets/"+flat+"/features/", map[string]any{"geometry": nil}, bearer(u.Access)...), 201)
	body = string(call(t, "GET", "/datasets/"+flat+"/features.geojson", nil, bearer(u.Access)...).Body)
	if !strings.Contains(body, `"coordinates":[1,2,0]`) || !strings.Contains(body, `"geometry":null`) {
		t.Fatalf("2D as Z: %s", body)
	}
	// Visibility: someone else does not see the private dataset.
	wantStatus(t, "invisible", call(t, "GET", "/datasets/"+flat+"/features.geojson", nil, bearer(newUser(t, "editor").Access)...), 404)
}

func TestFeatureEditsOfARegisteredTable(t *testing.T) {
	a := admin(t)
	ctx := context.Background()
	conn := dbConn(t)
	name := "sites_" + randomHex(3)
	for _, sql := range []string{
		`CREATE TABLE public.` + name + ` (site_id serial PRIMARY KEY, label text, pos geometry(Point, 3857))`,
		`INSERT INTO public.` + name + ` (label, pos) VALUES ('a', ST_Transform(ST_SetSRID(ST_MakePoint(6, 46), 4326), 3857))`,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _, _ = conn.Exec(ctx, "DROP TABLE IF EXISTS public."+name) })
	r := call(t, "POST", "/ingest/register/", map[string]any{"table_path": "public." + name}, bearer(a.Access)...)
	wantStatus(t, "register", r, 201)
	base := "/datasets/" + r.JSON(t)["id"].(string) + "/features/"
	// Read: the operator's key and geometry columns, the geometry in WGS 84.
	g := call(t, "GET", base+"1", nil, bearer(a.Access)...)
	wantStatus(t, "get", g, 200)
	coords := g.JSON(t)["geometry"].(map[string]any)["coordinates"].([]any)
	if c0 := coords[0].(float64); c0 < 5.9999 || c0 > 6.0001 || g.JSON(t)["properties"].(map[string]any)["label"] != "a" {
		t.Fatalf("registered feature: %s", g.Body)
	}
	if l := call(t, "GET", base+"?bbox=5,45,7,47", nil, bearer(a.Access)...); l.Status != 200 || l.JSON(t)["numberMatched"].(float64) != 1 {
		t.Fatalf("bbox over a 3857 table: %d %s", l.Status, l.Body)
	}
	// Write: the table is the operator's; the catalog does not edit it.
	wantStatus(t, "create in a registered table", call(t, "POST", base, map[string]any{"geometry": point(6, 46)}, bearer(a.Access)...), 409, "registered")
	wantStatus(t, "delete in a registered table", call(t, "DELETE", base+"1", nil, bearer(a.Access)...), 409)
}
