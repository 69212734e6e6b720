package conformance

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
)

// createDataset makes an empty dataset as s, sets its visibility and walks it to published.
func createDataset(t *testing.T, s session, visibility string, publish bool) map[string]any {
	t.Helper()
	r := call(t, "POST", "/datasets/create/", map[string]any{"title": "Parcels " + randomHex(3), "columns": []map[string]any{
		{"name": "name", "type": "text"}, {"name": "area", "type": "float"}, {"name": "n", "type": "integer"},
		{"name": "surveyed", "type": "date"}, {"name": "ok", "type": "boolean"}}}, bearer(s.Access)...)
	if r.Status != 200 {
		t.Fatalf("create dataset: %d %s", r.Status, r.Body)
	}
	d := r.JSON(t)
	id := d["id"].(string)
	if r := call(t, "PATCH", "/datasets/"+id, map[string]any{"visibility": visibility}, bearer(s.Access)...); r.Status != 200 {
		t.Fatalf("set visibility: %d %s", r.Status, r.Body)
	}
	if publish {
		for _, st := range []string{"ready", "internal", "published"} {
			if r := call(t, "PATCH", "/datasets/"+id+"/status/", map[string]any{"status": st}, bearer(s.Access)...); r.Status != 200 {
				t.Fatalf("status %s: %d %s", st, r.Status, r.Body)
			}
		}
	}
	return d
}

// TestVisibilityMatrix: 4 visibilities × anonymous / viewer / editor / owner / admin × read /
// write, asserted cell by cell over HTTP on published datasets.
func TestVisibilityMatrix(t *testing.T) {
	owner, viewer, editor, adm := newUser(t, "editor"), newUser(t, "viewer"), newUser(t, "editor"), admin(t)
	callers := map[string][]string{"anonymous": nil, "viewer": bearer(viewer.Access), "editor": bearer(editor.Access),
		"owner": bearer(owner.Access), "admin": bearer(adm.Access)}
	// read status, write status
	want := map[string]map[string][2]int{
		"private":    {"anonymous": {404, 401}, "viewer": {404, 404}, "editor": {404, 404}, "owner": {200, 200}, "admin": {200, 200}},
		"restricted": {"anonymous": {404, 401}, "viewer": {404, 404}, "editor": {404, 404}, "owner": {200, 200}, "admin": {200, 200}},
		"internal":   {"anonymous": {404, 401}, "viewer": {200, 403}, "editor": {200, 403}, "owner": {200, 200}, "admin": {200, 200}},
		"public":     {"anonymous": {200, 401}, "viewer": {200, 403}, "editor": {200, 403}, "owner": {200, 200}, "admin": {200, 200}},
	}
	for vis, row := range want {
		id := createDataset(t, owner, vis, true)["id"].(string)
		for who, cell := range row {
			t.Run(vis+"/"+who, func(t *testing.T) {
				if r := call(t, "GET", "/datasets/"+id, nil, callers[who]...); r.Status != cell[0] {
					t.Errorf("read: %d, want %d", r.Status, cell[0])
				}
				if r := call(t, "PATCH", "/datasets/"+id, map[string]any{"summary": "edited by " + who}, callers[who]...); r.Status != cell[1] {
					t.Errorf("write: %d, want %d", r.Status, cell[1])
				}
			})
		}
	}
}

