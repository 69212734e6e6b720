package conformance

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// benchRasterMB is the size of the generated GeoTIFF (BENCH_RASTER_MB overrides the 1024).
func benchRasterMB() int {
	if n, err := strconv.Atoi(os.Getenv("BENCH_RASTER_MB")); err == nil && n > 0 {
		return n
	}
	return 1024
}

// benchRaster is an uncompressed 3-band 8-bit GeoTIFF of about mb megabytes in UTM 33N, made
// once from a small random seed (bilinear upsampling: smooth, image-like content that compresses
// as imagery does) and kept under .data/bench so later runs reuse it.
func benchRaster(tb testing.TB, mb int) string {
	tb.Helper()
	root, err := moduleRoot()
	if err != nil {
		tb.Fatal(err)
	}
	dir := filepath.Join(root, ".data", "bench")
	path := filepath.Join(dir, fmt.Sprintf("raster-%dmb.tif", mb))
	if _, err := os.Stat(path); err == nil {
		return path
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	side := int(sqrtInt(int64(mb) << 20 / 3))
	seed := filepath.Join(tb.TempDir(), "seed.asc")
	var b strings.Builder
	fmt.Fprintf(&b, "ncols 400\nnrows 400\nxllcorner 500000\nyllcorner 5000000\ncellsize %g\n", float64(side)*0.5/400)
	r := rand.New(rand.NewPCG(7, 29))
	for i := 0; i < 400*400; i++ {
		fmt.Fprintf(&b, "%d ", r.IntN(256))
		if i%400 == 399 {
			b.WriteString("\n")
		}
	}
	if err := os.WriteFile(seed, []byte(b.String()), 0o644); err != nil {
		tb.Fatal(err)
	}
	tmp := path + ".tmp.tif"
	out, err := exec.Command("gdal_translate", "-q", "-ot", "Byte", "-a_srs", "EPSG:32633", "-b", "1", "-b", "1", "-b", "1",
		"-outsize", strconv.Itoa(side), strconv.Itoa(side), "-r", "bilinear", "-co", "TILED=YES", "-co", "BIGTIFF=YES", seed, tmp).CombinedOutput()
	if err != nil {
		tb.Fatalf("making the benchmark raster: %v %s", err, out)
	}
	if err := os.Rename(tmp, path); err != nil {
		tb.Fatal(err)
	}
	return path
}

func sqrtInt(n int64) int64 {
	x := int64(1)
	for x*x < n {
		x++
	}
	return x
}

// BenchmarkRasterIngestVsGdalTranslate converts the same generated GeoTIFF (about 1 GB) twice per
// iteration, side by side: a bare `gdal_translate -of COG` with the options Meridian uses (and
// the same GDAL_CACHEMAX), and Meridian end to end (streamed multipart upload, commit, the River
// job: conversion, statistics, storing, the record). It reports both and their ratio (target: at
// most 1.3), and Meridian's job alone (commit to complete).
func BenchmarkRasterIngestVsGdalTranslate(b *testing.B) {
	mb := benchRasterMB()
	path := benchRaster(b, mb)
	ctx := context.Background()
	dbURL, err := CreateDatabase(ctx, adminDBURL)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = DropDatabase(ctx, adminDBURL, dbURL) }()
	big := strconv.Itoa(4 * (mb + 100) << 20)
	s, err := Start(ctx, dbURL, "MAX_UPLOAD_BYTES="+big, "STAGING_QUOTA_PER_USER="+big, "STAGING_QUOTA_TOTAL="+big,
		"RATE_LIMIT_ENABLED=false", "GDAL_CPU_LIMIT=2h")
	if err != nil {
		b.Fatal(err)
	}
	defer s.Stop()
	token := benchAdmin(b, s.APIRoot)
	settingsBody := fmt.Sprintf(`{"settings":{"uploads.max_size_mb":%d}}`, 4*(mb+100))
	if res, err := plain.Do(authed(http.MethodPut, s.APIRoot+"/settings/", settingsBody, token)); err != nil || res.StatusCode != 200 {
		b.Fatalf("raising the upload limit: %v %v", err, res)
	}
	out := filepath.Join(b.TempDir(), "bare.tif")
	var bare, full, job time.Duration
	for i := 0; i < b.N; i++ {
		_ = os.Remove(out)
		start := time.Now()
		cmd := exec.Command("gdal_translate", "-q", "-of", "COG", "-co", "TILING_SCHEME=GoogleMapsCompatible", "-co", "BLOCKSIZE=256",
			"-co", "COMPRESS=ZSTD", "-co", "PREDICTOR=YES", "-co", "RESAMPLING=bilinear", "-co", "OVERVIEWS=IGNORE_EXISTING",
			"-co", "NUM_THREADS=ALL_CPUS", path, out)
		cmd.Env = append(os.Environ(), "GDAL_CACHEMAX=64")
		if o, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("gdal_translate: %v %s", err, o)
		}
		bare += time.Since(start)

		start = time.Now()
		status, conv := benchRasterImport(b, s.APIRoot, token, path)
		full += time.Since(start)
		job += conv
		if status != "complete" {
			b.Fatalf("raster import ended %s\n%s", status, tail(s.Logs(), 3000))
		}
	}
	b.ReportMetric(float64(mb), "MB")
	b.ReportMetric(bare.Seconds()/float64(b.N), "gdal_translate-s/op")
	b.ReportMetric(full.Seconds()/float64(b.N), "meridian-s/op")
	b.ReportMetric(job.Seconds()/float64(b.N), "job-s/op")
	b.ReportMetric(full.Seconds()/bare.Seconds(), "ratio")
}

// benchAdmin signs in as the admin of the server at root.
func benchAdmin(tb testing.TB, root string) string {
	tb.Helper()
	res, err := plain.PostForm(root+"/auth/login", url.Values{"username": {"admin"}, "password": {AdminPassword}})
	if err != nil {
		tb.Fatal(err)
	}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	decode(tb, res, &tok)
	return tok.AccessToken
}

// benchRasterImport streams the file as a multipart upload, commits and waits; it returns the
// job's end and the time from the commit to it.
func benchRasterImport(b *testing.B, root, token, path string) (string, time.Duration) {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		fw, err := mw.CreateFormFile("file", "bench.tif")
		if err == nil {
			var f *os.File
			if f, err = os.Open(path); err == nil {
				_, err = io.Copy(fw, f)
				f.Close()
			}
		}
		if err == nil {
			err = mw.Close()
		}
		pw.CloseWithError(err)
	}()
	req, _ := http.NewRequest(http.MethodPost, root+"/ingest/upload", pr)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := plain.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	var up struct {
		JobID string `json:"job_id"`
	}
	decode(b, res, &up)
	if up.JobID == "" {
		b.Fatalf("upload answered %d", res.StatusCode)
	}
	committed := time.Now()
	cres, err := plain.Do(authed(http.MethodPost, root+"/ingest/commit/"+up.JobID, `{}`, token))
	if err != nil {
		b.Fatal(err)
	}
	cres.Body.Close()
	for {
		r, err := plain.Do(authed(http.MethodGet, root+"/jobs/"+up.JobID, "", token))
		if err != nil {
			b.Fatal(err)
		}
		var job struct{ Status, ErrorMessage string }
		decode(b, r, &job)
		if job.Status == "complete" || job.Status == "failed" {
			if job.Status == "failed" {
				b.Logf("job failed: %s", job.ErrorMessage)
			}
			return job.Status, time.Since(committed)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
