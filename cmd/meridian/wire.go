package main

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"meridian/handlers"
	"meridian/internal/accounts"
	"meridian/internal/ai"
	"meridian/internal/analysis"
	"meridian/internal/audit"
	"meridian/internal/auth"
	"meridian/internal/backup"
	"meridian/internal/blob"
	"meridian/internal/catalog"
	"meridian/internal/config"
	"meridian/internal/configdoc"
	"meridian/internal/connectors"
	"meridian/internal/dcat"
	"meridian/internal/export"
	"meridian/internal/features"
	"meridian/internal/gate"
	"meridian/internal/gdalcmd"
	"meridian/internal/health"
	"meridian/internal/ingest"
	"meridian/internal/mail"
	"meridian/internal/manifest"
	"meridian/internal/maps"
	"meridian/internal/oauth"
	"meridian/internal/rangeproxy"
	"meridian/internal/rastertiles"
	"meridian/internal/ratelimit"
	"meridian/internal/remote"
	"meridian/internal/remoteraster"
	"meridian/internal/secretbox"
	"meridian/internal/settings"
	"meridian/internal/sources"
	"meridian/internal/sqlquery"
	"meridian/internal/stacimport"
	"meridian/internal/tiles"
	"meridian/internal/web"
	"meridian/store"
)

// pools are the pools requests use: the request pool, the pool numbers matched are counted on,
// the searches' (generic plans, db.OpenSearch) and the read-only SQL sandbox's.
type pools struct {
	requests, counts, search, sandbox *pgxpool.Pool
}