func TestUnpublishedGrantsAndListing(t *testing.T) {
	owner, viewer, other := newUser(t, "editor"), newUser(t, "viewer"), newUser(t, "viewer")
	draft := createDataset(t, owner, "public", false)["id"].(string)
	if r := call(t, "GET", "/datasets/"+draft, nil); r.Status != 404 {
		t.Fatalf("unpublished public dataset, anonymous: %d", r.Status)
	}
	if r := call(t, "GET", "/datasets/"+draft, nil, bearer(owner.Access)...); r.Status != 200 {
		t.Fatalf("unpublished dataset, owner: %d", r.Status)
	}
	restricted := createDataset(t, owner, "restricted", true)["id"].(string)
	g := call(t, "POST", "/datasets/"+restricted+"/grants/", map[string]any{"user_id": viewer.ID, "level": "read"}, bearer(owner.Access)...)
	if g.Status != 201 || g.JSON(t)["username"] != viewer.Username {
		t.Fatalf("grant: %d %s", g.Status, g.Body)
	}
	if r := call(t, "GET", "/datasets/"+restricted, nil, bearer(viewer.Access)...); r.Status != 200 {
		t.Fatalf("granted viewer read: %d", r.Status)
	}
	if r := call(t, "PATCH", "/datasets/"+restricted, map[string]any{"summary": "x"}, bearer(viewer.Access)...); r.Status != 403 {
		t.Fatalf("read grant write: %d", r.Status)
	}
	if r := call(t, "GET", "/datasets/"+restricted, nil, bearer(other.Access)...); r.Status != 404 {
		t.Fatalf("ungranted viewer: %d", r.Status)
	}
	if r := call(t, "GET", "/datasets/"+restricted+"/grants/", nil, bearer(viewer.Access)...); r.Status != 403 {
		t.Fatalf("grantee managing grants: %d", r.Status)
	}
	list := call(t, "GET", "/datasets/?limit=200", nil, bearer(other.Access)...)
	if strings.Contains(string(list.Body), restricted) || strings.Contains(string(list.Body), draft) {
		t.Fatalf("listing shows datasets the caller may not see")
	}
	mine := call(t, "GET", "/datasets/?limit=200", nil, bearer(viewer.Access)...)
	if !strings.Contains(string(mine.Body), restricted) {
		t.Fatalf("listing hides a granted dataset")
	}
	gid := g.JSON(t)["id"].(string)
	if r := call(t, "DELETE", "/datasets/"+restricted+"/grants/"+gid, nil, bearer(owner.Access)...); r.Status != 204 {
		t.Fatalf("revoke grant: %d", r.Status)
	}
	if r := call(t, "GET", "/datasets/"+restricted, nil, bearer(viewer.Access)...); r.Status != 404 {
		t.Fatalf("after revoking the grant: %d", r.Status)
	}
}

func TestCreateDatasetRecordAndLimits(t *testing.T) {
	owner := newUser(t, "editor")
	d := createDataset(t, owner, "private", false)
	if d["origin"] != "created" || d["has_generic_geometry"] != true || d["feature_count"].(float64) != 0 ||
		d["created_by_display"] != owner.Username || d["record_status"] != "draft" || d["source_freshness"] != "unknown" {
		t.Fatalf("record: %v", d)
	}
	if cols := d["column_info"].([]any); len(cols) != 5 {
		t.Fatalf("column_info: %v", cols)
	}
	ctx := context.Background()
	conn := dbConn(t)
	var cols, idx int
	table := d["table_name"].(string)
	_ = conn.QueryRow(ctx, "SELECT count(*) FROM information_schema.columns WHERE table_schema='data' AND table_name=$1", table).Scan(&cols)
	_ = conn.QueryRow(ctx, "SELECT count(*) FROM pg_indexes WHERE schemaname='data' AND tablename=$1 AND indexdef LIKE '%gist%'", table).Scan(&idx)
	if cols != 7 || idx != 1 {
		t.Fatalf("table %s: %d columns, %d GIST indexes", table, cols, idx)
	}

	long := strings.Repeat("t", 500)
	tests := []struct {
		name   string
		body   map[string]any
		status int
	}{
		{"title of 500", map[string]any{"title": long, "columns": []any{}}, 200},
		{"title of 501", map[string]any{"title": long + "t", "columns": []any{}}, 422},
		{"field name of 300 characters", map[string]any{"title": "x", "columns": []any{map[string]any{"name": strings.Repeat("f", 300), "type": "text"}}}, 422},
		{"reserved column", map[string]any{"title": "x", "columns": []any{map[string]any{"name": "gid", "type": "text"}}}, 422},
		{"duplicate column", map[string]any{"title": "x", "columns": []any{map[string]any{"name": "a", "type": "text"}, map[string]any{"name": "A", "type": "integer"}}}, 422},
		{"unknown column type", map[string]any{"title": "x", "columns": []any{map[string]any{"name": "a", "type": "money"}}}, 422},
		{"injection attempt in a column name", map[string]any{"title": "x", "columns": []any{map[string]any{"name": `a"); DROP TABLE catalog.users; --`, "type": "text"}}}, 422},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if r := call(t, "POST", "/datasets/create/", tt.body, bearer(owner.Access)...); r.Status != tt.status {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
		})
	}
	if r := call(t, "POST", "/datasets/create/", map[string]any{"title": "x", "columns": []any{}}, bearer(newUser(t, "viewer").Access)...); r.Status != 403 {
		t.Fatalf("viewer creating a dataset: %d", r.Status)
	}

	// Delete drops the table with the record.
	id := d["id"].(string)
	if r := call(t, "DELETE", "/datasets/"+id, nil, bearer(owner.Access)...); r.Status != 204 {
		t.Fatalf("delete: %d", r.Status)
	}
	var exists bool
	_ = conn.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", "data."+table).Scan(&exists)
	if exists {
		t.Fatal("table survived the delete of a created dataset")
	}
	if r := call(t, "GET", "/datasets/"+id, nil, bearer(owner.Access)...); r.Status != 404 {
		t.Fatalf("deleted dataset: %d", r.Status)
	}
}

