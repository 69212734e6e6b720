package conformance

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Refresh (issue 33): a dataset fetched again from the service layer it came from (our own
// server as an OGC API source, a paged WFS served here), its data replaced under the same id
// as a new version, every run kept with its outcome; a registered table's statistics read
// again; nothing to refresh from for an upload.

// refreshWFS is a paged WFS 2.0 layer "ns:trees" whose size, columns and health the test sets.
type refreshWFS struct {
	n       atomic.Int32 // features served
	noKind  atomic.Bool  // drop the "kind" column
	broken  atomic.Bool  // answer 500 to every request
	srv     *httptest.Server
	version atomic.Int32 // written into every feature's "v"
}

func newRefreshWFS(t *testing.T, n int) *refreshWFS {
	w := &refreshWFS{}
	w.n.Store(int32(n))
	w.version.Store(1)
	w.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if w.broken.Load() {
			rw.WriteHeader(500)
			return
		}
		if r.URL.Path != "/wfs" || q.Get("typeNames") != "ns:trees" {
			http.NotFound(rw, r)
			return
		}
		start, _ := strconv.Atoi(q.Get("startIndex"))
		count, _ := strconv.Atoi(q.Get("count"))
		var b strings.Builder
		b.WriteString(`{"type":"FeatureCollection","features":[`)
		for i := start; i < min(int(w.n.Load()), start+count); i++ {
			if i > start {
				b.WriteString(",")
			}
			props := fmt.Sprintf(`"fid":%d,"v":%d`, i, w.version.Load())
			if !w.noKind.Load() {
				props += `,"kind":"tree"`
			}
			fmt.Fprintf(&b, `{"type":"Feature","properties":{%s},"geometry":{"type":"Point","coordinates":[%g,50]}}`, props, 5+float64(i)*1e-4)
		}
		b.WriteString("]}")
		rw.Header().Set("Content-Type", "application/json")
		_, _ = rw.Write([]byte(b.String()))
	}))
	t.Cleanup(w.srv.Close)
	return w
}

