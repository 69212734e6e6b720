// Package config loads Meridian's configuration from the environment, once, into one struct.
package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// RemotePolicy is internal/remote's Policy as configured (REMOTE_*): that package converts it.
type RemotePolicy struct {
	AllowHosts, DenyHosts []string
	AllowPrivate          bool
	MaxBytes              int64
	Timeout               time.Duration
	MaxRedirects          int
	AssetMaxBytes         int64
	AssetTimeout          time.Duration
}

// Config is every setting the server reads from its environment. Defaults live in Load.
type Config struct {
	DatabaseURL  string
	JWTSecretKey string
	BaseURL      string // scheme://host[:port][/prefix], without the trailing /api
	ListenAddr   string
	DataDir      string

	AdminUsername string
	AdminPassword string
	AdminEmail    string

	DBMaxConns    int32
	ImportWorkers int // concurrent ogr2ogr imports per replica
	// IngestDatabaseURL connects as the role ogr2ogr writes imports as; empty: the server
	// creates and uses the role meridian_ingest itself (it needs CREATEROLE for that).
	IngestDatabaseURL string
	// ImportStallTimeout: an import whose run gives no sign of life this long (its server was
	// killed or hangs) is queued again for any replica, or failed retryably once its rescues are
	// used up.
	ImportStallTimeout time.Duration
	// ImportStallRescues: how many times one job whose run went silent is queued again before it
	// is failed instead (0: failed at once, as a single server without rescue).
	ImportStallRescues int
	// VRTRetireGrace: how long the COG of a VRT generation no longer served is kept, so that a
	// tile or download that opened it just before it was replaced reads it whole.
	VRTRetireGrace time.Duration
	// RefreshScheduleTick: how often the leader looks for datasets whose update_frequency makes
	// a scheduled refresh due.
	RefreshScheduleTick time.Duration
	OGCMaxLimit         int // largest OGC API items page; larger limits are clamped to it
	// RegisterSchemas are the schemas whose existing tables admins may register as datasets.
	RegisterSchemas []string
	QueryTimeout    time.Duration
	// ExportTimeout bounds one export's ogr2ogr run (and its database session); past it the
	// process group is killed and a download in flight is cut.
	ExportTimeout time.Duration
	// AnalysisTimeout bounds one analysis materialization's statements; AnalysisMaxFeatures
	// the features of each dataset an analysis reads (previews are bounded by QueryTimeout).
	AnalysisTimeout     time.Duration
	AnalysisMaxFeatures int64
	// Connectors are the persistent connectors installed (internal/connectors): none by default.
	Connectors          []string
	BackupMaxAgeMinutes int
	MaxUploadBytes      int64
	// Presigned uploads switch to multipart above PresignedThresholdBytes, in parts of
	// PresignedPartBytes (open-points: 100 MB and 10 MB).
	PresignedThresholdBytes int64
	PresignedPartBytes      int64
	MaxBodyBytes            int64
	MaxFeatureBodyBytes     int64
	CORSAllowedOrigins      []string
	TrustForwardedHeader    bool
	// PprofAddr, when set, serves Go's runtime profiles (net/http/pprof) on this loopback
	// address, apart from the API: for measuring a running server, off by default.
	PprofAddr string

	// CQL2MaxBytes and CQL2MaxTerms bound a client's filter (cql2.Limits).
	CQL2MaxBytes, CQL2MaxTerms int
	// ClientMaxInFlight is how many requests one client (a signed-in user, else an address) may
	// have in flight at once; further ones wait up to ClientQueueWait for a place, then answer
	// 503. It keeps one client from holding every connection of the request pool. 0: no bound.
	ClientMaxInFlight int
	ClientQueueWait   time.Duration
	// SQLMaxConcurrent bounds the read-only SQL queries a server runs at once (the sandbox pool),
	// SQLMaxValueBytes the largest value or row one may build or return: PostgreSQL bounds no
	// backend's memory, so these bound what read-only SQL can take of the database host's.
	SQLMaxConcurrent int
	SQLMaxValueBytes int64
	// Remote is what the service fetches of what users point it at: remote.Policy, field for field.
	Remote RemotePolicy

	RateLimitEnabled   bool
	RateLimitPerSecond float64 // global per client IP
	RateLimitBurst     int
	// OperationRateLimits are requests per minute per client IP for individual operations, keyed
	// by operationId (open-points.md); RATE_LIMITS="login=5,refreshToken=30" overrides entries.
	OperationRateLimits map[string]int
	// UserRateLimits are requests per minute per signed-in user (anonymous callers: per client
	// IP) for operations whose cost follows the account, not the address: previews run GDAL
	// over a staged file, read-only SQL runs a query. RATE_LIMITS_PER_USER overrides entries.
	UserRateLimits map[string]int
	// SharedRateLimits are the operations of OperationRateLimits whose buckets every replica
	// shares in the database (internal/ratelimit): the ones that stop guessing of credentials and
	// codes, which N replicas would otherwise multiply by N.
	SharedRateLimits []string

	AccessTokenTTL  time.Duration
	RefreshTokenTTL time.Duration
	RefreshGrace    time.Duration

	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	ShutdownTimeout   time.Duration
	// ShutdownDrainDelay is how long a stopping server keeps serving with readiness at 503
	// before it closes its listener, so a load balancer's health check takes it out first.
	ShutdownDrainDelay time.Duration

	LogLevel  string
	LogFormat string // json or text

	// TileSigningSecret signs tile templates (HMAC-SHA256 over "{scope}:{exp}"); it defaults to
	// JWT_SECRET_KEY (open-points.md).
	TileSigningSecret string

	// ProviderKeys are third-party keys from the environment (MAPTILER_API_KEY ...), keyed by
	// provider name (see ProviderKeyEnv). Admin settings may add keys the environment lacks.
	ProviderKeys map[string]string

	// S3-compatible object storage for presigned uploads; empty S3Endpoint uses the local backend.
	S3Endpoint, S3Region, S3Bucket, S3AccessKey, S3SecretKey string
	S3UseSSL                                                 bool

	SMTPHost     string // empty disables mail: registration then skips email verification
	SMTPPort     int
	SMTPUsername string
	SMTPPassword string
	SMTPFrom     string
	SMTPStartTLS string // auto, always or never

	// Files bounds what untrusted files and the GDAL processes reading them may cost.
	Files FileLimits
}