func TestPublicationWorkflow(t *testing.T) {
	owner := newUser(t, "editor")
	id := createDataset(t, owner, "internal", false)["id"].(string)
	move := func(status string) reply {
		return call(t, "PATCH", "/datasets/"+id+"/status/", map[string]any{"status": status}, bearer(owner.Access)...)
	}
	if r := move("published"); r.Status != 409 || !strings.Contains(r.JSON(t)["detail"].(string), "ready") {
		t.Fatalf("skipping steps: %d %s", r.Status, r.Body)
	}
	if r := move("archived"); r.Status != 422 {
		t.Fatalf("unknown status: %d", r.Status)
	}
	if r := move(strings.Repeat("s", 21)); r.Status != 422 {
		t.Fatalf("status of 21 characters: %d", r.Status)
	}
	// Only publishing warns about metadata (TestPublishingWarnsOnlyAboutWhatPublicationNeeds).
	r := move("ready")
	if r.Status != 200 || r.JSON(t)["record_status"] != "ready" || r.JSON(t)["metadata_warnings"] != nil {
		t.Fatalf("draft -> ready: %d %s", r.Status, r.Body)
	}
	if r := move("draft"); r.Status != 200 {
		t.Fatalf("ready -> draft: %d", r.Status)
	}
	// Status moves are no data versions.
	d := call(t, "GET", "/datasets/"+id, nil, bearer(owner.Access)...).JSON(t)
	if d["current_version"].(float64) != 1 {
		t.Fatalf("current_version %v after two status moves of a new dataset", d["current_version"])
	}
}

func TestDownloadTokenAndUsage(t *testing.T) {
	owner, other := newUser(t, "editor"), newUser(t, "viewer")
	id := createDataset(t, owner, "private", false)["id"].(string)
	r := call(t, "POST", "/auth/download-token/"+id, nil, bearer(owner.Access)...)
	if r.Status != 200 || r.JSON(t)["expires_in"].(float64) != 120 || r.JSON(t)["token"] == "" {
		t.Fatalf("download token: %d %s", r.Status, r.Body)
	}
	if r := call(t, "POST", "/auth/download-token/"+id, nil, bearer(other.Access)...); r.Status != 404 {
		t.Fatalf("download token for an invisible dataset: %d", r.Status)
	}
	newKey(t, owner, "read_only")
	u := call(t, "GET", "/auth/me/usage/", nil, bearer(owner.Access)...).JSON(t)
	if u["dataset_count"].(float64) != 1 || u["api_key_count"].(float64) != 1 || u["storage_bytes"].(float64) <= 0 {
		t.Fatalf("usage: %v", u)
	}
}

func TestBulkDelete(t *testing.T) {
	owner, other := newUser(t, "editor"), newUser(t, "editor")
	a := createDataset(t, owner, "public", true)
	b := createDataset(t, owner, "private", false)
	c := createDataset(t, other, "public", true)
	item := func(d map[string]any, title string) map[string]any {
		return map[string]any{"dataset_id": d["id"], "confirm_title": title}
	}
	r := call(t, "POST", "/datasets/bulk-delete/", map[string]any{"datasets": []any{
		item(a, a["title"].(string)), item(b, "not the title"), item(c, c["title"].(string)),
		map[string]any{"dataset_id": "5f0c8a52-3d3c-4f43-9b7e-1d2a6c0f9e11", "confirm_title": "x"},
	}}, bearer(owner.Access)...)
	if r.Status != 200 {
		t.Fatalf("bulk delete: %d %s", r.Status, r.Body)
	}
	m := r.JSON(t)
	var statuses []string
	for _, res := range m["results"].([]any) {
		statuses = append(statuses, res.(map[string]any)["status"].(string))
	}
	if strings.Join(statuses, ",") != "deleted,title_mismatch,forbidden,not_found" || m["deleted"].(float64) != 1 || m["errors"].(float64) != 3 {
		t.Fatalf("results: %v", m)
	}
	if r := call(t, "GET", "/datasets/"+b["id"].(string), nil, bearer(owner.Access)...); r.Status != 200 {
		t.Fatalf("mismatched item was deleted: %d", r.Status)
	}
	many := make([]any, 101)
	for i := range many {
		many[i] = item(b, "x")
	}
	for n, want := range map[int]int{101: 422, 0: 422, 100: 200} {
		if r := call(t, "POST", "/datasets/bulk-delete/", map[string]any{"datasets": many[:n]}, bearer(owner.Access)...); r.Status != want {
			t.Errorf("%d items: %d, want %d", n, r.Status, want)
		}
	}
}

