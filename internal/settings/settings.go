// Package settings reads runtime settings an admin can change without a restart. Values live in
// catalog.settings as JSON; a key that was never written has its documented default.
package settings

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"meridian/store"
)

// Defaults of the settings read so far, keyed as stored.
var defaults = map[string]any{
	// Self-registration is off until an admin turns it on (registration_enabled).
	"auth.registration_mode":           "closed",
	"auth.email_verification_required": true,
	"auth.local_login_enabled":         true,
	// Feature flags (Get Feature Flags). Editing features is off until an admin turns it on
	// (client-semantics: enable_dataset_editing defaults to false); the others default to on.
	"feature_flags.enable_dataset_editing": false,
	"feature_flags.enable_map_sharing":     true,
	"feature_flags.enable_embed_tokens":    true,
	"feature_flags.enable_sql_query":       true,
	"feature_flags.enable_remote_services": true,
}

// Reader reads settings through the catalog queries.
type Reader struct{ Q *store.Queries }

// Auth is the public sign-in configuration, with the banner the sign-in page shows.
type Auth struct {
	RegistrationMode          string // open, approval or closed (registration_enabled false)
	EmailVerificationRequired bool
	LocalLoginEnabled         bool     // password_login_enabled
	LandingFirst              bool     // landing_first
	AllowedEmailDomains       []string // allowed_email_domains: none means any
	BannerEnabled             bool
	BannerText, BannerColor   string
}

// Auth reads the sign-in settings in one query.
func (r Reader) Auth(ctx context.Context) (Auth, error) {
	var a Auth
	err := r.load(ctx, map[string]any{
		"auth.registration_mode":           &a.RegistrationMode,
		"auth.email_verification_required": &a.EmailVerificationRequired,
		"auth.local_login_enabled":         &a.LocalLoginEnabled,
		"auth.landing_first":               &a.LandingFirst,
		"auth.allowed_email_domains":       &a.AllowedEmailDomains,
		"branding.banner_enabled":          &a.BannerEnabled,
		"branding.banner_text":             &a.BannerText,
		"branding.banner_color":            &a.BannerColor,
	})
	return a, err
}

// EmailAllowed tells whether an address may get an account of its own making (self-registration,
// a first sign-in through an identity provider): any address while no domain is listed.
func (a Auth) EmailAllowed(email string) bool {
	if len(a.AllowedEmailDomains) == 0 {
		return true
	}
	_, domain, ok := strings.Cut(email, "@")
	return ok && slices.Contains(a.AllowedEmailDomains, strings.ToLower(domain))
}

// load fills each destination from the stored value or, when absent, from its default.
func (r Reader) load(ctx context.Context, dst map[string]any) error {
	keys := make([]string, 0, len(dst))
	for k := range dst {
		keys = append(keys, k)
		b, err := json.Marshal(defaults[k])
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, dst[k]); err != nil {
			return fmt.Errorf("settings: default of %s: %w", k, err)
		}
	}
	rows, err := r.Q.GetSettingsByKeys(ctx, keys)
	if err != nil {
		return err
	}
	for _, row := range rows {
		if err := json.Unmarshal(row.Value, dst[row.Key]); err != nil {
			return fmt.Errorf("settings: stored value of %s: %w", row.Key, err)
		}
	}
	return nil
}

// ProviderKey is a third-party key the deployment can use, without its value.
type ProviderKey struct {
	Name, Label string
	UsedFor     []string
	Source      string // "environment", "settings" or "" when not configured
}

// providerKeys is what each known key serves, in display order.
var providerKeys = []ProviderKey{
	{Name: "maptiler", Label: "MapTiler", UsedFor: []string{"basemaps"}},
	{Name: "stadia", Label: "Stadia Maps", UsedFor: []string{"basemaps"}},
	{Name: "thunderforest", Label: "Thunderforest", UsedFor: []string{"basemaps"}},
	{Name: "ai", Label: "AI provider (OpenAI-compatible API or Anthropic)", UsedFor: []string{"ai", "embeddings"}},
	{Name: "embedding", Label: "Embedding provider (OpenAI-compatible API)", UsedFor: []string{"embeddings"}},
	{Name: "geocoding", Label: "Geocoding service", UsedFor: []string{"geocoding"}},
}

// ProviderKeyStatus tells, for every known provider key, whether and where it is configured.
// The environment wins over settings, as it does when the key is used.
func (r Reader) ProviderKeyStatus(ctx context.Context, fromEnv map[string]string) ([]ProviderKey, error) {
	stored, err := r.Q.ListSettingKeysWithPrefix(ctx, "provider_keys.")
	if err != nil {
		return nil, err
	}
	inSettings := map[string]bool{}
	for _, k := range stored {
		inSettings[strings.TrimPrefix(k, "provider_keys.")] = true
	}
	out := make([]ProviderKey, len(providerKeys))
	for i, pk := range providerKeys {
		out[i] = pk
		switch {
		case fromEnv[pk.Name] != "":
			out[i].Source = "environment"
		case inSettings[pk.Name]:
			out[i].Source = "settings"
		}
	}
	return out, nil
}
