package conformance

import (
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// What the web UI's dataset pages and the other existing clients rely on beyond the shapes
// (client-semantics.md: writes, publication and visibility, read-only SQL, exports, stats,
// quality, dataset pages, audit).

// TestMetadataPatchNullClearsAbsentKeeps: Update Dataset Metadata tells an absent member (kept)
// from an explicit null (cleared), for every nullable field it takes.
func TestMetadataPatchNullClearsAbsentKeeps(t *testing.T) {
	owner := newUser(t, "editor")
	id := createDataset(t, owner, "private", false)["id"].(string)
	patch := func(body any) map[string]any {
		t.Helper()
		r := call(t, "PATCH", "/datasets/"+id, body, bearer(owner.Access)...)
		wantStatus(t, fmt.Sprint("patch ", body), r, 200)
		return r.JSON(t)
	}
	values := map[string]any{"summary": "Parcels", "license": "CC-BY-4.0", "attribution": "City survey", "source_organization": "Survey office",
		"source_url": "https://example.org/parcels", "quality_statement": "Checked", "lineage_summary": "Digitised from plans",
		"update_frequency": "monthly", "usage_constraints": "none", "access_constraints": "none", "sensitivity_classification": "public",
		"owner_org": "City", "language": "en", "theme_category": []any{"planningCadastre"}, "tile_columns": []any{"name"},
		"data_vintage_start": "2020-01-01", "data_vintage_end": "2020-12-31"}
	fields := slices.Sorted(func(yield func(string) bool) {
		for k := range values {
			if !yield(k) {
				return
			}
		}
	})
	same := func(a, b any) bool { return fmt.Sprint(a) == fmt.Sprint(b) }
	for _, field := range fields {
		t.Run(field, func(t *testing.T) {
			d := patch(values)
			for _, f := range fields {
				if !same(d[f], values[f]) {
					t.Fatalf("%s after setting every field: %v, want %v", f, d[f], values[f])
				}
			}
			// Absent: kept, whatever else changes.
			d = patch(map[string]any{"title": "Parcels of " + field})
			if !same(d[field], values[field]) {
				t.Fatalf("%s changed by a patch that did not name it: %v", field, d[field])
			}
			// Null: cleared, and only it.
			d = patch(map[string]any{field: nil})
			if d[field] != nil {
				t.Fatalf("%s after null: %v, want cleared", field, d[field])
			}
			for _, f := range fields {
				if f != field && !same(d[f], values[f]) {
					t.Fatalf("clearing %s changed %s: %v", field, f, d[f])
				}
			}
			h := historyOf(t, owner, id)[0]
			ch, _ := h["changes"].(map[string]any)[field].(map[string]any)
			if h["action"] != "metadata.edit" || ch == nil || ch["new"] != nil || !same(ch["old"], values[field]) {
				t.Fatalf("history of clearing %s: %v", field, h)
			}
		})
	}
	// Clearing what is empty changes nothing; title and visibility cannot be cleared.
	n := len(historyOf(t, owner, id))
	patch(map[string]any{"license": nil})
	patch(map[string]any{"license": nil})
	if got := len(historyOf(t, owner, id)); got != n+1 {
		t.Fatalf("history entries: %d after clearing twice, want %d", got, n+1)
	}
	for _, f := range []string{"title", "visibility"} {
		if r := call(t, "PATCH", "/datasets/"+id, map[string]any{f: nil}, bearer(owner.Access)...); r.Status != 422 {
			t.Errorf("%s: null: %d %s, want 422", f, r.Status, r.Body)
		}
	}
}

// TestDeleteDatasetConfirmsTitle: Delete Dataset checks confirm_title with the bulk delete's
// rule (400 on mismatch, the same detail) and writes dataset.delete to the audit log.
func TestDeleteDatasetConfirmsTitle(t *testing.T) {
	owner, adm := newUser(t, "editor"), admin(t)
	d := createDataset(t, owner, "private", false)
	id, title := d["id"].(string), d["title"].(string)
	del := func(confirm any) reply {
		return call(t, "DELETE", "/datasets/"+id, confirm, bearer(owner.Access)...)
	}
	for _, wrong := range []string{title + " ", strings.ToUpper(title), "Parcels"} {
		wantStatus(t, "confirm "+wrong, del(map[string]any{"confirm_title": wrong}), 400, "confirm_title")
	}
	single := problemDetailOf(t, del(map[string]any{"confirm_title": "not it"}))
	bulk := call(t, "POST", "/datasets/bulk-delete/", map[string]any{"datasets": []any{map[string]any{"dataset_id": id, "confirm_title": "not it"}}},
		bearer(owner.Access)...).JSON(t)["results"].([]any)[0].(map[string]any)
	if bulk["status"] != "title_mismatch" || bulk["detail"] != single {
		t.Fatalf("bulk and single deletes disagree: %v / %q", bulk, single)
	}
	wantStatus(t, "still there", call(t, "GET", "/datasets/"+id, nil, bearer(owner.Access)...), 200)
	wantStatus(t, "confirmed", del(map[string]any{"confirm_title": title}), 204)
	wantStatus(t, "gone", call(t, "GET", "/datasets/"+id, nil, bearer(owner.Access)...), 404)
	logs := call(t, "GET", "/admin/audit-logs/?action=dataset.delete&resource_id="+id, nil, bearer(adm.Access)...).JSON(t)["logs"].([]any)
	if len(logs) != 1 || logs[0].(map[string]any)["outcome"] != "success" {
		t.Fatalf("audit of the deletion: %v", logs)
	}
	// Scripts that send no body are not asked to confirm.
	other := createDataset(t, owner, "private", false)["id"].(string)
	wantStatus(t, "no body", call(t, "DELETE", "/datasets/"+other, nil, bearer(owner.Access)...), 204)
}

// TestStatusMoveToCurrentIsANoOp: moving a dataset to the status it has answers 200 and records
// nothing, with either status operation.
func TestStatusMoveToCurrentIsANoOp(t *testing.T) {
	owner := newUser(t, "editor")
	for _, tt := range []struct{ name, op, status string }{
		{"draft, one step", "status", "draft"}, {"published, one step", "status", "published"}, {"published, walk", "target-status", "published"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			id := createDataset(t, owner, "public", tt.status == "published")["id"].(string)
			before := call(t, "GET", "/datasets/"+id, nil, bearer(owner.Access)...).JSON(t)
			n := len(historyOf(t, owner, id))
			r := call(t, "PATCH", "/datasets/"+id+"/"+tt.op+"/", map[string]any{"status": tt.status}, bearer(owner.Access)...)
			if r.Status != 200 || r.JSON(t)["record_status"] != tt.status {
				t.Fatalf("move to the current status: %d %s", r.Status, r.Body)
			}
			after := call(t, "GET", "/datasets/"+id, nil, bearer(owner.Access)...).JSON(t)
			if len(historyOf(t, owner, id)) != n || after["published_at"] != before["published_at"] || after["updated_at"] != before["updated_at"] {
				t.Fatalf("a no-op move changed the dataset: %v -> %v", before, after)
			}
		})
	}
}

