// Package web is Meridian's HTTP edge: echo set-up, routing rules of the contract, request
// validation, cross-cutting middleware and the one error handler that writes problem documents.
package web

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"meridian/internal/config"
	"meridian/internal/publicurl"
)

// New returns an echo instance with the cross-cutting middleware every request passes through.
func New(cfg config.Config, log *slog.Logger) *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = ErrorHandler(log, cfg.QueryTimeout)
	if !cfg.TrustForwardedHeader {
		e.IPExtractor = echo.ExtractIPDirect()
	} else {
		e.IPExtractor = echo.ExtractIPFromXFFHeader()
	}
	e.Server.ReadHeaderTimeout = cfg.ReadHeaderTimeout
	e.Server.ReadTimeout = cfg.ReadTimeout
	e.Server.WriteTimeout = cfg.WriteTimeout
	e.Server.IdleTimeout = cfg.IdleTimeout

	if cfg.TrustForwardedHeader {
		// Links in answers follow the address the proxy was asked for.
		e.Use(func(next echo.HandlerFunc) echo.HandlerFunc {
			return func(c echo.Context) error {
				if base := publicurl.FromHeaders(c.Request().Header); base != "" {
					c.SetRequest(c.Request().WithContext(publicurl.With(c.Request().Context(), base)))
				}
				return next(c)
			}
		})
	}
	e.Use(middleware.RequestID())
	e.Use(AccessLog(log))
	e.Use(Recover(log))
	e.Use(CORS(cfg.CORSAllowedOrigins))
	if cfg.RateLimitEnabled {
		global := NewRateLimiter(cfg.RateLimitPerSecond, cfg.RateLimitBurst)
		e.Use(RateLimit(global, func(c echo.Context) bool {
			// Tiles are exempt: a map view fetches dozens at once (open-points, limits).
			return strings.Contains(c.Request().URL.Path, "/tiles/")
		}))
	}
	e.Use(Gzip())
	return e
}

// ReadinessPath answers 200 while the server takes new work and 503 once it drains; a load
// balancer health-checks it so it stops sending before the listener closes. It lives outside
// /api: it is the deployment's concern, not the contract's.
const ReadinessPath = "/readyz"

// Serve runs e on addr until ctx ends, then drains: readiness answers 503 for the configured
// drain delay while requests are still served (the balancer notices and sends elsewhere), then
// in-flight requests get up to the shutdown timeout before connections close.
func Serve(ctx context.Context, e *echo.Echo, cfg config.Config, log *slog.Logger) error {
	var draining atomic.Bool
	e.GET(ReadinessPath, func(c echo.Context) error {
		if draining.Load() {
			return c.String(http.StatusServiceUnavailable, "draining\n")
		}
		return c.String(http.StatusOK, "ready\n")
	})
	errc := make(chan error, 1)
	go func() {
		if err := e.Start(cfg.ListenAddr); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errc <- err
		}
		close(errc)
	}()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	draining.Store(true)
	if cfg.ShutdownDrainDelay > 0 {
		log.Info("shutting down: readiness answers 503", "drain_delay", cfg.ShutdownDrainDelay.String())
		time.Sleep(cfg.ShutdownDrainDelay)
	}
	log.Info("shutting down: draining in-flight requests", "timeout", cfg.ShutdownTimeout.String())
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	return e.Shutdown(sctx)
}
