package config

import (
	"strings"
	"testing"
	"time"
)

func env(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

const goodSecret = "q7VJ2mX9pL4sR8tW1yZ3bC6dF0gH5kN2"

func TestLoadSecretRules(t *testing.T) {
	tests := []struct {
		name    string
		secret  string
		wantErr string
	}{
		{"missing", "", "JWT_SECRET_KEY is required"},
		{"31 characters", goodSecret[:31], "JWT_SECRET_KEY must be at least 32"},
		{"32 characters", goodSecret, ""},
		{"changeme placeholder", "changeme-changeme-changeme-changeme", "JWT_SECRET_KEY looks like a published placeholder"},
		{"secret placeholder", "secret-key-for-jwt-please-rotate-now", "JWT_SECRET_KEY looks like a published placeholder"},
		{"your-secret-key placeholder", "your-secret-key-here-at-least-32-chars", "JWT_SECRET_KEY looks like a published placeholder"},
		{"upper-case placeholder", "CHANGEME_IN_PRODUCTION_0123456789abc", "JWT_SECRET_KEY looks like a published placeholder"},
		{"repeated character", strings.Repeat("a", 40), "JWT_SECRET_KEY has too few distinct"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := load(env(map[string]string{"DATABASE_URL": "postgres://x@localhost/db", "JWT_SECRET_KEY": tt.secret}))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("want no error, got %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("want error containing %q, got %v", tt.wantErr, err)
			}
		})
	}
}

func TestLoadDefaultsAndOverrides(t *testing.T) {
	c, err := load(env(map[string]string{
		"DATABASE_URL": "postgres://x@localhost/db", "JWT_SECRET_KEY": goodSecret,
		"BASE_URL": "https://maps.example.org/", "DB_MAX_CONNS": "40", "CORS_ALLOWED_ORIGINS": "https://a.example, https://b.example",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.BaseURL != "https://maps.example.org" {
		t.Errorf("BaseURL = %q, want trailing slash trimmed", c.BaseURL)
	}
	if c.DBMaxConns != 40 || c.BackupMaxAgeMinutes != 1560 || c.MaxUploadBytes != 500<<20 {
		t.Errorf("unexpected values: conns %d backup %d upload %d", c.DBMaxConns, c.BackupMaxAgeMinutes, c.MaxUploadBytes)
	}
	if len(c.CORSAllowedOrigins) != 2 || c.CORSAllowedOrigins[1] != "https://b.example" {
		t.Errorf("CORS origins = %v", c.CORSAllowedOrigins)
	}
	if c.UserRateLimits["previewFile"] != 30 || c.UserRateLimits["runAReadOnlySQLQuery"] != 30 {
		t.Errorf("per-user limits = %v, want previewFile and runAReadOnlySQLQuery at 30 (open-points)", c.UserRateLimits)
	}
}

func TestLoadRejectsBadValues(t *testing.T) {
	base := map[string]string{"DATABASE_URL": "postgres://x@localhost/db", "JWT_SECRET_KEY": goodSecret}
	tests := []struct{ key, val, want string }{
		{"DB_MAX_CONNS", "0", "DB_MAX_CONNS"},
		{"DB_MAX_CONNS", "81", "DB_MAX_CONNS"},
		{"BACKUP_MAX_AGE_MINUTES", "soon", "BACKUP_MAX_AGE_MINUTES"},
		{"BASE_URL", "maps.example.org", "BASE_URL"},
		{"RATE_LIMIT_ENABLED", "maybe", "RATE_LIMIT_ENABLED"},
		{"QUERY_TIMEOUT", "-1s", "QUERY_TIMEOUT"},
		{"RATE_LIMITS_PER_USER", "previewFile", "RATE_LIMITS_PER_USER"},
		{"LOG_FORMAT", "xml", "LOG_FORMAT"},
		{"DATABASE_URL", " ", "DATABASE_URL"},
		{"GDAL_MEMORY_LIMIT", "1000000", "GDAL_MEMORY_LIMIT"},
		{"GDAL_CPU_LIMIT", "1s", "GDAL_CPU_LIMIT"},
		{"PREVIEW_CONCURRENCY", "0", "PREVIEW_CONCURRENCY"},
		{"EXPORT_CONCURRENCY_PER_CLIENT", "500", "EXPORT_CONCURRENCY_PER_CLIENT"},
		{"EXPORT_MAX_BYTES", "-5", "EXPORT_MAX_BYTES"},
		{"ARCHIVE_MAX_RATIO", "1", "ARCHIVE_MAX_RATIO"},
		{"XLSX_MAX_INFLATED_BYTES", "lots", "XLSX_MAX_INFLATED_BYTES"},
		{"KML_MAX_BYTES", "0", "KML_MAX_BYTES"},
		{"STAGING_QUOTA_TOTAL", "1000", "STAGING_QUOTA_TOTAL"},
		{"STAGING_TTL", "forever", "STAGING_TTL"},
		{"IMAGE_MAX_PIXELS", "200000000", "IMAGE_MAX_PIXELS"},
		{"IMAGE_DECODE_CONCURRENCY", "0", "IMAGE_DECODE_CONCURRENCY"},
	}
	for _, tt := range tests {
		t.Run(tt.key+"="+tt.val, func(t *testing.T) {
			kv := map[string]string{}
			for k, v := range base {
				kv[k] = v
			}
			kv[tt.key] = tt.val
			_, err := load(env(kv))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("want error naming %s, got %v", tt.want, err)
			}
		})
	}
}

// The bounds of untrusted files have defaults a small server survives, derived from the
// largest upload where they bound what one upload may become.
func TestFileLimitDefaults(t *testing.T) {
	c, err := load(env(map[string]string{"DATABASE_URL": "postgres://x@localhost/db", "JWT_SECRET_KEY": goodSecret, "MAX_UPLOAD_BYTES": "1000"}))
	if err != nil {
		t.Fatal(err)
	}
	f := c.Files
	if f.GDALMemory != 1<<30 || f.GDALCPU != 30*time.Minute || f.GDALCacheMB != 64 || f.ExportPerClient != 2 || f.ArchiveMaxRatio != 100 ||
		f.XLSXMaxInflated != 256<<20 || f.KMLMaxBytes != 64<<20 || f.StagingTTL != 24*time.Hour || f.ImageMaxPixels != 4096*4096 || f.ImageConcurrency != 2 {
		t.Errorf("defaults: %+v", f)
	}
	if f.ArchiveMaxUnpacked != 4000 || f.StagingPerUser != 5000 || f.StagingTotal != 20<<30 {
		t.Errorf("bounds following MAX_UPLOAD_BYTES=1000: unpacked %d, per user %d, total %d", f.ArchiveMaxUnpacked, f.StagingPerUser, f.StagingTotal)
	}
	if f.PreviewPerClient > f.PreviewConcurrency || f.ExportPerClient > f.ExportConcurrency || f.PreviewConcurrency < 2 || f.ExportConcurrency < 4 {
		t.Errorf("concurrency defaults: %+v", f)
	}
}

func TestDefaultPoolFollowsCores(t *testing.T) {
	for _, c := range []struct{ cpus, want int }{{1, 4}, {2, 4}, {3, 6}, {8, 16}, {10, 20}, {64, 20}} {
		if got := defaultDBMaxConns(c.cpus); got != c.want {
			t.Errorf("%d cores: %d connections, want %d", c.cpus, got, c.want)
		}
	}
}
