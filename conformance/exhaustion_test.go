package conformance

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Exhaustion by untrusted files (issue #28): files that expand inside their format, GDAL runs
// that would take the host's memory, previews and exports that pile up, staging that fills the
// disk. Each test starts a server of its own with small bounds, so its fixtures stay small.

// fresh is a server of a test's own, signed in as its first admin.
type fresh struct {
	s     *Server
	hc    *http.Client
	admin string
}

func startBounded(t *testing.T, env ...string) fresh {
	t.Helper()
	s := startFresh(t, append([]string{"RATE_LIMIT_ENABLED=false"}, env...)...)
	hc := contractAt(t, s)
	return fresh{s: s, hc: hc, admin: loginAt(t, hc, s.APIRoot, "admin", AdminPassword)}
}

func (f fresh) call(t *testing.T, method, path, token string, body any) reply {
	t.Helper()
	var h []string
	if token != "" {
		h = bearer(token)
	}
	return callAt(t, f.hc, f.s.APIRoot, method, path, body, h...)
}

// user creates a user with role and answers its access token.
func (f fresh) user(t *testing.T, role string) string {
	t.Helper()
	name := "u" + randomHex(4)
	r := f.call(t, "POST", "/admin/users/", f.admin, map[string]any{"username": name, "email": name + "@example.org",
		"password": "Pass-word-" + name, "role": role, "email_verified": true})
	if r.Status != 201 {
		t.Fatalf("create user: %d %s", r.Status, r.Body)
	}
	return loginAt(t, f.hc, f.s.APIRoot, name, "Pass-word-"+name)
}

// upload stages content and answers the job id.
func (f fresh) upload(t *testing.T, token, name string, content []byte) string {
	t.Helper()
	r := uploadAt(t, f.hc, f.s.APIRoot, token, name, content)
	if r.Status != 201 {
		t.Fatalf("upload %s: %d %s", name, r.Status, r.Body)
	}
	return r.JSON(t)["job_id"].(string)
}

// problem checks a problem's status and that its detail names every part.
func problem(t *testing.T, what string, r reply, status int, parts ...string) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("%s: %d, want %d: %.500s", what, r.Status, status, r.Body)
	}
	d, _ := r.JSON(t)["detail"].(string)
	for _, p := range parts {
		if !strings.Contains(d, p) {
			t.Fatalf("%s: the problem does not name %q: %s", what, p, d)
		}
	}
	if status == 503 && r.Header.Get("Retry-After") == "" {
		t.Fatalf("%s: 503 without Retry-After", what)
	}
}

