package settings

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Client keys are the settings as the web UI's settings pages name them, tab by tab
// (client-semantics.md, "Administration pages"). A client key holds no value of its own: it
// stands for settings of the registry, which every reader (feature flags, registration, branding,
// AI status, upload limits ...) reads, or for a value the environment fixes at start. So a value
// saved under a client key is the one the server uses, and a value saved under the registry key
// shows under the client key.
type clientKey struct {
	Tab, Key, Label string
	Default         any // shown while nothing is stored; a unit test holds it to the registry's defaults
	// keys are the registry settings behind the client key, none when Env names the environment
	// variable that fixes the value.
	keys []string
	Env  string
	// show turns the effective values of keys (in order, as JSON decodes them) into the
	// client's value; nil: the one key's value as it is.
	show func(vals []any) any
	// store turns a written value (nil: back to the default) into writes of keys, given their
	// effective values; nil: the one key takes the value. Registry checks apply afterwards.
	store func(v any, vals []any) (map[string]any, error)
}

// clientTabs are the tabs of the settings pages in order; permissions and appearance hold
// nothing in this edition but are always present.
var clientTabs = []string{"general", "auth", "ai", "network", "storage", "map", "permissions", "appearance"}

var clientKeys = []clientKey{
	alias("general", "require_metadata_for_publish", "publication.require_metadata", false),
	alias("general", "enable_dataset_editing", "feature_flags.enable_dataset_editing", false),
	alias("general", "banner_enabled", "branding.banner_enabled", false),
	alias("general", "banner_text", "branding.banner_text", ""),
	alias("general", "banner_color", "branding.banner_color", "warning"),
	alias("general", "public_app_url", "general.public_app_url", ""),
	alias("general", "public_api_url", "general.public_api_url", ""),
	optionalText("general", "privacy_url", "branding.privacy_url", ""),
	alias("general", "log_level", "general.log_level", "INFO"),
	alias("general", "log_json", "general.log_json", false),

	{Tab: "auth", Key: "registration_enabled", Label: "Self-registration", Default: false, keys: []string{"auth.registration_mode"},
		show: func(vals []any) any { return vals[0] != "closed" }, store: storeRegistration},
	alias("auth", "landing_first", "auth.landing_first", false),
	alias("auth", "password_login_enabled", "auth.local_login_enabled", true),
	alias("auth", "allowed_email_domains", "auth.allowed_email_domains", []any{}),
	fixed("auth", "access_token_expire_minutes", "Access token lifetime (minutes)", "ACCESS_TOKEN_TTL", 15),
	fixed("auth", "refresh_token_expire_days", "Refresh token lifetime (days)", "REFRESH_TOKEN_TTL", 7),
	fixed("auth", "login_rate_limit", "Sign-in attempts per minute and address", "RATE_LIMITS", 5),

	alias("ai", "ai_enabled", "ai.enabled", true),
	alias("ai", "ai_send_sample_values", "ai.send_sample_values", true),
	alias("ai", "max_ai_tokens_per_user_per_day", "ai.max_tokens_per_user_per_day", 0),
	optionalText("ai", "llm_provider", "ai.provider", "anthropic"),
	optionalText("ai", "llm_model", "ai.model", ""),
	alias("ai", "openai_base_url", "ai.openai_base_url", ""),
	optionalText("ai", "embedding_model", "ai.embedding_model", ""),
	alias("ai", "embedding_base_url", "ai.embedding_base_url", ""),
	{Tab: "ai", Key: "embedding_dims", Label: "Embedding dimensions", Default: "0", keys: []string{"ai.embedding_dimensions"},
		show: showDims, store: storeDims},

	fixed("network", "cors_allowed_origins", "CORS allowed origins", "CORS_ALLOWED_ORIGINS", ""),
	fixed("network", "global_rate_limit", "Requests per second and address", "RATE_LIMIT_PER_SECOND", 60),
	alias("network", "ogc_items_max_page_size", "ogc.items_max_page_size", 1000),

	alias("storage", "upload_max_size_mb", "uploads.max_size_mb", 500),
	alias("storage", "upload_allowed_extensions", "uploads.allowed_extensions", ".zip,.gpkg,.geojson,.json,.csv,.tif,.tiff,.xlsx,.xls"),
	alias("storage", "tile_cache_ttl", "tile_config.cache_ttl_seconds", 300),
	alias("storage", "max_storage_bytes_per_user", "uploads.max_storage_bytes_per_user", 0),
	alias("storage", "max_datasets_per_user", "uploads.max_datasets_per_user", 0),

	alias("map", "basemaps", "basemaps.custom", []any{}),
	{Tab: "map", Key: "map_defaults", Label: "Default map view", Default: map[string]any{"center_lat": 20, "center_lng": 0, "zoom": 2},
		keys: []string{"map_defaults.center_lat", "map_defaults.center_lng", "map_defaults.zoom"}, show: showMapView, store: storeMapView},
	alias("map", "enabled_plugins", "map.enabled_plugins", []any{}),
}

