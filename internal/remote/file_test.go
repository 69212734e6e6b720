package remote

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"meridian/internal/apperr"
)

// A File reads a remote file by ranges under the policy: its length from a first-byte GET,
// each ReadAt and Range one ranged GET whose answer is checked (206, the span asked, the same
// length and ETag); a server that answers whole files, a file that changed, and a private
// address without REMOTE_ALLOW_PRIVATE are errors, the credential goes to its origin only.
func TestFileReadsByRange(t *testing.T) {
	data := make([]byte, 50000)
	for i := range data {
		data[i] = byte(i)
	}
	var mu sync.Mutex
	etag, ranges, creds := `"v1"`, []string{}, []string{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		ranges, creds = append(ranges, r.Header.Get("Range")), append(creds, r.Header.Get("X-Key"))
		tag := etag
		mu.Unlock()
		if r.URL.Path == "/whole.tif" {
			_, _ = w.Write(data)
			return
		}
		w.Header().Set("ETag", tag)
		http.ServeContent(w, r, "", time.Unix(1700000000, 0), bytes.NewReader(data))
	}))
	defer srv.Close()
	ctx := context.Background()

	if _, err := New(policy(Policy{})).OpenFile(ctx, srv.URL+"/f.tif", nil); !errors.Is(err, ErrRefused) {
		t.Fatalf("loopback by default: %v", err)
	}
	c := New(policy(Policy{AllowPrivate: true}))
	cred := &Credential{Origin: OriginOf(srv.URL), Header: "X-Key", Value: "k"}
	f, err := c.OpenFile(ctx, srv.URL+"/f.tif", cred)
	if err != nil {
		t.Fatal(err)
	}
	if f.Size() != 50000 || f.ETag() != `"v1"` || f.ModTime().Unix() != 1700000000 {
		t.Fatalf("opened: %d %s %v", f.Size(), f.ETag(), f.ModTime())
	}
	p := make([]byte, 1000)
	if n, err := f.ReadAt(p, 20000); n != 1000 || err != nil || !bytes.Equal(p, data[20000:21000]) {
		t.Fatalf("ReadAt: %d %v", n, err)
	}
	if n, err := f.ReadAt(p, 49500); n != 500 || err != io.EOF || !bytes.Equal(p[:500], data[49500:]) {
		t.Fatalf("ReadAt at the end: %d %v", n, err)
	}
	body, err := f.Range(ctx, 100, 30000)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(body)
	body.Close()
	if err != nil || !bytes.Equal(got, data[100:30100]) {
		t.Fatalf("Range: %d bytes, %v", len(got), err)
	}
	mu.Lock()
	if want := []string{"bytes=0-0", "bytes=20000-20999", "bytes=49500-49999", "bytes=100-30099"}; len(ranges) != len(want) {
		t.Errorf("requests %v, want %v", ranges, want)
	} else {
		for i := range want {
			if ranges[i] != want[i] || creds[i] != "k" {
				t.Errorf("request %d: %s with %q, want %s with the credential", i, ranges[i], creds[i], want[i])
			}
		}
	}
	etag = `"v2"`
	mu.Unlock()
	if _, err := f.ReadAt(p, 0); !errors.Is(err, ErrChanged) || apperr.KindOf(err) != apperr.KindUpstream {
		t.Fatalf("a changed file: %v", err)
	}
	if _, err := c.OpenFile(ctx, srv.URL+"/whole.tif", nil); !errors.Is(err, ErrNoRanges) || apperr.KindOf(err) != apperr.KindUpstream {
		t.Fatalf("a server without ranges: %v", err)
	}
	// Another origin never gets the credential.
	other := &Credential{Origin: "http://elsewhere.example:80", Header: "X-Key", Value: "k"}
	if _, err := c.OpenFile(ctx, srv.URL+"/f.tif", other); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if last := creds[len(creds)-1]; last != "" {
		t.Fatalf("a credential for another origin was sent: %q", last)
	}
}
