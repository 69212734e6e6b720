package conformance

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"mime/multipart"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// benchPoints is the size of the generated point file (BENCH_POINTS overrides the 1,000,000).
func benchPoints() int {
	if n, err := strconv.Atoi(os.Getenv("BENCH_POINTS")); err == nil && n > 0 {
		return n
	}
	return 1_000_000
}

// writePointsCSV writes n points with five attribute columns (int, float, category, date, name).
func writePointsCSV(tb testing.TB, path string, n int) {
	tb.Helper()
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	fmt.Fprintln(w, "lon,lat,id,score,kind,day,name")
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < n; i++ {
		fmt.Fprintf(w, "%.6f,%.6f,%d,%.3f,k%d,2024-%02d-%02d,name-%d\n", -180+360*r.Float64(), -85+170*r.Float64(), i,
			1000*r.Float64(), r.IntN(20), 1+r.IntN(12), 1+r.IntN(28), i)
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	f.Close()
}

// BenchmarkIngestVsOgr2ogr loads the same generated point CSV twice per iteration, side by side
// on the same PostGIS: a bare ogr2ogr with the options Meridian uses, and Meridian end to end
// (multipart upload, commit, the River job, the finished record). It reports both durations and
// their ratio (target: at most 1.3).
func BenchmarkIngestVsOgr2ogr(b *testing.B) {
	n := benchPoints()
	path := filepath.Join(b.TempDir(), "points.csv")
	writePointsCSV(b, path, n)
	token := newUserTB(b)
	conn := strings.TrimPrefix(server.DBURL, "postgres://")
	host, db, _ := strings.Cut(conn, "/")
	host = strings.TrimPrefix(host, "postgres@")
	h, port, _ := strings.Cut(host, ":")
	pg := fmt.Sprintf("PG:host=%s port=%s dbname=%s user=postgres", h, port, strings.Split(db, "?")[0])
	var bare, full time.Duration
	for i := 0; i < b.N; i++ {
		table := fmt.Sprintf("bench_bare_%d_%d", time.Now().UnixNano(), i)
		start := time.Now()
		cmd := exec.Command("ogr2ogr", "-f", "PostgreSQL", pg, path, "-nln", table, "-lco", "SCHEMA=public",
			"-lco", "GEOMETRY_NAME=geom", "-lco", "FID=gid", "-lco", "SPATIAL_INDEX=GIST", "-lco", "PRECISION=NO", "-nlt", "PROMOTE_TO_MULTI",
			"-t_srs", "EPSG:4326", "-s_srs", "EPSG:4326", "--config", "PG_USE_COPY", "YES",
			"-oo", "X_POSSIBLE_NAMES=lon", "-oo", "Y_POSSIBLE_NAMES=lat", "-oo", "KEEP_GEOM_COLUMNS=YES", "-oo", "AUTODETECT_TYPE=YES")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("ogr2ogr: %v %s", err, out)
		}
		bare += time.Since(start)

		start = time.Now()
		job := benchImport(b, token, path)
		full += time.Since(start)
		if job != "complete" {
			b.Fatalf("import ended %s", job)
		}
	}
	b.ReportMetric(bare.Seconds()/float64(b.N), "ogr2ogr-s/op")
	b.ReportMetric(full.Seconds()/float64(b.N), "meridian-s/op")
	b.ReportMetric(full.Seconds()/bare.Seconds(), "ratio")
}

// benchImport streams the file as a multipart upload (never in memory), commits and waits.
func benchImport(b *testing.B, token, path string) string {
	res := streamUpload(b, token, "points.csv", func(w io.Writer) error {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(w, f)
		return err
	})
	var up struct {
		JobID string `json:"job_id"`
	}
	decode(b, res, &up)
	cres, err := plain.Do(authed(http.MethodPost, server.APIRoot+"/ingest/commit/"+up.JobID, `{}`, token))
	if err != nil {
		b.Fatal(err)
	}
	cres.Body.Close()
	for {
		r, err := plain.Do(authed(http.MethodGet, server.APIRoot+"/jobs/"+up.JobID, "", token))
		if err != nil {
			b.Fatal(err)
		}
		var job struct{ Status string }
		decode(b, r, &job)
		if job.Status == "complete" || job.Status == "failed" {
			return job.Status
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// procStatusKB reads a field (VmHWM, VmRSS) of /proc/<pid>/status in kB.
func procStatusKB(tb testing.TB, pid int, field string) float64 {
	tb.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb
		}
	}
	tb.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// BenchmarkUploadPeakRSS streams a 499 MB upload to the server and reports the server's peak
// resident memory (VmHWM) afterwards: uploads go to disk, so it must stay far below the file size
// (target: under 300 MB).
func BenchmarkUploadPeakRSS(b *testing.B) {
	const size = 499 << 20
	token := newUserTB(b)
	pid := server.cmd.Process.Pid
	for i := 0; i < b.N; i++ {
		res := streamUpload(b, token, "big.geojsonl", func(w io.Writer) error {
			chunk := bytes.Repeat([]byte(`{"type":"Feature","properties":{},"geometry":null}`+"\n"), 1<<14)
			for sent := 0; sent < size; sent += len(chunk) {
				if _, err := w.Write(chunk[:min(len(chunk), size-sent)]); err != nil {
					return err
				}
			}
			return nil
		})
		if res.StatusCode != 201 {
			body, _ := io.ReadAll(res.Body)
			b.Fatalf("upload: %d %s", res.StatusCode, body)
		}
		res.Body.Close()
	}
	b.ReportMetric(procStatusKB(b, pid, "VmHWM")/1024, "peak-rss-MB")
	b.ReportMetric(procStatusKB(b, pid, "VmRSS")/1024, "rss-MB")
}

// streamUpload posts a multipart upload whose file part write produces, through a pipe, so the
// benchmark never holds the file in memory either.
func streamUpload(b *testing.B, token, name string, write func(io.Writer) error) *http.Response {
	b.Helper()
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		fw, err := mw.CreateFormFile("file", name)
		if err == nil {
			err = write(fw)
		}
		if err == nil {
			err = mw.Close()
		}
		pw.CloseWithError(err)
	}()
	req, _ := http.NewRequest(http.MethodPost, server.APIRoot+"/ingest/upload", pr)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := plain.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	return res
}