func TestTargetStatusWalksTheChain(t *testing.T) {
	owner := newUser(t, "editor")
	id := createDataset(t, owner, "public", false)["id"].(string)
	walk := func(target string) reply {
		return call(t, "PATCH", "/datasets/"+id+"/target-status/", map[string]any{"status": target}, bearer(owner.Access)...)
	}
	if r := walk("published"); r.Status != 200 || r.JSON(t)["record_status"] != "published" {
		t.Fatalf("draft -> published: %d %s", r.Status, r.Body)
	}
	if r := call(t, "GET", "/datasets/"+id, nil); r.Status != 200 {
		t.Fatalf("published public dataset, anonymous: %d", r.Status)
	}
	if r := walk("published"); r.Status != 200 || r.JSON(t)["record_status"] != "published" {
		t.Fatalf("walk to the current status (a no-op): %d %s", r.Status, r.Body)
	}
	if r := walk("draft"); r.Status != 200 {
		t.Fatalf("published -> draft: %d %s", r.Status, r.Body)
	}
	d := call(t, "GET", "/datasets/"+id, nil, bearer(owner.Access)...).JSON(t)
	if d["record_status"] != "draft" || d["current_version"].(float64) != 1 {
		t.Fatalf("after two walks: %v %v", d["record_status"], d["current_version"])
	}
}

