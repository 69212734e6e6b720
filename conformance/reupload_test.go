package conformance

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Reupload (issue 33): a new version of a dataset's data from a file, previewed against the
// current table, committed as a replacement under the same id and table name.

// geojsonOf writes a FeatureCollection of n features whose properties props(i) gives, as points
// (or squares, polygons) near 5 E 50 N.
func geojsonOf(n int, polygons bool, props func(i int) string) []byte {
	var b strings.Builder
	b.WriteString(`{"type":"FeatureCollection","features":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		x, y := 5+float64(i)*0.01, 50+float64(i)*0.01
		geom := fmt.Sprintf(`{"type":"Point","coordinates":[%g,%g]}`, x, y)
		if polygons {
			geom = fmt.Sprintf(`{"type":"Polygon","coordinates":[[[%g,%g],[%g,%g],[%g,%g],[%g,%g],[%g,%g]]]}`,
				x, y, x+0.005, y, x+0.005, y+0.005, x, y+0.005, x, y)
		}
		fmt.Fprintf(&b, `{"type":"Feature","properties":{%s},"geometry":%s}`, props(i), geom)
	}
	b.WriteString("]}")
	return []byte(b.String())
}

// reupload posts a replacement file for dataset id and answers the reply.
func reupload(t *testing.T, s session, id, filename string, content []byte) reply {
	t.Helper()
	return postFileAt(t, httpc, server.APIRoot+"/datasets/"+id+"/reupload", s.Access, filename, content)
}

// stagedReupload posts a replacement file and answers its pending job's id.
func stagedReupload(t *testing.T, s session, id, filename string, content []byte) string {
	t.Helper()
	r := reupload(t, s, id, filename, content)
	wantStatus(t, "reupload "+filename, r, 201)
	if r.JSON(t)["status"] != "pending" {
		t.Fatalf("reupload job: %s", r.Body)
	}
	return r.JSON(t)["job_id"].(string)
}

// commitReupload commits a reupload job and waits for it to end; it answers the job.
func commitReupload(t *testing.T, s session, id, job string, body map[string]any) map[string]any {
	t.Helper()
	r := call(t, "POST", "/datasets/"+id+"/reupload/"+job+"/commit", body, bearer(s.Access)...)
	wantStatus(t, "reupload commit", r, 202)
	return waitJobEnd(t, s, job)
}

// placesV1 is the dataset the reupload tests start from: name (text), rank (integer), note (text).
func placesV1(t *testing.T, s session, n int) string {
	t.Helper()
	job := importFile(t, s, "places.geojson", geojsonOf(n, false, func(i int) string {
		return fmt.Sprintf(`"name":"p%d","rank":%d,"note":"v1"`, i, i)
	}), map[string]any{"title": "Reupload " + randomHex(3)})
	if job["status"] != "complete" {
		t.Fatalf("import: %v", job)
	}
	return job["dataset_id"].(string)
}

func names(list any) []string {
	var out []string
	for _, c := range list.([]any) {
		c := c.(map[string]any)
		if t, ok := c["type"]; ok {
			out = append(out, fmt.Sprint(c["name"], ":", t))
		} else {
			out = append(out, fmt.Sprint(c["name"], ":", c["old_type"], ">", c["new_type"]))
		}
	}
	return out
}

func TestReuploadPreviewDiff(t *testing.T) {
	owner := newUser(t, "editor")
	id := placesV1(t, owner, 3)
	cases := []struct {
		name, file       string
		content          []byte
		added, removed   []string
		changed          []string
		rowsNew          float64
		geometry, crsNew any
	}{
		{name: "same schema, more rows", file: "more.geojson", content: geojsonOf(5, false, func(i int) string {
			return fmt.Sprintf(`"name":"q%d","rank":%d,"note":"v2"`, i, i)
		}), rowsNew: 5, geometry: "MULTIPOINT", crsNew: 4326.0},
		{name: "a column added", file: "added.geojson", content: geojsonOf(3, false, func(i int) string {
			return fmt.Sprintf(`"name":"q%d","rank":%d,"note":"v2","height":%d.5`, i, i, i)
		}), added: []string{"height:double precision"}, rowsNew: 3, geometry: "MULTIPOINT", crsNew: 4326.0},
		{name: "a column removed", file: "removed.geojson", content: geojsonOf(2, false, func(i int) string {
			return fmt.Sprintf(`"name":"q%d","rank":%d`, i, i)
		}), removed: []string{"note:text"}, rowsNew: 2, geometry: "MULTIPOINT", crsNew: 4326.0},
		{name: "a type changed", file: "retyped.geojson", content: geojsonOf(3, false, func(i int) string {
			return fmt.Sprintf(`"name":"q%d","rank":"r%d","note":"v2"`, i, i)
		}), changed: []string{"rank:integer>text"}, rowsNew: 3, geometry: "MULTIPOINT", crsNew: 4326.0},
		{name: "polygons", file: "areas.geojson", content: geojsonOf(4, true, func(i int) string {
			return fmt.Sprintf(`"name":"q%d","rank":%d,"note":"v2"`, i, i)
		}), rowsNew: 4, geometry: "MULTIPOLYGON", crsNew: 4326.0},
		{name: "another CRS", file: "mercator.geojson", content: []byte(`{"type":"FeatureCollection",
			"crs":{"type":"name","properties":{"name":"urn:ogc:def:crs:EPSG::3857"}},"features":[
			{"type":"Feature","properties":{"name":"m","rank":1,"note":"v2"},"geometry":{"type":"Point","coordinates":[556597,6446275]}}]}`),
			rowsNew: 1, geometry: "MULTIPOINT", crsNew: 3857.0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			job := stagedReupload(t, owner, id, c.file, c.content)
			r := call(t, "POST", "/datasets/"+id+"/reupload/"+job+"/preview", map[string]any{}, bearer(owner.Access)...)
			wantStatus(t, "preview", r, 200)
			pv := r.JSON(t)
			d := pv["schema_diff"].(map[string]any)
			if got := names(d["columns_added"]); !slices.Equal(got, c.added) {
				t.Errorf("columns_added %v, want %v", got, c.added)
			}
			if got := names(d["columns_removed"]); !slices.Equal(got, c.removed) {
				t.Errorf("columns_removed %v, want %v", got, c.removed)
			}
			if got := names(d["type_changes"]); !slices.Equal(got, c.changed) {
				t.Errorf("type_changes %v, want %v", got, c.changed)
			}
			if d["row_count_old"] != 3.0 || d["row_count_new"] != c.rowsNew || d["row_count_delta"] != c.rowsNew-3 {
				t.Errorf("row counts: %v", d)
			}
			if d["geometry_type_old"] != "MULTIPOINT" || d["geometry_type_new"] != c.geometry || d["crs_old"] != 4326.0 || d["crs_new"] != c.crsNew {
				t.Errorf("geometry and CRS: %v", d)
			}
			if pv["job_id"] != job || pv["source_filename"] != c.file || len(pv["sample_rows"].([]any)) == 0 || pv["all_layers"] != nil {
				t.Errorf("preview: %s", r.Body)
			}
		})
	}
	// Nothing changed: the dataset is as imported.
	if d := call(t, "GET", "/datasets/"+id, nil, bearer(owner.Access)...).JSON(t); d["feature_count"] != 3.0 || d["current_version"] != 1.0 {
		t.Fatalf("dataset after previews: %v", d)
	}
}

func TestReuploadCommitReplacesData(t *testing.T) {
	owner, grantee := newUser(t, "editor"), newUser(t, "viewer")
	id := placesV1(t, owner, 3)
	publishAs(t, owner, id, "restricted")
	wantStatus(t, "grant", call(t, "POST", "/datasets/"+id+"/grants/", map[string]any{"user_id": grantee.ID, "level": "read"}, bearer(owner.Access)...), 201)
	before := call(t, "GET", "/datasets/"+id, nil, bearer(owner.Access)...).JSON(t)

	job := stagedReupload(t, owner, id, "v2.geojson", geojsonOf(4, false, func(i int) string {
		return fmt.Sprintf(`"name":"v2-%d","rank":%d,"note":"v2","height":%d`, i, 10+i, i)
	}))
	wantStatus(t, "Commit Import of a reupload job", call(t, "POST", "/ingest/commit/"+job, map[string]any{}, bearer(owner.Access)...), 409, "Reupload Commit")
	done := commitReupload(t, owner, id, job, map[string]any{})
	if done["status"] != "complete" || done["dataset_id"] != id || done["progress"] != 1.0 {
		t.Fatalf("reupload job: %v", done)
	}
	wantStatus(t, "commit again", call(t, "POST", "/datasets/"+id+"/reupload/"+job+"/commit", map[string]any{}, bearer(owner.Access)...), 409, "already processed")
	wantStatus(t, "retry a complete reupload", call(t, "POST", "/jobs/"+job+"/retry", nil, bearer(owner.Access)...), 409)

	after := call(t, "GET", "/datasets/"+id, nil, bearer(owner.Access)...).JSON(t)
	if after["id"] != id || after["table_name"] != before["table_name"] || after["feature_count"] != 4.0 ||
		after["current_version"] != before["current_version"].(float64)+1 || after["source_filename"] != "v2.geojson" ||
		after["title"] != before["title"] || len(after["column_info"].([]any)) != 4 {
		t.Fatalf("dataset after the reupload: %v\nbefore: %v", after, before)
	}
	// The new data under the same addresses, to the grantee too.
	_, props, _ := features(t, call(t, "GET", "/collections/"+id+"/items?limit=100", nil, bearer(grantee.Access)...))
	if len(props) != 4 || props[0]["name"] != "v2-0" || props[3]["height"] != 3.0 {
		t.Fatalf("items after the reupload: %v", props)
	}
	v := call(t, "GET", "/datasets/"+id+"/versions/", nil, bearer(owner.Access)...).JSON(t)
	versions := v["versions"].([]any)
	cur, prev := versions[0].(map[string]any), versions[len(versions)-1].(map[string]any)
	if len(versions) != 2 || cur["reason"] != "reupload" || cur["is_current"] != true || cur["version"] != after["current_version"] ||
		cur["feature_count"] != 4.0 || cur["source_filename"] != "v2.geojson" || prev["reason"] != "ingest" || prev["feature_count"] != 3.0 {
		t.Fatalf("versions: %v", versions)
	}
	var tables int
	conn := dbConn(t)
	_ = conn.QueryRow(t.Context(), "SELECT count(*) FROM pg_tables WHERE schemaname = 'data' AND tablename LIKE $1",
		"ds_"+strings.ReplaceAll(job, "-", "")+"%").Scan(&tables)
	if tables != 0 {
		t.Fatalf("the reupload's load table is still there (%d)", tables)
	}
}

func TestReuploadDropsAColumnAMapStyleUses(t *testing.T) {
	owner := newUser(t, "editor")
	id := placesV1(t, owner, 3)
	m := call(t, "POST", "/maps/", map[string]any{"name": "Ranks " + randomHex(3)}, bearer(owner.Access)...).JSON(t)
	base := "/maps/" + m["id"].(string)
	r := call(t, "POST", base+"/layers", map[string]any{"dataset_id": id}, bearer(owner.Access)...)
	wantStatus(t, "add layer", r, 201)
	layer := r.JSON(t)
	wantStatus(t, "style the layer by rank", call(t, "PATCH", base+"/layers", map[string]any{"updated": []map[string]any{{"id": layer["id"],
		"filter":       []any{">=", []any{"get", "rank"}, 1},
		"label_config": map[string]any{"field": "rank"},
		"paint":        map[string]any{"circle-radius": []any{"get", "rank"}, "circle-color": "#ff0000"},
		"popup_config": map[string]any{"enabled": true, "visible_fields": []string{"name", "rank"}}}}}, bearer(owner.Access)...), 200)

	noRank := geojsonOf(3, false, func(i int) string { return fmt.Sprintf(`"name":"n%d","note":"v2"`, i) })
	job := stagedReupload(t, owner, id, "norank.geojson", noRank)
	wantStatus(t, "commit removing a used column", call(t, "POST", "/datasets/"+id+"/reupload/"+job+"/commit", map[string]any{},
		bearer(owner.Access)...), 409, "rank", "allow_schema_change")
	if d := call(t, "GET", "/datasets/"+id, nil, bearer(owner.Access)...).JSON(t); d["current_version"] != 1.0 {
		t.Fatalf("a refused commit changed the dataset: %v", d)
	}
	done := commitReupload(t, owner, id, job, map[string]any{"allow_schema_change": true})
	if done["status"] != "complete" {
		t.Fatalf("reupload: %v", done)
	}
	// The map keeps its layer; what used rank is gone from it, the rest stays.
	l := mapLayers(t, call(t, "GET", base, nil, bearer(owner.Access)...).JSON(t))[0]
	if l["filter"] != nil || l["label_config"] != nil || fmt.Sprint(l["paint"]) != "map[circle-color:#ff0000]" ||
		fmt.Sprint(l["popup_config"]) != "map[enabled:true visible_fields:[name]]" || l["tile_version"].(float64) <= layer["tile_version"].(float64) {
		t.Fatalf("layer after the reupload: %v", l)
	}
	_, tile := getTile(t, server.APIRoot, "/tiles/"+id+"/0/0/0.pbf?cols=name", 200, bearer(owner.Access)...)
	if len(tile) != 1 || len(tile[0].Features) != 3 {
		t.Fatalf("tile after the reupload: %+v", tile)
	}
	h := call(t, "GET", "/datasets/"+id+"/history", nil, bearer(owner.Access)...).JSON(t)
	entry := h["logs"].([]any)[0].(map[string]any)
	if entry["action"] != "dataset.reupload" || !strings.Contains(fmt.Sprint(entry["details"]), "columns_removed:[map[name:rank type:integer]]") {
		t.Fatalf("history entry: %v", entry)
	}
}

// TestReuploadWhileReading reads the dataset's items and tiles in a loop while a reupload
// replaces it (with a column fewer): every answer is 200 and wholly the old data or wholly the
// new, and the new data is seen at the end.
func TestReuploadWhileReading(t *testing.T) {
	owner := newUser(t, "editor")
	job := importFile(t, owner, "old.geojson", geojsonOf(200, false, func(i int) string {
		return fmt.Sprintf(`"gen":"old","extra":%d`, i)
	}), map[string]any{"title": "Readers " + randomHex(3)})
	id := job["dataset_id"].(string)
	generation := func(props []map[string]any, tile bool) (string, error) {
		want := map[string]int{"old": 200, "new": 300}
		g := fmt.Sprint(props[0]["gen"])
		for _, p := range props {
			if fmt.Sprint(p["gen"]) != g {
				return "", fmt.Errorf("old and new features in one answer")
			}
			if _, extra := p["extra"]; !tile && (g == "new") == extra {
				return "", fmt.Errorf("a %s feature with the other generation's columns: %v", g, p)
			}
		}
		if len(props) != want[g] {
			return "", fmt.Errorf("%d features of generation %q", len(props), g)
		}
		return g, nil
	}
	var stop atomic.Bool
	var reads, newSeen atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	fail := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		if len(failures) < 5 {
			failures = append(failures, s)
		}
	}
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for !stop.Load() {
				var props []map[string]any
				if w == 2 {
					r := callAt(t, plain, server.APIRoot, "GET", "/tiles/"+id+"/0/0/0.pbf?cols=gen", nil, bearer(owner.Access)...)
					if r.Status != 200 {
						fail(fmt.Sprintf("tile: %d %s", r.Status, r.Body))
						continue
					}
					for _, f := range decodeMVT(t, r.Body)[0].Features {
						props = append(props, f.Props)
					}
				} else {
					r := callAt(t, plain, server.APIRoot, "GET", "/collections/"+id+"/items?limit=1000", nil, bearer(owner.Access)...)
					if r.Status != 200 {
						fail(fmt.Sprintf("items: %d %s", r.Status, r.Body))
						continue
					}
					for _, f := range r.JSON(t)["features"].([]any) {
						props = append(props, f.(map[string]any)["properties"].(map[string]any))
					}
				}
				g, err := generation(props, w == 2)
				if err != nil {
					fail(err.Error())
				}
				reads.Add(1)
				if g == "new" {
					newSeen.Add(1)
				}
			}
		}(w)
	}
	up := stagedReupload(t, owner, id, "new.geojson", geojsonOf(300, false, func(i int) string { return `"gen":"new"` }))
	done := commitReupload(t, owner, id, up, map[string]any{"allow_schema_change": true})
	for deadline := time.Now().Add(10 * time.Second); newSeen.Load() < 20 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
	}
	stop.Store(true)
	wg.Wait()
	if done["status"] != "complete" {
		t.Fatalf("reupload: %v", done)
	}
	if len(failures) > 0 {
		t.Fatalf("%d reads; failures: %s", reads.Load(), strings.Join(failures, "\n"))
	}
	if newSeen.Load() < 20 || reads.Load()-newSeen.Load() < 1 {
		t.Fatalf("%d reads, %d of the new data: the reads did not span the replacement", reads.Load(), newSeen.Load())
	}
	t.Logf("%d reads, %d of them after the swap", reads.Load(), newSeen.Load())
}

func TestPresignedReupload(t *testing.T) {
	owner := newUser(t, "editor")
	id, other := placesV1(t, owner, 3), placesV1(t, owner, 2)
	content := geojsonOf(6, false, func(i int) string { return fmt.Sprintf(`"name":"s%d","rank":%d,"note":"direct"`, i, i) })
	r := call(t, "POST", "/datasets/"+id+"/reupload/presigned", map[string]any{"filename": "direct.geojson", "file_size": len(content)}, bearer(owner.Access)...)
	wantStatus(t, "presigned reupload", r, 201)
	ps := r.JSON(t)
	job, urls := ps["job_id"].(string), ps["urls"].([]any)
	if len(urls) != 1 || ps["upload_id"] != nil {
		t.Fatalf("presigned answer: %s", r.Body)
	}
	wantStatus(t, "preview before the file", call(t, "POST", "/datasets/"+id+"/reupload/"+job+"/preview", map[string]any{}, bearer(owner.Access)...), 409)
	if code, _ := putPart(t, urls[0].(string), content); code != 200 {
		t.Fatalf("put: %d", code)
	}
	wantStatus(t, "complete under another dataset", call(t, "POST", "/datasets/"+other+"/reupload/presigned/"+job+"/complete", map[string]any{},
		bearer(owner.Access)...), 404)
	wantStatus(t, "complete", call(t, "POST", "/datasets/"+id+"/reupload/presigned/"+job+"/complete", map[string]any{}, bearer(owner.Access)...), 200)
	wantStatus(t, "complete again", call(t, "POST", "/datasets/"+id+"/reupload/presigned/"+job+"/complete", map[string]any{}, bearer(owner.Access)...), 409)
	pv := call(t, "POST", "/datasets/"+id+"/reupload/"+job+"/preview", map[string]any{}, bearer(owner.Access)...)
	wantStatus(t, "preview", pv, 200)
	if d := pv.JSON(t)["schema_diff"].(map[string]any); d["row_count_new"] != 6.0 || len(d["columns_added"].([]any))+len(d["columns_removed"].([]any)) != 0 {
		t.Fatalf("preview: %s", pv.Body)
	}
	if done := commitReupload(t, owner, id, job, map[string]any{}); done["status"] != "complete" {
		t.Fatalf("presigned reupload: %v", done)
	}
	if d := call(t, "GET", "/datasets/"+id, nil, bearer(owner.Access)...).JSON(t); d["feature_count"] != 6.0 || d["source_filename"] != "direct.geojson" {
		t.Fatalf("dataset after the presigned reupload: %v", d)
	}
}

// TestReuploadRefusals: who may reupload (the rule of editing the dataset), and the jobs a
// reupload operation takes.
func TestReuploadRefusals(t *testing.T) {
	owner, editor, viewer, writer, reader := newUser(t, "editor"), newUser(t, "editor"), newUser(t, "viewer"), newUser(t, "editor"), newUser(t, "editor")
	id := placesV1(t, owner, 3)
	publishAs(t, owner, id, "restricted")
	wantStatus(t, "grant write", call(t, "POST", "/datasets/"+id+"/grants/", map[string]any{"user_id": writer.ID, "level": "write"}, bearer(owner.Access)...), 201)
	for _, u := range []session{viewer, reader} {
		wantStatus(t, "grant read", call(t, "POST", "/datasets/"+id+"/grants/", map[string]any{"user_id": u.ID, "level": "read"}, bearer(owner.Access)...), 201)
	}
	private := placesV1(t, owner, 2)
	file := geojsonOf(2, false, func(i int) string { return fmt.Sprintf(`"name":"x%d","rank":%d,"note":"x"`, i, i) })
	job := stagedReupload(t, owner, id, "mine.geojson", file)
	importJob := upload(t, owner, "plain.geojson", file).JSON(t)["job_id"].(string)

	for _, c := range []struct {
		name   string
		status int
		do     func() reply
	}{
		{"anonymous", 401, func() reply {
			return postFileAt(t, httpc, server.APIRoot+"/datasets/"+id+"/reupload", "", "x.geojson", file)
		}},
		{"viewer with a read grant", 403, func() reply { return reupload(t, viewer, id, "x.geojson", file) }},
		{"editor with a read grant", 403, func() reply { return reupload(t, reader, id, "x.geojson", file) }},
		{"editor with a read grant, commit", 403, func() reply {
			return call(t, "POST", "/datasets/"+id+"/reupload/"+job+"/commit", map[string]any{}, bearer(reader.Access)...)
		}},
		{"editor without a grant", 404, func() reply { return reupload(t, editor, id, "x.geojson", file) }},
		{"editor, someone's private dataset", 404, func() reply { return reupload(t, editor, private, "x.geojson", file) }},
		{"viewer, presigned", 403, func() reply {
			return call(t, "POST", "/datasets/"+id+"/reupload/presigned", map[string]any{"filename": "x.geojson", "file_size": 10}, bearer(viewer.Access)...)
		}},
		{"viewer previews the owner's job", 403, func() reply {
			return call(t, "POST", "/datasets/"+id+"/reupload/"+job+"/preview", map[string]any{}, bearer(viewer.Access)...)
		}},
		{"write grantee previews the owner's job", 404, func() reply {
			return call(t, "POST", "/datasets/"+id+"/reupload/"+job+"/preview", map[string]any{}, bearer(writer.Access)...)
		}},
		{"viewer commits the owner's job", 403, func() reply {
			return call(t, "POST", "/datasets/"+id+"/reupload/"+job+"/commit", map[string]any{}, bearer(viewer.Access)...)
		}},
		{"the job under another dataset", 404, func() reply {
			return call(t, "POST", "/datasets/"+private+"/reupload/"+job+"/preview", map[string]any{}, bearer(owner.Access)...)
		}},
		{"an import job as a reupload", 404, func() reply {
			return call(t, "POST", "/datasets/"+id+"/reupload/"+importJob+"/commit", map[string]any{}, bearer(owner.Access)...)
		}},
		{"a reupload job fanned out", 409, func() reply {
			return call(t, "POST", "/ingest/commit-fan-out/"+job, map[string]any{}, bearer(owner.Access)...)
		}},
		{"unknown layer", 422, func() reply {
			return call(t, "POST", "/datasets/"+id+"/reupload/"+job+"/preview", map[string]any{"layer_name": "nope"}, bearer(owner.Access)...)
		}},
		{"write grantee reuploads", 201, func() reply { return reupload(t, writer, id, "theirs.geojson", file) }},
	} {
		t.Run(c.name, func(t *testing.T) { wantStatus(t, c.name, c.do(), c.status) })
	}
	if d := call(t, "GET", "/datasets/"+id, nil, bearer(owner.Access)...).JSON(t); d["current_version"] != 1.0 || d["feature_count"] != 3.0 {
		t.Fatalf("the refusals changed the dataset: %v", d)
	}
}

// TestReuploadBadFiles: a file that cannot be read, or holds nothing, fails with a clear 422 (at
// commit) or a failed job (at the run), and leaves the dataset and the data schema as they were.
func TestReuploadBadFiles(t *testing.T) {
	owner := newUser(t, "editor")
	id := placesV1(t, owner, 3)
	before := call(t, "GET", "/datasets/"+id, nil, bearer(owner.Access)...).JSON(t)
	tables := dataTables(t)

	wantStatus(t, "an unaccepted extension", reupload(t, owner, id, "notes.txt", []byte("hello")), 422)
	broken := stagedReupload(t, owner, id, "broken.geojson", []byte(`{"type":"FeatureCollection","features":[{"type":`))
	wantStatus(t, "preview of a broken file", call(t, "POST", "/datasets/"+id+"/reupload/"+broken+"/preview", map[string]any{}, bearer(owner.Access)...), 422)
	wantStatus(t, "commit of a broken file", call(t, "POST", "/datasets/"+id+"/reupload/"+broken+"/commit", map[string]any{}, bearer(owner.Access)...), 422)
	if j := call(t, "GET", "/jobs/"+broken, nil, bearer(owner.Access)...).JSON(t); j["status"] != "failed" || j["can_retry"] != false {
		t.Fatalf("job of a refused file: %v", j)
	}
	noGeometry := stagedReupload(t, owner, id, "plain.csv", []byte("name,rank,note\na,1,x\n"))
	wantStatus(t, "a table for a point dataset", call(t, "POST", "/datasets/"+id+"/reupload/"+noGeometry+"/commit", map[string]any{},
		bearer(owner.Access)...), 422, "geometry")
	empty := stagedReupload(t, owner, id, "empty.geojson", []byte(`{"type":"FeatureCollection","features":[]}`))
	done := commitReupload(t, owner, id, empty, map[string]any{"allow_schema_change": true})
	if done["status"] != "failed" || !strings.Contains(fmt.Sprint(done["error_message"]), "no features") {
		t.Fatalf("reupload of an empty file: %v", done)
	}
	after := call(t, "GET", "/datasets/"+id, nil, bearer(owner.Access)...).JSON(t)
	if after["current_version"] != before["current_version"] || after["feature_count"] != 3.0 || after["source_filename"] != "places.geojson" {
		t.Fatalf("dataset after the bad files: %v", after)
	}
	if n := dataTables(t); n != tables {
		t.Fatalf("%d tables in data after the bad files, %d before", n, tables)
	}
	_, props, _ := features(t, call(t, "GET", "/collections/"+id+"/items", nil, bearer(owner.Access)...))
	if len(props) != 3 || props[0]["note"] != "v1" {
		t.Fatalf("items after the bad files: %v", props)
	}
}

// A server killed in the middle of a reupload's load leaves the dataset as it was: after a
// restart the stall sweeper fails the job, retryably, and drops the partial table; the dataset
// still reads its old data; the retry replaces it, once.
func TestKilledReuploadLeavesTheDatasetAndRetries(t *testing.T) {
	const rows = 300_000
	s := startFresh(t, "IMPORT_STALL_TIMEOUT=3s", "IMPORT_STALL_RESCUES=0", "RATE_LIMIT_ENABLED=false", "LOG_LEVEL=info")
	ctx := t.Context()
	hc := contractAt(t, s)
	tok := loginAt(t, hc, s.APIRoot, "admin", AdminPassword)
	up := uploadAt(t, hc, s.APIRoot, tok, "few.geojsonl", pointsSeq(3))
	base := up.JSON(t)["job_id"].(string)
	wantStatus(t, "commit the first version", callAt(t, hc, s.APIRoot, "POST", "/ingest/commit/"+base, map[string]any{"title": "Few"}, bearer(tok)...), 202)
	id := waitJob(t, hc, s.APIRoot, tok, base, time.Minute, func(j map[string]any) bool { return j["status"] == "complete" })["dataset_id"].(string)
	table := callAt(t, hc, s.APIRoot, "GET", "/datasets/"+id, nil, bearer(tok)...).JSON(t)["table_name"].(string)

	r := postFileAt(t, hc, s.APIRoot+"/datasets/"+id+"/reupload", tok, "many.geojsonl", pointsSeq(rows))
	wantStatus(t, "reupload", r, 201)
	job := r.JSON(t)["job_id"].(string)
	wantStatus(t, "commit", callAt(t, hc, s.APIRoot, "POST", "/datasets/"+id+"/reupload/"+job+"/commit", map[string]any{}, bearer(tok)...), 202)
	running := waitJob(t, hc, s.APIRoot, tok, job, time.Minute, func(j map[string]any) bool {
		p, _ := j["progress"].(float64)
		return p >= 0.45 || j["status"] != "running" && j["status"] != "pending"
	})
	if running["status"] != "running" {
		t.Fatalf("the reupload ended before it could be killed: %v", running)
	}
	wantStatus(t, "another reupload meanwhile", postFileAt(t, hc, s.APIRoot+"/datasets/"+id+"/reupload", tok, "more.geojsonl", pointsSeq(2)), 409, "running")
	s.Kill()

	conn := connect(t, s.DBURL)
	state := func() (tables int, stored, count int64) {
		_ = conn.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE schemaname = 'data'").Scan(&tables)
		_ = conn.QueryRow(ctx, "SELECT count(*) FROM data."+table).Scan(&stored)
		_ = conn.QueryRow(ctx, "SELECT feature_count FROM catalog.datasets WHERE id = $1", id).Scan(&count)
		return
	}
	if tables, stored, count := state(); tables != 2 || stored != 3 || count != 3 {
		t.Fatalf("after the kill: %d tables (want the dataset's and the partial one), %d rows, feature_count %d", tables, stored, count)
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	failed := waitJob(t, hc, s.APIRoot, tok, job, 2*time.Minute, func(j map[string]any) bool { return j["status"] != "running" })
	if failed["status"] != "failed" || failed["can_retry"] != true {
		t.Fatalf("after the restart: %v", failed)
	}
	if tables, stored, count := state(); tables != 1 || stored != 3 || count != 3 {
		t.Fatalf("after the sweep: %d tables, %d rows, feature_count %d; want the dataset's one table as it was", tables, stored, count)
	}
	wantStatus(t, "retry", callAt(t, hc, s.APIRoot, "POST", "/jobs/"+job+"/retry", nil, bearer(tok)...), 200)
	done := waitJob(t, hc, s.APIRoot, tok, job, 2*time.Minute, func(j map[string]any) bool { return j["status"] == "complete" || j["status"] == "failed" })
	if done["status"] != "complete" || done["dataset_id"] != id {
		t.Fatalf("the retry did not complete: %v", done)
	}
	if tables, stored, count := state(); tables != 1 || stored != rows || count != rows {
		t.Fatalf("after the retry: %d tables, %d rows, feature_count %d; want 1, %d, %d", tables, stored, count, rows, rows)
	}
	if d := callAt(t, hc, s.APIRoot, "GET", "/datasets/"+id, nil, bearer(tok)...).JSON(t); d["current_version"] != 2.0 || d["table_name"] != table {
		t.Fatalf("dataset after the retry: %v", d)
	}
}

// TestReuploadMultiLayer: a multi-layer file is read, by default, at the layer the dataset was
// imported from (previous_source_layer), and all_layers lists its layers.
func TestReuploadMultiLayer(t *testing.T) {
	owner := newUser(t, "editor")
	dir := t.TempDir()
	gpkg := func(name string, n int) []byte {
		src := filepath.Join(dir, name+".geojson")
		if err := os.WriteFile(src, pointsGeoJSON(n), 0o600); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, name+".gpkg")
		gdal(t, "ogr2ogr", "-f", "GPKG", out, src, "-nln", "roads")
		gdal(t, "ogr2ogr", "-f", "GPKG", "-update", out, src, "-nln", "parks", "-t_srs", "EPSG:3857")
		b, _ := os.ReadFile(out)
		return b
	}
	job := importFile(t, owner, "two.gpkg", gpkg("v1", 4), map[string]any{"layer_name": "parks"})
	id := job["dataset_id"].(string)

	up := stagedReupload(t, owner, id, "two.gpkg", gpkg("v2", 6))
	pv := call(t, "POST", "/datasets/"+id+"/reupload/"+up+"/preview", nil, bearer(owner.Access)...)
	wantStatus(t, "preview", pv, 200)
	p := pv.JSON(t)
	if p["layer_name"] != "parks" || p["previous_source_layer"] != "parks" || p["crs"] != 3857.0 || len(p["all_layers"].([]any)) != 2 {
		t.Fatalf("preview: %s", pv.Body)
	}
	p = call(t, "POST", "/datasets/"+id+"/reupload/"+up+"/preview", map[string]any{"layer_name": "roads"}, bearer(owner.Access)...).JSON(t)
	if p["layer_name"] != "roads" || p["crs"] != 4326.0 {
		t.Fatalf("preview of roads: %v", p)
	}
	if done := commitReupload(t, owner, id, up, map[string]any{}); done["status"] != "complete" {
		t.Fatalf("reupload: %v", done)
	}
	d := call(t, "GET", "/datasets/"+id, nil, bearer(owner.Access)...).JSON(t)
	if d["feature_count"] != 6.0 {
		t.Fatalf("dataset after the reupload: %v", d)
	}
}
