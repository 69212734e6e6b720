// Package ratelimit keeps the token buckets that every replica must share in PostgreSQL: the
// limits on sign-in and account operations, which stop guessing only if N replicas behind a
// balancer allow what one server allows. Limits that protect a replica's own resources (its CPU,
// its GDAL processes) stay in each process (web.RateLimiter).
package ratelimit

import (
	"context"
	"log/slog"
	"math"
	"sync"
	"time"

	"meridian/store"
)

// Local is the per-process limiter used when the database cannot answer (web.RateLimiter).
type Local interface {
	Allow(key string) (bool, time.Duration)
}

// Shared is one operation's limit, perSecond on average with bursts of burst per key, counted in
// catalog.rate_buckets.
type Shared struct {
	q         *store.Queries
	scope     string
	perSecond float64
	burst     int
	local     Local
	log       *slog.Logger

	mu    sync.Mutex
	swept time.Time
}

// New is the shared limit of scope (an operationId); local answers while the database does not,
// so that an outage of the store neither opens the operation nor closes it.
func New(q *store.Queries, scope string, perSecond float64, burst int, local Local, log *slog.Logger) *Shared {
	return &Shared{q: q, scope: scope, perSecond: perSecond, burst: burst, local: local, log: log}
}

// Take takes a token of key's bucket, or reports how long until there is one.
func (s *Shared) Take(ctx context.Context, key string) (bool, time.Duration) {
	s.sweep(ctx)
	r, err := s.q.TakeRateToken(ctx, store.TakeRateTokenParams{Scope: s.scope, Key: key, Burst: float64(s.burst), PerSecond: s.perSecond})
	if err != nil {
		s.log.Warn("shared rate limit unavailable; this replica's own limit applies", "scope", s.scope, "err", err)
		return s.local.Allow(key)
	}
	if r.Granted {
		return true, 0
	}
	wait := time.Duration(math.Ceil((1 - r.Tokens) / s.perSecond * float64(time.Second)))
	return false, max(wait, time.Second)
}

// sweep removes, at most once a minute per process, the buckets that have filled up again.
func (s *Shared) sweep(ctx context.Context) {
	s.mu.Lock()
	due := time.Since(s.swept) > time.Minute
	if due {
		s.swept = time.Now()
	}
	s.mu.Unlock()
	if !due {
		return
	}
	full := float64(s.burst) / s.perSecond
	if err := s.q.SweepRateBuckets(ctx, full+60); err != nil {
		s.log.Warn("sweeping shared rate buckets failed", "err", err)
	}
}