// FileLimits are the bounds of untrusted files (uploads, archives, spreadsheets, pictures) and of
// the GDAL processes that read and write datasets (issue #28): each a setting with a default a
// 2-core server survives, validated at start.
type FileLimits struct {
	// GDALMemory is the address space one GDAL process may map (RLIMIT_AS), GDALCPU the CPU time
	// it may use (RLIMIT_CPU); a tool past either is stopped and its work fails naming the bound.
	GDALMemory int64
	GDALCPU    time.Duration
	// GDALCacheMB is GDAL_CACHEMAX of every GDAL process, in MB.
	GDALCacheMB int
	// PreviewConcurrency bounds the GDAL looks at staged files running at once (previews and the
	// check a commit makes), PreviewPerClient those of one user; more answer 503 with Retry-After.
	PreviewConcurrency, PreviewPerClient int
	// ExportConcurrency bounds the ogr2ogr exports running at once (each a process and a database
	// session), ExportPerClient the exports one client (user, or IP when anonymous) has in flight,
	// its downloads included; more answer 503 with Retry-After.
	ExportConcurrency, ExportPerClient int
	// ExportMaxBytes bounds one export's file (RLIMIT_FSIZE of its ogr2ogr).
	ExportMaxBytes int64
	// ArchiveMaxRatio bounds how many times an archive, and each of its members, may expand;
	// ArchiveMaxUnpacked the bytes an archive may unpack to.
	ArchiveMaxRatio    int
	ArchiveMaxUnpacked int64
	// XLSXMaxInflated bounds the bytes the parts of a spreadsheet (a zip of XML) inflate to, and
	// KMLMaxBytes a KML document: GDAL reads both whole into memory.
	XLSXMaxInflated int64
	KMLMaxBytes     int64
	// StagingPerUser and StagingTotal bound the bytes staged uploads (and their unpacked members)
	// hold on disk for one user and for everyone; StagingTTL is how long an upload never
	// committed, or a failed job never retried, keeps its staging before it is expired.
	StagingPerUser, StagingTotal int64
	StagingTTL                   time.Duration
	// ImageMaxPixels bounds the pictures decoded (map thumbnails, OG images, icons), read from
	// their headers first; ImageConcurrency the decodes running at once.
	ImageMaxPixels   int64
	ImageConcurrency int
	// RasterMaxPixels and RasterMaxBands bound what an uploaded raster may declare (width x
	// height, and bands), read from its header before any pixel is.
	RasterMaxPixels int64
	RasterMaxBands  int
}

