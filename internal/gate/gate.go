// Package gate bounds how much of one kind of costly work (GDAL previews, exports, image decodes)
// runs at once, in all and per client, so that one caller cannot take what every other caller
// needs: a request that finds no room within a short wait is answered 503 with Retry-After,
// rather than queued behind work that may take minutes.
package gate

import (
	"context"
	"fmt"
	"sync"
	"time"

	"meridian/internal/apperr"
)

// Gate admits at most Max holders at once, and at most PerClient of them for one client.
type Gate struct {
	what       string        // the work, as problems name it ("previews")
	setting    string        // the setting of Max, as problems name it
	perSetting string        // the setting of PerClient
	max, per   int           // bounds
	wait       time.Duration // how long an arrival waits for room
	retry      time.Duration // Retry-After of a refusal

	mu       sync.Mutex
	n        int
	byClient map[string]int
	changed  chan struct{} // closed (and replaced) whenever a holder leaves
}

// Config describes a gate.
type Config struct {
	What, Setting, PerClientSetting string
	Max, PerClient                  int // PerClient 0: Max
	Wait, RetryAfter                time.Duration
}

// New returns a gate for c.
func New(c Config) *Gate {
	per := c.PerClient
	if per <= 0 || per > c.Max {
		per = c.Max
	}
	return &Gate{what: c.What, setting: c.Setting, perSetting: c.PerClientSetting, max: max(1, c.Max), per: per,
		wait: c.Wait, retry: max(time.Second, c.RetryAfter), byClient: map[string]int{}, changed: make(chan struct{})}
}

// Enter admits client, waiting up to the gate's wait for room. release must be called once the
// work is done (it may be called more than once). Without room the error is a 503 problem with
// Retry-After naming the bound that was full.
func (g *Gate) Enter(ctx context.Context, client string) (release func(), err error) {
	timer := time.NewTimer(g.wait)
	defer timer.Stop()
	for {
		g.mu.Lock()
		mine := g.byClient[client]
		if g.n < g.max && mine < g.per {
			g.n++
			g.byClient[client] = mine + 1
			g.mu.Unlock()
			var once sync.Once
			return func() { once.Do(func() { g.leave(client) }) }, nil
		}
		changed := g.changed
		g.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timer.C:
			return nil, g.refusal(mine >= g.per)
		}
	}
}

func (g *Gate) leave(client string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n--
	if g.byClient[client] <= 1 {
		delete(g.byClient, client)
	} else {
		g.byClient[client]--
	}
	close(g.changed)
	g.changed = make(chan struct{})
}

func (g *Gate) refusal(client bool) error {
	e := &apperr.Error{Kind: apperr.KindUnavailable, Title: "Service Unavailable", RetryAfter: g.retry}
	if client {
		e.Detail = fmt.Sprintf("you already have as many %s in progress as one client may (%d, %s); retry when one has finished",
			g.what, g.per, g.perSetting)
	} else {
		e.Detail = fmt.Sprintf("the server is running as many %s as it allows at once (%d, %s); retry in a few seconds",
			g.what, g.max, g.setting)
	}
	return e
}

// InUse reports how many holders the gate has, for tests and logs.
func (g *Gate) InUse() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n
}
