package rangeproxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// memFile is a remote file held in memory that counts the bytes read from it.
type memFile struct {
	data []byte
	mu   sync.Mutex
	read int64
}

func (m *memFile) Size() int64 { return int64(len(m.data)) }

func (m *memFile) Range(_ context.Context, off, n int64) (io.ReadCloser, error) {
	m.mu.Lock()
	m.read += n
	m.mu.Unlock()
	return io.NopCloser(bytes.NewReader(m.data[off : off+n])), nil
}

func (m *memFile) bytesRead() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.read
}

func get(t *testing.T, method, url, rng string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rng != "" {
		req.Header.Set("Range", rng)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, b
}

// A grant answers HEAD and ranges of its file, on loopback only, and no more bytes than its
// budget: a read past it is refused (403) before anything is fetched, and the grant's error
// says so. Closed and expired grants, and paths never handed out, are 404.
func TestGrantBudgetAndLifetime(t *testing.T) {
	p, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if !strings.HasPrefix(p.Addr(), "127.0.0.1:") {
		t.Fatalf("the proxy listens on %s, not loopback", p.Addr())
	}
	data := make([]byte, 10000)
	for i := range data {
		data[i] = byte(i * 7)
	}
	f := &memFile{data: data}
	g, err := p.Issue(f, 3000, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(g.VSIPath(), "/vsicurl/http://127.0.0.1:") || !strings.HasSuffix(g.URL(), ".tif") {
		t.Fatalf("grant path %s", g.VSIPath())
	}

	if res, _ := get(t, http.MethodHead, g.URL(), ""); res.StatusCode != 200 || res.ContentLength != 10000 ||
		res.Header.Get("Accept-Ranges") != "bytes" {
		t.Fatalf("HEAD: %d %d", res.StatusCode, res.ContentLength)
	}
	res, body := get(t, http.MethodGet, g.URL(), "bytes=100-2099")
	if res.StatusCode != 206 || res.Header.Get("Content-Range") != "bytes 100-2099/10000" || !bytes.Equal(body, data[100:2100]) {
		t.Fatalf("a range within the budget: %d %q, %d bytes", res.StatusCode, res.Header.Get("Content-Range"), len(body))
	}
	if res, _ := get(t, http.MethodGet, g.URL(), "bytes=20000-"); res.StatusCode != 416 || res.Header.Get("Content-Range") != "bytes */10000" {
		t.Fatalf("a range past the end: %d", res.StatusCode)
	}
	if res, _ := get(t, http.MethodGet, g.URL(), "bytes=0-1,5-6"); res.StatusCode != 400 {
		t.Fatalf("several ranges: %d", res.StatusCode)
	}
	// 1000 bytes of the budget are left: 1500 more are refused, and not fetched.
	if res, _ := get(t, http.MethodGet, g.URL(), "bytes=3000-4499"); res.StatusCode != 403 || !errors.Is(g.Err(), ErrBudget) {
		t.Fatalf("a range beyond the budget: %d, grant error %v", res.StatusCode, g.Err())
	}
	if f.bytesRead() != 2000 {
		t.Fatalf("%d bytes fetched, want the 2000 of the one range served", f.bytesRead())
	}
	// The whole file (a GET without Range) is a range like any other.
	if res, _ := get(t, http.MethodGet, g.URL(), ""); res.StatusCode != 403 {
		t.Fatalf("the whole file beyond the budget: %d", res.StatusCode)
	}
	if res, body := get(t, http.MethodGet, g.URL(), "bytes=-500"); res.StatusCode != 206 || !bytes.Equal(body, data[9500:]) {
		t.Fatalf("the last 500 bytes, within what is left: %d", res.StatusCode)
	}

	g.Close()
	if res, _ := get(t, http.MethodGet, g.URL(), "bytes=0-9"); res.StatusCode != 404 {
		t.Fatalf("a closed grant: %d", res.StatusCode)
	}
	short, err := p.Issue(f, 1<<20, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	if res, _ := get(t, http.MethodGet, short.URL(), "bytes=0-9"); res.StatusCode != 404 {
		t.Fatalf("an expired grant: %d", res.StatusCode)
	}
	for _, path := range []string{"/r/" + strings.Repeat("A", 32) + ".tif", "/r/", "/", "/r/x.ovr"} {
		if res, _ := get(t, http.MethodGet, "http://"+p.Addr()+path, ""); res.StatusCode != 404 {
			t.Errorf("%s: %d", path, res.StatusCode)
		}
	}
}