// services builds every domain service the handlers use, over the request pool. Presigned
// uploads go to S3 when it is configured, to the local backend otherwise.
func services(c config.Config, p pools, log *slog.Logger, queue *ingest.Queue, staging *ingest.Staging, sandboxRole string,
	proxy *rangeproxy.Proxy) (handlers.Deps, error) {
	pool := p.requests
	q := store.New(pool)
	var storage blob.Storage = blob.NewLocal(c.DataDir, c.BaseURL, c.JWTSecretKey)
	objects, err := objectsOf(c)
	if err != nil {
		return handlers.Deps{}, err
	}
	if s3, ok := objects.(*blob.S3); ok {
		storage = s3
	}
	box := secretbox.New(c.JWTSecretKey)
	cat := &catalog.Service{Pool: pool, CountPool: p.counts, SearchPool: p.search, Q: q, Log: log, Settings: settings.Reader{Q: q}, Objects: objects}
	mapService := &maps.Service{Pool: pool, Q: q, Box: box, Settings: settings.Reader{Q: q}, Catalog: cat, Log: log, BaseURL: c.BaseURL,
		Pictures: maps.Pictures{MaxPixels: c.Files.ImageMaxPixels, Decodes: gate.New(gate.Config{What: "image decodes",
			Setting: "IMAGE_DECODE_CONCURRENCY", Max: c.Files.ImageConcurrency, Wait: 5 * time.Second, RetryAfter: 5 * time.Second})}}
	cat.Refs = mapService // column operations keep map layers' references
	authService := &auth.Service{Pool: pool, Q: q, Log: log, Signer: auth.NewSigner(c.JWTSecretKey, c.AccessTokenTTL),
		RefreshTTL: c.RefreshTokenTTL, Grace: c.RefreshGrace}
	cat.Announced = func(channel, payload string, live bool) {
		mapService.Announced(channel, live)
		authService.Announced(channel, payload, live)
	}
	tileService := &tiles.Service{Catalog: cat, Reader: features.Reader{Pool: pool}, Settings: settings.Reader{Q: q},
		Signer: tiles.NewSigner(cmp.Or(c.TileSigningSecret, c.JWTSecretKey)), Cache: tiles.NewCache(0)}
	jobs := &ingest.Jobs{Pool: pool, Q: q, Queue: queue, DataDir: c.DataDir, MaxUpload: c.MaxUploadBytes, Storage: storage,
		PresignedThreshold: c.PresignedThresholdBytes, PresignedPartSize: c.PresignedPartBytes, Stall: c.ImportStallTimeout,
		Catalog: cat, Settings: settings.Reader{Q: q}, Bounds: bounds(c), GDAL: gdalLimits(c), Staging: staging, Objects: objects,
		Previews: gate.New(gate.Config{What: "previews of uploaded files", Setting: "PREVIEW_CONCURRENCY",
			PerClientSetting: "PREVIEW_CONCURRENCY_PER_CLIENT", Max: c.Files.PreviewConcurrency, PerClient: c.Files.PreviewPerClient,
			Wait: previewWait, RetryAfter: 5 * time.Second})}
	fetcher := remote.New(remote.Policy(c.Remote))
	// Registered rasters (STAC Import mode register): read by range, GDAL through the proxy.
	registered := &remoteraster.Reader{Remote: fetcher, Proxy: proxy, GDAL: gdalLimits(c), Q: q, Box: box, Timeout: c.Remote.Timeout}
	cat.Remote = registered
	sqlService := &sqlquery.Service{App: pool, Q: q, Sandbox: p.sandbox, Role: sandboxRole, Settings: settings.Reader{Q: q}, Log: log}
	pageMax := &settings.ItemsPageMax{Reader: settings.Reader{Q: q}, Bound: c.OGCMaxLimit, MaxAge: time.Second}
	aiService := &ai.Service{Pool: pool, Q: q, Settings: settings.Reader{Q: q}, Keys: providerKeys(c, pool, box), Catalog: cat, Maps: mapService,
		SQL: sqlService, Tables: features.Reader{Pool: pool}, Log: log, HTTP: aiHTTP, Timeout: aiCallTimeout, Enqueue: queue.InsertTx,
		Index: &ai.Index{}}
	// What keeps settings in memory forgets them once a change commits on this server.
	changed := func() {
		pageMax.Forget()
		aiService.Forget()
	}
	settingsAdmin := settings.Admin{Pool: pool, Q: q, Box: box, Pinned: pinnedSettings(c), Fixed: fixedSettings(c), Changed: changed, Log: log}
	providers := &accounts.Providers{Pool: pool, Q: q, Box: box, Log: log}
	backups := backup.Monitor{Q: q, MaxAge: time.Duration(c.BackupMaxAgeMinutes) * time.Minute}
	return handlers.Deps{
		Backups: backups,
		SharedLimit: func(op string, n int) web.Limiter {
			return ratelimit.New(q, op, float64(n)/60, n, web.PerMinute(n), log)
		},
		SettingsAdmin: settingsAdmin,
		PageMax:       pageMax,
		Config:        c, Health: &health.Checker{Pool: pool, MaxAge: time.Second,
			Optional: map[string]func(context.Context) health.Provider{"backups": backups.Probe}}, Log: log, Settings: settings.Reader{Q: q}, Audit: audit.Trail{Q: q},
		Auth:      authService,
		Downloads: auth.NewDownloadTokens(c.JWTSecretKey),
		Accounts:  &accounts.Service{Pool: pool, Q: q, Log: log, Forget: authService.Forget},
		Registration: &accounts.Registration{Pool: pool, Q: q, Log: log, BaseURL: c.BaseURL,
			Mail: mail.New(mail.Config{Host: c.SMTPHost, Port: c.SMTPPort, Username: c.SMTPUsername, Password: c.SMTPPassword,
				From: c.SMTPFrom, StartTLS: c.SMTPStartTLS})},
		Providers:  &accounts.Providers{Pool: pool, Q: q, Box: box, Log: log},
		Box:        box,
		OAuthFlow:  oauth.NewFlow(&http.Client{Timeout: 15 * time.Second}),
		Catalog:    cat,
		Jobs:       jobs,
		Analysis:   &analysis.Service{Pool: pool, Catalog: cat, Jobs: jobs, MaxFeatures: c.AnalysisMaxFeatures},
		Sources:    &sources.Service{Pool: pool, Q: q, Catalog: cat, Remote: fetcher, Objects: objects, Jobs: jobs},
		Connectors: connectors.NewRegistry(jobs, q, installed(c, fetcher)...),
		Configs:    &configdoc.Service{Pool: pool, Q: q, Settings: settingsAdmin, Providers: providers, Version: config.Version, Collections: cat},
		Exporter:   exporter(c, pool, log),
		Tables:     features.Reader{Pool: pool},
		Tiles:      tileService,
		Rasters:    &rastertiles.Service{Tiles: tileService, Source: rastertiles.Stored{Objects: objects}, Warper: registered},
		Maps:       mapService,
		SQL:        sqlService,
		DCAT:       &dcat.Service{Records: cat, Settings: settings.Reader{Q: q}},
		AI:         aiService,
	}, nil
}

