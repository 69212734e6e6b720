package conformance

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// exportedFile downloads an export into dir and returns the path GDAL opens it by (a zipped
// Shapefile through /vsizip/) and its Content-Disposition; anything but a 200 fails the test.
func exportedFile(t *testing.T, dir, id, format, ext, token string) (string, string) {
	t.Helper()
	r := call(t, "GET", "/datasets/"+id+"/export?format="+format, nil, bearer(token)...)
	if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Disposition"), "attachment; filename") {
		t.Fatalf("%s export: %d %v %.300s", format, r.Status, r.Header, r.Body)
	}
	path := filepath.Join(dir, "out."+ext)
	if err := os.WriteFile(path, r.Body, 0o600); err != nil {
		t.Fatal(err)
	}
	if ext == "zip" {
		path = "/vsizip/" + path
	}
	return path, r.Header.Get("Content-Disposition")
}

var exportFormats = []struct{ format, ext string }{
	{"geojson", "geojson"}, {"csv", "csv"}, {"gpkg", "gpkg"}, {"fgb", "fgb"}, {"shp", "zip"},
}

// registerTable creates table in public on the shared server's database with n points, registers
// it and returns the dataset id; the table is dropped when the test ends.
func registerTable(t *testing.T, a session, table string, n int) string {
	t.Helper()
	ctx := context.Background()
	conn := dbConn(t)
	ident := pgx.Identifier{"public", table}.Sanitize()
	if _, err := conn.Exec(ctx, `CREATE TABLE `+ident+` (id serial PRIMARY KEY, "Label ""x""" text, geom geometry(Point, 4326))`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO `+ident+` ("Label ""x""", geom)
		SELECT 'p' || i, ST_SetSRID(ST_MakePoint(5 + i * 0.001, 50), 4326) FROM generate_series(1, $1::int) i`, n); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = conn.Exec(context.Background(), "DROP TABLE IF EXISTS "+ident+" CASCADE") })
	r := call(t, "POST", "/ingest/register/", map[string]any{"table_path": "public." + table, "title": "Odd " + randomHex(2)}, bearer(a.Access)...)
	if r.Status != 201 {
		t.Fatalf("register %q: %d %s", table, r.Status, r.Body)
	}
	return r.JSON(t)["id"].(string)
}

// A registered table may be named anything PostgreSQL accepts; exports select its rows by a
// quoted identifier, never by a layer name GDAL would split at the dot.
func TestExportOddlyNamedTable(t *testing.T) {
	a := admin(t)
	id := registerTable(t, a, `odd.Name "x" `+randomHex(2), 7)
	dir := t.TempDir()
	for _, f := range exportFormats {
		t.Run(f.format, func(t *testing.T) {
			open, _ := exportedFile(t, dir, id, f.format, f.ext, a.Access)
			if n := ogrCount(t, open); n != 7 {
				t.Fatalf("%s export of the oddly named table holds %d features, want 7", f.format, n)
			}
			// The attribute comes along with its values (CSV readers unquote its name, Shapefile cuts it).
			out, err := exec.Command("ogrinfo", "-ro", "-al", open).CombinedOutput()
			if err != nil || !strings.Contains(string(out), "Label") || !strings.Contains(string(out), "= p7") {
				t.Fatalf("%s export lacks the attribute column or its values (%v):\n%.2000s", f.format, err, out)
			}
		})
	}
}

// When ogr2ogr fails before its first byte (here: the table went away behind the catalog's
// back) the answer is a problem, never a 200 with an empty body.
func TestExportFailureBeforeFirstByte(t *testing.T) {
	a := admin(t)
	table := "gone_" + randomHex(3)
	id := registerTable(t, a, table, 3)
	if _, err := dbConn(t).Exec(context.Background(), "DROP TABLE "+pgx.Identifier{"public", table}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	for _, f := range exportFormats {
		t.Run(f.format, func(t *testing.T) {
			r := call(t, "GET", "/datasets/"+id+"/export?format="+f.format, nil, bearer(a.Access)...)
			if r.Status != 500 || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/problem+json") {
				t.Fatalf("export of a vanished table: %d %q %.200s", r.Status, r.Header.Get("Content-Type"), r.Body)
			}
			// GDAL's reason reaches the log, with the dataset.
			waitLog(t, server, "export failed", id, "does not exist")
		})
	}
}

// When ogr2ogr fails after bytes went out (here: it outlives EXPORT_TIMEOUT midway), the
// download must break: a clean end would pass a cut file off as the whole dataset.
func TestExportFailureMidStreamCutsTheConnection(t *testing.T) {
	s := startFresh(t, "RATE_LIMIT_ENABLED=false", "EXPORT_TIMEOUT=3s")
	hc := contractAt(t, s)
	tok := loginAt(t, hc, s.APIRoot, "admin", AdminPassword)
	ctx := context.Background()
	conn := connect(t, s.DBURL)
	for _, sql := range []string{
		`CREATE TABLE public.stall (id serial PRIMARY KEY, name text, geom geometry(Point, 4326))`,
		`INSERT INTO public.stall (name, geom) SELECT 'p' || i, ST_SetSRID(ST_MakePoint(5, 50), 4326) FROM generate_series(1, 20000) i`,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	r := callAt(t, hc, s.APIRoot, "POST", "/ingest/register/", map[string]any{"table_path": "public.stall", "title": "Stall"}, bearer(tok)...)
	if r.Status != 201 {
		t.Fatalf("register: %d %s", r.Status, r.Body)
	}
	id := r.JSON(t)["id"].(string)
	// Rows come quickly until row 15000, which takes a minute.
	for _, sql := range []string{
		`ALTER TABLE public.stall RENAME TO stall_base`,
		`CREATE VIEW public.stall AS SELECT b.id, CASE WHEN b.id = 15000 THEN (SELECT b.name FROM pg_sleep(60)) ELSE b.name END AS name, b.geom
			FROM public.stall_base b ORDER BY b.id`,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	// Plain client: the validating one reads the whole body before the test sees anything.
	req, _ := http.NewRequest(http.MethodGet, s.APIRoot+"/datasets/"+id+"/export?format=geojson", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("export: %d", res.StatusCode)
	}
	n, err := io.Copy(io.Discard, res.Body)
	if err == nil {
		t.Fatalf("the export failed midway but the body ended cleanly after %d bytes", n)
	}
	if n == 0 || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("after %d bytes: %v, want a cut connection (unexpected EOF)", n, err)
	}
	waitLog(t, s, "export failed", id)
}

// waitLog waits for a line of s's log holding every part; log lines travel through the server's
// stderr pipe, so one may arrive just after the response it explains.
func waitLog(t *testing.T, s *Server, parts ...string) {
	t.Helper()
	has := func() bool {
		for _, line := range strings.Split(s.Logs(), "\n") {
			all := true
			for _, p := range parts {
				all = all && strings.Contains(line, p)
			}
			if all {
				return true
			}
		}
		return false
	}
	for deadline := time.Now().Add(3 * time.Second); !has() && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	if !has() {
		t.Fatalf("no log line holds %q:\n%s", parts, tail(s.Logs(), 3000))
	}
}
