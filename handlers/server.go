// Package handlers implements the generated strict server interface, one file per contract tag.
// Handlers are thin: authorize, call one domain function, map the result to a response object.
// Errors go back as values; internal/web turns them into problem documents.
package handlers

import (
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"

	"meridian/gen"
	"meridian/internal/accounts"
	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/internal/blob"
	"meridian/internal/catalog"
	"meridian/internal/config"
	"meridian/internal/export"
	"meridian/internal/features"
	"meridian/internal/ingest"
	"meridian/internal/mail"
	"meridian/internal/oauth"
	"meridian/internal/secretbox"
	"meridian/internal/web"
	"meridian/store"
)

// Deps are the collaborators the handlers need, built once in main.
type Deps struct {
	Config config.Config
	Pool   *pgxpool.Pool
	Log    *slog.Logger
	Queue  *ingest.Queue // nil where no imports run (tests of the handler set)
}

// Server implements gen.StrictServerInterface.
type Server struct {
	cfg          config.Config
	pool         *pgxpool.Pool
	q            *store.Queries
	log          *slog.Logger
	auth         *auth.Service
	accounts     *accounts.Service
	registration *accounts.Registration
	providers    *accounts.Providers
	box          *secretbox.Box
	oauthFlow    *oauth.Flow
	catalog      *catalog.Service
	downloads    *auth.DownloadTokens
	jobs         *ingest.Jobs
	exporter     *export.Exporter
	tables       features.Reader
}

var _ gen.StrictServerInterface = (*Server)(nil)

// New returns a Server over deps. Presigned uploads go to S3 when it is configured, to the local
// backend otherwise.
func New(d Deps) (*Server, error) {
	s := &Server{cfg: d.Config, pool: d.Pool, log: d.Log}
	if d.Pool != nil {
		s.q = store.New(d.Pool)
	}
	s.auth = &auth.Service{
		Pool: d.Pool, Q: s.q, Log: d.Log,
		Signer:     auth.NewSigner(d.Config.JWTSecretKey, d.Config.AccessTokenTTL),
		RefreshTTL: d.Config.RefreshTokenTTL, Grace: d.Config.RefreshGrace,
	}
	s.accounts = &accounts.Service{Pool: d.Pool, Q: s.q, Log: d.Log}
	s.catalog = &catalog.Service{Pool: d.Pool, Q: s.q, Log: d.Log}
	c := d.Config
	s.box = secretbox.New(c.JWTSecretKey)
	s.downloads = auth.NewDownloadTokens(c.JWTSecretKey)
	s.tables = features.Reader{Pool: d.Pool}
	s.exporter = &export.Exporter{Pool: d.Pool, TmpDir: filepath.Join(c.DataDir, "exports"), Timeout: c.ExportTimeout, Log: d.Log}
	var storage blob.Storage = blob.NewLocal(c.DataDir, c.BaseURL, c.JWTSecretKey)
	if c.S3Endpoint != "" {
		s3, err := blob.NewS3(blob.S3Config{Endpoint: c.S3Endpoint, Region: c.S3Region, Bucket: c.S3Bucket,
			AccessKey: c.S3AccessKey, SecretKey: c.S3SecretKey, UseSSL: c.S3UseSSL})
		if err != nil {
			return nil, fmt.Errorf("S3_ENDPOINT: %w", err)
		}
		storage = s3
	}
	s.jobs = &ingest.Jobs{Pool: d.Pool, Q: s.q, Queue: d.Queue, DataDir: c.DataDir, MaxUpload: c.MaxUploadBytes,
		Storage: storage, PresignedThreshold: c.PresignedThresholdBytes, PresignedPartSize: c.PresignedPartBytes, Stall: c.ImportStallTimeout}
	s.providers = &accounts.Providers{Q: s.q, Box: s.box, Log: d.Log}
	s.oauthFlow = oauth.NewFlow(&http.Client{Timeout: 15 * time.Second})
	s.registration = &accounts.Registration{Pool: d.Pool, Q: s.q, Log: d.Log, BaseURL: c.BaseURL,
		Mail: mail.New(mail.Config{Host: c.SMTPHost, Port: c.SMTPPort, Username: c.SMTPUsername, Password: c.SMTPPassword,
			From: c.SMTPFrom, StartTLS: c.SMTPStartTLS})}
	return s, nil
}

// Mount registers every contract operation under /api with the per-route middleware, in order:
// the operation's own rate limit, a body limit fitting the operation (uploads, feature writes, the
// rest), authentication (spec section 5), the operation's per-user rate limit, then request
// validation.
func Mount(e *echo.Echo, doc *openapi3.T, cfg config.Config, s *Server) *web.Router {
	r := web.NewRouter(e, doc, "/api", func(op *web.Operation) []echo.MiddlewareFunc {
		var mws []echo.MiddlewareFunc
		if n := operationLimit(cfg, op); n > 0 && cfg.RateLimitEnabled {
			mws = append(mws, web.RateLimit(web.PerMinute(n), nil))
		}
		limit := cfg.MaxBodyBytes
		switch {
		case op.Streaming:
			limit = cfg.MaxUploadBytes
		case len(op.Spec.Tags) > 0 && op.Spec.Tags[0] == "Features":
			limit = cfg.MaxFeatureBodyBytes
		}
		opts := web.AuthOptions{AcceptDeadCredential: op.ID == "logout"}
		mws = append(mws, web.BodyLimit(limit), web.Authenticate(s.auth, op, opts))
		if n := cfg.UserRateLimits[op.ID]; n > 0 && cfg.RateLimitEnabled {
			mws = append(mws, web.RateLimitPerUser(web.PerMinute(n)))
		}
		mws = append(mws, web.ValidateRequest(doc, op))
		if op.ID == "patchSingleFeature" {
			mws = append(mws, keepPatchGeometry) // "geometry": null clears, an absent geometry stays
		}
		return mws
	})
	gen.RegisterHandlersWithBaseURL(r, gen.NewStrictHandler(s, nil), "/api")
	return r
}

// operationLimit is the per-minute quota of op: its own entry in the settings, else 30 for admin
// and settings mutations (open-points.md).
func operationLimit(cfg config.Config, op *web.Operation) int {
	if n, ok := cfg.OperationRateLimits[op.ID]; ok {
		return n
	}
	admin := strings.HasPrefix(op.Template, "/admin/") || strings.HasPrefix(op.Template, "/settings/")
	if admin && op.Method != http.MethodGet {
		return cfg.OperationRateLimits["adminMutations"]
	}
	return 0
}

// notImplemented is the answer of every operation not built yet: 501 naming the operationId.
func notImplemented(operationID string) error { return apperr.NotImplemented(operationID) }