// xlsxOf is a spreadsheet GDAL reads, whose one sheet is sheet (the XML of its sheetData rows).
func xlsxOf(t *testing.T, sheet func(w io.Writer)) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	put := func(name, s string) {
		w, _ := zw.Create(name)
		_, _ = io.WriteString(w, s)
	}
	put("[Content_Types].xml", `<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">`+
		`<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>`+
		`<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>`+
		`<Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/></Types>`)
	put("_rels/.rels", `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">`+
		`<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>`)
	put("xl/workbook.xml", `<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" `+
		`xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="Sheet1" sheetId="1" r:id="rId1"/></sheets></workbook>`)
	put("xl/_rels/workbook.xml.rels", `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">`+
		`<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/></Relationships>`)
	w, _ := zw.Create("xl/worksheets/sheet1.xml")
	bw := bufio.NewWriter(w)
	_, _ = io.WriteString(bw, `<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>`+
		`<row r="1"><c r="A1" t="inlineStr"><is><t>lon</t></is></c><c r="B1" t="inlineStr"><is><t>lat</t></is></c><c r="C1" t="inlineStr"><is><t>text</t></is></c></row>`)
	sheet(bw)
	_, _ = io.WriteString(bw, `</sheetData></worksheet>`)
	_ = bw.Flush()
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// kmlOf is a KML document of n placemarks (about 110 bytes each).
func kmlOf(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><kml xmlns="http://www.opengis.net/kml/2.2"><Document><Folder><name>p</name>`)
	for i := range n {
		fmt.Fprintf(&b, "<Placemark><name>p%d</name><Point><coordinates>5.%d,50.%d</coordinates></Point></Placemark>\n", i%1000, i%7, i%3)
	}
	b.WriteString(`</Folder></Document></kml>`)
	return b.Bytes()
}

// ratioOf is how many times an archive expands, for fixtures that must stay under or over a ratio.
func ratioOf(t *testing.T, archive []byte) int64 {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(archive), int64(len(archive)))
	if err != nil {
		t.Fatal(err)
	}
	var total uint64
	for _, m := range zr.File {
		total += m.UncompressedSize64
	}
	return int64(total) / int64(len(archive))
}

// Files that expand inside their format are refused by our checks before GDAL opens them: a
// spreadsheet (a zip of XML GDAL inflates and parses whole) past its bound, a part that
// compresses like a bomb, a part lying about its size; a KML (which GDAL builds whole in memory,
// about ten times its size) past its bound, plain or in an archive; one member of an archive
// compressing like a bomb while the archive as a whole looks ordinary. Preview and commit
// answer the problem naming the bound, and the refused commit ends the job with the reason.
func TestFormatBombsAreRefusedBeforeGDAL(t *testing.T) {
	f := startBounded(t, "KML_MAX_BYTES=1048576", "XLSX_MAX_INFLATED_BYTES=4194304")
	u := f.user(t, "editor")
	rnd := rand.New(rand.NewSource(1))
	varied := xlsxOf(t, func(w io.Writer) { // about 6 MB of ordinary numbers: a ratio of about 3
		for r := 2; r < 60000; r++ {
			fmt.Fprintf(w, `<row r="%d"><c r="A%d"><v>%.6f</v></c><c r="B%d"><v>%.6f</v></c><c r="C%d"><v>%d</v></c></row>`,
				r, r, rnd.Float64()*10, r, 40+rnd.Float64()*10, r, rnd.Int63())
		}
	})
	text := strings.Repeat("a", 200000)
	bomb := xlsxOf(t, func(w io.Writer) { // about 3 MB of one repeated text: a ratio in the hundreds
		for r := 2; r < 17; r++ {
			fmt.Fprintf(w, `<row r="%d"><c r="A%d"><v>5</v></c><c r="B%d"><v>50</v></c><c r="C%d" t="inlineStr"><is><t>%s</t></is></c></row>`, r, r, r, r, text)
		}
	})
	if ratioOf(t, varied) > 20 || ratioOf(t, bomb) < 150 {
		t.Fatalf("fixtures: the varied spreadsheet expands %d times, the bomb %d", ratioOf(t, varied), ratioOf(t, bomb))
	}
	kml := kmlOf(14000) // about 1.5 MB
	padded := []byte(`{"type":"FeatureCollection","features":[` + strings.Repeat(" ", 3<<20) + `]}`)
	noise := make([]byte, 200<<10)
	_, _ = rnd.Read(noise)
	mixed := zipOf(t, "big.geojson", padded, "noise.txt", noise)
	if ratioOf(t, mixed) > 50 {
		t.Fatalf("fixture: the mixed archive expands %d times as a whole", ratioOf(t, mixed))
	}
	cases := []struct {
		name, file string
		content    []byte
		status     int
		reason     []string
	}{
		{"spreadsheet inflating past its bound", "varied.xlsx", varied, 413, []string{"XLSX_MAX_INFLATED_BYTES", "xl/worksheets/sheet1.xml"}},
		{"spreadsheet part compressing like a bomb", "bomb.xlsx", bomb, 422, []string{"ARCHIVE_MAX_RATIO", "xl/worksheets/sheet1.xml"}},
		{"spreadsheet part lying about its size", "liar.xlsx", liarZip(t, "xl/worksheets/sheet1.xml", 3), 422, []string{"xl/worksheets/sheet1.xml", "declares"}},
		{"KML past its bound in an archive", "kml.zip", zipOf(t, "doc.kml", kml), 413, []string{"KML_MAX_BYTES", "doc.kml"}},
		{"plain KML past its bound", "doc.kml", kml, 413, []string{"KML_MAX_BYTES"}},
		{"one member of an ordinary-looking archive compressing like a bomb", "mixed.zip", mixed, 422, []string{"ARCHIVE_MAX_RATIO", "big.geojson"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id := f.upload(t, u, tc.file, tc.content)
			problem(t, "preview", f.call(t, "POST", "/ingest/preview/"+id, u, map[string]any{}), tc.status, tc.reason...)
			problem(t, "commit", f.call(t, "POST", "/ingest/commit/"+id, u, map[string]any{}), tc.status, tc.reason...)
			job := f.call(t, "GET", "/jobs/"+id, u, nil).JSON(t)
			if job["status"] != "failed" || job["can_retry"] != false || !strings.Contains(fmt.Sprint(job["error_message"]), tc.reason[0]) {
				t.Fatalf("job after the refused commit: %v", job)
			}
		})
	}
	// An ordinary spreadsheet within the bounds still imports.
	small := xlsxOf(t, func(w io.Writer) {
		_, _ = io.WriteString(w, `<row r="2"><c r="A2"><v>5</v></c><c r="B2"><v>50</v></c></row>`)
	})
	id := f.upload(t, u, "small.xlsx", small)
	if r := f.call(t, "POST", "/ingest/preview/"+id, u, map[string]any{}); r.Status != 200 {
		t.Fatalf("an ordinary spreadsheet: %d %s", r.Status, r.Body)
	}
}

// A file within every bound that still makes GDAL build more in memory than GDAL_MEMORY_LIMIT
// (here a 25 MB KML under a 256 MB limit) stops GDAL, not the host: the preview answers 422
// naming the limit, the server stays healthy, and the commit ends the job with the reason.
func TestGDALRunsWithinItsMemoryLimit(t *testing.T) {
	f := startBounded(t, "GDAL_MEMORY_LIMIT=268435456")
	u := f.user(t, "editor")
	content := zipOf(t, "doc.kml", kmlOf(230000))
	id := f.upload(t, u, "doc.zip", content)
	problem(t, "preview", f.call(t, "POST", "/ingest/preview/"+id, u, map[string]any{}), 422, "GDAL_MEMORY_LIMIT")
	if r := f.call(t, "GET", "/health", "", nil); r.Status != 200 {
		t.Fatalf("health after the limit: %d", r.Status)
	}
	problem(t, "commit", f.call(t, "POST", "/ingest/commit/"+id, u, map[string]any{}), 422, "GDAL_MEMORY_LIMIT")
	if job := f.call(t, "GET", "/jobs/"+id, u, nil).JSON(t); job["status"] != "failed" || !strings.Contains(fmt.Sprint(job["error_message"]), "GDAL_MEMORY_LIMIT") {
		t.Fatalf("job: %v", job)
	}
}

// geojsonSeqZip is an archive of a GeoJSON sequence of n points, about 60 times smaller than
// what it unpacks to: slow to read whole, within every bound.
func geojsonSeqZip(t *testing.T, n int) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, _ := zw.Create("points.geojsonl")
	bw := bufio.NewWriterSize(w, 1<<20)
	for i := range n {
		fmt.Fprintf(bw, `{"type":"Feature","properties":{"n":%d,"pad":"%s"},"geometry":{"type":"Point","coordinates":[5.%d,50]}}`+"\n",
			i%200, strings.Repeat("x", 100), i%4)
	}
	_ = bw.Flush()
	_ = zw.Close()
	return buf.Bytes()
}

// Looks at staged files run GDAL: only PREVIEW_CONCURRENCY run at once, and one user may hold
// only PREVIEW_CONCURRENCY_PER_CLIENT of them; a preview that finds no room within a short
// wait answers 503 with Retry-After, and runs once the slot is free.
func TestPreviewsAreBounded(t *testing.T) {
	f := startBounded(t, "PREVIEW_CONCURRENCY=1", "PREVIEW_CONCURRENCY_PER_CLIENT=1")
	a, b := f.user(t, "editor"), f.user(t, "editor")
	slow := f.upload(t, a, "slow.zip", geojsonSeqZip(t, 1500000))
	quick := f.upload(t, b, "quick.geojson", pointsGeoJSON(3))
	done := make(chan reply, 1)
	go func() {
		done <- f.call(t, "POST", "/ingest/preview/"+slow, a, map[string]any{})
	}()
	time.Sleep(500 * time.Millisecond) // the slow preview holds the one slot by now
	problem(t, "another user's preview while the slot is taken", f.call(t, "POST", "/ingest/preview/"+quick, b, map[string]any{}), 503, "PREVIEW_CONCURRENCY")
	problem(t, "the same user's second preview", f.call(t, "POST", "/ingest/preview/"+slow, a, map[string]any{}), 503, "PREVIEW_CONCURRENCY_PER_CLIENT")
	select {
	case r := <-done:
		if r.Status != 200 {
			t.Fatalf("the slow preview: %d %s", r.Status, r.Body)
		}
	case <-time.After(90 * time.Second):
		t.Fatal("the slow preview did not end")
	}
	if r := f.call(t, "POST", "/ingest/preview/"+quick, b, map[string]any{}); r.Status != 200 {
		t.Fatalf("the quick preview once the slot is free: %d %s", r.Status, r.Body)
	}
}

// exportSessions counts the database sessions of running exports.
func exportSessions(t *testing.T, dbURL string) int {
	t.Helper()
	var n int
	if err := connect(t, dbURL).QueryRow(context.Background(),
		`SELECT count(*) FROM pg_stat_activity WHERE application_name = 'meridian-export' AND datname = current_database()`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// gdalChildren counts the GDAL processes the server runs.
func gdalChildren(s *Server) int {
	entries, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		if err != nil {
			continue
		}
		st := string(b)
		if strings.Contains(st, "\nPPid:\t"+strconv.Itoa(s.cmd.Process.Pid)+"\n") && (strings.Contains(st, "Name:\togr2ogr") || strings.Contains(st, "Name:\togrinfo")) {
			n++
		}
	}
	return n
}

// slowExport opens an export as a client that reads the status line and the first bytes and
// then stops reading; from names the client (X-Forwarded-For).
func slowExport(t *testing.T, s *Server, id, from string) (status int, header string, conn net.Conn, rd *bufio.Reader) {
	t.Helper()
	u, _ := url.Parse(s.APIRoot)
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "GET /api/datasets/%s/export?format=geojson HTTP/1.1\r\nHost: %s\r\nX-Forwarded-For: %s\r\n\r\n", id, u.Host, from)
	br := bufio.NewReaderSize(c, 512)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != 200 {
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, res.Header.Get("Retry-After") + " " + string(b), c, br
	}
	if _, err := io.ReadFull(res.Body, make([]byte, 512)); err != nil {
		t.Fatal(err)
	}
	return 200, "", c, bufio.NewReader(res.Body)
}

// Exports are bounded, and a reader that stops reading holds only a file: ogr2ogr writes the
// export at its own speed into a spool and ends, and so does its database session, while the
// readers still hold their downloads; each reader then gets the whole file. One client may have
// EXPORT_CONCURRENCY_PER_CLIENT exports in flight (anonymous callers are told apart by address),
// more answer 503 with Retry-After. The spool leaves nothing on disk.
func TestExportsAreBoundedAndSlowReadersHoldOnlyAFile(t *testing.T) {
	f := startBounded(t, "EXPORT_CONCURRENCY=3", "EXPORT_CONCURRENCY_PER_CLIENT=2", "TRUST_FORWARDED_HEADERS=true")
	ctx := context.Background()
	conn := connect(t, f.s.DBURL)
	for _, sql := range []string{
		`CREATE TABLE public.many (id serial PRIMARY KEY, name text, geom geometry(Point, 4326))`,
		`INSERT INTO public.many (name, geom) SELECT 'feature number ' || i, ST_SetSRID(ST_MakePoint(5 + i * 1e-6, 50), 4326) FROM generate_series(1, 250000) i`,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	r := f.call(t, "POST", "/ingest/register/", f.admin, map[string]any{"table_path": "public.many", "title": "Many"})
	if r.Status != 201 {
		t.Fatalf("register: %d %s", r.Status, r.Body)
	}
	id := r.JSON(t)["id"].(string)
	if r := f.call(t, "PATCH", "/datasets/"+id, f.admin, map[string]any{"visibility": "public"}); r.Status != 200 {
		t.Fatalf("visibility: %d %s", r.Status, r.Body)
	}
	if r := f.call(t, "PATCH", "/datasets/"+id+"/target-status/", f.admin, map[string]any{"status": "published"}); r.Status != 200 {
		t.Fatalf("publish: %d %s", r.Status, r.Body)
	}

	// One anonymous client: two downloads in flight, the third is refused.
	var readers []*bufio.Reader
	for i := range 2 {
		st, body, _, rd := slowExport(t, f.s, id, "10.0.0.1")
		if st != 200 {
			t.Fatalf("client A's export %d: %d %s", i+1, st, body)
		}
		readers = append(readers, rd)
	}
	st, body, _, _ := slowExport(t, f.s, id, "10.0.0.1")
	if st != 503 || !strings.Contains(body, "EXPORT_CONCURRENCY_PER_CLIENT") || strings.HasPrefix(body, " ") {
		t.Fatalf("client A's third export: %d %s, want 503 with Retry-After naming EXPORT_CONCURRENCY_PER_CLIENT", st, body)
	}
	// Three more clients, each one slow download: more than EXPORT_CONCURRENCY would run at once
	// if the stalled readers held their processes.
	for i := range 3 {
		st, body, _, rd := slowExport(t, f.s, id, fmt.Sprintf("10.0.1.%d", i))
		if st != 200 {
			t.Fatalf("client %d's export while five readers stall: %d %s", i, st, body)
		}
		readers = append(readers, rd)
	}
	// The readers read nothing more, yet the processes and database sessions end.
	deadline := time.Now().Add(30 * time.Second)
	for exportSessions(t, f.s.DBURL)+gdalChildren(f.s) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("stalled readers pin %d export sessions and %d GDAL processes", exportSessions(t, f.s.DBURL), gdalChildren(f.s))
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Every reader still gets the whole file.
	var wg sync.WaitGroup
	for i, rd := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rest, err := io.ReadAll(rd)
			if err != nil {
				t.Errorf("reader %d: %v after %d more bytes", i, err, len(rest))
				return
			}
			if n := bytes.Count(rest, []byte(`"type": "Feature"`)); n < 249990 {
				t.Errorf("reader %d got %d more features, want the whole dataset", i, n)
			}
		}()
	}
	wg.Wait()
	for _, fh := range []string{"exports"} {
		entries, _ := os.ReadDir(filepath.Join(f.s.dataDir, fh))
		if len(entries) != 0 {
			t.Errorf("the exports left files behind: %v", entries)
		}
	}
}

// The staging quota is claimed while bytes are written: an upload or an unpacking past the
// user's quota answers 413 naming it and leaves nothing; past the server's total it answers 503
// with Retry-After. Nothing the user staged before is lost: a job whose archive could not be
// unpacked stays pending and previews once the user's earlier import has freed its staging.
func TestStagingQuota(t *testing.T) {
	f := startBounded(t, "STAGING_QUOTA_PER_USER=2000000", "STAGING_QUOTA_TOTAL=2600000")
	a, b := f.user(t, "editor"), f.user(t, "editor")
	archive := zipOf(t, "points.geojson", pointsGeoJSON(9000)) // about 150 KB, unpacking to 1 MB
	first := f.upload(t, a, "first.zip", archive)
	if r := f.call(t, "POST", "/ingest/preview/"+first, a, map[string]any{}); r.Status != 200 {
		t.Fatalf("a preview within the quota: %d %s", r.Status, r.Body)
	}
	second := f.upload(t, a, "second.zip", archive)
	problem(t, "unpacking past the user's quota", f.call(t, "POST", "/ingest/preview/"+second, a, map[string]any{}), 413, "STAGING_QUOTA_PER_USER")
	problem(t, "a commit that would unpack past it", f.call(t, "POST", "/ingest/commit/"+second, a, map[string]any{}), 413, "STAGING_QUOTA_PER_USER")
	if job := f.call(t, "GET", "/jobs/"+second, a, nil).JSON(t); job["status"] != "pending" {
		t.Fatalf("the job refused by the quota: %v (it must stay pending)", job)
	}
	dirs := func() int { e, _ := os.ReadDir(filepath.Join(f.s.dataDir, "staging")); return len(e) }
	before := dirs()
	problem(t, "an upload past the user's quota", uploadAt(t, f.hc, f.s.APIRoot, a, "more.geojson", pointsGeoJSON(7000)), 413, "STAGING_QUOTA_PER_USER")
	if dirs() != before {
		t.Fatalf("the refused upload left a staging directory")
	}
	f.upload(t, b, "b.geojson", pointsGeoJSON(9000))
	problem(t, "an upload past the server's total", uploadAt(t, f.hc, f.s.APIRoot, b, "b2.geojson", pointsGeoJSON(3000)), 503, "STAGING_QUOTA_TOTAL")
	// The first import frees its staging; the second job then previews and imports.
	if r := f.call(t, "POST", "/ingest/commit/"+first, a, map[string]any{}); r.Status != 202 {
		t.Fatalf("commit: %d %s", r.Status, r.Body)
	}
	waitJob(t, f.hc, f.s.APIRoot, a, first, time.Minute, func(j map[string]any) bool { return j["status"] == "complete" })
	if r := f.call(t, "POST", "/ingest/preview/"+second, a, map[string]any{}); r.Status != 200 {
		t.Fatalf("the kept job once space is free: %d %s", r.Status, r.Body)
	}
}

// Staging expires: an upload never committed within STAGING_TTL fails with the reason and its
// files go; an import that runs longer than the TTL keeps its staging and completes.
func TestStagingExpiresWithoutTouchingRunningImports(t *testing.T) {
	f := startBounded(t, "STAGING_TTL=20s") // long enough for the large upload to be checked and committed on a busy machine
	u := f.user(t, "editor")
	idle := f.upload(t, u, "idle.geojson", pointsGeoJSON(3))
	long := f.upload(t, u, "long.zip", geojsonSeqZip(t, 400000))
	if r := f.call(t, "POST", "/ingest/commit/"+long, u, map[string]any{"title": "Long"}); r.Status != 202 {
		t.Fatalf("commit: %d %s", r.Status, r.Body)
	}
	job := waitJob(t, f.hc, f.s.APIRoot, u, idle, 60*time.Second, func(j map[string]any) bool { return j["status"] != "pending" })
	if job["status"] != "failed" || !strings.Contains(fmt.Sprint(job["error_message"]), "STAGING_TTL") || job["can_retry"] != false {
		t.Fatalf("the uncommitted job after its TTL: %v", job)
	}
	waitFor(t, 10*time.Second, "the expired job's staging directory to go", func() bool {
		_, err := os.Stat(filepath.Join(f.s.dataDir, "staging", idle))
		return os.IsNotExist(err)
	})
	if r := f.call(t, "POST", "/jobs/"+idle+"/retry", u, nil); r.Status != 409 {
		t.Fatalf("retry of the expired job: %d %s", r.Status, r.Body)
	}
	done := waitJob(t, f.hc, f.s.APIRoot, u, long, 2*time.Minute, func(j map[string]any) bool { return j["status"] != "pending" && j["status"] != "running" })
	if done["status"] != "complete" {
		t.Fatalf("the import that outlived the TTL: %v", done)
	}
}

func waitFor(t *testing.T, limit time.Duration, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(limit); !ok(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", limit, what)
		}
	}
}

// Commit Import does not write into an existing dataset: mode append or replace is refused
// with 422 naming Reupload (which does it), rather than silently creating a new dataset and
// leaving the target, possibly another user's, untouched; the job stays pending for a commit
// with mode create.
func TestCommitModeAppendOrReplaceIsRefused(t *testing.T) {
	owner, other := newUser(t, "editor"), newUser(t, "editor")
	target := importFile(t, owner, "target.geojson", pointsGeoJSON(2), map[string]any{"title": "Target"})["dataset_id"].(string)
	id := upload(t, other, "more.geojson", pointsGeoJSON(3)).JSON(t)["job_id"].(string)
	for _, mode := range []string{"append", "replace"} {
		r := call(t, "POST", "/ingest/commit/"+id, map[string]any{"mode": mode, "target_dataset_id": target}, bearer(other.Access)...)
		wantStatus(t, "commit with mode "+mode, r, 422, "Reupload", mode)
	}
	if job := call(t, "GET", "/jobs/"+id, nil, bearer(other.Access)...).JSON(t); job["status"] != "pending" {
		t.Fatalf("the job after the refused commits: %v", job)
	}
	ds := call(t, "GET", "/datasets/"+target, nil, bearer(owner.Access)...).JSON(t)
	if ds["feature_count"] != float64(2) {
		t.Fatalf("the target changed: %v features", ds["feature_count"])
	}
	r := call(t, "POST", "/ingest/commit/"+id, map[string]any{"mode": "create"}, bearer(other.Access)...)
	wantStatus(t, "commit with mode create", r, 202)
	var out map[string]any
	_ = json.Unmarshal(r.Body, &out)
	if out["job_id"] != id {
		t.Fatalf("commit answer: %s", r.Body)
	}
}
