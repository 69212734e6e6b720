package settings

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Def is one setting an admin may write: its key (group.name), label, default and the rule its
// values follow. Secrets are written, never read back.
type Def struct {
	Key    string
	Label  string
	Check  func(v any) error // after JSON decoding: bool, float64, string, []any, map[string]any or nil
	Secret bool
}

func boolean(v any) error {
	if _, ok := v.(bool); !ok {
		return fmt.Errorf("must be true or false")
	}
	return nil
}

func number(min, max float64, integer bool) func(any) error {
	return func(v any) error {
		f, ok := v.(float64)
		if !ok || f < min || f > max || (integer && f != math.Trunc(f)) {
			kind := "a number"
			if integer {
				kind = "an integer"
			}
			return fmt.Errorf("must be %s from %g to %g", kind, min, max)
		}
		return nil
	}
}

func oneOf(values ...string) func(any) error {
	return func(v any) error {
		if s, ok := v.(string); !ok || !slices.Contains(values, s) {
			return fmt.Errorf("must be one of %v", values)
		}
		return nil
	}
}

func words(max int, pattern *regexp.Regexp, nullable bool) func(any) error {
	return func(v any) error {
		if v == nil && nullable {
			return nil
		}
		s, ok := v.(string)
		if !ok || len(s) == 0 || len(s) > max || (pattern != nil && !pattern.MatchString(s)) {
			return fmt.Errorf("must be a text of 1 to %d characters%s", max, map[bool]string{true: " in the documented form"}[pattern != nil])
		}
		return nil
	}
}

func httpURL(nullable bool) func(any) error {
	return func(v any) error {
		if v == nil && nullable {
			return nil
		}
		s, _ := v.(string)
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || len(s) > 2000 {
			return fmt.Errorf("must be an http(s) URL")
		}
		return nil
	}
}

func nullable(check func(any) error) func(any) error {
	return func(v any) error {
		if v == nil {
			return nil
		}
		return check(v)
	}
}

func stringList(max int) func(any) error {
	return func(v any) error {
		list, ok := v.([]any)
		if !ok || len(list) > max {
			return fmt.Errorf("must be a list of at most %d texts", max)
		}
		for _, e := range list {
			if s, ok := e.(string); !ok || s == "" || len(s) > 255 {
				return fmt.Errorf("must be a list of texts")
			}
		}
		return nil
	}
}

// basemapList checks custom basemaps: id, label and URL each, ids unique.
func basemapList(v any) error {
	b, _ := json.Marshal(v)
	var list []Basemap
	if err := json.Unmarshal(b, &list); err != nil {
		return fmt.Errorf("must be a list of basemaps {id, label, url, attribution, provider}")
	}
	seen := map[string]bool{}
	for _, m := range list {
		if !slugPattern.MatchString(m.ID) || seen[m.ID] || slices.ContainsFunc(presets, func(p Basemap) bool { return p.ID == m.ID }) {
			return fmt.Errorf("basemap id %q must be unique, 1 to 64 lowercase letters, digits and dashes, and not a preset's", m.ID)
		}
		seen[m.ID] = true
		if m.Label == "" || len(m.Label) > 255 || httpURL(false)(m.URL) != nil {
			return fmt.Errorf("basemap %q needs a label and an http(s) url", m.ID)
		}
	}
	return nil
}

// anyText accepts any text of at most max characters, the empty one included.
func anyText(max int) func(any) error {
	return func(v any) error {
		if s, ok := v.(string); !ok || len(s) > max {
			return fmt.Errorf("must be a text of at most %d characters", max)
		}
		return nil
	}
}

// optionalURL accepts "" (none) or an http(s) URL.
func optionalURL(v any) error {
	if v == "" {
		return nil
	}
	return httpURL(false)(v)
}

// domainList checks email domains: lower-case host names such as example.org.
func domainList(v any) error {
	list, ok := v.([]any)
	if !ok || len(list) > 100 {
		return fmt.Errorf("must be a list of at most 100 domain names")
	}
	for _, e := range list {
		if s, ok := e.(string); !ok || !domainPattern.MatchString(s) {
			return fmt.Errorf("must list domain names in lower case, such as example.org (got %v)", e)
		}
	}
	return nil
}

