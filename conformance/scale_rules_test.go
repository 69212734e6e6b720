//go:build scale

package conformance

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestScale is issue #34's run: one cluster of two replicas behind HAProxy for all its parts, so
// `-run TestScale/rolling` starts it once too.
func TestScale(t *testing.T) {
	c := twoReplicas(t)
	a, b := c.replicas[0].APIRoot, c.replicas[1].APIRoot
	hc := &http.Client{Timeout: 60 * time.Second}
	owner := newUser(t, "editor")

	t.Run("cross-replica/private-dataset", func(t *testing.T) { crossPrivate(t, hc, owner, a, b) })
	t.Run("cross-replica/grant", func(t *testing.T) { crossGrant(t, hc, owner, a, b) })
	t.Run("cross-replica/revoked-api-key", func(t *testing.T) { crossAPIKey(t, hc, owner, a, b) })
	t.Run("cross-replica/ended-session", func(t *testing.T) { crossSession(t, hc, a, b) })
	t.Run("cross-replica/settings", func(t *testing.T) { crossSettings(t, hc, owner, a, b) })
	t.Run("cross-replica/map", func(t *testing.T) { crossMap(t, hc, owner, a, b) })
	t.Run("cross-replica/sign-in-limit", func(t *testing.T) { crossSignInLimit(t, hc) })
	t.Run("cross-replica/tile-cache", func(t *testing.T) { crossTiles(t, hc, owner, a, b) })
	t.Run("jobs/upload-on-one-commit-on-other", func(t *testing.T) { crossJob(t, hc, owner, a, b) })
	t.Run("jobs/replica-killed-mid-import", func(t *testing.T) { crossKilledImport(t, c, hc, owner) })

	t.Run("jobs/presigned-on-one-complete-on-other", func(t *testing.T) { crossPresigned(t, c, hc, owner, a, b) })

	fx := newLoadFixture(t, owner, c.proxy, loadClients)
	fx.s3 = c.minio != nil
	t.Run("rolling-restart", func(t *testing.T) { rollingRestartUnderLoad(t, c, fx) })
	t.Run("endurance", func(t *testing.T) { endurance(t, c, fx) })
}

// want fails unless r has status code.
func want(t *testing.T, what string, r reply, code int) reply {
	t.Helper()
	if r.Status != code {
		t.Fatalf("%s: %d, want %d: %s", what, r.Status, code, r.Body)
	}
	return r
}

// crossPrivate: a dataset made private on A disappears from B's reads at once: its record, its
// items and its kept tiles (the old signed template stops serving).
func crossPrivate(t *testing.T, hc *http.Client, owner session, a, b string) {
	id := ogcDataset(t, owner, "public")
	table := call(t, "GET", "/datasets/"+id, nil, bearer(owner.Access)...).JSON(t)["table_name"].(string)
	tile := "/tiles/data." + table + "/0/0/0.pbf?" + signedQuery(tileToken(t, id, bearer(owner.Access)...))
	paths := []string{"/datasets/" + id, "/collections/" + id + "/items?limit=2", tile}
	for range 2 { // the second read is answered from what B keeps
		for _, p := range paths {
			want(t, "B reads the public dataset "+p, callAt(t, hc, b, "GET", p, nil), 200)
		}
	}
	want(t, "A makes it private", callAt(t, hc, a, "PATCH", "/datasets/"+id, map[string]any{"visibility": "private"}, bearer(owner.Access)...), 200)
	// Record and items are checked in the database on every read: at once.
	for _, p := range paths[:2] {
		if r := callAt(t, hc, b, "GET", p, nil); r.Status == 200 {
			t.Fatalf("B still serves %s of a dataset made private on A", p)
		}
	}
	converges(t, "B's kept tile of a dataset made private on A", func() bool { return callAt(t, hc, b, "GET", tile, nil).Status != 200 })
}