func TestCollections(t *testing.T) {
	owner, other := newUser(t, "editor"), newUser(t, "editor")
	pub := createDataset(t, owner, "public", true)
	priv := createDataset(t, owner, "private", false)
	name := "Coast " + randomHex(3)
	r := call(t, "POST", "/catalog/collections/", map[string]any{"name": name, "visibility": "public"}, bearer(owner.Access)...)
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	cid := r.JSON(t)["id"].(string)
	if r := call(t, "POST", "/catalog/collections/", map[string]any{"name": strings.ToUpper(name)}, bearer(owner.Access)...); r.Status != 409 {
		t.Fatalf("duplicate name: %d", r.Status)
	}
	if r := call(t, "POST", "/catalog/collections/", map[string]any{"name": "v" + randomHex(2)}, bearer(newUser(t, "viewer").Access)...); r.Status != 403 {
		t.Fatalf("viewer creating a collection: %d", r.Status)
	}
	// All or nothing: a dataset the caller cannot read stops the whole addition.
	otherPriv := createDataset(t, other, "private", false)
	if r := call(t, "POST", "/catalog/collections/"+cid+"/datasets/", map[string]any{"dataset_ids": []any{pub["id"], otherPriv["id"]}}, bearer(owner.Access)...); r.Status != 404 {
		t.Fatalf("adding an unreadable dataset: %d", r.Status)
	}
	add := call(t, "POST", "/catalog/collections/"+cid+"/datasets/", map[string]any{"dataset_ids": []any{pub["id"], priv["id"]}}, bearer(owner.Access)...)
	if add.Status != 200 || add.JSON(t)["dataset_count"].(float64) != 2 || add.JSON(t)["added"].(float64) != 2 || add.JSON(t)["extent_bbox"] != nil {
		t.Fatalf("add: %d %s", add.Status, add.Body)
	}
	// Adding members again adds nothing; the extents are those of the members the caller reads.
	call(t, "PATCH", "/datasets/"+priv["id"].(string), map[string]any{"data_vintage_start": "2019-05-01", "data_vintage_end": "2020-01-31"}, bearer(owner.Access)...)
	places := importFile(t, owner, "coast.geojson", pointsGeoJSON(3), map[string]any{"title": "Coast points"})["dataset_id"]
	again := call(t, "POST", "/catalog/collections/"+cid+"/datasets/", map[string]any{"dataset_ids": []any{pub["id"], places}}, bearer(owner.Access)...).JSON(t)
	if again["added"].(float64) != 1 || again["dataset_count"].(float64) != 3 || again["temporal_start"] != "2019-05-01" ||
		again["temporal_end"] != "2020-01-31" || fmt.Sprint(again["extent_bbox"]) != "[5 50 5.02 50.02]" {
		t.Fatalf("second add: %v", again)
	}
	if listed := call(t, "GET", "/catalog/collections/?q="+url.QueryEscape(name), nil).JSON(t)["collections"].([]any)[0].(map[string]any); listed["temporal_start"] != nil || listed["extent_bbox"] != nil {
		t.Fatalf("anonymous callers see the extents of members they cannot read: %v", listed)
	}
	// Anonymous callers see the public collection and only its public, published member.
	anon := call(t, "GET", "/catalog/collections/"+cid, nil).JSON(t)
	members := call(t, "GET", "/catalog/collections/"+cid+"/datasets/", nil).JSON(t)
	if anon["dataset_count"].(float64) != 1 || members["total"].(float64) != 1 {
		t.Fatalf("anonymous view: %v / %v", anon, members)
	}
	d := call(t, "GET", "/datasets/"+pub["id"].(string), nil).JSON(t)
	if cols := d["collections"].([]any); len(cols) != 1 || cols[0].(map[string]any)["name"] != name {
		t.Fatalf("dataset collections: %v", d["collections"])
	}
	if r := call(t, "PATCH", "/catalog/collections/"+cid, map[string]any{"name": "hijack"}, bearer(other.Access)...); r.Status != 403 {
		t.Fatalf("non-owner rename: %d", r.Status)
	}
	if r := call(t, "DELETE", "/catalog/collections/"+cid+"/datasets/"+priv["id"].(string), nil, bearer(owner.Access)...); r.Status != 204 {
		t.Fatalf("remove member: %d", r.Status)
	}
	if r := call(t, "DELETE", "/catalog/collections/"+cid, nil, bearer(owner.Access)...); r.Status != 204 {
		t.Fatalf("delete collection: %d", r.Status)
	}
	if r := call(t, "GET", "/datasets/"+pub["id"].(string), nil); r.Status != 200 {
		t.Fatalf("dataset after its collection was deleted: %d", r.Status)
	}
	if r := call(t, "GET", "/catalog/collections/"+cid, nil); r.Status != 404 {
		t.Fatalf("deleted collection: %d", r.Status)
	}
}

