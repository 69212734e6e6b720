package gate

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"meridian/internal/apperr"
)

func refused(t *testing.T, err error, setting string) {
	t.Helper()
	var ae *apperr.Error
	if !errors.As(err, &ae) || ae.Kind != apperr.KindUnavailable || ae.RetryAfter <= 0 || !strings.Contains(ae.Detail, setting) {
		t.Fatalf("want a 503 with Retry-After naming %s, got %v", setting, err)
	}
}

func TestGateBoundsAllAndEachClient(t *testing.T) {
	ctx := context.Background()
	g := New(Config{What: "previews", Setting: "ALL", PerClientSetting: "EACH", Max: 2, PerClient: 1, Wait: 50 * time.Millisecond, RetryAfter: time.Second})
	a, err := g.Enter(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.Enter(ctx, "a")
	refused(t, err, "EACH")
	b, err := g.Enter(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.Enter(ctx, "c")
	refused(t, err, "ALL")
	// A waiting arrival gets the slot as soon as a holder leaves.
	go func() { time.Sleep(10 * time.Millisecond); a(); a() }()
	c, err := g.Enter(ctx, "c")
	if err != nil {
		t.Fatalf("after a left: %v", err)
	}
	if g.InUse() != 2 {
		t.Fatalf("in use %d, want 2 (a released twice counts once)", g.InUse())
	}
	b()
	c()
	if g.InUse() != 0 || len(g.byClient) != 0 {
		t.Fatalf("in use %d, clients %v after every release", g.InUse(), g.byClient)
	}
}

func TestGateGivesUpWithTheContext(t *testing.T) {
	g := New(Config{What: "exports", Max: 1, Wait: time.Minute})
	hold, _ := g.Enter(context.Background(), "")
	defer hold()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := g.Enter(ctx, ""); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want the context's end", err)
	}
}