// extensionList checks a comma-separated list of file extensions, each with its dot.
func extensionList(v any) error {
	s, ok := v.(string)
	if !ok || len(s) > 1000 {
		return fmt.Errorf("must be a comma-separated list of extensions such as .gpkg,.zip")
	}
	for _, e := range strings.Split(s, ",") {
		if !extensionPattern.MatchString(strings.TrimSpace(e)) {
			return fmt.Errorf("must be a comma-separated list of extensions such as .gpkg,.zip (got %q)", e)
		}
	}
	return nil
}

var (
	slugPattern      = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)
	colorPattern     = regexp.MustCompile(`^#[0-9a-fA-F]{6}$`)
	layerPrefix      = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)
	bannerColor      = regexp.MustCompile(`^[a-z]{1,20}$|^#[0-9a-fA-F]{6}$`)
	domainPattern    = regexp.MustCompile(`^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$`)
	extensionPattern = regexp.MustCompile(`^\.[a-z0-9]{1,10}$`)
)

// registry is every writable setting, by group (the tabs of the settings screen).
var registry = []Def{
	{Key: "auth.registration_mode", Label: "Registration", Check: oneOf("open", "approval", "closed")},
	{Key: "auth.email_verification_required", Label: "Email verification required", Check: boolean},
	{Key: "auth.local_login_enabled", Label: "Password sign-in", Check: boolean},
	{Key: "auth.landing_first", Label: "Show the landing page first", Check: boolean},
	{Key: "auth.allowed_email_domains", Label: "Email domains allowed to register", Check: domainList},
	{Key: "publication.require_metadata", Label: "Require metadata to publish", Check: boolean},
	{Key: "general.public_app_url", Label: "Public web app URL", Check: optionalURL},
	{Key: "general.public_api_url", Label: "Public API URL", Check: optionalURL},
	{Key: "general.log_level", Label: "Log level", Check: oneOf("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")},
	{Key: "general.log_json", Label: "Logs as JSON", Check: boolean},
	{Key: "ogc.items_max_page_size", Label: "Largest OGC items page", Check: number(1, 100000, true)},
	{Key: "uploads.max_size_mb", Label: "Largest upload (MB)", Check: number(1, 1<<20, true)},
	{Key: "uploads.allowed_extensions", Label: "Upload file types", Check: extensionList},
	{Key: "uploads.max_storage_bytes_per_user", Label: "Storage per user (bytes, 0: no cap)", Check: number(0, 1<<50, true)},
	{Key: "uploads.max_datasets_per_user", Label: "Datasets per user (0: no cap)", Check: number(0, 1e6, true)},
	{Key: "map.enabled_plugins", Label: "Enabled map plugins", Check: stringList(100)},
	{Key: "feature_flags.enable_dataset_editing", Label: "Dataset editing", Check: boolean},
	{Key: "feature_flags.enable_map_sharing", Label: "Map sharing", Check: boolean},
	{Key: "feature_flags.enable_embed_tokens", Label: "Embed tokens", Check: boolean},
	{Key: "feature_flags.enable_sql_query", Label: "Read-only SQL", Check: boolean},
	{Key: "feature_flags.enable_remote_services", Label: "Remote services", Check: boolean},
	{Key: "tile_config.cache_max_bytes", Label: "Tile cache size (bytes)", Check: number(0, 1<<34, true)},
	{Key: "tile_config.max_features_per_tile", Label: "Features per tile", Check: number(1, 1e6, true)},
	{Key: "tile_config.simplify_tolerance", Label: "Simplification (tile units)", Check: number(0, 64, false)},
	{Key: "tile_config.token_ttl_seconds", Label: "Tile template lifetime (s)", Check: number(60, 7*86400, true)},
	{Key: "tile_config.max_concurrent", Label: "Tile queries at once", Check: number(1, 256, true)},
	{Key: "tile_config.mvt_source_layer_prefix", Label: "Tile layer prefix", Check: words(32, layerPrefix, false)},
	{Key: "tile_config.cdn_base_url", Label: "CDN base URL", Check: httpURL(true)},
	{Key: "tile_config.cache_ttl_seconds", Label: "Tile cache lifetime (s)", Check: number(0, 365*86400, true)},
	{Key: "map_defaults.center_lng", Label: "Default longitude", Check: number(-180, 180, false)},
	{Key: "map_defaults.center_lat", Label: "Default latitude", Check: number(-90, 90, false)},
	{Key: "map_defaults.zoom", Label: "Default zoom", Check: number(0, 24, false)},
	{Key: "map_defaults.basemap_style", Label: "Default basemap", Check: words(64, slugPattern, false)},
	{Key: "map_defaults.show_basemap_labels", Label: "Basemap labels", Check: boolean},
	{Key: "map_defaults.basemap_position", Label: "Basemap position", Check: oneOf("bottom", "top")},
	{Key: "map_defaults.projection", Label: "Projection", Check: oneOf("mercator", "globe")},
	{Key: "basemaps.custom", Label: "Custom basemaps", Check: basemapList},
	{Key: "basemaps.disabled", Label: "Disabled basemaps", Check: stringList(100)},
	{Key: "branding.site_name", Label: "Site name", Check: words(100, nil, false)},
	{Key: "branding.show_badge", Label: "Show the Meridian badge", Check: boolean},
	{Key: "branding.privacy_url", Label: "Privacy notice URL", Check: httpURL(true)},
	{Key: "branding.logo_url", Label: "Logo URL", Check: httpURL(true)},
	{Key: "branding.primary_color", Label: "Primary colour", Check: nullable(words(7, colorPattern, false))},
	{Key: "branding.banner_enabled", Label: "Show the banner", Check: boolean},
	{Key: "branding.banner_text", Label: "Banner text", Check: anyText(500)},
	{Key: "branding.banner_color", Label: "Banner colour", Check: words(20, bannerColor, false)},
	{Key: "sql_query.statement_timeout_ms", Label: "Read-only SQL time limit (ms)", Check: number(100, 60000, true)},
	{Key: "ai.enabled", Label: "AI features", Check: boolean},
	{Key: "ai.semantic_search_enabled", Label: "Semantic search", Check: boolean},
	{Key: "ai.provider", Label: "AI provider", Check: nullable(anyText(64))}, // "": none
	{Key: "ai.model", Label: "Chat model", Check: nullable(words(128, nil, false))},
	{Key: "ai.openai_base_url", Label: "OpenAI-compatible API URL", Check: optionalURL},
	{Key: "ai.anthropic_base_url", Label: "Anthropic API URL (empty: api.anthropic.com)", Check: optionalURL},
	{Key: "ai.embedding_model", Label: "Embedding model", Check: nullable(words(128, nil, false))},
	{Key: "ai.embedding_base_url", Label: "Embedding API URL", Check: optionalURL},
	{Key: "ai.embedding_dimensions", Label: "Embedding dimensions", Check: nullable(number(1, 8192, true))},
	{Key: "ai.send_sample_values", Label: "Send sample values to the AI provider", Check: boolean},
	{Key: "ai.max_tokens_per_user_per_day", Label: "AI tokens per user per day (0: no cap)", Check: number(0, 1e12, true)},
	{Key: "notifications.enabled", Label: "Email notifications", Check: boolean},
	{Key: "provider_keys.maptiler", Label: "MapTiler key", Check: nullable(words(1024, nil, false)), Secret: true},
	{Key: "provider_keys.stadia", Label: "Stadia Maps key", Check: nullable(words(1024, nil, false)), Secret: true},
	{Key: "provider_keys.thunderforest", Label: "Thunderforest key", Check: nullable(words(1024, nil, false)), Secret: true},
	{Key: "provider_keys.ai", Label: "AI provider key", Check: nullable(words(1024, nil, false)), Secret: true},
	{Key: "provider_keys.embedding", Label: "Embedding provider key", Check: nullable(words(1024, nil, false)), Secret: true},
	{Key: "provider_keys.geocoding", Label: "Geocoding key", Check: nullable(words(1024, nil, false)), Secret: true},
}

