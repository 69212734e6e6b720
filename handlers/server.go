// Package handlers implements the generated strict server interface, one file per contract tag.
// Handlers are thin: authorize, call one domain function, map the result to a response object.
// Errors go back as values; internal/web turns them into problem documents.
package handlers

import (
	"cmp"
	"log/slog"
	"net/http"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/labstack/echo/v4"

	"meridian/gen"
	"meridian/internal/accounts"
	"meridian/internal/ai"
	"meridian/internal/analysis"
	"meridian/internal/apperr"
	"meridian/internal/audit"
	"meridian/internal/auth"
	"meridian/internal/backup"
	"meridian/internal/catalog"
	"meridian/internal/config"
	"meridian/internal/configdoc"
	"meridian/internal/connectors"
	"meridian/internal/dcat"
	"meridian/internal/export"
	"meridian/internal/features"
	"meridian/internal/health"
	"meridian/internal/ingest"
	"meridian/internal/manifest"
	"meridian/internal/maps"
	"meridian/internal/oauth"
	"meridian/internal/rastertiles"
	"meridian/internal/secretbox"
	"meridian/internal/settings"
	"meridian/internal/sources"
	"meridian/internal/sqlquery"
	"meridian/internal/stacimport"
	"meridian/internal/tiles"
	"meridian/internal/web"
)

// Deps are the collaborators the handlers need. cmd/meridian builds every one of them (the
// composition root); the handlers only use them.
type Deps struct {
	Config        config.Config
	Health        *health.Checker
	Backups       backup.Monitor
	Settings      settings.Reader
	SettingsAdmin settings.Admin
	PageMax       *settings.ItemsPageMax
	Audit         audit.Trail
	Log           *slog.Logger
	Auth          *auth.Service
	Downloads     *auth.DownloadTokens
	Accounts      *accounts.Service
	Registration  *accounts.Registration
	Providers     *accounts.Providers
	Box           *secretbox.Box
	OAuthFlow     *oauth.Flow
	Catalog       *catalog.Service
	Jobs          *ingest.Jobs
	Analysis      *analysis.Service
	Sources       *sources.Service
	Connectors    *connectors.Registry
	Configs       *configdoc.Service
	Exporter      *export.Exporter
	Tables        features.Reader
	Tiles         *tiles.Service
	Rasters       *rastertiles.Service
	Maps          *maps.Service
	SQL           *sqlquery.Service
	DCAT          *dcat.Service
	StacImport    *stacimport.Service
	Manifests     *manifest.Service
	// SharedLimit, when set, is the limit of n a minute per address of operation op counted in
	// buckets every replica shares (RATE_LIMITS_SHARED; see operationLimiter).
	SharedLimit func(op string, n int) web.Limiter
	AI          *ai.Service
}

// Server implements gen.StrictServerInterface.
type Server struct {
	cfg           config.Config
	health        healthChecker
	backups       backup.Monitor
	settings      settings.Reader
	settingsAdmin settings.Admin
	pageMax       *settings.ItemsPageMax
	audit         audit.Trail
	log           *slog.Logger
	auth          *auth.Service
	accounts      *accounts.Service
	registration  *accounts.Registration
	providers     *accounts.Providers
	box           *secretbox.Box
	oauthFlow     *oauth.Flow
	catalog       *catalog.Service
	// Per-tag views of the catalog: each tag's handlers see the methods they use.
	featureCatalog featureCatalog
	records        recordCatalog
	downloads      *auth.DownloadTokens
	jobs           *ingest.Jobs
	analysis       *analysis.Service
	sources        *sources.Service
	connectors     *connectors.Registry
	configs        *configdoc.Service
	exporter       *export.Exporter
	tables         features.Reader
	tiles          *tiles.Service
	rasters        *rastertiles.Service
	maps           *maps.Service
	sql            *sqlquery.Service
	dcat           *dcat.Service
	stacImport     *stacimport.Service
	manifests      *manifest.Service
	sharedLimit    func(op string, n int) web.Limiter
	ai             *ai.Service
}

var _ gen.StrictServerInterface = (*Server)(nil)

// New returns a Server over deps.
func New(d Deps) *Server {
	return &Server{cfg: d.Config, health: d.Health, backups: d.Backups, settings: d.Settings, settingsAdmin: d.SettingsAdmin, pageMax: d.PageMax, audit: d.Audit, log: d.Log, auth: d.Auth, accounts: d.Accounts,
		registration: d.Registration, providers: d.Providers, box: d.Box, oauthFlow: d.OAuthFlow, catalog: d.Catalog,
		featureCatalog: d.Catalog, records: d.Catalog,
		downloads: d.Downloads, jobs: d.Jobs, analysis: d.Analysis, sources: d.Sources, connectors: d.Connectors, configs: d.Configs, exporter: d.Exporter, tables: d.Tables, tiles: d.Tiles, rasters: d.Rasters, maps: d.Maps, sql: d.SQL,
		dcat: d.DCAT, stacImport: d.StacImport, ai: d.AI, manifests: d.Manifests, sharedLimit: d.SharedLimit}
}