// installed are the connectors CONNECTORS names (config.Load refuses unknown names).
func installed(c config.Config, fetcher *remote.Client) []connectors.Connector {
	var out []connectors.Connector
	for _, name := range c.Connectors {
		if name == "postgis" {
			out = append(out, connectors.PostGIS{Remote: fetcher, Timeout: c.Remote.Timeout})
		}
	}
	return out
}

// stacDownloads is how many STAC assets one server downloads at once (their imports then queue
// with the uploads' on IMPORT_WORKERS).
const stacDownloads = 2

// stacImportOf is the STAC import: remote catalogs read under the remote policy (REMOTE_*), each
// item's data file downloaded through the upload path of jobs and queued on queue.
// manifestsOf is Apply Manifest's service: sources fetched under the remote policy, with the
// bound of a STAC asset download (REMOTE_ASSET_MAX_BYTES).
func manifestsOf(c config.Config, d handlers.Deps, pool *pgxpool.Pool, log *slog.Logger) *manifest.Service {
	return &manifest.Service{Pool: pool, Q: store.New(pool), Catalog: d.Catalog, Jobs: d.Jobs, Remote: remote.New(remote.Policy(c.Remote)),
		MaxBytes: c.Remote.AssetMaxBytes, Log: log}
}

func stacImportOf(c config.Config, d handlers.Deps, pool *pgxpool.Pool, log *slog.Logger, queue *ingest.Queue, objects blob.Objects,
	proxy *rangeproxy.Proxy) *stacimport.Service {
	return &stacimport.Service{Pool: pool, Q: store.New(pool), Remote: remote.New(remote.Policy(c.Remote)), Jobs: d.Jobs, Queue: queue,
		Objects: objects, AssetMax: c.Remote.AssetMaxBytes, Timeout: c.Remote.AssetTimeout, Box: d.Box, Log: log,
		Proxy: proxy, GDAL: gdalLimits(c), Bounds: bounds(c).Raster, ReadTimeout: c.Remote.Timeout}
}

// The AI providers' client, shared by requests and jobs; one provider call's bound (a chat turn
// with tools makes several); how often the embeddings are refreshed and the index re-read.
var aiHTTP = ai.NewHTTPClient()

const (
	aiCallTimeout = 2 * time.Minute
	embedRefresh  = time.Minute
)

// aiJobs is the AI service of the embedding jobs, over the jobs' pool (ai.Jobs).
func aiJobs(c config.Config, jobs *pgxpool.Pool, log *slog.Logger) *ai.Service {
	q := store.New(jobs)
	return &ai.Service{Pool: jobs, Q: q, Settings: settings.Reader{Q: q}, Keys: providerKeys(c, jobs, secretbox.New(c.JWTSecretKey)),
		Log: log, HTTP: aiHTTP, Timeout: aiCallTimeout}
}

// providerKeys reads the provider keys in use: the environment's, else the sealed settings'.
func providerKeys(c config.Config, pool *pgxpool.Pool, box *secretbox.Box) func(context.Context) (map[string]string, error) {
	return settings.Admin{Pool: pool, Q: store.New(pool), Box: box, Pinned: pinnedSettings(c)}.ProviderKeys
}