func TestRefreshDataset(t *testing.T) {
	wfs := newRefreshWFS(t, 1500)
	s := startFresh(t, "RATE_LIMIT_ENABLED=false", "REMOTE_ALLOW_PRIVATE=true", "OGC_MAX_LIMIT=10", "REFRESH_SCHEDULE_TICK=1s")
	hc := contractAt(t, s)
	root := s.APIRoot
	tok := loginAt(t, hc, root, "admin", AdminPassword)
	api := func(method, path string, body any, token string) reply {
		t.Helper()
		if token == "" {
			return callAt(t, hc, root, method, path, body)
		}
		return callAt(t, hc, root, method, path, body, bearer(token)...)
	}
	wait := func(job string) map[string]any {
		t.Helper()
		return waitJob(t, hc, root, tok, job, 2*time.Minute, func(j map[string]any) bool { return j["status"] == "complete" || j["status"] == "failed" })
	}
	dataset := func(id string) map[string]any { t.Helper(); return api("GET", "/datasets/"+id, nil, tok).JSON(t) }
	runs := func(id, token string) []any {
		t.Helper()
		r := api("GET", "/datasets/"+id+"/refresh-runs", nil, token)
		wantStatus(t, "refresh runs", r, 200)
		return r.JSON(t)["runs"].([]any)
	}
	// importLayer imports a service layer as a public dataset and answers its id.
	importLayer := func(body map[string]any) string {
		t.Helper()
		pv := api("POST", "/services/preview/", body, tok)
		wantStatus(t, "service preview", pv, 200)
		job := pv.JSON(t)["job_id"].(string)
		wantStatus(t, "commit", api("POST", "/ingest/commit/"+job, map[string]any{"visibility": "public", "title": "Layer " + randomHex(3)}, tok), 202)
		done := wait(job)
		if done["status"] != "complete" {
			t.Fatalf("import: %v", done)
		}
		return done["dataset_id"].(string)
	}
	// upload imports a GeoJSON file as a public dataset and answers its id.
	upload := func(content []byte) string {
		t.Helper()
		job := uploadAt(t, hc, root, tok, "pts.geojson", content).JSON(t)["job_id"].(string)
		api("POST", "/ingest/commit/"+job, map[string]any{"visibility": "public"}, tok)
		return wait(job)["dataset_id"].(string)
	}
	refresh := func(id string, status int) map[string]any {
		t.Helper()
		r := api("POST", "/datasets/"+id+"/refresh", nil, tok)
		wantStatus(t, "refresh", r, status)
		return r.JSON(t)
	}

	// Our own OGC API as the source: its collection changes, and the refresh follows it.
	own := upload(geojsonOf(25, false, func(i int) string { return fmt.Sprintf(`"name":"p%d","kind":"old"`, i) }))
	fromOwn := importLayer(map[string]any{"url": root + "/", "service_type": "ogc_api_features", "layer_name": own})

	t.Run("an OGC API source that changed", func(t *testing.T) {
		re := stagedReuploadAt(t, hc, root, tok, own, geojsonOf(32, false, func(i int) string { return fmt.Sprintf(`"name":"p%d","kind":"new"`, i) }))
		wantStatus(t, "reupload commit", api("POST", "/datasets/"+own+"/reupload/"+re+"/commit", map[string]any{}, tok), 202)
		if j := wait(re); j["status"] != "complete" {
			t.Fatalf("reupload of the source: %v", j)
		}
		before := dataset(fromOwn)
		r := refresh(fromOwn, 202)
		if r["origin_kind"] != "service" || r["trigger"] != "manual" || r["dataset_id"] != fromOwn || r["run_id"] == nil {
			t.Fatalf("%v", r)
		}
		if j := wait(r["job_id"].(string)); j["status"] != "complete" || j["dataset_id"] != fromOwn {
			t.Fatalf("refresh job: %v", j)
		}
		after := dataset(fromOwn)
		if after["feature_count"] != 32.0 || after["current_version"] != before["current_version"].(float64)+1 ||
			after["last_refreshed_at"] == nil || after["schema_drift_status"] != "none" || after["origin"] != "service" {
			t.Fatalf("after the refresh: %v", after)
		}
		rows := api("GET", "/datasets/"+fromOwn+"/rows/?limit=500", nil, tok).Body
		if !strings.Contains(string(rows), `"new"`) || strings.Contains(string(rows), `"old"`) {
			t.Fatalf("rows still the old data: %.300s", rows)
		}
		vs := api("GET", "/datasets/"+fromOwn+"/versions/", nil, tok).JSON(t)["versions"].([]any)
		latest := vs[0].(map[string]any)
		if latest["reason"] != "refresh" || latest["feature_count"] != 32.0 || latest["is_current"] != true {
			t.Fatalf("no version entry of the refresh: %v", vs)
		}
		list := runs(fromOwn, tok)
		run := list[0].(map[string]any)
		if len(list) != 1 || run["id"] != r["run_id"] || run["status"] != "complete" || run["feature_count_before"] != 25.0 ||
			run["feature_count_after"] != 32.0 || run["ingest_job_id"] != r["job_id"] || run["dataset_version_id"] != latest["id"] ||
			run["finished_at"] == nil || run["triggered_by_username"] != "admin" || run["schema_diff"] == nil {
			t.Fatalf("run: %v", run)
		}
	})

	fromWFS := importLayer(map[string]any{"url": wfs.srv.URL + "/wfs", "service_type": "wfs", "layer_name": "ns:trees"})
	t.Run("a WFS layer that grew", func(t *testing.T) {
		wfs.n.Store(2100)
		wfs.version.Store(2)
		r := refresh(fromWFS, 202)
		if j := wait(r["job_id"].(string)); j["status"] != "complete" {
			t.Fatalf("%v", j)
		}
		if d := dataset(fromWFS); d["feature_count"] != 2100.0 || d["id"] != fromWFS {
			t.Fatalf("%v", d)
		}
		run := runs(fromWFS, tok)[0].(map[string]any)
		if run["feature_count_before"] != 1500.0 || run["feature_count_after"] != 2100.0 || run["status"] != "complete" {
			t.Fatalf("%v", run)
		}
	})

	t.Run("a dead source leaves the data untouched", func(t *testing.T) {
		before := dataset(fromWFS)
		wfs.broken.Store(true)
		defer wfs.broken.Store(false)
		r := api("POST", "/datasets/"+fromWFS+"/refresh", nil, tok)
		wantStatus(t, "refresh of a dead source", r, 502)
		after := dataset(fromWFS)
		if after["feature_count"] != before["feature_count"] || after["current_version"] != before["current_version"] ||
			after["source_health"] != "inaccessible" || after["last_refreshed_at"] != before["last_refreshed_at"] {
			t.Fatalf("before %v\nafter %v", before, after)
		}
		run := runs(fromWFS, tok)[0].(map[string]any)
		if run["status"] != "failed" || run["error_message"] == nil || run["finished_at"] == nil || run["feature_count_after"] != nil {
			t.Fatalf("%v", run)
		}
	})

	t.Run("a removed column fails the run and marks the drift", func(t *testing.T) {
		before := dataset(fromWFS)
		wfs.noKind.Store(true)
		defer wfs.noKind.Store(false)
		r := api("POST", "/datasets/"+fromWFS+"/refresh", nil, tok)
		wantStatus(t, "refresh without a column", r, 409, "kind")
		after := dataset(fromWFS)
		if after["feature_count"] != before["feature_count"] || after["current_version"] != before["current_version"] || after["schema_drift_status"] != "drifted" {
			t.Fatalf("before %v\nafter %v", before, after)
		}
		run := runs(fromWFS, tok)[0].(map[string]any)
		if run["status"] != "failed" || !strings.Contains(fmt.Sprint(run["error_message"]), "kind") || run["error_code"] != "schema_change" {
			t.Fatalf("%v", run)
		}
	})

	t.Run("an upload has nothing to refresh from", func(t *testing.T) {
		wantStatus(t, "refresh of an upload", api("POST", "/datasets/"+own+"/refresh", nil, tok), 409, "nothing to refresh from")
		if n := len(runs(own, tok)); n != 0 {
			t.Fatalf("%d runs", n)
		}
	})

	t.Run("a registered table's statistics", func(t *testing.T) {
		ctx := context.Background()
		conn := connect(t, s.DBURL)
		for _, q := range []string{
			`CREATE TABLE public.stations (id serial PRIMARY KEY, name text, geom geometry(Point, 4326))`,
			`INSERT INTO public.stations (name, geom) SELECT 's' || i, ST_SetSRID(ST_MakePoint(5 + i * 0.01, 50), 4326) FROM generate_series(1, 3) i`,
		} {
			if _, err := conn.Exec(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		reg := api("POST", "/ingest/register/", map[string]any{"table_path": "public.stations", "title": "Stations"}, tok)
		wantStatus(t, "register", reg, 201)
		id := reg.JSON(t)["id"].(string)
		for _, q := range []string{
			`INSERT INTO public.stations (name, geom) SELECT 't' || i, ST_SetSRID(ST_MakePoint(7, 51 + i * 0.01), 4326) FROM generate_series(1, 4) i`,
			`ALTER TABLE public.stations ADD COLUMN height integer`,
		} {
			if _, err := conn.Exec(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		r := refresh(id, 202)
		if r["origin_kind"] != "registered" || r["status"] != "complete" {
			t.Fatalf("%v", r)
		}
		if j := wait(r["job_id"].(string)); j["status"] != "complete" {
			t.Fatalf("%v", j)
		}
		d := dataset(id)
		bbox, _ := d["extent_bbox"].([]any)
		if d["feature_count"] != 7.0 || len(bbox) != 4 || bbox[2].(float64) < 6.9 || d["schema_drift_status"] != "drifted" || d["last_refreshed_at"] == nil ||
			!strings.Contains(fmt.Sprint(d["column_info"]), "height") {
			t.Fatalf("%v", d)
		}
		run := runs(id, tok)[0].(map[string]any)
		if run["status"] != "complete" || run["feature_count_before"] != 3.0 || run["feature_count_after"] != 7.0 || run["origin_kind"] != "registered" {
			t.Fatalf("%v", run)
		}
	})

	t.Run("reupload service preview, then commit", func(t *testing.T) {
		wfs.n.Store(1800)
		target := upload(geojsonOf(40, false, func(i int) string { return fmt.Sprintf(`"fid":%d,"kind":"bush"`, i) }))
		r := api("POST", "/datasets/"+target+"/reupload/service/preview",
			map[string]any{"url": wfs.srv.URL + "/wfs", "service_type": "wfs", "layer_name": "ns:trees"}, tok)
		wantStatus(t, "reupload service preview", r, 200)
		pv := r.JSON(t)
		diff := pv["schema_diff"].(map[string]any)
		if pv["feature_count"] != 1800.0 || diff["row_count_old"] != 40.0 || diff["row_count_new"] != 1800.0 || diff["row_count_delta"] != 1760.0 ||
			!strings.Contains(fmt.Sprint(diff["columns_added"]), "v") || len(pv["sample_rows"].([]any)) == 0 {
			t.Fatalf("%v", pv)
		}
		job := pv["job_id"].(string)
		wantStatus(t, "commit", api("POST", "/datasets/"+target+"/reupload/"+job+"/commit", map[string]any{}, tok), 202)
		if j := wait(job); j["status"] != "complete" {
			t.Fatalf("%v", j)
		}
		d := dataset(target)
		if d["feature_count"] != 1800.0 || d["origin"] != "service" || d["source_url"] != wfs.srv.URL+"/wfs" {
			t.Fatalf("%v", d)
		}
		// The dataset now comes from the layer: it refreshes from it.
		wfs.n.Store(1900)
		if j := wait(refresh(target, 202)["job_id"].(string)); j["status"] != "complete" || dataset(target)["feature_count"] != 1900.0 {
			t.Fatalf("%v", j)
		}
	})

	t.Run("who may refresh and read the runs", func(t *testing.T) {
		viewer, editor := newUserAt(t, hc, root, tok, "viewer"), newUserAt(t, hc, root, tok, "editor")
		for name, tc := range map[string]struct {
			token  string
			status int
		}{"anonymous": {"", 401}, "a viewer": {viewer, 403}, "an editor who does not own it": {editor, 403}} {
			if r := api("POST", "/datasets/"+fromWFS+"/refresh", nil, tc.token); r.Status != tc.status && !(tc.status == 403 && r.Status == 404) {
				t.Fatalf("%s: %d %s", name, r.Status, r.Body)
			}
		}
		// A public dataset's runs are read by anyone, who triggered them only by signed-in callers.
		anon := runs(fromWFS, "")
		if len(anon) < 3 || anon[0].(map[string]any)["triggered_by"] != nil || anon[0].(map[string]any)["triggered_by_username"] != nil {
			t.Fatalf("%v", anon)
		}
		if runs(fromWFS, viewer)[0].(map[string]any)["triggered_by_username"] != "admin" {
			t.Fatal("a signed-in reader sees who triggered it")
		}
		wantStatus(t, "make private", api("PATCH", "/datasets/"+fromWFS, map[string]any{"visibility": "private"}, tok), 200)
		if r := api("GET", "/datasets/"+fromWFS+"/refresh-runs", nil, viewer); r.Status != 404 {
			t.Fatalf("a private dataset's runs to another user: %d %s", r.Status, r.Body)
		}
		if r := api("GET", "/datasets/"+fromWFS+"/refresh-runs", nil, ""); r.Status != 401 && r.Status != 404 {
			t.Fatalf("a private dataset's runs to anonymous: %d %s", r.Status, r.Body)
		}
	})

	t.Run("scheduled on the update frequency", func(t *testing.T) {
		n := len(runs(fromOwn, tok))
		wantStatus(t, "daily", api("PATCH", "/datasets/"+fromOwn, map[string]any{"update_frequency": "daily"}, tok), 200)
		time.Sleep(2500 * time.Millisecond) // several ticks: refreshed today, nothing is due
		if len(runs(fromOwn, tok)) != n {
			t.Fatal("refreshed before its period passed")
		}
		conn := connect(t, s.DBURL)
		if _, err := conn.Exec(context.Background(), `UPDATE catalog.datasets SET last_refreshed_at = now() - interval '25 hours',
			created_at = now() - interval '3 days' WHERE id = $1`, fromOwn); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(context.Background(), `UPDATE catalog.refresh_runs SET started_at = now() - interval '25 hours' WHERE dataset_id = $1`, fromOwn); err != nil {
			t.Fatal(err)
		}
		began := time.Now()
		deadline := time.Now().Add(30 * time.Second)
		for {
			list := runs(fromOwn, tok)
			if len(list) > n {
				run := list[0].(map[string]any)
				if run["trigger"] != "schedule" {
					t.Fatalf("%v", run)
				}
				if run["status"] == "complete" {
					t.Logf("scheduled run after %s", time.Since(began))
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("no scheduled refresh: %v", list)
			}
			time.Sleep(200 * time.Millisecond)
		}
		if len(runs(fromOwn, tok)) != n+1 {
			t.Fatal("refreshed more than once")
		}
	})
}

// stagedReuploadAt posts a replacement file of dataset id to the server at root.
func stagedReuploadAt(t *testing.T, hc *http.Client, root, token, id string, content []byte) string {
	t.Helper()
	r := postFileAt(t, hc, root+"/datasets/"+id+"/reupload", token, "places.geojson", content)
	wantStatus(t, "reupload", r, 201)
	return r.JSON(t)["job_id"].(string)
}

// A refresh whose import is killed (kill -9) fails with its job, the stall sweeper's way, leaving
// the data as it was; retrying the job completes the run.
func TestKilledRefreshFailsItsRunAndRetries(t *testing.T) {
	const rows = 120_000
	wfs := newRefreshWFS(t, 3)
	s := startFresh(t, "IMPORT_STALL_TIMEOUT=3s", "IMPORT_STALL_RESCUES=0", "RATE_LIMIT_ENABLED=false", "REMOTE_ALLOW_PRIVATE=true")
	hc := contractAt(t, s)
	root := s.APIRoot
	tok := loginAt(t, hc, root, "admin", AdminPassword)
	pv := callAt(t, hc, root, "POST", "/services/preview/", map[string]any{"url": wfs.srv.URL + "/wfs", "service_type": "wfs", "layer_name": "ns:trees"}, bearer(tok)...)
	wantStatus(t, "service preview", pv, 200)
	first := pv.JSON(t)["job_id"].(string)
	wantStatus(t, "commit", callAt(t, hc, root, "POST", "/ingest/commit/"+first, map[string]any{"title": "Trees"}, bearer(tok)...), 202)
	id := waitJob(t, hc, root, tok, first, time.Minute, func(j map[string]any) bool { return j["status"] == "complete" })["dataset_id"].(string)
	count := func() any {
		return callAt(t, hc, root, "GET", "/datasets/"+id, nil, bearer(tok)...).JSON(t)["feature_count"]
	}
	lastRun := func() map[string]any {
		return callAt(t, hc, root, "GET", "/datasets/"+id+"/refresh-runs", nil, bearer(tok)...).JSON(t)["runs"].([]any)[0].(map[string]any)
	}

	wfs.n.Store(rows)
	r := callAt(t, hc, root, "POST", "/datasets/"+id+"/refresh", nil, bearer(tok)...)
	wantStatus(t, "refresh", r, 202)
	job := r.JSON(t)["job_id"].(string)
	running := waitJob(t, hc, root, tok, job, time.Minute, func(j map[string]any) bool { return j["status"] != "pending" })
	if running["status"] != "running" {
		t.Fatalf("the refresh ended before it could be killed: %v", running)
	}
	wantStatus(t, "another refresh meanwhile", callAt(t, hc, root, "POST", "/datasets/"+id+"/refresh", nil, bearer(tok)...), 409, "running")
	s.Kill()
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	failed := waitJob(t, hc, root, tok, job, 2*time.Minute, func(j map[string]any) bool { return j["status"] != "running" })
	if failed["status"] != "failed" || failed["can_retry"] != true {
		t.Fatalf("after the restart: %v", failed)
	}
	if run := lastRun(); run["status"] != "failed" || run["error_message"] == nil || run["finished_at"] == nil || count() != 3.0 {
		t.Fatalf("run %v, feature_count %v", run, count())
	}
	wantStatus(t, "retry", callAt(t, hc, root, "POST", "/jobs/"+job+"/retry", nil, bearer(tok)...), 200)
	done := waitJob(t, hc, root, tok, job, 3*time.Minute, func(j map[string]any) bool { return j["status"] == "complete" || j["status"] == "failed" })
	if done["status"] != "complete" {
		t.Fatalf("the retry did not complete: %v", done)
	}
	if run := lastRun(); run["status"] != "complete" || run["feature_count_after"] != float64(rows) || count() != float64(rows) {
		t.Fatalf("run %v, feature_count %v", run, count())
	}
}