// crossGrant: a read grant given on A opens a restricted dataset on B at once; removed on A, it
// closes the record and items on B at once and the reader's kept tiles as soon as the
// announcement arrives.
func crossGrant(t *testing.T, hc *http.Client, owner session, a, b string) {
	id := ogcDataset(t, owner, "restricted")
	reader := newUser(t, "viewer")
	paths := []string{"/datasets/" + id, "/collections/" + id + "/items?limit=2"}
	as := bearer(reader.Access)
	for range 2 {
		for _, p := range paths {
			want(t, "B before the grant "+p, callAt(t, hc, b, "GET", p, nil, as...), 404)
		}
	}
	g := want(t, "A grants read", callAt(t, hc, a, "POST", "/datasets/"+id+"/grants/", map[string]any{"user_id": reader.ID, "level": "read"},
		bearer(owner.Access)...), 201).JSON(t)
	for _, p := range paths {
		want(t, "B after the grant on A "+p, callAt(t, hc, b, "GET", p, nil, as...), 200)
	}
	tok := want(t, "B gives the reader a tile template", callAt(t, hc, b, "GET", "/tiles/token/"+id+"/", nil, as...), 200).JSON(t)
	tile := "/tiles/data." + tok["scope"].(string) + "/0/0/0.pbf?" + signedQuery(tok)
	for range 2 {
		want(t, "B's tile for the reader", callAt(t, hc, b, "GET", tile, nil), 200)
	}
	want(t, "A removes the grant", callAt(t, hc, a, "DELETE", "/datasets/"+id+"/grants/"+g["id"].(string), nil, bearer(owner.Access)...), 204)
	for _, p := range paths {
		want(t, "B after the grant was removed on A "+p, callAt(t, hc, b, "GET", p, nil, as...), 404)
	}
	converges(t, "B's kept tile of a grant removed on A", func() bool { return callAt(t, hc, b, "GET", tile, nil).Status != 200 })
}

// crossAPIKey: an API key revoked on A is refused by B at once.
func crossAPIKey(t *testing.T, hc *http.Client, owner session, a, b string) {
	m := want(t, "A creates a key", callAt(t, hc, a, "POST", "/auth/api-keys/", map[string]any{"name": "k-" + randomHex(2), "scope": "full"},
		bearer(owner.Access)...), 201).JSON(t)
	key, id := m["key"].(string), m["id"].(string)
	for range 2 {
		want(t, "B takes the key", callAt(t, hc, b, "GET", "/auth/me/", nil, apiKey(key)...), 200)
	}
	want(t, "A revokes the key", callAt(t, hc, a, "DELETE", "/auth/api-keys/"+id, nil, bearer(owner.Access)...), 204)
	want(t, "B with the revoked key", callAt(t, hc, b, "GET", "/auth/me/", nil, apiKey(key)...), 401)
}

// crossSession: a session signed out on A is over on B: its access token and its refresh token.
func crossSession(t *testing.T, hc *http.Client, a, b string) {
	u := newUser(t, "viewer")
	s := want(t, "sign in on A", callAt(t, hc, a, "POST", "/auth/login", url.Values{"username": {u.Username}, "password": {u.Password}}), 200).JSON(t)
	access, refresh := s["access_token"].(string), s["refresh_token"].(string)
	for range 2 {
		want(t, "B takes the access token", callAt(t, hc, b, "GET", "/auth/me/", nil, bearer(access)...), 200)
	}
	want(t, "sign out on A", callAt(t, hc, a, "POST", "/auth/logout/", map[string]any{"refresh_token": refresh}, bearer(access)...), 204)
	// B kept the token's principal: forgotten when PostgreSQL's announcement of the logout arrives.
	converges(t, "B with the signed-out access token", func() bool { return callAt(t, hc, b, "GET", "/auth/me/", nil, bearer(access)...).Status == 401 })
	want(t, "B refreshes the signed-out session", callAt(t, hc, b, "POST", "/auth/refresh/", map[string]any{"refresh_token": refresh}), 401)
}