func init() {
	for k, v := range map[string]any{
		"branding.site_name": "Meridian", "branding.show_badge": true, "branding.privacy_url": nil, "branding.logo_url": nil,
		"branding.primary_color": nil, "branding.banner_enabled": false, "branding.banner_text": "", "branding.banner_color": "warning",
		"ai.enabled": true, "ai.semantic_search_enabled": false, "ai.provider": "anthropic", "ai.model": nil,
		"ai.openai_base_url": "", "ai.anthropic_base_url": "", "ai.embedding_model": nil, "ai.embedding_base_url": "", "ai.embedding_dimensions": nil,
		"ai.send_sample_values": true, "ai.max_tokens_per_user_per_day": 0,
		"notifications.enabled": true, "sql_query.statement_timeout_ms": 5000,
		"auth.landing_first": false, "auth.allowed_email_domains": []string{}, "publication.require_metadata": false,
		"general.public_app_url": "", "general.public_api_url": "", "general.log_level": "INFO", "general.log_json": false,
		"ogc.items_max_page_size": 1000, "uploads.max_size_mb": 500,
		"uploads.allowed_extensions":         ".zip,.gpkg,.geojson,.json,.csv,.tif,.tiff,.xlsx,.xls",
		"uploads.max_storage_bytes_per_user": 0, "uploads.max_datasets_per_user": 0, "map.enabled_plugins": []string{},
		"tile_config.cache_ttl_seconds": 300,
	} {
		defaults[k] = v
	}
}

