package web

import (
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"meridian/internal/apperr"
	"meridian/internal/auth"
)

// ClientShare bounds how many requests one client has in flight: a signed-in user wherever their
// requests come from, an anonymous caller by address. A request over the bound waits for one of
// the client's own to end, for up to wait, and then answers 503 with Retry-After. The request pool
// has few connections (two a core): six slow anonymous filters once held all of them for the
// whole statement timeout, and every other client waited behind them. With each client held to
// its share, the rest of the pool keeps serving everybody else.
type ClientShare struct {
	max  int
	wait time.Duration
	mu   sync.Mutex
	in   map[string]*clientSlots
}

// clientSlots are one client's places: a semaphore, and how many requests hold or wait for one
// (the entry goes when none does, so idle clients cost nothing).
type clientSlots struct {
	sem   chan struct{}
	users int
}

// NewClientShare lets each client have max requests in flight, queueing the next ones for wait.
func NewClientShare(max int, wait time.Duration) *ClientShare {
	return &ClientShare{max: max, wait: wait, in: map[string]*clientSlots{}}
}

func (s *ClientShare) slots(key string) *clientSlots {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.in[key]
	if c == nil {
		c = &clientSlots{sem: make(chan struct{}, s.max)}
		s.in[key] = c
	}
	c.users++
	return c
}

func (s *ClientShare) done(key string, c *clientSlots) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.users--; c.users == 0 {
		delete(s.in, key)
	}
}

// Middleware applies the share; it must run after Authenticate, which says who the client is.
func (s *ClientShare) Middleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		key := "ip:" + c.RealIP()
		if p := auth.From(c.Request().Context()); !p.Anonymous() {
			key = "user:" + p.UserID.String()
		}
		slots := s.slots(key)
		defer s.done(key, slots)
		select {
		case slots.sem <- struct{}{}:
		default:
			timer := time.NewTimer(s.wait)
			defer timer.Stop()
			select {
			case slots.sem <- struct{}{}:
			case <-timer.C:
				return &apperr.Error{Kind: apperr.KindUnavailable, Title: "Service Unavailable", RetryAfter: time.Second,
					Detail: "too many requests of yours are still running; retry when one has ended"}
			case <-c.Request().Context().Done():
				return c.Request().Context().Err()
			}
		}
		defer func() { <-slots.sem }()
		return next(c)
	}
}