// alias is a client key for one registry setting with the same value; its label is the setting's.
func alias(tab, key, internal string, def any) clientKey {
	d, _ := Lookup(internal)
	return clientKey{Tab: tab, Key: key, Label: d.Label, Default: def, keys: []string{internal}}
}

// fixed is a client key for a value the server takes from its environment at start.
func fixed(tab, key, label, env string, def any) clientKey {
	return clientKey{Tab: tab, Key: key, Label: label, Default: def, Env: env}
}

// optionalText is a client key for a nullable text setting that clients show and send as "".
// Where the setting's default is a text (the AI provider), "" is stored, so that "none" is not
// taken for "the default".
func optionalText(tab, key, internal string, def any) clientKey {
	k := alias(tab, key, internal, def)
	k.show = func(vals []any) any {
		if vals[0] == nil {
			return ""
		}
		return vals[0]
	}
	k.store = func(v any, _ []any) (map[string]any, error) {
		if v == "" && defaults[internal] == nil {
			v = nil
		}
		return map[string]any{internal: v}, nil
	}
	return k
}

// storeRegistration switches self-registration on (with admin approval, unless it was open
// already) or off.
func storeRegistration(v any, vals []any) (map[string]any, error) {
	on, ok := v.(bool)
	switch {
	case v == nil:
		return map[string]any{"auth.registration_mode": nil}, nil
	case !ok:
		return nil, fmt.Errorf("must be true or false")
	case !on:
		return map[string]any{"auth.registration_mode": "closed"}, nil
	case vals[0] == "closed":
		return map[string]any{"auth.registration_mode": "approval"}, nil
	}
	return map[string]any{"auth.registration_mode": vals[0]}, nil
}

// showDims gives the embedding dimensions as clients show them: a text, "0" when unknown.
func showDims(vals []any) any {
	if n, ok := vals[0].(float64); ok {
		return strconv.FormatFloat(n, 'f', -1, 64)
	}
	return "0"
}

func storeDims(v any, _ []any) (map[string]any, error) {
	if s, ok := v.(string); ok {
		n, err := strconv.Atoi(s)
		if err != nil {
			return nil, fmt.Errorf("must be a whole number")
		}
		v = float64(n)
	}
	if v == 0.0 {
		v = nil
	}
	return map[string]any{"ai.embedding_dimensions": v}, nil
}

func showMapView(vals []any) any {
	return map[string]any{"center_lat": vals[0], "center_lng": vals[1], "zoom": vals[2]}
}

// storeMapView takes {center_lat, center_lng, zoom}, any of them, and the other map defaults of
// the registry by name (basemap_style ...), as the grouped form of Update Settings did.
func storeMapView(v any, _ []any) (map[string]any, error) {
	if v == nil {
		return map[string]any{"map_defaults.center_lat": nil, "map_defaults.center_lng": nil, "map_defaults.zoom": nil}, nil
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("must be an object {center_lat, center_lng, zoom}")
	}
	out := map[string]any{}
	for name, sub := range obj {
		if _, ok := Lookup("map_defaults." + name); !ok {
			return nil, fmt.Errorf("has no member %s", name)
		}
		out["map_defaults."+name] = sub
	}
	return out, nil
}

// clientKeyOf finds a client key by name.
func clientKeyOf(key string) (clientKey, bool) {
	for _, k := range clientKeys {
		if k.Key == key {
			return k, true
		}
	}
	return clientKey{}, false
}

// covered are the registry settings some client key stands for: they show under the client key
// only, not again in a tab of our own.
func covered() map[string]bool {
	out := map[string]bool{}
	for _, k := range clientKeys {
		for _, key := range k.keys {
			out[key] = true
		}
	}
	return out
}

// ownTab is the tab of a registry group whose settings no client key stands for; groups named
// like a client tab get a name of their own, since the client tabs hold exactly the client keys.
func ownTab(group string) string {
	switch group {
	case "auth":
		return "registration"
	case "ai":
		return "semantic_search"
	}
	return group
}

// decoded is v as JSON decoding gives it (numbers as float64, lists as []any ...).
func decoded(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}