// Version and Build are stamped at link time (-ldflags -X); health reports them.
var (
	Version = "1.14.2"
	Build   = "dev"
)

// defaultDBMaxConns sizes the request pool for cpus cores: two connections a core (the usual
// rule for PostgreSQL), between 4 and 20. Connections beyond what the database's cores can run
// only queue inside PostgreSQL, where every statement in the queue slows the others down, instead
// of waiting their turn in the pool: on 2 cores at 16 clients, search's p95 over 10,000 records
// was 28 ms with 4 connections, 31 ms with 8 and 41 ms with 20, and over 100,000 records 57 ms
// with 4 and 66 ms with 8 (README). The server's cores stand in for the database's, which is right for the bundled database
// on the same machine; a larger database server wants DB_MAX_CONNS set.
func defaultDBMaxConns(cpus int) int { return min(max(2*cpus, 4), 20) }

// Load reads the environment and validates the result. Every error names its variable.
func Load() (Config, error) { return load(os.Getenv) }

func load(get func(string) string) (Config, error) {
	p := parser{get: get}
	c := Config{
		DatabaseURL:   p.str("DATABASE_URL", ""),
		JWTSecretKey:  p.str("JWT_SECRET_KEY", ""),
		BaseURL:       strings.TrimRight(p.str("BASE_URL", "http://127.0.0.1:8080"), "/"),
		ListenAddr:    p.str("LISTEN_ADDR", "127.0.0.1:8080"),
		DataDir:       p.str("DATA_DIR", "./.data/files"),
		AdminUsername: p.str("ADMIN_USERNAME", ""),
		AdminPassword: p.str("ADMIN_PASSWORD", ""),
		AdminEmail:    p.str("ADMIN_EMAIL", ""),

		DBMaxConns:              int32(p.integer("DB_MAX_CONNS", defaultDBMaxConns(runtime.GOMAXPROCS(0)), 1, 80)),
		QueryTimeout:            p.duration("QUERY_TIMEOUT", 30*time.Second),
		ExportTimeout:           p.duration("EXPORT_TIMEOUT", 15*time.Minute),
		AnalysisTimeout:         p.duration("ANALYSIS_TIMEOUT", 10*time.Minute),
		AnalysisMaxFeatures:     p.int64("ANALYSIS_MAX_FEATURES", 1_000_000),
		Connectors:              p.list("CONNECTORS"),
		ImportWorkers:           p.integer("IMPORT_WORKERS", 2, 1, 64),
		IngestDatabaseURL:       p.str("INGEST_DATABASE_URL", ""),
		ImportStallTimeout:      p.duration("IMPORT_STALL_TIMEOUT", 60*time.Second),
		ImportStallRescues:      p.integer("IMPORT_STALL_RESCUES", 2, 0, 10),
		VRTRetireGrace:          p.duration("VRT_RETIRE_GRACE", 10*time.Minute),
		RefreshScheduleTick:     p.duration("REFRESH_SCHEDULE_TICK", 5*time.Minute),
		OGCMaxLimit:             p.integer("OGC_MAX_LIMIT", 10000, 1, 100000),
		RegisterSchemas:         p.listOr("REGISTER_SCHEMAS", []string{"public"}),
		BackupMaxAgeMinutes:     p.integer("BACKUP_MAX_AGE_MINUTES", 1560, 1, 1<<20),
		MaxUploadBytes:          p.int64("MAX_UPLOAD_BYTES", 500<<20),
		PresignedThresholdBytes: p.int64("PRESIGNED_THRESHOLD_BYTES", 100<<20),
		PresignedPartBytes:      p.int64("PRESIGNED_PART_BYTES", 10<<20),
		MaxBodyBytes:            p.int64("MAX_BODY_BYTES", 10<<20),
		MaxFeatureBodyBytes:     p.int64("MAX_FEATURE_BODY_BYTES", 1<<20),
		CORSAllowedOrigins:      p.list("CORS_ALLOWED_ORIGINS"),
		TrustForwardedHeader:    p.boolean("TRUST_FORWARDED_HEADERS", false),
		PprofAddr:               p.str("PPROF_ADDR", ""),
		CQL2MaxBytes:            p.integer("CQL2_MAX_BYTES", 16<<10, 256, 64<<10),
		CQL2MaxTerms:            p.integer("CQL2_MAX_TERMS", 1000, 10, 100000),
		ClientQueueWait:         p.duration("CLIENT_QUEUE_WAIT", 10*time.Second),
		SQLMaxConcurrent:        p.integer("SQL_MAX_CONCURRENT", 2, 1, 20),
		SQLMaxValueBytes:        p.int64("SQL_MAX_VALUE_BYTES", 1<<20),
		Remote: RemotePolicy{AllowHosts: p.list("REMOTE_ALLOW_HOSTS"), DenyHosts: p.list("REMOTE_DENY_HOSTS"),
			AllowPrivate: p.boolean("REMOTE_ALLOW_PRIVATE", false), MaxBytes: p.int64("REMOTE_MAX_BYTES", 100<<20),
			Timeout: p.duration("REMOTE_TIMEOUT", 60*time.Second), MaxRedirects: p.integer("REMOTE_MAX_REDIRECTS", 5, 0, 20)},

		RateLimitEnabled:   p.boolean("RATE_LIMIT_ENABLED", true),
		RateLimitPerSecond: p.float("RATE_LIMIT_PER_SECOND", 60),
		RateLimitBurst:     p.integer("RATE_LIMIT_BURST", 120, 1, 1<<20),
		OperationRateLimits: p.limits("RATE_LIMITS", map[string]int{
			"login": 5, "register": 5, "resendVerification": 5, "verifyEmail": 10, "refreshToken": 30,
			"createDownloadToken": 60, "health": 60, "runAReadOnlySQLQuery": 60,
			"aiChatStream": 10, "chat": 10, "datasetChatStream": 10, "generateMap": 10, "generateMapStream": 10,
			"generateMetadataSummary": 20, "generateMetadataKeywords": 20, "generateMetadataLineage": 20,
			"generateMetadataQualityStatement": 20, "listBasemaps": 120, "adminMutations": 30,
		}),
		SharedRateLimits: p.listOr("RATE_LIMITS_SHARED", []string{"login", "register", "resendVerification", "verifyEmail", "refreshToken"}),
		UserRateLimits: p.limits("RATE_LIMITS_PER_USER", map[string]int{
			"previewFile": 30, "reuploadPreview": 30, "runAReadOnlySQLQuery": 30,
		}),

		AccessTokenTTL:  p.duration("ACCESS_TOKEN_TTL", 15*time.Minute),
		RefreshTokenTTL: p.duration("REFRESH_TOKEN_TTL", 7*24*time.Hour),
		RefreshGrace:    p.duration("REFRESH_GRACE", 30*time.Second),

		ReadHeaderTimeout: p.duration("HTTP_READ_HEADER_TIMEOUT", 10*time.Second),
		ReadTimeout:       p.duration("HTTP_READ_TIMEOUT", 15*time.Minute),
		WriteTimeout:      p.duration("HTTP_WRITE_TIMEOUT", 15*time.Minute),
		IdleTimeout:       p.duration("HTTP_IDLE_TIMEOUT", 2*time.Minute),
		ShutdownTimeout:   p.duration("SHUTDOWN_TIMEOUT", 30*time.Second),
		// Off by default: a lone server has no balancer to wait for.
		ShutdownDrainDelay: p.optionalDuration("SHUTDOWN_DRAIN_DELAY"),

		LogLevel:  p.str("LOG_LEVEL", "info"),
		LogFormat: p.str("LOG_FORMAT", "json"),

		ProviderKeys:      p.providerKeys(),
		TileSigningSecret: p.str("TILE_SIGNING_SECRET", ""),

		S3Endpoint:  p.str("S3_ENDPOINT", ""),
		S3Region:    p.str("S3_REGION", "us-east-1"),
		S3Bucket:    p.str("S3_BUCKET", ""),
		S3AccessKey: p.str("S3_ACCESS_KEY", ""),
		S3SecretKey: p.str("S3_SECRET_KEY", ""),
		S3UseSSL:    p.boolean("S3_USE_SSL", true),

		SMTPHost:     p.str("SMTP_HOST", ""),
		SMTPPort:     p.integer("SMTP_PORT", 587, 1, 65535),
		SMTPUsername: p.str("SMTP_USERNAME", ""),
		SMTPPassword: p.str("SMTP_PASSWORD", ""),
		SMTPFrom:     p.str("SMTP_FROM", "Meridian <noreply@localhost.localdomain>"),
		SMTPStartTLS: p.str("SMTP_STARTTLS", "auto"),
	}
	// Half the request pool (at least 2): with one client at its share, the other half still
	// serves everyone else.
	c.ClientMaxInFlight = p.integer("CLIENT_MAX_IN_FLIGHT", max(2, int(c.DBMaxConns)/2), 0, 10000)
	c.Files = p.fileLimits(c.MaxUploadBytes, runtime.GOMAXPROCS(0))
	// A data file a STAC import copies is an upload the server makes itself: by default it is
	// bounded like one, with time for a large file.
	c.Remote.AssetMaxBytes = p.int64("REMOTE_ASSET_MAX_BYTES", c.MaxUploadBytes)
	c.Remote.AssetTimeout = p.duration("REMOTE_ASSET_TIMEOUT", 30*time.Minute)
	if p.err != nil {
		return Config{}, p.err
	}
	return c, c.validate()
}