func TestHistoryAndVersions(t *testing.T) {
	owner := newUser(t, "editor")
	id := createDataset(t, owner, "internal", false)["id"].(string)
	if r := call(t, "PATCH", "/datasets/"+id, map[string]any{"summary": "Cadastral parcels", "license": "CC-BY-4.0"}, bearer(owner.Access)...); r.Status != 200 {
		t.Fatalf("edit: %d", r.Status)
	}
	// An edit that changes nothing adds no version.
	before := call(t, "GET", "/datasets/"+id, nil, bearer(owner.Access)...).JSON(t)["current_version"].(float64)
	call(t, "PATCH", "/datasets/"+id, map[string]any{"license": "CC-BY-4.0"}, bearer(owner.Access)...)
	if after := call(t, "GET", "/datasets/"+id, nil, bearer(owner.Access)...).JSON(t)["current_version"].(float64); after != before {
		t.Fatalf("a no-op edit moved the version from %v to %v", before, after)
	}
	call(t, "PATCH", "/datasets/"+id+"/status/", map[string]any{"status": "ready"}, bearer(owner.Access)...)
	items := historyOf(t, owner, id)
	actions := []string{}
	for _, it := range items {
		actions = append(actions, it["action"].(string))
	}
	if strings.Join(actions, ",") != "status.change,metadata.edit,metadata.edit,dataset.create" {
		t.Fatalf("history actions: %v", actions)
	}
	edit := items[1]
	lic := edit["changes"].(map[string]any)["license"].(map[string]any)
	if lic["old"] != nil || lic["new"] != "CC-BY-4.0" || edit["actor_display"] != owner.Username {
		t.Fatalf("edit entry: %v", edit)
	}
	st := items[0]["changes"].(map[string]any)["record_status"].(map[string]any)
	if st["old"] != "draft" || st["new"] != "ready" {
		t.Fatalf("status entry: %v", st)
	}
	if e := items[0]; e["user_id"] != owner.ID || e["username"] != owner.Username || e["resource_type"] != "dataset" ||
		e["resource_id"] != id || e["resource_name"] == nil || e["created_at"] != e["occurred_at"] || e["ip_address"] != nil {
		t.Fatalf("history entry in the audit log's names: %v", e)
	}
	v := call(t, "GET", "/datasets/"+id+"/versions/", nil, bearer(owner.Access)...).JSON(t)
	vs := v["versions"].([]any)
	if len(vs) != 1 || vs[0].(map[string]any)["reason"] != "created" || vs[0].(map[string]any)["is_current"] != true {
		t.Fatalf("versions: %v", v)
	}
	if v0 := vs[0].(map[string]any); v0["version_number"].(float64) != 1 || v0["dataset_id"] != id || v0["uploaded_by"] != owner.ID ||
		v0["uploaded_at"] != v0["created_at"] || v0["file_hash"] != nil {
		t.Fatalf("version in the names clients read: %v", v0)
	}
	// A metadata change may name a status: the workflow is walked in the same change.
	if r := call(t, "PATCH", "/datasets/"+id, map[string]any{"summary": "Parcels", "record_status": "published"}, bearer(owner.Access)...); r.Status != 200 || r.JSON(t)["record_status"] != "published" {
		t.Fatalf("metadata with record_status: %d %s", r.Status, r.Body)
	}
	if r := call(t, "PATCH", "/datasets/"+id, map[string]any{"record_status": "nope"}, bearer(owner.Access)...); r.Status != 422 {
		t.Fatalf("unknown record_status: %d", r.Status)
	}
	if r := call(t, "PATCH", "/datasets/"+id, map[string]any{"is_dem": true}, bearer(owner.Access)...); r.Status != 422 {
		t.Fatalf("is_dem on a vector dataset: %d", r.Status)
	}
}

