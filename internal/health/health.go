// Package health checks the providers the service depends on.
package health

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Provider is the state of one dependency.
type Provider struct {
	Up       bool
	Required bool
	Latency  time.Duration
	Detail   string
	// Status overrides the state derived from Up ("ok" or "down") where a provider has more to
	// say: "degraded", "not_configured".
	Status string
}

// Report is the result of one check of every provider.
type Report struct {
	Healthy   bool
	CheckedAt time.Time
	Providers map[string]Provider
}

// Checker checks the database with a short timeout of its own, so a hung database makes the health
// check answer "unhealthy" quickly instead of hanging the monitor. A report is reused for MaxAge:
// monitors and load balancers poll health many times a second across replicas, and each poll
// need not cost a database round trip (the report's CheckedAt says how old it is).
type Checker struct {
	Pool    *pgxpool.Pool
	Timeout time.Duration
	MaxAge  time.Duration
	// Optional providers, checked with the database and reported by name; they never make
	// the service unhealthy (Required is false), such as the age of the latest backup.
	Optional map[string]func(ctx context.Context) Provider

	last atomic.Pointer[Report]
}

// Check returns the last report when it is younger than MaxAge, else probes every provider now.
func (c *Checker) Check(ctx context.Context) Report {
	if r := c.last.Load(); r != nil && time.Since(r.CheckedAt) < c.MaxAge {
		return *r
	}
	r := c.probe(ctx)
	c.last.Store(&r)
	return r
}

func (c *Checker) probe(ctx context.Context) Report {
	timeout := c.Timeout
	if timeout == 0 {
		timeout = 2 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	db := Provider{Required: true}
	var one int
	if err := c.Pool.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
		db.Detail = "database unreachable"
	} else {
		db.Up = true
	}
	db.Latency = time.Since(start)
	r := Report{CheckedAt: time.Now().UTC(), Providers: map[string]Provider{"database": db}}
	for name, check := range c.Optional {
		p := check(ctx)
		p.Required = false
		r.Providers[name] = p
	}
	r.Healthy = true
	for _, p := range r.Providers {
		if p.Required && !p.Up {
			r.Healthy = false
		}
	}
	return r
}

// Check is one component the admin pages report on: what it is (Name: "local", "s3", "oidc" ...)
// and how to probe it.
type Check struct {
	Name string
	Run  func(ctx context.Context) error
}

// Probe is the outcome of one Check.
type Probe struct {
	Name    string
	Up      bool
	Latency time.Duration
	Detail  string // why it is down
}

// Probes runs every check at once, each bounded by timeout, and reports each by its key.
func Probes(ctx context.Context, timeout time.Duration, checks map[string]Check) map[string]Probe {
	type result struct {
		key string
		p   Probe
	}
	results := make(chan result, len(checks))
	for key, c := range checks {
		go func() {
			cctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			start := time.Now()
			p := Probe{Name: c.Name, Up: true}
			if err := c.Run(cctx); err != nil {
				p.Up, p.Detail = false, err.Error()
			}
			p.Latency = time.Since(start)
			results <- result{key, p}
		}()
	}
	out := make(map[string]Probe, len(checks))
	for range checks {
		r := <-results
		out[r.key] = r.p
	}
	return out
}