// fileLimits reads the bounds of untrusted files; the defaults scale with the largest upload and
// the cores, which are what the server and its GDAL processes share.
func (p *parser) fileLimits(maxUpload int64, cpus int) FileLimits {
	previews := max(2, cpus)
	exports := max(4, 2*cpus)
	unpacked := p.int64("ARCHIVE_MAX_UNPACKED_BYTES", 4*maxUpload)
	// One largest upload and everything it may unpack to, and no more: an upload just under
	// the ratio cannot be repeated until the disk is full.
	perUser := p.int64("STAGING_QUOTA_PER_USER", maxUpload+unpacked)
	return FileLimits{
		GDALMemory:         p.int64("GDAL_MEMORY_LIMIT", 1<<30),
		GDALCPU:            p.duration("GDAL_CPU_LIMIT", 30*time.Minute),
		GDALCacheMB:        p.integer("GDAL_CACHEMAX", 64, 8, 1<<16),
		PreviewConcurrency: p.integer("PREVIEW_CONCURRENCY", previews, 1, 256),
		PreviewPerClient:   p.integer("PREVIEW_CONCURRENCY_PER_CLIENT", max(1, previews/2), 1, 256),
		ExportConcurrency:  p.integer("EXPORT_CONCURRENCY", exports, 1, 256),
		ExportPerClient:    p.integer("EXPORT_CONCURRENCY_PER_CLIENT", 2, 1, 256),
		ExportMaxBytes:     p.int64("EXPORT_MAX_BYTES", 20<<30),
		ArchiveMaxRatio:    p.integer("ARCHIVE_MAX_RATIO", 100, 2, 10000),
		ArchiveMaxUnpacked: unpacked,
		XLSXMaxInflated:    p.int64("XLSX_MAX_INFLATED_BYTES", 256<<20),
		KMLMaxBytes:        p.int64("KML_MAX_BYTES", 64<<20),
		StagingPerUser:     perUser,
		StagingTotal:       p.int64("STAGING_QUOTA_TOTAL", max(20<<30, 4*perUser)),
		StagingTTL:         p.duration("STAGING_TTL", 24*time.Hour),
		ImageMaxPixels:     p.int64("IMAGE_MAX_PIXELS", 4096*4096),
		ImageConcurrency:   p.integer("IMAGE_DECODE_CONCURRENCY", 2, 1, 64),
		RasterMaxPixels:    p.int64("RASTER_MAX_PIXELS", 2_500_000_000),
		RasterMaxBands:     p.integer("RASTER_MAX_BANDS", 100, 1, 65535),
	}
}