func TestRegisterExistingTables(t *testing.T) {
	a := admin(t)
	ctx := context.Background()
	conn := dbConn(t)
	roads, nokey := "roads_"+randomHex(3), "nokey_"+randomHex(3)
	for _, sql := range []string{
		`CREATE TABLE public.` + roads + ` (road_id serial PRIMARY KEY, name text, the_geom geometry(LineString, 3857))`,
		`INSERT INTO public.` + roads + ` (name, the_geom) VALUES ('a', ST_MakeLine(ST_MakePoint(0, 0), ST_MakePoint(111319.49, 111325.14))::geometry(LineString, 3857)),
			('b', ST_SetSRID(ST_MakeLine(ST_MakePoint(0, 0), ST_MakePoint(1000, 0)), 3857)), ('c', NULL)`,
		`CREATE TABLE public.` + nokey + ` (name text, geom geometry(Point, 4326))`,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _, _ = conn.Exec(ctx, "DROP TABLE IF EXISTS public."+roads+", public."+nokey) })

	disc := call(t, "GET", "/ingest/discover/?q="+roads, nil, bearer(a.Access)...).JSON(t)
	items := disc["tables"].([]any)
	if len(items) != 1 || items[0].(map[string]any)["geometry_column"] != "the_geom" || items[0].(map[string]any)["srid"].(float64) != 3857 {
		t.Fatalf("discover: %v", disc)
	}
	if r := call(t, "GET", "/ingest/discover/?schema=catalog", nil, bearer(a.Access)...); r.Status != 422 {
		t.Fatalf("discovering the catalog schema: %d", r.Status)
	}
	if it := items[0].(map[string]any); it["table_name"] != "public."+roads {
		t.Fatalf("discovered table_name: %v", it)
	}
	for _, body := range []map[string]any{{"title": "Roads"}, {"table_name": roads, "table_path": "public.other"}} {
		if r := call(t, "POST", "/ingest/register/", body, bearer(a.Access)...); r.Status != 422 {
			t.Fatalf("register %v: %d", body, r.Status)
		}
	}
	// A bare table_name is looked up in the first source schema (public).
	r := call(t, "POST", "/ingest/register/", map[string]any{"table_name": roads, "title": "Roads"}, bearer(a.Access)...)
	if r.Status != 201 || r.JSON(t)["dataset_id"] != r.JSON(t)["id"] {
		t.Fatalf("register: %d %s", r.Status, r.Body)
	}
	d := r.JSON(t)
	bbox := d["extent_bbox"].([]any)
	if d["origin"] != "registered" || d["feature_count"].(float64) != 3 || d["srid"].(float64) != 3857 || bbox[2].(float64) < 0.99 || bbox[2].(float64) > 1.01 {
		t.Fatalf("registered record: %v", d)
	}
	id := d["id"].(string)
	rows := call(t, "GET", "/datasets/"+id+"/rows/?sort=-road_id", nil, bearer(a.Access)...).JSON(t)
	if rows["total"].(float64) != 3 || rows["rows"].([]any)[0].(map[string]any)["road_id"].(float64) != 3 {
		t.Fatalf("rows of a registered table: %v", rows)
	}
	if v := call(t, "GET", "/datasets/"+id+"/validate/", nil, bearer(a.Access)...).JSON(t); v["null_geometry_count"].(float64) != 1 {
		t.Fatalf("validation of a registered table: %v", v)
	}
	br := call(t, "POST", "/ingest/register/bulk/", map[string]any{"tables": []any{
		map[string]any{"table_path": "public." + roads}, map[string]any{"table_name": "public.missing_" + randomHex(2), "title": "Gone"},
		map[string]any{"table_name": nokey}}}, bearer(a.Access)...)
	bulk := br.JSON(t)
	var st []string
	for _, res := range bulk["results"].([]any) {
		res := res.(map[string]any)
		st = append(st, res["status"].(string))
		if res["table_name"] == nil || res["error"] != res["detail"] || res["error"] == nil {
			t.Fatalf("bulk result: %v", res)
		}
	}
	if br.Status != 201 || strings.Join(st, ",") != "already_registered,not_found,error" || bulk["errors"].(float64) != 3 ||
		bulk["results"].([]any)[1].(map[string]any)["title"] != "Gone" {
		t.Fatalf("bulk register: %d %v", br.Status, bulk)
	}
	if r := call(t, "POST", "/ingest/register/", map[string]any{"table_path": "public." + roads}, bearer(newUser(t, "editor").Access)...); r.Status != 403 {
		t.Fatalf("editor registering: %d", r.Status)
	}
	// Deleting a registered dataset only detaches it: the operator's table survives.
	if r := call(t, "DELETE", "/datasets/"+id, nil, bearer(a.Access)...); r.Status != 204 {
		t.Fatalf("delete: %d", r.Status)
	}
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM public."+roads).Scan(&n); err != nil || n != 3 {
		t.Fatalf("the registered table did not survive: %d %v", n, err)
	}
}

// Section 8 limits of the dataset area, at their edges.
func TestDatasetLimits(t *testing.T) {
	u := newUser(t, "editor")
	id := createDataset(t, u, "private", false)["id"].(string)
	long := func(n int) string { return strings.Repeat("a", n) }
	tests := []struct {
		name, method, path string
		body               map[string]any
		status             int
	}{
		{"source_url of 2000", "PATCH", "/datasets/" + id, map[string]any{"source_url": "https://x.org/" + long(1986)}, 200},
		{"source_url of 2001", "PATCH", "/datasets/" + id, map[string]any{"source_url": "https://x.org/" + long(1987)}, 422},
		{"confirm_title of 501", "POST", "/datasets/bulk-delete/", map[string]any{"datasets": []any{map[string]any{"dataset_id": id, "confirm_title": long(501)}}}, 422},
		{"presigned filename of 256", "POST", "/ingest/upload/presigned", map[string]any{"filename": long(251) + ".json", "file_size": 10}, 422},
		{"presigned filename of 255", "POST", "/ingest/upload/presigned", map[string]any{"filename": long(250) + ".json", "file_size": 10}, 200},
		{"content_type of 256", "POST", "/ingest/upload/presigned", map[string]any{"filename": "a.json", "file_size": 10, "content_type": long(256)}, 422},
		{"empty presigned filename", "POST", "/ingest/upload/presigned", map[string]any{"filename": "", "file_size": 10}, 422},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if r := call(t, tt.method, tt.path, tt.body, bearer(u.Access)...); r.Status != tt.status {
				t.Fatalf("%d, want %d: %.300s", r.Status, tt.status, r.Body)
			}
		})
	}
}
