// Package handlers implements the generated strict server interface, one file per contract tag.
// Handlers are thin: authorize, call one domain function, map the result to a response object.
// Errors go back as values; internal/web turns them into problem documents.
package handlers

import (
	"log/slog"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"

	"meridian/gen"
	"meridian/internal/apperr"
	"meridian/internal/config"
	"meridian/internal/web"
	"meridian/store"
)

// Deps are the collaborators the handlers need, built once in main.
type Deps struct {
	Config config.Config
	Pool   *pgxpool.Pool
	Log    *slog.Logger
}

// Server implements gen.StrictServerInterface.
type Server struct {
	cfg  config.Config
	pool *pgxpool.Pool
	q    *store.Queries
	log  *slog.Logger
}

var _ gen.StrictServerInterface = (*Server)(nil)

// New returns a Server over deps.
func New(d Deps) *Server {
	s := &Server{cfg: d.Config, pool: d.Pool, log: d.Log}
	if d.Pool != nil {
		s.q = store.New(d.Pool)
	}
	return s
}

// Mount registers every contract operation under /api with the per-route middleware: a body limit
// fitting the operation (uploads, feature writes, the rest) and request validation.
func Mount(e *echo.Echo, doc *openapi3.T, cfg config.Config, s *Server) *web.Router {
	r := web.NewRouter(e, doc, "/api", func(op *web.Operation) []echo.MiddlewareFunc {
		limit := cfg.MaxBodyBytes
		switch {
		case op.Streaming:
			limit = cfg.MaxUploadBytes
		case len(op.Spec.Tags) > 0 && op.Spec.Tags[0] == "Features":
			limit = cfg.MaxFeatureBodyBytes
		}
		return []echo.MiddlewareFunc{web.BodyLimit(limit), web.ValidateRequest(doc, op)}
	})
	gen.RegisterHandlersWithBaseURL(r, gen.NewStrictHandler(s, nil), "/api")
	return r
}

// notImplemented is the answer of every operation not built yet: 501 naming the operationId.
func notImplemented(operationID string) error { return apperr.NotImplemented(operationID) }