func (f FileLimits) validate() error {
	switch {
	case f.GDALMemory < 256<<20:
		// Below this GDAL's own libraries and PROJ's database do not fit: every tool would fail.
		return fmt.Errorf("GDAL_MEMORY_LIMIT %d must be at least 268435456 (256 MB)", f.GDALMemory)
	case f.GDALCPU < 10*time.Second:
		return fmt.Errorf("GDAL_CPU_LIMIT %s must be at least 10s", f.GDALCPU)
	case f.PreviewPerClient > f.PreviewConcurrency:
		return fmt.Errorf("PREVIEW_CONCURRENCY_PER_CLIENT %d may not exceed PREVIEW_CONCURRENCY %d", f.PreviewPerClient, f.PreviewConcurrency)
	case f.ExportPerClient > f.ExportConcurrency:
		return fmt.Errorf("EXPORT_CONCURRENCY_PER_CLIENT %d may not exceed EXPORT_CONCURRENCY %d", f.ExportPerClient, f.ExportConcurrency)
	case f.StagingPerUser > f.StagingTotal:
		return fmt.Errorf("STAGING_QUOTA_PER_USER %d may not exceed STAGING_QUOTA_TOTAL %d", f.StagingPerUser, f.StagingTotal)
	case f.StagingTTL < time.Second:
		return fmt.Errorf("STAGING_TTL %s must be at least 1s", f.StagingTTL)
	case f.RasterMaxPixels < 1:
		return fmt.Errorf("RASTER_MAX_PIXELS %d must be at least 1", f.RasterMaxPixels)
	case f.ImageMaxPixels > 100_000_000:
		// Beyond this one decode alone takes most of a small server's memory (8 bytes a pixel at 16 bits).
		return fmt.Errorf("IMAGE_MAX_PIXELS %d may be at most 100000000", f.ImageMaxPixels)
	}
	return nil
}