// TestImportPublishesCreateIsDraft: an ingest commit publishes (unless it asks for another
// status) and keeps the commit's visibility; Create Dataset starts as draft.
func TestImportPublishesCreateIsDraft(t *testing.T) {
	owner := newUser(t, "editor")
	get := func(id string, who ...string) reply { return call(t, "GET", "/datasets/"+id, nil, who...) }
	private := importFile(t, owner, "published.geojson", pointsGeoJSON(3), map[string]any{"title": "Published import"})["dataset_id"].(string)
	d := get(private, bearer(owner.Access)...).JSON(t)
	if d["record_status"] != "published" || d["published_at"] == nil || d["visibility"] != "private" {
		t.Fatalf("default import: %v %v %v", d["record_status"], d["published_at"], d["visibility"])
	}
	wantStatus(t, "a private import, anonymously", get(private), 404)
	public := importFile(t, owner, "public.geojson", pointsGeoJSON(3), map[string]any{"title": "Public import", "visibility": "public"})["dataset_id"].(string)
	wantStatus(t, "a public import, anonymously", get(public), 200)
	draft := importFile(t, owner, "draft.geojson", pointsGeoJSON(3), map[string]any{"title": "Draft import", "visibility": "public", "record_status": "draft"})["dataset_id"].(string)
	if d := get(draft, bearer(owner.Access)...).JSON(t); d["record_status"] != "draft" || d["published_at"] != nil {
		t.Fatalf("import asking for draft: %v %v", d["record_status"], d["published_at"])
	}
	wantStatus(t, "a public draft import, anonymously", get(draft), 404)
	up := upload(t, owner, "bad.geojson", pointsGeoJSON(1))
	wantStatus(t, "unknown record_status", call(t, "POST", "/ingest/commit/"+up.JSON(t)["job_id"].(string),
		map[string]any{"title": "x", "record_status": "archived"}, bearer(owner.Access)...), 422, "archived")
	if c := createDataset(t, owner, "public", false); c["record_status"] != "draft" || c["published_at"] != nil {
		t.Fatalf("created dataset: %v %v", c["record_status"], c["published_at"])
	}
}

