package web

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"meridian/internal/config"
)

// TestServeDrainsInFlightRequests: a shutdown that starts while a request is being served lets that
// request finish before Serve returns.
func TestServeDrainsInFlightRequests(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cfg := config.Config{ListenAddr: addr, ShutdownTimeout: 10 * time.Second, RateLimitEnabled: false}
	e := New(cfg, discardLogger())
	started := make(chan struct{})
	e.GET("/slow", func(c echo.Context) error {
		close(started)
		time.Sleep(500 * time.Millisecond)
		return c.String(http.StatusOK, "finished")
	})
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, e, cfg, discardLogger()) }()

	var res *http.Response
	for i := 0; i < 100; i++ { // wait until the listener is up
		if res, err = http.Get("http://" + addr + "/none"); err == nil {
			res.Body.Close()
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	got := make(chan string, 1)
	go func() {
		res, err := http.Get("http://" + addr + "/slow")
		if err != nil {
			got <- "error: " + err.Error()
			return
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		got <- fmt.Sprintf("%d %s", res.StatusCode, b)
	}()
	<-started
	cancel() // shutdown begins while /slow is in flight
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if r := <-got; r != "200 finished" {
		t.Fatalf("in-flight request got %q, want it to finish", r)
	}
	if _, err := http.Get("http://" + addr + "/slow"); err == nil {
		t.Fatal("server still accepts requests after shutdown")
	}
}

func TestRecoverAnswersProblem(t *testing.T) {
	e := New(config.Config{}, discardLogger())
	e.GET("/panic", func(c echo.Context) error { panic("kaboom") })
	srv := &http.Server{Handler: e}
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	go srv.Serve(l)
	defer srv.Close()
	res, err := http.Get("http://" + l.Addr().String() + "/panic")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 500 || res.Header.Get("Content-Type") != ProblemMediaType || len(b) == 0 {
		t.Fatalf("panic answered %d %q %s", res.StatusCode, res.Header.Get("Content-Type"), b)
	}
	if strings.Contains(string(b), "kaboom") {
		t.Fatalf("panic value leaked to the client: %s", b)
	}
}