// MinSecretLength is the shortest JWT_SECRET_KEY accepted (spec section 5 rule 9).
const MinSecretLength = 32

// placeholderPrefixes are the starts of secrets copied from documentation and templates.
var placeholderPrefixes = []string{
	"changeme", "change-me", "change_me", "secret", "your-secret", "your_secret", "yoursecret",
	"replace-me", "replaceme", "please-change", "insecure", "default", "example", "jwt-secret",
	"jwt_secret", "supersecret", "super-secret", "mysecret", "my-secret", "xxxxxxxx", "00000000",
	"12345678", "password",
}

func (c Config) validate() error {
	if c.DatabaseURL == "" {
		return errors.New("DATABASE_URL is required (postgres://user:pass@host:port/db)")
	}
	if err := CheckSecret(c.JWTSecretKey); err != nil {
		return err
	}
	if c.TileSigningSecret != "" {
		if err := CheckSecret(c.TileSigningSecret); err != nil {
			return fmt.Errorf("TILE_SIGNING_SECRET: %w", err)
		}
	}
	u, err := url.Parse(c.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("BASE_URL %q must be an absolute http(s) URL", c.BaseURL)
	}
	if c.AdminUsername != "" && c.AdminPassword == "" {
		return errors.New("ADMIN_PASSWORD is required when ADMIN_USERNAME is set")
	}
	if c.LogFormat != "json" && c.LogFormat != "text" {
		return fmt.Errorf("LOG_FORMAT %q must be json or text", c.LogFormat)
	}
	for _, sc := range c.RegisterSchemas {
		if sc == "catalog" || sc == "data" || sc == "river" || strings.HasPrefix(sc, "pg_") || sc == "information_schema" {
			return fmt.Errorf("REGISTER_SCHEMAS may not name the service's own schema %q", sc)
		}
	}
	if c.S3Endpoint != "" && (c.S3Bucket == "" || c.S3AccessKey == "" || c.S3SecretKey == "") {
		return errors.New("S3_BUCKET, S3_ACCESS_KEY and S3_SECRET_KEY are required when S3_ENDPOINT is set")
	}
	if c.SMTPStartTLS != "auto" && c.SMTPStartTLS != "always" && c.SMTPStartTLS != "never" {
		return fmt.Errorf("SMTP_STARTTLS %q must be auto, always or never", c.SMTPStartTLS)
	}
	if c.SQLMaxValueBytes < 1024 || c.SQLMaxValueBytes > 256<<20 {
		return fmt.Errorf("SQL_MAX_VALUE_BYTES %d must be 1024 to %d", c.SQLMaxValueBytes, 256<<20)
	}
	if c.MaxUploadBytes < 1 || c.MaxBodyBytes < 1 || c.MaxFeatureBodyBytes < 1 {
		return errors.New("MAX_UPLOAD_BYTES, MAX_BODY_BYTES and MAX_FEATURE_BODY_BYTES must be positive")
	}
	if c.PprofAddr != "" {
		// Profiles show memory and timing of everything; they never face the network.
		host, _, err := net.SplitHostPort(c.PprofAddr)
		if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
			return fmt.Errorf("PPROF_ADDR %q must be a loopback address with a port (127.0.0.1:6060)", c.PprofAddr)
		}
	}
	if err := c.Files.validate(); err != nil {
		return err
	}
	if c.RefreshScheduleTick < time.Second {
		return fmt.Errorf("REFRESH_SCHEDULE_TICK %s must be at least 1s", c.RefreshScheduleTick)
	}
	if c.ImportStallTimeout < 2*time.Second {
		// Runs beat every sixth of it; shorter would fail healthy imports on a busy database.
		return fmt.Errorf("IMPORT_STALL_TIMEOUT %s must be at least 2s", c.ImportStallTimeout)
	}
	for _, name := range c.Connectors {
		if name != "postgis" {
			return fmt.Errorf("CONNECTORS: no connector %q is built in (postgis is)", name)
		}
	}
	return nil
}

