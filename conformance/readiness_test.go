package conformance

import (
	"context"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// readyAt answers the status of GET /readyz of the server whose API root is root (0: no answer).
func readyAt(root string) int {
	res, err := http.Get(strings.TrimSuffix(root, "/api") + "/readyz")
	if err != nil {
		return 0
	}
	res.Body.Close()
	return res.StatusCode
}

// TestReadinessAnswers503WhileDraining: on SIGTERM a server first answers readiness 503 for
// SHUTDOWN_DRAIN_DELAY while it still serves every other request (a load balancer takes it out
// before its listener closes), then exits.
func TestReadinessAnswers503WhileDraining(t *testing.T) {
	s, err := Start(context.Background(), server.DBURL, "RATE_LIMIT_ENABLED=false", "SHUTDOWN_DRAIN_DELAY=3s")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	if got := readyAt(s.APIRoot); got != 200 {
		t.Fatalf("readiness of a running server: %d", got)
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	for readyAt(s.APIRoot) != 503 {
		if time.Since(sent) > 2*time.Second {
			t.Fatal("readiness did not answer 503 after SIGTERM")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Still serving: the balancer may send a last request before its health check sees 503.
	if r := callAt(t, http.DefaultClient, s.APIRoot, "GET", "/health", nil); r.Status != 200 {
		t.Fatalf("health while draining: %d %s", r.Status, r.Body)
	}
	select {
	case <-s.exited:
		t.Fatalf("exited %s after SIGTERM, before the drain delay", time.Since(sent))
	default:
	}
	select {
	case <-s.exited:
	case <-time.After(20 * time.Second):
		t.Fatal("the server did not exit after the drain delay")
	}
	if d := time.Since(sent); d < 3*time.Second {
		t.Fatalf("exited %s after SIGTERM, before the drain delay", d)
	}
}
