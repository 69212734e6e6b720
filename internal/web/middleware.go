package web

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"golang.org/x/time/rate"

	"meridian/internal/apperr"
	"meridian/internal/auth"
)

// AccessLog writes one structured line per request. The query string is logged with credential
// parameters redacted: keys in URLs must never reach the logs (spec section 5).
func AccessLog(log *slog.Logger) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			err := next(c)
			if err != nil {
				c.Error(err) // write the problem now so the logged status is the real one
			}
			req, res := c.Request(), c.Response()
			level := slog.LevelInfo
			if res.Status >= 500 {
				level = slog.LevelWarn
			}
			if !log.Enabled(req.Context(), level) {
				return nil // nothing of the line is built when its level is off
			}
			attrs := []any{
				"method", req.Method, "path", req.URL.Path, "status", res.Status,
				"bytes", res.Size, "duration_ms", float64(time.Since(start).Microseconds()) / 1000,
				"ip", c.RealIP(), "request_id", res.Header().Get(echo.HeaderXRequestID),
			}
			if q := redactQuery(req.URL.RawQuery); q != "" {
				attrs = append(attrs, "query", q)
			}
			if op := OperationOf(c); op != nil {
				attrs = append(attrs, "operation", op.ID)
			}
			log.Log(req.Context(), level, "http", attrs...)
			return nil
		}
	}
}

var secretParams = map[string]bool{"api_key": true, "token": true, "sig": true, "access_token": true, "code": true, "state": true}

func redactQuery(raw string) string {
	if raw == "" {
		return ""
	}
	q, err := url.ParseQuery(raw)
	if err != nil {
		return "(unparseable)"
	}
	for k := range q {
		if secretParams[strings.ToLower(k)] {
			q[k] = []string{"REDACTED"}
		}
	}
	return q.Encode()
}

// Recover turns a panic into a 500 problem and logs the stack once.
func Recover(log *slog.Logger) echo.MiddlewareFunc {
	return middleware.RecoverWithConfig(middleware.RecoverConfig{
		LogErrorFunc: func(c echo.Context, err error, stack []byte) error {
			log.Error("panic", "err", err, "stack", string(stack), "request_id", c.Response().Header().Get(echo.HeaderXRequestID))
			return err
		},
	})
}

// RateLimiter keeps one token bucket per key (client IP, user id ...). Idle buckets are swept so a
// scan from many addresses cannot grow memory without bound.
type RateLimiter struct {
	limit rate.Limit
	burst int
	mu    sync.Mutex
	keys  map[string]*bucket
	sweep time.Time
}

type bucket struct {
	lim  *rate.Limiter
	seen time.Time
}

// NewRateLimiter allows perSecond requests per key on average with bursts of burst.
func NewRateLimiter(perSecond float64, burst int) *RateLimiter {
	return &RateLimiter{limit: rate.Limit(perSecond), burst: burst, keys: map[string]*bucket{}}
}

// PerMinute is a convenience for quotas stated per minute (login 5/min ...).
func PerMinute(n int) *RateLimiter { return NewRateLimiter(float64(n)/60, n) }

// Allow takes a token for key, or reports how long to wait for one.
func (l *RateLimiter) Allow(key string) (bool, time.Duration) {
	now := time.Now()
	l.mu.Lock()
	if now.Sub(l.sweep) > time.Minute {
		for k, b := range l.keys {
			if now.Sub(b.seen) > 10*time.Minute {
				delete(l.keys, k)
			}
		}
		l.sweep = now
	}
	b := l.keys[key]
	if b == nil {
		b = &bucket{lim: rate.NewLimiter(l.limit, l.burst)}
		l.keys[key] = b
	}
	b.seen = now
	l.mu.Unlock()
	r := b.lim.ReserveN(now, 1)
	if !r.OK() {
		return false, time.Minute
	}
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

// Limiter takes a token of key's bucket or reports how long until there is one: a RateLimiter
// (this process's buckets) or a bucket every replica shares (internal/ratelimit).
type Limiter interface {
	Take(ctx context.Context, key string) (bool, time.Duration)
}

// Take is Allow, as a Limiter.
func (l *RateLimiter) Take(_ context.Context, key string) (bool, time.Duration) { return l.Allow(key) }

// Limited answers 429 with an integer Retry-After when key's bucket is empty.
func Limited(ctx context.Context, l Limiter, key string) error {
	ok, wait := l.Take(ctx, key)
	if ok {
		return nil
	}
	secs := time.Duration(math.Ceil(wait.Seconds())) * time.Second
	if secs < time.Second {
		secs = time.Second
	}
	return &apperr.Error{Kind: apperr.KindRateLimited, Title: "Too Many Requests", RetryAfter: secs,
		Detail: fmt.Sprintf("rate limit exceeded; retry in %d s", int(secs.Seconds()))}
}

// RateLimit applies l per client IP to every request except those skip selects.
func RateLimit(l Limiter, skip func(echo.Context) bool) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if skip != nil && skip(c) {
				return next(c)
			}
			if err := Limited(c.Request().Context(), l, c.RealIP()); err != nil {
				return err
			}
			return next(c)
		}
	}
}

