package ratelimit

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"meridian/internal/testdb"
	"meridian/store"
)

type never struct{}

func (never) Allow(string) (bool, time.Duration) { return false, time.Hour }

// Two limiters over one database (two replicas) share each key's bucket: a burst of 5 is five
// takes in all, concurrent or not, and the refusal says when the next token comes.
func TestSharedBucketAcrossLimiters(t *testing.T) {
	q := store.New(testdb.New(t))
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a := New(q, "login", 5.0/60, 5, never{}, log)
	b := New(q, "login", 5.0/60, 5, never{}, log)
	ctx := context.Background()
	var granted atomic.Int32
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := a
			if i%2 == 1 {
				l = b
			}
			if ok, _ := l.Take(ctx, "10.0.0.1"); ok {
				granted.Add(1)
			}
		}()
	}
	wg.Wait()
	if n := granted.Load(); n != 5 {
		t.Fatalf("%d of 12 concurrent takes from two limiters granted, want 5 (the burst)", n)
	}
	ok, wait := b.Take(ctx, "10.0.0.1")
	if ok || wait < 5*time.Second || wait > 12*time.Second {
		t.Fatalf("after the burst: %v, wait %s; want refused, about 12 s (one token at 5 a minute)", ok, wait)
	}
	if ok, _ := a.Take(ctx, "10.0.0.2"); !ok {
		t.Fatal("another address has a bucket of its own")
	}
	if ok, _ := New(q, "register", 5.0/60, 5, never{}, log).Take(ctx, "10.0.0.1"); !ok {
		t.Fatal("another operation has a bucket of its own")
	}
}