// CheckSecret applies the JWT_SECRET_KEY rules: long enough and not a well-known placeholder.
func CheckSecret(s string) error {
	if s == "" {
		return errors.New("JWT_SECRET_KEY is required (at least 32 characters)")
	}
	if len(s) < MinSecretLength {
		return fmt.Errorf("JWT_SECRET_KEY must be at least %d characters (got %d)", MinSecretLength, len(s))
	}
	lower := strings.ToLower(s)
	for _, p := range placeholderPrefixes {
		if strings.HasPrefix(lower, p) {
			return fmt.Errorf("JWT_SECRET_KEY looks like a published placeholder (starts with %q); generate a random one, e.g. `openssl rand -base64 48`", p)
		}
	}
	if distinct(s) < 8 {
		return errors.New("JWT_SECRET_KEY has too few distinct characters to be a random secret")
	}
	return nil
}

func distinct(s string) int {
	seen := map[rune]bool{}
	for _, r := range s {
		seen[r] = true
	}
	return len(seen)
}

// parser collects the first error so Load reports one clear message.
type parser struct {
	get func(string) string
	err error
}

func (p *parser) fail(name, val, want string) {
	if p.err == nil {
		p.err = fmt.Errorf("%s=%q: %s", name, val, want)
	}
}

func (p *parser) str(name, def string) string {
	if v := strings.TrimSpace(p.get(name)); v != "" {
		return v
	}
	return def
}

