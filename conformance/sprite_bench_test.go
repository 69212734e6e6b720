package conformance

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// BenchmarkSprite measures what the icon sprite costs the anonymous readers of map styles
// (issue 28, item 13): BENCH_ICONS (default 150) raster icons of 512x512 pixels are uploaded by
// the admin, then it times the last upload, the first anonymous sprite sheet after it, 8
// anonymous sheets asked at once right after another upload (the slowest of them), and
// anonymous sheets asked one after another once nothing changes. Run with -benchtime=1x.
func BenchmarkSprite(b *testing.B) {
	n := 150
	if v, err := strconv.Atoi(os.Getenv("BENCH_ICONS")); err == nil && v > 0 {
		n = v
	}
	token, err := ogcAdminToken()
	if err != nil {
		b.Fatal(err)
	}
	// Room for the icons where the server bounds them (a server without the settings refuses
	// them, which changes nothing here).
	_ = putSettingsAt(server.APIRoot, map[string]any{"map_icons.max_per_user": 10000, "map_icons.max_total": 10000,
		"map_icons.max_pixels_per_user": 1 << 30, "map_icons.max_pixels_total": 1 << 30})
	seed := time.Now().UnixNano()
	upload := func(i int) time.Duration {
		start := time.Now()
		if status := benchIcon(b, token, spriteIcon(b, seed, i)); status != 201 {
			b.Fatalf("upload icon %d: %d", i, status)
		}
		return time.Since(start)
	}
	sheet := func() time.Duration {
		start := time.Now()
		res, err := plain.Get(server.APIRoot + "/maps/sprites/service.png")
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != 200 {
			b.Fatalf("sprite sheet: %d", res.StatusCode)
		}
		return time.Since(start)
	}
	for i := range n - 2 {
		upload(i)
	}
	last := upload(n - 2)
	first := sheet()
	upload(n - 1)
	var mu sync.Mutex
	var burst []time.Duration
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			d := sheet()
			mu.Lock()
			burst = append(burst, d)
			mu.Unlock()
		})
	}
	wg.Wait()
	var steady []time.Duration
	for range 20 {
		steady = append(steady, sheet())
	}
	slices.Sort(steady)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(float64(n), "icons")
	b.ReportMetric(ms(last), "upload-ms")
	b.ReportMetric(ms(first), "first-sheet-after-upload-ms")
	b.ReportMetric(ms(slices.Max(burst)), "burst-of-8-after-upload-max-ms")
	b.ReportMetric(ms(steady[len(steady)/2]), "steady-sheet-p50-ms")
	b.ReportMetric(procStatusKB(b, server.cmd.Process.Pid, "VmHWM")/1024, "server-peak-rss-MiB")
}

// spriteIcon is a distinct 512x512 PNG: a few lines placed after i, so every upload is new.
func spriteIcon(tb testing.TB, seed int64, i int) []byte {
	tb.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, 512, 512))
	for x := range 512 {
		img.Set(x, i%512, color.NRGBA{R: uint8(seed), G: uint8(i), B: uint8(i >> 8), A: 255})
		img.Set((i*7+int(seed))%512, x, color.NRGBA{R: 10, G: 200, B: uint8(seed >> 8), A: 255})
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

func benchIcon(tb testing.TB, token string, data []byte) int {
	tb.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("file", "icon.png")
	_, _ = fw.Write(data)
	_ = mw.Close()
	req, _ := http.NewRequest(http.MethodPost, server.APIRoot+"/maps/icons", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := plain.Do(req)
	if err != nil {
		tb.Fatal(fmt.Errorf("upload icon: %w", err))
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}