// RateLimitPerUser applies l per signed-in user, wherever their requests come from, so one
// account cannot multiply an expensive operation's quota over several addresses, nor exhaust
// that of colleagues behind the same NAT. Anonymous requests are keyed by client IP. It must run
// after Authenticate.
func RateLimitPerUser(l *RateLimiter) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			key := "ip:" + c.RealIP()
			if p := auth.From(c.Request().Context()); !p.Anonymous() {
				key = "user:" + p.UserID.String()
			}
			if err := Limited(c.Request().Context(), l, key); err != nil {
				return err
			}
			return next(c)
		}
	}
}

// BodyLimit refuses bodies over max bytes with 413: at once when Content-Length says so, and while
// reading otherwise (http.MaxBytesReader), so a lying client cannot push more than max.
func BodyLimit(max int64) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			if req.ContentLength > max {
				return apperr.TooLarge("request body of %d bytes exceeds the limit of %d bytes", req.ContentLength, max)
			}
			if req.Body != nil && req.Body != http.NoBody {
				req.Body = http.MaxBytesReader(c.Response(), req.Body, max)
			}
			return next(c)
		}
	}
}

// CORS lets browser clients on other origins read public data and call the API with headers.
func CORS(origins []string) echo.MiddlewareFunc {
	if len(origins) == 0 {
		origins = []string{"*"}
	}
	return middleware.CORSWithConfig(middleware.CORSConfig{
		AllowOrigins: origins,
		AllowMethods: []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions},
		AllowHeaders: []string{echo.HeaderAuthorization, echo.HeaderContentType, "X-Api-Key", "X-Embed-Token",
			"X-CSRF-Token", "X-Service-Auth-Mode", echo.HeaderXRequestID},
		ExposeHeaders:    []string{"Retry-After", "Deprecation", echo.HeaderXRequestID, "Link", echo.HeaderContentDisposition},
		AllowCredentials: len(origins) > 0 && origins[0] != "*",
		MaxAge:           600,
	})
}

// Gzip compresses responses over 2 KiB when the client asks for it. Event streams and binary
// tiles/images are left alone: streams must flush per event, and images are compressed already.
//
// Level 1 (BestSpeed): on GeoJSON pages it compresses about twice as fast as level 5 for 5 to 20 %
// more bytes (a page of 1000 points: 1.3 instead of 2.5 ms for 48 instead of 41 KiB of 200), and
// it resets in no time, where levels 2 to 9 clear 640 KiB of hash tables whenever a pooled writer
// is reset, twice per request that accepts gzip, even for bodies too small to be compressed
// (about 0.1 ms of CPU a request). Below 2 KiB a gzip stream's fixed cost (about 0.08 ms: a
// fifth of the rate of single features of 1.3 KiB) buys less than one TCP segment.
// BenchmarkOGCItems/*-gzip measures both.
func Gzip() echo.MiddlewareFunc {
	return middleware.GzipWithConfig(middleware.GzipConfig{
		Level:     1,
		MinLength: 2048,
		Skipper: func(c echo.Context) bool {
			p := c.Request().URL.Path
			return strings.Contains(p, "/stream") || strings.HasSuffix(p, ".png") || strings.HasSuffix(p, ".webp") ||
				strings.HasSuffix(p, ".jpg") || strings.Contains(p, "/download/") || strings.Contains(p, "/thumbnail") ||
				strings.Contains(p, "/og-image")
		},
	})
}
