package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// backupNode is one deployment of the backup test: a server, its database and its DATA_DIR.
type backupNode struct {
	s    *Server
	hc   *http.Client
	env  []string // the server's configuration, which the backup and restore commands share
	data string
}

// startBackupNode starts a server on dbURL with dataDir and the given JWT secret (a restored
// deployment keeps the secret: sealed settings and the import role's password derive from it).
func startBackupNode(t *testing.T, dbURL, dataDir, secret string) backupNode {
	t.Helper()
	s, err := Start(context.Background(), dbURL, "RATE_LIMIT_ENABLED=false", "DATA_DIR="+dataDir, "JWT_SECRET_KEY="+secret)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("log of %s (tail):\n%s", s.APIRoot, tail(s.Logs(), 3000))
		}
		s.Stop()
	})
	return backupNode{s: s, hc: contractAt(t, s), env: s.env, data: dataDir}
}

func (n backupNode) call(t *testing.T, method, path string, body any, headers ...string) reply {
	t.Helper()
	return callAt(t, n.hc, n.s.APIRoot, method, path, body, headers...)
}

// comparable leaves out of a body what differs between two deployments serving one catalog: the
// server's own address in links, and the time of the response (OGC's timeStamp).
func (n backupNode) comparable(body []byte) []byte {
	host := strings.TrimSuffix(strings.TrimPrefix(n.s.APIRoot, "http://"), "/api")
	body = bytes.ReplaceAll(body, []byte(host), []byte("HOST"))
	return responseTime.ReplaceAll(body, []byte(`"timeStamp":"T"`))
}

var responseTime = regexp.MustCompile(`"timeStamp":"[^"]*"`)

// login signs a user in on this node and returns the access token.
func (n backupNode) login(t *testing.T, username, password string) string {
	t.Helper()
	r := n.call(t, "POST", "/auth/login", url.Values{"username": {username}, "password": {password}})
	wantStatus(t, "login of "+username, r, 200)
	return r.JSON(t)["access_token"].(string)
}

// importAt uploads, commits and waits for the dataset of a completed import.
func (n backupNode) importAt(t *testing.T, token, name string, content []byte, commit map[string]any) string {
	t.Helper()
	up := uploadAt(t, n.hc, n.s.APIRoot, token, name, content)
	wantStatus(t, "upload "+name, up, 201)
	id := up.JSON(t)["job_id"].(string)
	if commit == nil {
		commit = map[string]any{}
	}
	wantStatus(t, "commit "+name, n.call(t, "POST", "/ingest/commit/"+id, commit, bearer(token)...), 202)
	job := waitJob(t, n.hc, n.s.APIRoot, token, id, 90*time.Second, func(j map[string]any) bool {
		return j["status"] == "complete" || j["status"] == "failed"
	})
	if job["status"] != "complete" {
		t.Fatalf("import of %s: %v", name, job)
	}
	return job["dataset_id"].(string)
}

// backups answers Get Infrastructure's backups and Health's backups provider, once the health
// report cached before has expired.
func (n backupNode) backups(t *testing.T, admin string) (info, provider map[string]any) {
	t.Helper()
	time.Sleep(1100 * time.Millisecond)
	infra := n.call(t, "GET", "/admin/infrastructure/", nil, bearer(admin)...)
	wantStatus(t, "infrastructure", infra, 200)
	h := n.call(t, "GET", "/health", nil)
	wantStatus(t, "health (a late backup leaves the service healthy)", h, 200)
	provider, _ = h.JSON(t)["providers"].(map[string]any)["backups"].(map[string]any)
	return infra.JSON(t)["backups"].(map[string]any), provider
}