// TestCollectionsSeenByEveryCaller: collections have no visibility of their own; only their
// members are filtered per caller, counts included.
func TestCollectionsSeenByEveryCaller(t *testing.T) {
	owner, viewer, adm := newUser(t, "editor"), newUser(t, "viewer"), admin(t)
	pub := createDataset(t, owner, "public", true)["id"]
	internal := createDataset(t, owner, "internal", true)["id"]
	priv := createDataset(t, owner, "private", false)["id"]
	name := "Unlisted " + randomHex(3)
	r := call(t, "POST", "/catalog/collections/", map[string]any{"name": name, "visibility": "private"}, bearer(owner.Access)...)
	wantStatus(t, "create", r, 201)
	cid := r.JSON(t)["id"].(string)
	wantStatus(t, "add", call(t, "POST", "/catalog/collections/"+cid+"/datasets/", map[string]any{"dataset_ids": []any{pub, internal, priv}},
		bearer(owner.Access)...), 200)
	callers := []struct {
		name    string
		headers []string
		members int
	}{{"anonymous", nil, 1}, {"viewer", bearer(viewer.Access), 2}, {"owner", bearer(owner.Access), 3}, {"admin", bearer(adm.Access), 3}}
	for _, c := range callers {
		t.Run(c.name, func(t *testing.T) {
			list := call(t, "GET", "/catalog/collections/?q="+url.QueryEscape(name), nil, c.headers...).JSON(t)
			items := list["collections"].([]any)
			if len(items) != 1 || items[0].(map[string]any)["id"] != cid || items[0].(map[string]any)["dataset_count"] != float64(c.members) {
				t.Fatalf("list: %v", list)
			}
			one := call(t, "GET", "/catalog/collections/"+cid, nil, c.headers...)
			wantStatus(t, "get", one, 200)
			if one.JSON(t)["dataset_count"] != float64(c.members) {
				t.Fatalf("get: %s", one.Body)
			}
			if m := call(t, "GET", "/catalog/collections/"+cid+"/datasets/", nil, c.headers...).JSON(t); m["total"] != float64(c.members) ||
				len(m["datasets"].([]any)) != c.members {
				t.Fatalf("members: %v", m)
			}
		})
	}
}

// TestReadOnlySQLNamesDataTablesAndNeverHoldsThem: statements name tables data.<table_name> (or
// bare), and a dataset once queried is still deleted and its columns changed.
func TestReadOnlySQLNamesDataTablesAndNeverHoldsThem(t *testing.T) {
	owner := newUser(t, "editor")
	a := ogcDataset(t, owner, "private")
	table := tableOf(t, owner, a)
	for _, sql := range []string{"SELECT count(*) AS n FROM data." + table, "SELECT count(*) AS n FROM " + table} {
		if r := sqlQuery(t, owner, sql, []string{table}); r.Status != 200 || !strings.Contains(string(r.Body), `[[30]]`) {
			t.Fatalf("%s: %d %s", sql, r.Status, r.Body)
		}
	}
	title := call(t, "GET", "/datasets/"+a, nil, bearer(owner.Access)...).JSON(t)["title"]
	wantStatus(t, "delete a queried dataset", call(t, "DELETE", "/datasets/"+a, map[string]any{"confirm_title": title}, bearer(owner.Access)...), 204)

	b := ogcDataset(t, owner, "private")
	table = tableOf(t, owner, b)
	wantStatus(t, "query", sqlQuery(t, owner, "SELECT gid, kind FROM data."+table+" LIMIT 1", []string{table}), 200)
	cols := "/layers/" + b + "/columns/"
	wantStatus(t, "drop a queried column", call(t, "DELETE", cols+"kind", nil, bearer(owner.Access)...), 200)
	wantStatus(t, "rename a column", call(t, "PATCH", cols+"rank/name", map[string]any{"new_name": "position"}, bearer(owner.Access)...), 200)
	r := sqlQuery(t, owner, "SELECT * FROM data."+table+" LIMIT 1", []string{table})
	wantStatus(t, "query after the changes", r, 200)
	if got := fmt.Sprint(r.JSON(t)["columns"]); strings.Contains(got, "kind") || !strings.Contains(got, "position") {
		t.Fatalf("columns after the changes: %s", got)
	}
}

// TestExportParquetRefused: GeoParquet is refused with 422 naming the formats to use instead.
func TestExportParquetRefused(t *testing.T) {
	owner := newUser(t, "editor")
	id := ogcDataset(t, owner, "private")
	r := call(t, "GET", "/datasets/"+id+"/export?format=parquet", nil, bearer(owner.Access)...)
	wantStatus(t, "parquet", r, 422, "gpkg", "fgb", "geojson", "csv", "shp")
}