// crossSettings: ogc_items_max_page_size saved on A bounds B's items pages within the one second
// B keeps the value (settings.ItemsPageMax; the AI setup is kept as long, internal/ai/setup.go).
func crossSettings(t *testing.T, hc *http.Client, owner session, a, b string) {
	id := ogcDataset(t, owner, "public")
	items := "/collections/" + id + "/items?limit=100"
	page := func() int {
		ids, _, _ := features(t, callAt(t, hc, b, "GET", items, nil))
		return len(ids)
	}
	if n := page(); n != 30 {
		t.Fatalf("B's page before: %d features", n)
	}
	put := func(v any) {
		want(t, "A saves the page size", callAt(t, hc, a, "PUT", "/settings/", map[string]any{"settings": map[string]any{"ogc_items_max_page_size": v}},
			bearer(admin(t).Access)...), 200)
	}
	put(3)
	t.Cleanup(func() { put(nil) })
	within := func(what string, ok func(int) bool) {
		t.Helper()
		deadline := time.Now().Add(2 * time.Second)
		for n := page(); !ok(n); n = page() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: B's page still has %d features after 2s", what, n)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	within("page size 3 saved on A", func(n int) bool { return n == 3 })
	put(nil)
	within("page size reset on A", func(n int) bool { return n == 30 })
}

// crossMap: a map renamed, made private and deleted on A reads so on B at once.
func crossMap(t *testing.T, hc *http.Client, owner session, a, b string) {
	m := want(t, "A creates a map", callAt(t, hc, a, "POST", "/maps/", map[string]any{"name": "Before"}, bearer(owner.Access)...), 201).JSON(t)
	path := "/maps/" + m["id"].(string)
	want(t, "A makes it public", callAt(t, hc, a, "PUT", path, map[string]any{"visibility": "public"}, bearer(owner.Access)...), 200)
	for range 2 {
		if got := want(t, "B reads the map", callAt(t, hc, b, "GET", path, nil), 200).JSON(t)["name"]; got != "Before" {
			t.Fatalf("B's map name: %v", got)
		}
	}
	want(t, "A renames it", callAt(t, hc, a, "PUT", path, map[string]any{"name": "After"}, bearer(owner.Access)...), 200)
	converges(t, "B reads the map renamed on A", func() bool {
		return want(t, "B reads the map", callAt(t, hc, b, "GET", path, nil), 200).JSON(t)["name"] == "After"
	})
	want(t, "A makes it private", callAt(t, hc, a, "PUT", path, map[string]any{"visibility": "private"}, bearer(owner.Access)...), 200)
	converges(t, "B anonymously reads the map made private on A", func() bool { return callAt(t, hc, b, "GET", path, nil).Status == 404 })
	want(t, "A deletes it", callAt(t, hc, a, "DELETE", path, nil, bearer(owner.Access)...), 204)
	converges(t, "B reads the map deleted on A", func() bool { return callAt(t, hc, b, "GET", path, nil, bearer(owner.Access)...).Status == 404 })
}

// crossTiles: a feature added on A is in B's next tile, under a new ETag, though B answered the
// tile before from memory.
func crossTiles(t *testing.T, hc *http.Client, owner session, a, b string) {
	id := ogcDataset(t, owner, "public")
	table := call(t, "GET", "/datasets/"+id, nil, bearer(owner.Access)...).JSON(t)["table_name"].(string)
	tile := "/tiles/data." + table + "/0/0/0.pbf?" + signedQuery(tileToken(t, id, bearer(owner.Access)...))
	var etag string
	for range 2 {
		r, layers := getTile(t, b, tile, 200)
		if len(layers[0].Features) != 30 {
			t.Fatalf("B's tile: %d features", len(layers[0].Features))
		}
		etag = r.Header.Get("ETag")
	}
	getTile(t, b, tile, 304, "If-None-Match", etag)
	want(t, "A adds a feature", callAt(t, hc, a, "POST", "/datasets/"+id+"/features/", map[string]any{"geometry": point(10, 10),
		"properties": map[string]any{"name": "new"}}, bearer(owner.Access)...), 201)
	converges(t, "B's tile after a feature added on A", func() bool {
		return callAt(t, hc, b, "GET", tile, nil, "If-None-Match", etag).Status == 200
	})
	r, layers := getTile(t, b, tile, 200, "If-None-Match", etag)
	if len(layers[0].Features) != 31 || r.Header.Get("ETag") == etag {
		t.Fatalf("B's tile after an edit on A: %d features, ETag %s (was %s)", len(layers[0].Features), r.Header.Get("ETag"), etag)
	}
}

// crossJob: a file uploaded through A and committed through B is imported (by whichever
// replica's worker takes it) and read on both.
func crossJob(t *testing.T, hc *http.Client, owner session, a, b string) {
	up := want(t, "upload on A", uploadAt(t, hc, a, owner.Access, "points.geojson", pointsGeoJSON(25)), 201).JSON(t)
	job := up["job_id"].(string)
	want(t, "commit on B", callAt(t, hc, b, "POST", "/ingest/commit/"+job, map[string]any{"title": "Crossed " + randomHex(3)}, bearer(owner.Access)...), 202)
	end := waitJob(t, hc, a, owner.Access, job, 2*time.Minute, func(j map[string]any) bool { return j["status"] == "complete" || j["status"] == "failed" })
	if end["status"] != "complete" {
		t.Fatalf("job uploaded on A, committed on B: %v", end)
	}
	id := end["dataset_id"].(string)
	for _, root := range []string{a, b} {
		if n := want(t, "the imported dataset", callAt(t, hc, root, "GET", "/datasets/"+id, nil, bearer(owner.Access)...), 200).JSON(t)["feature_count"]; n != 25.0 {
			t.Fatalf("feature_count on %s: %v", root, n)
		}
	}
}

// crossPresigned: a presigned upload asked of A goes to the MinIO both replicas share, is
// completed through B and committed through A, and is imported. Without MinIO (MINIO_BIN unset)
// the URLs point at A's own storage endpoint and the test only says so.
func crossPresigned(t *testing.T, c *scaleCluster, hc *http.Client, owner session, a, b string) {
	content := pointsGeoJSON(40)
	ps := want(t, "presign on A", callAt(t, hc, a, "POST", "/ingest/upload/presigned", map[string]any{"filename": "crossed.geojson", "file_size": len(content)},
		bearer(owner.Access)...), 200).JSON(t)
	u := ps["urls"].([]any)[0].(string)
	if c.minio == nil {
		t.Skipf("MINIO_BIN unset: presigned uploads go to the replicas' own storage (%s); make test-scale runs MinIO", u)
	}
	if !strings.Contains(u, c.s3+"/uploads/") {
		t.Fatalf("the presigned URL does not point at the shared MinIO %s: %s", c.s3, u)
	}
	if code, etag := putPart(t, u, content); code != 200 || etag == "" {
		t.Fatalf("PUT to MinIO: %d %q", code, etag)
	}
	job := ps["job_id"].(string)
	want(t, "complete on B", callAt(t, hc, b, "POST", "/ingest/upload/presigned/"+job+"/complete", map[string]any{}, bearer(owner.Access)...), 200)
	want(t, "commit on A", callAt(t, hc, a, "POST", "/ingest/commit/"+job, map[string]any{"title": "Presigned " + randomHex(3)}, bearer(owner.Access)...), 202)
	end := waitJob(t, hc, b, owner.Access, job, 2*time.Minute, func(j map[string]any) bool { return j["status"] == "complete" || j["status"] == "failed" })
	if end["status"] != "complete" {
		t.Fatalf("presigned on A, completed on B, committed on A: %v", end)
	}
	if n := want(t, "the imported dataset", callAt(t, hc, b, "GET", "/datasets/"+end["dataset_id"].(string), nil, bearer(owner.Access)...), 200).JSON(t)["feature_count"]; n != 40.0 {
		t.Fatalf("feature_count: %v", n)
	}
}
