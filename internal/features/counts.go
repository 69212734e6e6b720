package features

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
)

// A filtered page's numberMatched is exact, and counting every match of a million-row table costs
// far more than reading one page of them. Counts keeps each count per dataset version and query,
// so that the pages after the first (and every other client asking the same) pay nothing: a
// version moves on with every change of the dataset's data made through the service, which makes
// a kept count exact for as long as its version is current. The first count of a query runs on a
// connection of its own alongside the page, and concurrent requests for the same count share it.

// CountKey names the data a count is over: the dataset and the version of its data (the record's
// tile version). External marks a table the service does not write alone (a registered table its
// operator may change behind the catalog's back): its counts are kept for externalCountAge only.
type CountKey struct {
	Dataset  uuid.UUID
	Version  int64
	External bool
}

// externalCountAge bounds how stale the count of a table changed outside the service can be.
const externalCountAge = time.Minute

// countsKept bounds the counts a server keeps: each is a few dozen bytes, and a query seldom asked
// twice gains nothing from staying.
const countsKept = 4096

// Counts keeps counts of matches; the zero value is ready.
type Counts struct {
	mu      sync.Mutex
	entries map[[sha256.Size]byte]*countEntry
}

// countEntry is one count, running or done.
type countEntry struct {
	done    chan struct{}
	n       int64
	err     error
	at      time.Time // when it was counted
	keep    bool      // counted at the key's version (so it may be reused)
	waiters int       // requests waiting for it while it runs
	cancel  context.CancelFunc
}

// countDigest names a count: the key and the count statement with its arguments.
func countDigest(k CountKey, sql string, args []any) [sha256.Size]byte {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%d\x00%s", k.Dataset, k.Version, sql)
	for _, a := range args {
		fmt.Fprintf(h, "\x00%T\x00%v", a, a)
	}
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}

// join returns the count of digest: kept, being counted (then the caller waits with the others),
// or started now by run on a context of its own, which lives while any request waits for it.
// run answers the count and whether it counted the key's version.
func (c *Counts) join(ctx context.Context, k CountKey, digest [sha256.Size]byte, run func(context.Context) (int64, bool, error)) *matchCount {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[digest]; ok {
		select {
		case <-e.done:
			if e.err == nil && e.keep && (!k.External || time.Since(e.at) < externalCountAge) {
				n := e.n
				return &matchCount{known: &n}
			}
			delete(c.entries, digest) // failed, stale or too old: count again
		default:
			e.waiters++
			return &matchCount{ctx: ctx, shared: e, release: func() { c.leave(digest, e) }}
		}
	}
	if c.entries == nil {
		c.entries = map[[sha256.Size]byte]*countEntry{}
	}
	if len(c.entries) >= countsKept {
		c.dropDone()
	}
	// The count outlives the request that started it when others wait for it; it stops when
	// the last one leaves (leave), and the pool's statement_timeout bounds it in any case.
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	e := &countEntry{done: make(chan struct{}), waiters: 1, cancel: cancel}
	c.entries[digest] = e
	go func() {
		n, current, err := run(cctx)
		cancel()
		c.mu.Lock()
		e.n, e.err, e.keep, e.at = n, err, current, time.Now()
		if err != nil || !current {
			if c.entries[digest] == e {
				delete(c.entries, digest)
			}
		}
		c.mu.Unlock()
		close(e.done)
	}()
	return &matchCount{ctx: ctx, shared: e, release: func() { c.leave(digest, e) }}
}

// leave is a request done with a count: the last one to leave a running count stops it.
func (c *Counts) leave(digest [sha256.Size]byte, e *countEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e.waiters--
	select {
	case <-e.done:
	default:
		if e.waiters == 0 {
			e.cancel()
			if c.entries[digest] == e {
				delete(c.entries, digest)
			}
		}
	}
}

// dropDone forgets every finished count (the map is full: the running ones stay).
func (c *Counts) dropDone() {
	for d, e := range c.entries {
		select {
		case <-e.done:
			delete(c.entries, d)
		default:
		}
	}
}