// quantile is percentile_cont: linear interpolation between the sorted values.
func quantile(sorted []float64, f float64) float64 {
	p := f * float64(len(sorted)-1)
	lo := int(math.Floor(p))
	if lo+1 >= len(sorted) {
		return sorted[lo]
	}
	return sorted[lo] + (p-float64(lo))*(sorted[lo+1]-sorted[lo])
}

// TestColumnStatsClassBreaksAndKinds: quantiles holds class_count - 1 breaks; text columns are
// categorical.
func TestColumnStatsClassBreaksAndKinds(t *testing.T) {
	owner := newUser(t, "editor")
	id := ogcDataset(t, owner, "public")
	var score []float64 // the fixture's scores: i/4 for i in 0..29
	for i := 0; i < 30; i++ {
		score = append(score, float64(i)/4)
	}
	base := "/datasets/" + id + "/columns/"
	for _, classes := range []int{0, 2, 4, 5, 7} {
		q := ""
		want := classes
		if classes > 0 {
			q = fmt.Sprintf("?class_count=%d", classes)
		} else {
			want = 4 // the default: quartiles
		}
		st := call(t, "GET", base+"score/stats/"+q, nil).JSON(t)
		breaks := st["quantiles"].([]any)
		if len(breaks) != want-1 || st["data_type"] != "numeric" {
			t.Fatalf("class_count %d: %v", classes, st)
		}
		for i, b := range breaks {
			if w := quantile(score, float64(i+1)/float64(want)); math.Abs(b.(float64)-w) > 1e-9 {
				t.Errorf("class_count %d: break %d is %v, want %v", classes, i, b, w)
			}
		}
	}
	if h := call(t, "GET", base+"score/stats/", nil).JSON(t)["histogram"].([]any); len(h) != 10 || h[0].(map[string]any)["count"] != float64(3) {
		t.Errorf("histogram: %v", h)
	}
	for _, col := range []string{"name", "kind"} {
		if st := call(t, "GET", base+col+"/stats/", nil).JSON(t); st["data_type"] != "categorical" || len(st["quantiles"].([]any)) != 0 {
			t.Errorf("%s: %v", col, st)
		}
	}
	for _, bad := range []string{"1", "21"} {
		if r := call(t, "GET", base+"score/stats/?class_count="+bad, nil); r.Status != 400 && r.Status != 422 {
			t.Errorf("class_count %s: %d", bad, r.Status)
		}
	}
}

// TestRowsFilterContains: filter[<column>]=<text> is a case-insensitive substring match, the
// column checked, LIKE's wildcards taken literally.
func TestRowsFilterContains(t *testing.T) {
	owner := newUser(t, "editor")
	id := ogcDataset(t, owner, "public")
	rows := func(query string) (int, []int) {
		t.Helper()
		r := call(t, "GET", "/datasets/"+id+"/rows/?limit=500&"+query, nil)
		wantStatus(t, query, r, 200)
		var gids []int
		for _, row := range r.JSON(t)["rows"].([]any) {
			var n int
			fmt.Sscan(fmt.Sprint(row.(map[string]any)["rank"]), &n)
			gids = append(gids, n)
		}
		return int(r.JSON(t)["total"].(float64)), gids
	}
	f := func(col, text string) string { return url.QueryEscape("filter["+col+"]") + "=" + url.QueryEscape(text) }
	// The fixture: name "place NN", kind town/city/village by rank % 3, rank 0..29.
	want := func(keep func(i int) bool) []int {
		var out []int
		for i := 0; i < 30; i++ {
			if keep(i) {
				out = append(out, i)
			}
		}
		return out
	}
	for _, tt := range []struct {
		query string
		keep  func(i int) bool
	}{
		{f("name", "PLACE 1"), func(i int) bool { return i >= 10 && i < 20 }},
		{f("kind", "cIT"), func(i int) bool { return i%3 == 1 }},
		{f("name", "place 1") + "&" + f("kind", "city"), func(i int) bool { return i >= 10 && i < 20 && i%3 == 1 }},
		{f("name", "%"), func(int) bool { return false }},
		{f("name", "place_0"), func(int) bool { return false }},
		{f("rank", "2"), func(i int) bool { return strings.Contains(fmt.Sprint(i), "2") }},
	} {
		total, got := rows(tt.query)
		sort.Ints(got)
		if w := want(tt.keep); total != len(w) || fmt.Sprint(got) != fmt.Sprint(w) {
			t.Errorf("%s: total %d, rows %v; want %v", tt.query, total, got, w)
		}
	}
	wantStatus(t, "unknown column", call(t, "GET", "/datasets/"+id+"/rows/?"+f("nope", "x"), nil), 422, "nope")
}