// meridianCommand runs the server binary with a subcommand under env.
func meridianCommand(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestBackupAndRestore: `meridian backup` of a deployment with a catalog (a vector dataset, a
// raster, a map, a user with a grant, a setting), restored by `meridian restore` into a new
// database and DATA_DIR, serves the same catalog; the backup age of the health report is unknown
// before any backup, ok after one (also on the restored deployment, which holds that backup),
// and stale once the latest backup is older than BACKUP_MAX_AGE_MINUTES.
func TestBackupAndRestore(t *testing.T) {
	ctx := context.Background()
	secret := randomHex(24)
	dbURL, err := CreateDatabase(ctx, adminDBURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = DropDatabase(ctx, adminDBURL, dbURL) })
	origin := startBackupNode(t, dbURL, t.TempDir(), secret)
	adm := origin.login(t, "admin", AdminPassword)

	if info, p := origin.backups(t, adm); info["status"] != "unknown" || info["last_backup_at"] != nil || info["age_minutes"] != nil ||
		info["max_age_minutes"] != float64(1560) || p["status"] != "not_configured" || p["required"] != false {
		t.Fatalf("backups before any backup: %v, health %v", info, p)
	}

	// The catalog: an editor's restricted vector dataset granted to a viewer, a raster, a map, a setting.
	users := map[string][2]string{}
	for _, role := range []string{"editor", "viewer"} {
		name, password := role+strings.ToLower(randomHex(3)), "Pass-word-"+randomHex(4)
		wantStatus(t, "create "+role, origin.call(t, "POST", "/admin/users/", map[string]any{"username": name, "email": name + "@example.org",
			"password": password, "role": role, "email_verified": true}, bearer(adm)...), 201)
		users[role] = [2]string{name, password}
	}
	editor, viewer := origin.login(t, users["editor"][0], users["editor"][1]), origin.login(t, users["viewer"][0], users["viewer"][1])
	viewerID := origin.call(t, "GET", "/auth/me/", nil, bearer(viewer)...).JSON(t)["id"].(string)
	vector := origin.importAt(t, editor, "places.geojson", pointsGeoJSON(25), map[string]any{"title": "Places to keep"})
	wantStatus(t, "restrict", origin.call(t, "PATCH", "/datasets/"+vector, map[string]any{"visibility": "restricted"}, bearer(editor)...), 200)
	wantStatus(t, "grant", origin.call(t, "POST", "/datasets/"+vector+"/grants/", map[string]any{"user_id": viewerID, "level": "read"}, bearer(editor)...), 201)
	raster := origin.importAt(t, editor, "dem.tif", demTIFF(t, 64, 48), map[string]any{})
	m := origin.call(t, "POST", "/maps/", map[string]any{"name": "Kept map", "notes": "survives a restore"}, bearer(editor)...)
	wantStatus(t, "create map", m, 201)
	mapID := m.JSON(t)["id"].(string)
	wantStatus(t, "add layer", origin.call(t, "POST", "/maps/"+mapID+"/layers", map[string]any{"dataset_id": vector, "display_name": "Places"}, bearer(editor)...), 201)
	wantStatus(t, "setting", origin.call(t, "PUT", "/settings/", map[string]any{"settings": map[string]any{"branding.site_name": "Restored Atlas"}}, bearer(adm)...), 200)

	// What a client sees of it, to compare with the restored deployment.
	// The middle of the DEM (demTIFF: 64 x 48 cells of 30 m from 500000 E, 5150000 N in UTM 33N).
	tx, ty := rasterTileAt(15.0125, 46.5100, 14)
	reads := []struct {
		what, path string
		as         string // "editor", "viewer" or "admin"
	}{
		{"vector record", "/datasets/" + vector, "editor"},
		{"vector features", "/datasets/" + vector + "/features/?limit=100", "editor"},
		{"granted read", "/datasets/" + vector, "viewer"},
		{"vector tile", "/tiles/" + vector + "/0/0/0.pbf", "editor"},
		{"raster record", "/datasets/" + raster, "editor"},
		{"raster COG", "/datasets/" + raster + "/download/cog", "editor"},
		{"raster tile", fmt.Sprintf("/tiles/raster-proxy/%s/14/%d/%d.png", raster, tx, ty), "editor"},
		{"map", "/maps/" + mapID, "editor"},
		{"settings", "/settings/all/", "admin"},
	}
	tokens := map[string]string{"editor": editor, "viewer": viewer, "admin": adm}
	before := map[string][]byte{}
	for _, r := range reads {
		got := origin.call(t, "GET", r.path, nil, bearer(tokens[r.as])...)
		wantStatus(t, r.what, got, 200)
		before[r.what] = origin.comparable(got.Body)
	}

	// Back up while the server runs.
	dir := filepath.Join(t.TempDir(), "backup")
	// With the server's configuration, whose DATABASE_URL may carry pgxpool's parameters.
	if out, err := meridianCommand(t, append(origin.env, "DATABASE_URL="+dbURL+"&pool_max_conns=4"), "backup", "--out", dir); err != nil {
		t.Fatalf("meridian backup: %v\n%s", err, out)
	}
	var manifest struct {
		TakenAt time.Time `json:"taken_at"`
	}
	if b, err := os.ReadFile(filepath.Join(dir, "manifest.json")); err != nil || json.Unmarshal(b, &manifest) != nil {
		t.Fatalf("manifest: %v", err)
	}
	info, p := origin.backups(t, adm)
	if info["status"] != "ok" || info["age_minutes"] != float64(0) || p["status"] != "ok" || !sameInstant(info["last_backup_at"], manifest.TakenAt) {
		t.Fatalf("backups after a backup taken at %s: %v, health %v", manifest.TakenAt, info, p)
	}
	if out, err := meridianCommand(t, origin.env, "backup", "--out", dir); err == nil || !strings.Contains(out, "new or empty") {
		t.Fatalf("a second backup into the same directory: %v %s", err, out)
	}

	// Restore into a new database and DATA_DIR, with the same configuration otherwise.
	restoredURL, err := CreateDatabase(ctx, adminDBURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = DropDatabase(ctx, adminDBURL, restoredURL) })
	restoredData := t.TempDir()
	env := append(append([]string{}, origin.env...), "DATABASE_URL="+restoredURL, "DATA_DIR="+restoredData)
	if out, err := meridianCommand(t, env, "restore", "--from", dir); err != nil {
		t.Fatalf("meridian restore: %v\n%s", err, out)
	}
	if out, err := meridianCommand(t, append(env, "DATA_DIR="+t.TempDir()), "restore", "--from", dir); err == nil || !strings.Contains(out, "database is not empty") {
		t.Fatalf("a restore into the restored database: %v %s", err, out)
	}
	restored := startBackupNode(t, restoredURL, restoredData, secret)

	// Every account signs in with its password; every read answers as before.
	tokens = map[string]string{"editor": restored.login(t, users["editor"][0], users["editor"][1]),
		"viewer": restored.login(t, users["viewer"][0], users["viewer"][1]),
		"admin":  restored.login(t, "admin", AdminPassword)}
	for _, r := range reads {
		got := restored.call(t, "GET", r.path, nil, bearer(tokens[r.as])...)
		got.Body = restored.comparable(got.Body)
		if got.Status != 200 || !bytes.Equal(got.Body, before[r.what]) {
			i := 0
			for i < len(got.Body) && i < len(before[r.what]) && got.Body[i] == before[r.what][i] {
				i++
			}
			t.Errorf("%s after the restore: %d, %d bytes, want the %d bytes served before, which differ from byte %d: %.200q, before %.200q",
				r.what, got.Status, len(got.Body), len(before[r.what]), i, got.Body[max(i-40, 0):], before[r.what][max(i-40, 0):])
		}
	}
	// And it is a working catalog: the restored deployment imports (its import role is in place).
	restored.importAt(t, tokens["editor"], "more.geojson", pointsGeoJSON(3), nil)

	// The restored deployment holds the backup: its age is that backup's.
	info, p = restored.backups(t, tokens["admin"])
	if info["status"] != "ok" || p["status"] != "ok" || !sameInstant(info["last_backup_at"], manifest.TakenAt) {
		t.Fatalf("backups of the restored deployment: %v, health %v", info, p)
	}
	// Older than BACKUP_MAX_AGE_MINUTES (1560): stale, and the health report says so without
	// making the service unhealthy.
	conn := connect(t, restoredURL)
	if _, err := conn.Exec(ctx, `UPDATE catalog.backup_runs SET taken_at = taken_at - interval '1561 minutes'`); err != nil {
		t.Fatal(err)
	}
	info, p = restored.backups(t, tokens["admin"])
	if age, _ := info["age_minutes"].(float64); info["status"] != "stale" || age < 1561 || p["status"] != "degraded" ||
		!strings.Contains(p["detail"].(string), "1560") {
		t.Fatalf("backups of a deployment whose latest backup is 1561 minutes old: %v, health %v", info, p)
	}
}

// sameInstant tells whether a date-time of a response is t (to the microsecond PostgreSQL keeps).
func sameInstant(v any, t time.Time) bool {
	s, _ := v.(string)
	got, err := time.Parse(time.RFC3339Nano, s)
	return err == nil && got.Equal(t)
}