// objectsOf is where raster COGs are stored: the S3 bucket when S3 is configured (presigned
// uploads go there too), else DATA_DIR.
func objectsOf(c config.Config) (blob.Objects, error) {
	if c.S3Endpoint == "" {
		return blob.LocalObjects{Dir: c.DataDir}, nil
	}
	s3, err := blob.NewS3(blob.S3Config{Endpoint: c.S3Endpoint, Region: c.S3Region, Bucket: c.S3Bucket,
		AccessKey: c.S3AccessKey, SecretKey: c.S3SecretKey, UseSSL: c.S3UseSSL})
	if err != nil {
		return nil, fmt.Errorf("S3_ENDPOINT: %w", err)
	}
	return s3, nil
}

// previewWait is how long a preview waits for a free slot before it is answered 503: most
// previews take well under a second, so a short burst is queued rather than refused.
const previewWait = 3 * time.Second

// gdalLimits are the kernel limits of every GDAL process.
func gdalLimits(c config.Config) gdalcmd.Limits {
	return gdalcmd.Limits{Memory: c.Files.GDALMemory, CPU: c.Files.GDALCPU, CacheMB: c.Files.GDALCacheMB}
}

// bounds are what a staged file may expand to before GDAL opens it.
func bounds(c config.Config) ingest.Bounds {
	return ingest.Bounds{MaxUnpacked: c.Files.ArchiveMaxUnpacked, MaxRatio: int64(c.Files.ArchiveMaxRatio),
		MaxXLSXInflated: c.Files.XLSXMaxInflated, MaxKML: c.Files.KMLMaxBytes,
		Raster: ingest.RasterBounds{MaxPixels: c.Files.RasterMaxPixels, MaxBands: c.Files.RasterMaxBands}}
}

// stagingOf accounts for staged uploads within the quotas and expires them after the TTL.
func stagingOf(c config.Config, q *store.Queries, log *slog.Logger) *ingest.Staging {
	return &ingest.Staging{Dir: c.DataDir, Q: q, Log: log, PerUser: c.Files.StagingPerUser, Total: c.Files.StagingTotal,
		TTL: c.Files.StagingTTL, OrphanAfter: max(c.Files.StagingTTL, c.ReadTimeout)}
}

// exporter runs exports within the export bounds: a slot per running ogr2ogr (briefly waited
// for), and a share per client held until its download ends (refused at once: it frees only as
// fast as that client reads).
func exporter(c config.Config, pool *pgxpool.Pool, log *slog.Logger) *export.Exporter {
	lim := gdalLimits(c)
	lim.FileSize = c.Files.ExportMaxBytes
	return &export.Exporter{Pool: pool, TmpDir: filepath.Join(c.DataDir, "exports"), Timeout: c.ExportTimeout, Log: log, GDAL: lim,
		Running: gate.New(gate.Config{What: "exports", Setting: "EXPORT_CONCURRENCY", Max: c.Files.ExportConcurrency,
			Wait: 5 * time.Second, RetryAfter: 10 * time.Second}),
		Clients: gate.New(gate.Config{What: "exports", Setting: "EXPORT_CONCURRENCY", PerClientSetting: "EXPORT_CONCURRENCY_PER_CLIENT",
			Max: math.MaxInt32, PerClient: c.Files.ExportPerClient, RetryAfter: 10 * time.Second})}
}

// fixedSettings are the values of the settings screen's keys that the server takes from its
// environment at start, as the screen shows them (source env_only).
func fixedSettings(c config.Config) map[string]any {
	return map[string]any{
		"access_token_expire_minutes": int(c.AccessTokenTTL.Minutes()),
		"refresh_token_expire_days":   c.RefreshTokenTTL.Hours() / 24,
		"login_rate_limit":            c.OperationRateLimits["login"],
		"global_rate_limit":           c.RateLimitPerSecond,
		"cors_allowed_origins":        strings.Join(c.CORSAllowedOrigins, ","),
	}
}

// pinnedSettings are the settings the environment sets, which the settings screen shows as such
// and cannot change.
func pinnedSettings(c config.Config) map[string]string {
	out := map[string]string{}
	for name, v := range c.ProviderKeys {
		out["provider_keys."+name] = v
	}
	return out
}