// TestQualityScoreFormula: overall is the integer round(0.30 metadata + 0.30 geometry + 0.25
// attributes + 0.15 CRS), or round(metadata*30/55 + attributes*25/55) for a table; geometry
// validity is computed at ingest. The expected scores come from the fixture's own counts.
func TestQualityScoreFormula(t *testing.T) {
	owner := newUser(t, "editor")
	const n = 10
	var b strings.Builder
	b.WriteString(`{"type":"FeatureCollection","features":[`)
	invalid, filled, cells := 0, 0, 0
	for i := 0; i < n; i++ {
		x := float64(i) * 2
		ring := fmt.Sprintf("[[%g,0],[%g,1],[%g,1],[%g,0],[%g,0]]", x, x, x+1, x+1, x) // a square
		if i%4 == 0 {
			ring = fmt.Sprintf("[[%g,0],[%g,1],[%g,0],[%g,1],[%g,0]]", x, x+1, x+1, x, x) // a bow tie: invalid
			invalid++
		}
		name := []string{"null", `""`, `"  "`, fmt.Sprintf(`"n%d"`, i)}[i%4] // null and blanks are missing
		num := fmt.Sprint(i)
		if i%3 == 0 && i > 0 {
			num = "null"
		}
		filled += map[bool]int{true: 1}[i%4 == 3] + map[bool]int{true: 1}[num != "null"]
		cells += 2
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"type":"Feature","properties":{"name":%s,"num":%s},"geometry":{"type":"Polygon","coordinates":[%s]}}`, name, num, ring)
	}
	b.WriteString("]}")
	job := importFile(t, owner, "quality.geojson", []byte(b.String()), map[string]any{"title": "Quality", "summary": "Ten squares, some twisted"})
	id := job["dataset_id"].(string)
	// Metadata completeness is the share of the eight catalog fields filled (the contract's list):
	// summary only.
	metadata := 100.0 / 8
	geometry := 100 * float64(n-invalid) / n
	attributes := 100 * float64(filled) / float64(cells)
	check := func(what string, q map[string]any, metadata float64) {
		t.Helper()
		for part, want := range map[string]float64{"metadata_completeness": metadata, "geometry_validity": geometry,
			"attribute_completeness": attributes, "crs_defined": 100} {
			if got, _ := q[part].(float64); math.Abs(got-want) > 0.05 {
				t.Errorf("%s: %s %v, want %v", what, part, q[part], want)
			}
		}
		want := math.Round(0.30*metadata + 0.30*geometry + 0.25*attributes + 0.15*100)
		if q["overall"] != want {
			t.Errorf("%s: overall %v, want %v", what, q["overall"], want)
		}
	}
	check("at ingest", call(t, "GET", "/datasets/"+id, nil, bearer(owner.Access)...).JSON(t)["quality_detail"].(map[string]any), metadata)
	// A metadata edit moves the metadata part and the overall score at once.
	edited := call(t, "PATCH", "/datasets/"+id, map[string]any{"license": "CC0-1.0"}, bearer(owner.Access)...).JSON(t)["quality_detail"].(map[string]any)
	check("after adding a license", edited, 2*metadata)
	v := call(t, "GET", "/datasets/"+id+"/validate/", nil, bearer(owner.Access)...).JSON(t)
	if v["invalid_geometry_count"] != float64(invalid) {
		t.Fatalf("validate: %v", v)
	}
	check("validate", v["quality_detail"].(map[string]any), 2*metadata)

	// A table (no coordinates): no geometry parts, metadata 30/55 and attributes 25/55.
	tbl := importFile(t, owner, "prices.csv", []byte("item,price\napple,1\npear,\n,3\nplum,4\n"), map[string]any{"title": "Prices", "summary": "Fruit"})
	q := call(t, "GET", "/datasets/"+tbl["dataset_id"].(string), nil, bearer(owner.Access)...).JSON(t)["quality_detail"].(map[string]any)
	tableAttributes := 100 * 6.0 / 8
	if q["geometry_validity"] != nil || q["crs_defined"] != nil || math.Abs(q["attribute_completeness"].(float64)-tableAttributes) > 0.05 ||
		q["overall"] != math.Round(metadata*30/55+tableAttributes*25/55) {
		t.Fatalf("table quality: %v", q)
	}
}

// TestPublishingWarnsOnlyAboutWhatPublicationNeeds: metadata_warnings name what the publication
// rule needs (summary, license), never empty optional fields.
func TestPublishingWarnsOnlyAboutWhatPublicationNeeds(t *testing.T) {
	owner := newUser(t, "editor")
	publish := func(id string) reply {
		return call(t, "PATCH", "/datasets/"+id+"/target-status/", map[string]any{"status": "published"}, bearer(owner.Access)...)
	}
	bare := createDataset(t, owner, "public", false)["id"].(string)
	r := publish(bare)
	wantStatus(t, "publish a bare record", r, 200)
	if w := fmt.Sprint(r.JSON(t)["metadata_warnings"]); w != "[missing summary missing license]" {
		t.Fatalf("warnings of a bare record: %s", w)
	}
	if w := fmt.Sprint(call(t, "GET", "/datasets/"+bare, nil).JSON(t)["metadata_warnings"]); w != "[missing summary missing license]" {
		t.Fatalf("the record's warnings: %s", w)
	}
	// Attribution, source organisation, themes, lineage ... stay empty: nothing to warn about.
	enough := createDataset(t, owner, "public", false)["id"].(string)
	wantStatus(t, "summary and license", call(t, "PATCH", "/datasets/"+enough, map[string]any{"summary": "Roads", "license": "CC-BY-4.0"},
		bearer(owner.Access)...), 200)
	r = publish(enough)
	if _, ok := r.JSON(t)["metadata_warnings"]; r.Status != 200 || ok {
		t.Fatalf("warnings of a record with what publication needs: %d %s", r.Status, r.Body)
	}
	if d := call(t, "GET", "/datasets/"+enough, nil).JSON(t); d["metadata_warnings"] != nil {
		t.Fatalf("the record's warnings: %v", d["metadata_warnings"])
	}
}

// TestPublicVersionsAndRefreshRunsWithoutSignIn: a public dataset's versions and refresh runs
// are readable anonymously, without the people fields.
func TestPublicVersionsAndRefreshRunsWithoutSignIn(t *testing.T) {
	owner := newUser(t, "editor")
	pub := createDataset(t, owner, "public", true)["id"].(string)
	priv := createDataset(t, owner, "private", true)["id"].(string)
	r := call(t, "GET", "/datasets/"+pub+"/versions/", nil)
	wantStatus(t, "versions, anonymously", r, 200)
	v := r.JSON(t)["versions"].([]any)[0].(map[string]any)
	for _, f := range []string{"uploaded_by", "created_by", "created_by_display", "file_hash"} {
		if v[f] != nil {
			t.Errorf("anonymous version shows %s: %v", f, v[f])
		}
	}
	if v["version_number"] != float64(1) || v["is_current"] != true {
		t.Errorf("version: %v", v)
	}
	if v := call(t, "GET", "/datasets/"+pub+"/versions/", nil, bearer(owner.Access)...).JSON(t)["versions"].([]any)[0].(map[string]any); v["uploaded_by"] != owner.ID ||
		v["created_by_display"] != owner.Username {
		t.Errorf("owner's version: %v", v)
	}
	runs := call(t, "GET", "/datasets/"+pub+"/refresh-runs", nil)
	wantStatus(t, "refresh runs, anonymously", runs, 200)
	if m := runs.JSON(t); len(m["runs"].([]any)) != 0 || m["total"] != float64(0) {
		t.Errorf("refresh runs: %v", m)
	}
	for _, path := range []string{"/versions/", "/refresh-runs"} {
		wantStatus(t, "private "+path+", anonymously", call(t, "GET", "/datasets/"+priv+path, nil), 404)
	}
}

// TestCurrentVersionCountsDataVersions: metadata edits and status moves leave current_version
// alone; feature edits and schema changes make versions, each listed by Get Dataset Versions.
func TestCurrentVersionCountsDataVersions(t *testing.T) {
	owner := newUser(t, "editor")
	id := createDataset(t, owner, "private", false)["id"].(string)
	step := func(what string, r reply, version float64, reason string) {
		t.Helper()
		if r.Status >= 300 {
			t.Fatalf("%s: %d %s", what, r.Status, r.Body)
		}
		d := call(t, "GET", "/datasets/"+id, nil, bearer(owner.Access)...).JSON(t)
		vs := call(t, "GET", "/datasets/"+id+"/versions/", nil, bearer(owner.Access)...).JSON(t)
		top := vs["versions"].([]any)[0].(map[string]any)
		if d["current_version"] != version || top["version"] != version || top["reason"] != reason || top["is_current"] != true ||
			vs["total"] != version {
			t.Fatalf("after %s: current_version %v, newest version %v (%v), %v versions; want %v (%s)", what, d["current_version"],
				top["version"], top["reason"], vs["total"], version, reason)
		}
	}
	step("creation", reply{Status: 200}, 1, "created")
	step("a metadata edit", call(t, "PATCH", "/datasets/"+id, map[string]any{"summary": "Edited"}, bearer(owner.Access)...), 1, "created")
	step("a status move", call(t, "PATCH", "/datasets/"+id+"/status/", map[string]any{"status": "ready"}, bearer(owner.Access)...), 1, "created")
	step("a feature insert", call(t, "POST", "/datasets/"+id+"/features/", map[string]any{"type": "Feature", "geometry": point(6, 46),
		"properties": map[string]any{"name": "a"}}, bearer(owner.Access)...), 2, "feature_edit")
	step("a column added", call(t, "POST", "/layers/"+id+"/columns/", map[string]any{"column": map[string]any{"name": "note", "type": "text"}},
		bearer(owner.Access)...), 3, "schema_change")
	step("themes", call(t, "PATCH", "/datasets/"+id, map[string]any{"theme_category": []string{"boundaries"}}, bearer(owner.Access)...), 3, "schema_change")
}

// TestDatasetHistoryDottedActions: the history names its actions resource.verb; a view is
// written at most once an hour per caller, after the answer; exports are written too.
func TestDatasetHistoryDottedActions(t *testing.T) {
	owner, viewer := newUser(t, "editor"), newUser(t, "viewer")
	id := createDataset(t, owner, "public", true)["id"].(string)
	base := "/datasets/" + id + "/features/"
	r := call(t, "POST", base, map[string]any{"type": "Feature", "geometry": point(6, 46), "properties": map[string]any{"name": "a"}}, bearer(owner.Access)...)
	wantStatus(t, "insert", r, 201)
	gid := fmt.Sprint(r.JSON(t)["id"])
	wantStatus(t, "update", call(t, "PATCH", base+gid, map[string]any{"properties": map[string]any{"name": "b"}}, bearer(owner.Access)...), 200)
	wantStatus(t, "replace", call(t, "PUT", base+gid, map[string]any{"type": "Feature", "geometry": point(7, 46), "properties": map[string]any{"name": "c"}},
		bearer(owner.Access)...), 200)
	wantStatus(t, "export", call(t, "GET", "/datasets/"+id+"/export?format=geojson", nil, bearer(viewer.Access)...), 200)
	wantStatus(t, "delete", call(t, "DELETE", base+gid, nil, bearer(owner.Access)...), 204)
	for range 3 {
		wantStatus(t, "owner's view", call(t, "GET", "/datasets/"+id, nil, bearer(owner.Access)...), 200)
		wantStatus(t, "viewer's view", call(t, "GET", "/datasets/"+id, nil, bearer(viewer.Access)...), 200)
	}
	// Views and exports arrive after their answers.
	var logs []map[string]any
	count := func(action string) int {
		n := 0
		for _, l := range logs {
			if l["action"] == action {
				n++
			}
		}
		return n
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		logs = nil
		for _, it := range call(t, "GET", "/datasets/"+id+"/history?limit=200", nil, bearer(owner.Access)...).JSON(t)["logs"].([]any) {
			logs = append(logs, it.(map[string]any))
		}
		if count("dataset.view") >= 2 && count("dataset.export") >= 1 {
			break
		}
	}
	dotted := regexp.MustCompile(`^[a-z_]+\.[a-z_]+$`)
	for _, l := range logs {
		if !dotted.MatchString(l["action"].(string)) || l["summary"] == nil || l["summary"] == "" {
			t.Errorf("entry: %v %v", l["action"], l["summary"])
		}
	}
	for action, want := range map[string]int{"dataset.create": 1, "metadata.edit": 1, "status.change": 3, "feature.insert": 1,
		"feature.update": 1, "feature.replace": 1, "feature.delete": 1, "dataset.export": 1, "dataset.view": 2} {
		if got := count(action); got != want {
			t.Errorf("%s: %d entries, want %d", action, got, want)
		}
	}
	for _, l := range logs {
		if l["action"] == "dataset.export" && (l["actor_id"] != viewer.ID || fmt.Sprint(l["details"]) != "map[format:geojson]") {
			t.Errorf("export entry: %v", l)
		}
	}
}

// TestAuditCollectionAndQueryActions: collection writes and read-only SQL reach the admin audit
// log under their dotted names.
func TestAuditCollectionAndQueryActions(t *testing.T) {
	owner, other, adm := newUser(t, "editor"), newUser(t, "editor"), admin(t)
	ds := ogcDataset(t, owner, "private")
	table := tableOf(t, owner, ds)
	theirs := tableOf(t, other, ogcDataset(t, other, "private"))
	r := call(t, "POST", "/catalog/collections/", map[string]any{"name": "Audited " + randomHex(3)}, bearer(owner.Access)...)
	wantStatus(t, "create", r, 201)
	cid := r.JSON(t)["id"].(string)
	wantStatus(t, "update", call(t, "PATCH", "/catalog/collections/"+cid, map[string]any{"description": "Audited"}, bearer(owner.Access)...), 200)
	wantStatus(t, "add", call(t, "POST", "/catalog/collections/"+cid+"/datasets/", map[string]any{"dataset_ids": []any{ds}}, bearer(owner.Access)...), 200)
	wantStatus(t, "remove", call(t, "DELETE", "/catalog/collections/"+cid+"/datasets/"+ds, nil, bearer(owner.Access)...), 204)
	wantStatus(t, "delete", call(t, "DELETE", "/catalog/collections/"+cid, nil, bearer(owner.Access)...), 204)
	wantStatus(t, "a query", sqlQuery(t, owner, "SELECT count(*) FROM data."+table, []string{table}), 200)
	wantStatus(t, "a query failing as it runs", sqlQuery(t, owner, "SELECT 1 / (count(*) - count(*)) FROM data."+table, []string{table}), 422)
	wantStatus(t, "not a query", sqlQuery(t, owner, "SELEC nothing", []string{table}), 400)
	wantStatus(t, "another user's table", sqlQuery(t, owner, "SELECT 1", []string{theirs}), 403)

	type entry struct{ action, resource, outcome string }
	var got []entry
	for _, it := range call(t, "GET", "/admin/audit-logs/?limit=200&actor_id="+owner.ID, nil, bearer(adm.Access)...).JSON(t)["logs"].([]any) {
		m := it.(map[string]any)
		got = append(got, entry{m["action"].(string), fmt.Sprint(m["resource_id"]), m["outcome"].(string)})
	}
	for _, want := range []entry{{"collection.create", cid, "success"}, {"collection.update", cid, "success"},
		{"collection.add_dataset", cid, "success"}, {"collection.remove_dataset", cid, "success"}, {"collection.delete", cid, "success"},
		{"query.execute", table, "success"}, {"query.execute", table, "failure"}, {"query.reject", table, "failure"},
		{"query.reject", theirs, "failure"}} {
		if !slices.Contains(got, want) {
			t.Errorf("no audit entry %v among %v", want, got)
		}
	}
	for _, e := range got {
		if e.action == "sql.query" {
			t.Errorf("the old action name: %v", e)
		}
	}
}

// TestListDatasetsByCollectionAndKeyword: List All Datasets honours collection_id and matches q
// in themes and keywords too, its wildcards taken literally.
func TestListDatasetsByCollectionAndKeyword(t *testing.T) {
	owner := newUser(t, "editor")
	a := createDataset(t, owner, "private", false)
	b := createDataset(t, owner, "private", false)
	tag := "tag" + randomHex(4)
	wantStatus(t, "themes", call(t, "PATCH", "/datasets/"+a["id"].(string), map[string]any{"theme_category": []string{tag + "_theme"}}, bearer(owner.Access)...), 200)
	wantStatus(t, "keyword", call(t, "POST", "/records/"+b["record_id"].(string)+"/keywords/", map[string]any{"keyword": tag + " word"}, bearer(owner.Access)...), 201)
	ids := func(query string) string {
		t.Helper()
		r := call(t, "GET", "/datasets/?limit=200&"+query, nil, bearer(owner.Access)...)
		wantStatus(t, query, r, 200)
		var out []string
		for _, d := range r.JSON(t)["datasets"].([]any) {
			out = append(out, d.(map[string]any)["id"].(string))
		}
		sort.Strings(out)
		return strings.Join(out, ",")
	}
	both := []string{a["id"].(string), b["id"].(string)}
	sort.Strings(both)
	if got := ids("q=" + tag); got != strings.Join(both, ",") {
		t.Errorf("q in themes and keywords: %s, want %v", got, both)
	}
	if got := ids("q=" + url.QueryEscape(tag+"%word")); got != "" {
		t.Errorf("q with %%: %s, want nothing", got)
	}
	r := call(t, "POST", "/catalog/collections/", map[string]any{"name": "Listed " + randomHex(3)}, bearer(owner.Access)...)
	cid := r.JSON(t)["id"].(string)
	wantStatus(t, "add", call(t, "POST", "/catalog/collections/"+cid+"/datasets/", map[string]any{"dataset_ids": []any{a["id"]}}, bearer(owner.Access)...), 200)
	if got := ids("collection_id=" + cid); got != a["id"] {
		t.Errorf("collection_id: %s, want %s", got, a["id"])
	}
}