// Lookup finds the definition of a key.
func Lookup(key string) (Def, bool) {
	i := slices.IndexFunc(registry, func(d Def) bool { return d.Key == key })
	if i < 0 {
		return Def{}, false
	}
	return registry[i], true
}

// Branding is what the web UI shows of the deployment.
type Branding struct {
	SiteName            string
	ShowBadge           bool
	PrivacyURL, LogoURL *string
	PrimaryColor        *string
}

// Branding reads the branding group in one query.
func (r Reader) Branding(ctx context.Context) (Branding, error) {
	var b Branding
	err := r.load(ctx, map[string]any{"branding.site_name": &b.SiteName, "branding.show_badge": &b.ShowBadge,
		"branding.privacy_url": &b.PrivacyURL, "branding.logo_url": &b.LogoURL, "branding.primary_color": &b.PrimaryColor})
	return b, err
}

// AI is the ai group: whether the features are on, which provider and models they use and
// where, and the limits of what is sent.
type AI struct {
	Enabled, SemanticSearch bool
	Provider, Model         *string
	EmbeddingModel          *string
	EmbeddingDimensions     *int
	OpenAIBaseURL           string // the OpenAI-compatible chat API ("": api.openai.com)
	AnthropicBaseURL        string // the Anthropic Messages API ("": api.anthropic.com)
	EmbeddingBaseURL        string // the OpenAI-compatible embeddings API ("": the chat provider's)
	SendSampleValues        bool   // whether dataset values (samples, query rows) may reach the provider
	MaxTokensPerUserPerDay  int64  // 0: no cap
}

// AI reads the ai group in one query.
func (r Reader) AI(ctx context.Context) (AI, error) {
	var a AI
	err := r.load(ctx, map[string]any{"ai.enabled": &a.Enabled, "ai.semantic_search_enabled": &a.SemanticSearch,
		"ai.provider": &a.Provider, "ai.model": &a.Model, "ai.embedding_model": &a.EmbeddingModel,
		"ai.embedding_dimensions": &a.EmbeddingDimensions, "ai.openai_base_url": &a.OpenAIBaseURL,
		"ai.anthropic_base_url": &a.AnthropicBaseURL, "ai.embedding_base_url": &a.EmbeddingBaseURL,
		"ai.send_sample_values": &a.SendSampleValues, "ai.max_tokens_per_user_per_day": &a.MaxTokensPerUserPerDay})
	if a.Provider != nil && *a.Provider == "" {
		a.Provider = nil // llm_provider "" names none
	}
	return a, err
}

// NotificationsEnabled reads whether email notifications are switched on.
func (r Reader) NotificationsEnabled(ctx context.Context) (bool, error) {
	var on bool
	err := r.load(ctx, map[string]any{"notifications.enabled": &on})
	return on, err
}

// SQLQuery reads what read-only SQL needs: whether it is switched on, and its time limit.
func (r Reader) SQLQuery(ctx context.Context) (enabled bool, timeout time.Duration, err error) {
	var ms int
	err = r.load(ctx, map[string]any{"feature_flags.enable_sql_query": &enabled, "sql_query.statement_timeout_ms": &ms})
	return enabled, time.Duration(ms) * time.Millisecond, err
}
