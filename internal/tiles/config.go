package tiles

import (
	"context"

	"meridian/internal/auth"
	"meridian/internal/features"
)

// ConfigView is the tile configuration as one caller may read it. Anyone may read what map
// clients need to draw data layers (the viewers of public, shared and embedded maps sign in to
// nothing): the public addresses, the source-layer prefix and how tiles are cut. What only
// concerns the operator stays with admins (Operator nil for everyone else): the sizes and
// contents of the tile cache, the concurrency bound and the signing lifetime, which tell how to
// load the server and how long a leaked template lasts. No secret is part of either.
type ConfigView struct {
	AppURL, APIURL, BaseURL string
	CDNBaseURL              *string
	LayerPrefix             string
	MaxFeaturesPerTile      int
	SimplifyTolerance       float64
	Extent, Buffer          int
	MinZoom, MaxZoom        int
	Operator                *OperatorConfig
}

// OperatorConfig is the part of the tile configuration for admins.
type OperatorConfig struct {
	CacheMaxBytes, CacheUsedBytes int64
	CacheTiles                    int
	TokenTTLSeconds               int
	MaxConcurrent                 int
}

// ConfigFor is the tile configuration as p may read it; base is the server's public base URL,
// which stands in for the public addresses an admin did not set.
func (s *Service) ConfigFor(ctx context.Context, p auth.Principal, base string) (ConfigView, error) {
	c, err := s.config(ctx)
	if err != nil {
		return ConfigView{}, err
	}
	app, api, err := s.Settings.PublicAddresses(ctx)
	if err != nil {
		return ConfigView{}, err
	}
	out := ConfigView{AppURL: app, APIURL: api, BaseURL: base, CDNBaseURL: c.CDNBaseURL, LayerPrefix: c.LayerPrefix,
		MaxFeaturesPerTile: c.MaxFeaturesPerTile, SimplifyTolerance: c.SimplifyTolerance, Extent: features.TileExtent,
		Buffer: features.TileBuffer, MinZoom: 0, MaxZoom: 24}
	if out.AppURL == "" {
		out.AppURL = base
	}
	if out.APIURL == "" {
		out.APIURL = base + "/api"
	}
	if p.Can(auth.CapManageSettings) {
		used, n := s.Cache.Stats()
		out.Operator = &OperatorConfig{CacheMaxBytes: c.CacheMaxBytes, CacheUsedBytes: used, CacheTiles: n,
			TokenTTLSeconds: c.TokenTTLSeconds, MaxConcurrent: c.MaxConcurrent}
	}
	return out, nil
}