func (p *parser) list(name string) []string {
	var out []string
	for _, s := range strings.Split(p.get(name), ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// ProviderKeyEnv names the environment variable of each third-party provider key.
var ProviderKeyEnv = map[string]string{
	"maptiler":      "MAPTILER_API_KEY",
	"stadia":        "STADIA_API_KEY",
	"thunderforest": "THUNDERFOREST_API_KEY",
	"ai":            "AI_API_KEY",
	"embedding":     "EMBEDDING_API_KEY",
	"geocoding":     "GEOCODING_API_KEY",
}

func (p *parser) providerKeys() map[string]string {
	out := map[string]string{}
	for name, env := range ProviderKeyEnv {
		if v := p.str(env, ""); v != "" {
			out[name] = v
		}
	}
	return out
}

// limits parses "opId=N,opId=N" (requests per minute) over the defaults.
func (p *parser) limits(name string, defaults map[string]int) map[string]int {
	out := make(map[string]int, len(defaults))
	for k, v := range defaults {
		out[k] = v
	}
	for _, item := range p.list(name) {
		op, n, ok := strings.Cut(item, "=")
		v, err := strconv.Atoi(strings.TrimSpace(n))
		if !ok || err != nil || v < 1 || strings.TrimSpace(op) == "" {
			p.fail(name, item, "want operationId=requests-per-minute items separated by commas")
			return out
		}
		out[strings.TrimSpace(op)] = v
	}
	return out
}

func (p *parser) listOr(name string, def []string) []string {
	if l := p.list(name); len(l) > 0 {
		return l
	}
	return def
}

func (p *parser) integer(name string, def, lo, hi int) int {
	v := p.get(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		p.fail(name, v, fmt.Sprintf("want an integer in %d..%d", lo, hi))
		return def
	}
	return n
}

func (p *parser) int64(name string, def int64) int64 {
	v := p.get(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 {
		p.fail(name, v, "want a positive integer")
		return def
	}
	return n
}

func (p *parser) float(name string, def float64) float64 {
	v := p.get(name)
	if v == "" {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f <= 0 {
		p.fail(name, v, "want a positive number")
		return def
	}
	return f
}

func (p *parser) boolean(name string, def bool) bool {
	v := p.get(name)
	if v == "" {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		p.fail(name, v, "want true or false")
		return def
	}
	return b
}

func (p *parser) duration(name string, def time.Duration) time.Duration {
	v := p.get(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		p.fail(name, v, "want a positive duration such as 30s or 5m")
		return def
	}
	return d
}

// optionalDuration is a duration that may be zero (off), its default.
func (p *parser) optionalDuration(name string) time.Duration {
	v := p.get(name)
	if v == "" {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		p.fail(name, v, "want a duration such as 2s, or 0 for none")
		return 0
	}
	return d
}