// Mount registers every contract operation under /api with the per-route middleware, in order:
// the operation's own rate limit, a body limit fitting the operation (uploads, feature writes, the
// rest), authentication (spec section 5), the operation's per-user rate limit, then request
// validation.
func Mount(e *echo.Echo, doc *openapi3.T, cfg config.Config, s *Server) *web.Router {
	share := web.NewClientShare(cfg.ClientMaxInFlight, cfg.ClientQueueWait)
	r := web.NewRouter(e, doc, "/api", func(op *web.Operation) []echo.MiddlewareFunc {
		var mws []echo.MiddlewareFunc
		if n := operationLimit(cfg, op); n > 0 && cfg.RateLimitEnabled {
			mws = append(mws, web.RateLimit(s.operationLimiter(cfg, op.ID, n), nil))
		}
		limit := cfg.MaxBodyBytes
		switch {
		case op.Streaming:
			limit = cfg.MaxUploadBytes
		case len(op.Spec.Tags) > 0 && op.Spec.Tags[0] == "Features":
			limit = cfg.MaxFeatureBodyBytes
		}
		opts := web.AuthOptions{AcceptDeadCredential: op.ID == "logout"}
		if op.ID == "tile" || op.ID == "clusterTile" || op.ID == "rasterTileProxy" {
			opts.Capabilities = []web.Capability{s.tileSignature}
		}
		if acceptsEmbedToken(op) {
			opts.Capabilities = append(opts.Capabilities, s.embedToken)
		}
		mws = append(mws, web.BodyLimit(limit), web.Authenticate(s.auth, op, opts))
		if n := cfg.UserRateLimits[op.ID]; n > 0 && cfg.RateLimitEnabled {
			mws = append(mws, web.RateLimitPerUser(web.PerMinute(n)))
		}
		if cfg.ClientMaxInFlight > 0 && !outsideShare(op) {
			mws = append(mws, share.Middleware)
		}
		mws = append(mws, web.ValidateRequest(doc, op))
		if clearingPatches[op.ID] {
			mws = append(mws, keepPatchMembers) // "x": null clears x, an absent x stays
		}
		return mws
	})
	gen.RegisterHandlersWithBaseURL(r, gen.NewStrictHandler(s, nil), "/api")
	e.Pre(rasterEdgePath)
	return r
}

// rasterEdgePath serves the raster tiles' edge path, /raster-tiles/{id}/tiles/{z}/{x}/{y}.{fmt},
// as the raster tile proxy (/api/tiles/raster-proxy/{id}/{z}/{x}/{y}.{fmt}): the deployment's
// edge maps it so, and a server without an edge in front answers it the same.
func rasterEdgePath(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		if rest, ok := strings.CutPrefix(req.URL.Path, "/raster-tiles/"); ok {
			if id, tile, ok := strings.Cut(rest, "/tiles/"); ok && !strings.Contains(id, "/") {
				req.URL.Path = "/api/tiles/raster-proxy/" + id + "/" + tile
				req.URL.RawPath = ""
			}
		}
		return next(c)
	}
}

// outsideShare: operations a client's share of requests does not count. Tiles come many at once
// from one map and are bounded by the tile service's own concurrency; health must answer under
// any load; transfers (uploads, exports, downloads, streams) last as long as the client reads or
// writes and have bounds of their own, and would otherwise hold a client's places for minutes.
func outsideShare(op *web.Operation) bool {
	if op.Streaming {
		return true
	}
	switch op.ID {
	case "tile", "clusterTile", "rasterTileProxy", "health", "exportDataset", "downloadCOG", "downloadAuditRecords",
		"aiChatStream", "datasetChatStream", "generateMapStream":
		return true
	}
	return false
}

// acceptsEmbedToken: the operations whose security names the EmbedToken scheme.
func acceptsEmbedToken(op *web.Operation) bool {
	if op.Spec.Security == nil {
		return false
	}
	for _, req := range *op.Spec.Security {
		if _, ok := req["EmbedToken"]; ok {
			return true
		}
	}
	return false
}

// embedToken is the capability of an X-Embed-Token header (spec section 5, rule 4b): a live
// token used from an origin it allows lends read access to its map and that map's datasets.
func (s *Server) embedToken(c echo.Context) (auth.Principal, bool, error) {
	token := c.Request().Header.Get("X-Embed-Token")
	if token == "" {
		return auth.Principal{}, false, nil
	}
	origin := cmp.Or(c.Request().Header.Get("Origin"), c.Request().Header.Get("Referer"))
	return s.maps.Embedded(c.Request().Context(), token, origin)
}

// clearingPatches are the partial updates in which a member sent as null clears its field.
var clearingPatches = map[string]bool{"patchSingleFeature": true, "updateContact": true, "updateDistribution": true,
	"updateAttribute": true, "updateDatasetMetadata": true}

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
