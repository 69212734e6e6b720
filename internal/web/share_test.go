package web

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"meridian/internal/apperr"
)

// One client at its share waits, then is turned away with 503; another client goes at once; a
// client whose request ends lets its next one in.
func TestClientShare(t *testing.T) {
	share := NewClientShare(2, 100*time.Millisecond)
	release := make(chan struct{})
	started := make(chan struct{}, 8)
	slow := share.Middleware(func(c echo.Context) error {
		started <- struct{}{}
		<-release
		return nil
	})
	fast := share.Middleware(func(c echo.Context) error { return nil })
	e := echo.New()
	from := func(ip string) echo.Context {
		req := httptest.NewRequest(http.MethodGet, "/api/collections", nil)
		req.RemoteAddr = ip + ":4000"
		return e.NewContext(req, httptest.NewRecorder())
	}
	results := make(chan error, 8)
	for range 2 {
		go func() { results <- slow(from("192.0.2.1")) }()
		<-started
	}
	// The client's third request waits its turn and is then refused with Retry-After.
	t0 := time.Now()
	err := fast(from("192.0.2.1"))
	var ae *apperr.Error
	if !errorsAs(err, &ae) || ae.Kind != apperr.KindUnavailable || ae.RetryAfter <= 0 || time.Since(t0) < 100*time.Millisecond {
		t.Fatalf("third request of a client at its share: %v after %s", err, time.Since(t0))
	}
	// Another client is not held back.
	if err := fast(from("192.0.2.2")); err != nil {
		t.Fatalf("another client: %v", err)
	}
	// A waiting request goes as soon as one of the client's own ends.
	waiting := make(chan error, 1)
	go func() { waiting <- fast(from("192.0.2.1")) }()
	time.Sleep(20 * time.Millisecond)
	release <- struct{}{}
	if err := <-waiting; err != nil {
		t.Fatalf("a waiting request after one ended: %v", err)
	}
	close(release)
	for range 2 {
		if err := <-results; err != nil {
			t.Fatal(err)
		}
	}
	share.mu.Lock()
	defer share.mu.Unlock()
	if len(share.in) != 0 {
		t.Fatalf("idle clients kept: %d", len(share.in))
	}
}
