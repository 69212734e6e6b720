package tiles

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestIssueRoundsExpiry(t *testing.T) {
	s := NewSigner("a-secret-of-sufficient-length-for-tests")
	cases := []struct {
		now     int64
		ttl     time.Duration
		wantExp int64
	}{
		{now: 1000, ttl: time.Hour, wantExp: 5400},            // 4600 → 5400
		{now: 899, ttl: 0, wantExp: 1800},                     // 899 → 900 is 1 s away: one more step
		{now: 1800, ttl: 0, wantExp: 2700},                    // on a boundary: at least a minute away
		{now: 1000, ttl: 100 * time.Second, wantExp: 1800},    // 1100 → 1800
		{now: 1739, ttl: 100 * time.Second, wantExp: 2700},    // 1839 → 2700
		{now: 1699, ttl: 100 * time.Second, wantExp: 1800},    // 1799 → 1800, 101 s away
		{now: 1741, ttl: 0 * time.Second, wantExp: 2700},      // 1741 → 1800 is 59 s away
		{now: 1740, ttl: 0 * time.Second, wantExp: 1800},      // exactly 60 s away
		{now: 0, ttl: 900 * time.Second, wantExp: 900},        // already a boundary
		{now: 1, ttl: 900 * time.Second, wantExp: 1800},       // just past one
		{now: 10000, ttl: 3600 * time.Second, wantExp: 14400}, // 13600 → 14400
	}
	for _, c := range cases {
		tok := s.Issue("roads", c.ttl, time.Unix(c.now, 0))
		if tok.Exp != c.wantExp || tok.ExpiresIn != c.wantExp-c.now || tok.Scope != "roads" {
			t.Errorf("now %d ttl %s: exp %d expires_in %d, want exp %d", c.now, c.ttl, tok.Exp, tok.ExpiresIn, c.wantExp)
		}
	}
}

// Templates issued after a dataset's audience narrowed lie above its floor, so the ones issued
// before (at or below it) can be refused without refusing these.
func TestIssueAboveFloor(t *testing.T) {
	s := NewSigner("a-secret-of-sufficient-length-for-tests")
	cases := []struct {
		now, floor, wantExp int64
	}{
		{now: 1000, floor: 0, wantExp: 5400},    // no narrowing: as Issue
		{now: 1000, floor: 5400, wantExp: 6300}, // the floor is Issue's own exp: the next boundary
		{now: 1000, floor: 4500, wantExp: 5400}, // Issue's exp is above the floor already
		{now: 1000, floor: 7200, wantExp: 8100}, // floor moved twice in the quarter: above it still
	}
	for _, c := range cases {
		tok := s.IssueAbove("roads", time.Hour, time.Unix(c.now, 0), c.floor)
		if tok.Exp != c.wantExp || tok.Exp <= c.floor || tok.ExpiresIn != tok.Exp-c.now || tok.Sig != s.sign("roads", tok.Exp) {
			t.Errorf("now %d floor %d: %+v, want exp %d", c.now, c.floor, tok, c.wantExp)
		}
	}
}

func TestSignatureValidity(t *testing.T) {
	s := NewSigner("a-secret-of-sufficient-length-for-tests")
	now := time.Unix(100000, 0)
	tok := s.Issue("roads", time.Hour, now)
	other := NewSigner("another-secret-of-sufficient-length")
	cases := []struct {
		name  string
		scope string
		sig   string
		exp   int64
		at    time.Time
		want  bool
	}{
		{"as issued", "roads", tok.Sig, tok.Exp, now, true},
		{"other scope", "rivers", tok.Sig, tok.Exp, now, false},
		{"later expiry", "roads", tok.Sig, tok.Exp + 900, now, false},
		{"expired", "roads", tok.Sig, tok.Exp, time.Unix(tok.Exp, 0), false},
		{"uppercase hex", "roads", fmt.Sprintf("%X", tok.Sig), tok.Exp, now, false},
		{"other secret", "roads", other.Issue("roads", time.Hour, now).Sig, tok.Exp, now, false},
		{"empty", "roads", "", tok.Exp, now, false},
	}
	for _, c := range cases {
		if got := s.Valid(c.scope, c.sig, c.exp, c.at); got != c.want {
			t.Errorf("%s: valid %v, want %v", c.name, got, c.want)
		}
	}
}

func TestCacheStaysWithinItsBound(t *testing.T) {
	body := make([]byte, 1000)
	per := cost("k00", body)
	c := NewCache(10 * per)
	for i := range 25 {
		c.Put(fmt.Sprintf("k%02d", i), body)
		c.Get("k00") // k00 keeps being used: it stays
	}
	size, n := c.Stats()
	if size > 10*per || n != 10 {
		t.Fatalf("size %d for %d tiles, bound %d", size, n, 10*per)
	}
	if _, ok := c.Get("k00"); !ok {
		t.Fatal("the most used tile was evicted")
	}
	if _, ok := c.Get("k01"); ok {
		t.Fatal("an old unused tile survived")
	}
	if _, ok := c.Get("k24"); !ok {
		t.Fatal("the newest tile was evicted")
	}
	c.Put("huge", make([]byte, 20*per))
	if _, ok := c.Get("huge"); ok {
		t.Fatal("a tile larger than the bound was kept")
	}
	c.Resize(3 * per)
	if size, n := c.Stats(); size > 3*per || n != 3 {
		t.Fatalf("after resize: %d bytes, %d tiles", size, n)
	}
}

func TestFillRendersOnceForConcurrentRequests(t *testing.T) {
	c := NewCache(1 << 20)
	var renders atomic.Int32
	release := make(chan struct{})
	render := func(ctx context.Context) ([]byte, error) {
		renders.Add(1)
		<-release
		return []byte("tile"), nil
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if b, err := c.Fill(context.Background(), "k", render); err != nil || string(b) != "tile" {
				t.Errorf("fill: %q %v", b, err)
			}
		}()
	}
	time.Sleep(50 * time.Millisecond) // let all eight wait on the one flight
	close(release)
	wg.Wait()
	if n := renders.Load(); n != 1 {
		t.Fatalf("rendered %d times", n)
	}
	if _, err := c.Fill(context.Background(), "k", func(context.Context) ([]byte, error) { return nil, errors.New("not cached") }); err != nil {
		t.Fatal("the rendered tile was not kept")
	}
}

func TestFillCancelsOnlyWhenEveryWaiterHasGone(t *testing.T) {
	c := NewCache(1 << 20)
	canceled := make(chan struct{})
	render := func(ctx context.Context) ([]byte, error) {
		<-ctx.Done()
		close(canceled)
		return nil, ctx.Err()
	}
	first, stopFirst := context.WithCancel(context.Background())
	second, stopSecond := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, ctx := range []context.Context{first, second} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = c.Fill(ctx, "k", render)
		}()
	}
	time.Sleep(50 * time.Millisecond)
	stopFirst()
	select {
	case <-canceled:
		t.Fatal("the query was cancelled while a waiter remained")
	case <-time.After(100 * time.Millisecond):
	}
	stopSecond()
	select {
	case <-canceled:
	case <-time.After(2 * time.Second):
		t.Fatal("the query went on after every waiter had gone")
	}
	wg.Wait()
}
