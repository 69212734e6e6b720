package settings

import (
	"cmp"
	"context"
	"slices"
	"strings"
)

// TileConfig is the tile_config group of the settings: what tile serving uses.
type TileConfig struct {
	CacheMaxBytes      int64   `json:"cache_max_bytes"`       // the in-memory tile cache's bound
	MaxFeaturesPerTile int     `json:"max_features_per_tile"` // features beyond it are left out of a tile
	SimplifyTolerance  float64 `json:"simplify_tolerance"`    // in tile units (4096 per side); 0: none
	TokenTTLSeconds    int     `json:"token_ttl_seconds"`     // the least lifetime of a signed template
	MaxConcurrent      int     `json:"max_concurrent"`        // tile queries running at once per server
	LayerPrefix        string  `json:"mvt_source_layer_prefix"`
	CDNBaseURL         *string `json:"cdn_base_url"`
}

func init() {
	for k, v := range map[string]any{
		"tile_config.cache_max_bytes":         int64(128 << 20),
		"tile_config.max_features_per_tile":   50000,
		"tile_config.simplify_tolerance":      1.0,
		"tile_config.token_ttl_seconds":       3600,
		"tile_config.max_concurrent":          8,
		"tile_config.mvt_source_layer_prefix": "data",
		"tile_config.cdn_base_url":            nil,
		"basemaps.custom":                     []Basemap{},
		"basemaps.disabled":                   []string{},
	} {
		defaults[k] = v
	}
}

// TileConfig reads the tile settings in one query.
func (r Reader) TileConfig(ctx context.Context) (TileConfig, error) {
	var t TileConfig
	err := r.load(ctx, map[string]any{
		"tile_config.cache_max_bytes":         &t.CacheMaxBytes,
		"tile_config.max_features_per_tile":   &t.MaxFeaturesPerTile,
		"tile_config.simplify_tolerance":      &t.SimplifyTolerance,
		"tile_config.token_ttl_seconds":       &t.TokenTTLSeconds,
		"tile_config.max_concurrent":          &t.MaxConcurrent,
		"tile_config.mvt_source_layer_prefix": &t.LayerPrefix,
		"tile_config.cdn_base_url":            &t.CDNBaseURL,
	})
	t.TokenTTLSeconds = max(t.TokenTTLSeconds, 60)
	t.MaxConcurrent = max(t.MaxConcurrent, 1)
	t.CacheMaxBytes = max(t.CacheMaxBytes, 0)
	return t, err
}

// Basemap is a background map clients may offer. URL may hold the placeholder {api_key}, resolved
// with the key of Provider.
type Basemap struct {
	ID          string  `json:"id"`
	Label       string  `json:"label"`
	URL         string  `json:"url"`
	Attribution *string `json:"attribution"`
	Provider    string  `json:"provider,omitempty"` // whose key {api_key} stands for
	Enabled     bool    `json:"-"`                  // off when its id is in basemaps.disabled
	Preset      bool    `json:"-"`
}

func text(s string) *string { return &s }

// presets ship with the service; an admin can switch them off (basemaps.disabled), not delete them.
var presets = []Basemap{
	{ID: "osm", Label: "OpenStreetMap", URL: "https://tile.openstreetmap.org/{z}/{x}/{y}.png",
		Attribution: text("© OpenStreetMap contributors")},
	{ID: "carto-positron", Label: "CARTO Positron", URL: "https://basemaps.cartocdn.com/gl/positron-gl-style/style.json",
		Attribution: text("© OpenStreetMap contributors © CARTO")},
	{ID: "carto-dark-matter", Label: "CARTO Dark Matter", URL: "https://basemaps.cartocdn.com/gl/dark-matter-gl-style/style.json",
		Attribution: text("© OpenStreetMap contributors © CARTO")},
	{ID: "maptiler-streets", Label: "MapTiler Streets", URL: "https://api.maptiler.com/maps/streets-v2/style.json?key={api_key}",
		Provider: "maptiler", Attribution: text("© MapTiler © OpenStreetMap contributors")},
	{ID: "maptiler-satellite", Label: "MapTiler Satellite", URL: "https://api.maptiler.com/maps/satellite/style.json?key={api_key}",
		Provider: "maptiler", Attribution: text("© MapTiler © OpenStreetMap contributors")},
	{ID: "stadia-alidade-smooth", Label: "Stadia Alidade Smooth",
		URL: "https://tiles.stadiamaps.com/styles/alidade_smooth.json?api_key={api_key}", Provider: "stadia",
		Attribution: text("© Stadia Maps © OpenMapTiles © OpenStreetMap contributors")},
}

// Basemaps lists the basemaps with their provider keys resolved (keys: provider name → key):
// presets first, then custom ones by label. One whose URL needs a key nobody configured is left
// out; a key is only ever part of a URL.
func (r Reader) Basemaps(ctx context.Context, keys map[string]string) ([]Basemap, error) {
	var custom []Basemap
	var disabled []string
	if err := r.load(ctx, map[string]any{"basemaps.custom": &custom, "basemaps.disabled": &disabled}); err != nil {
		return nil, err
	}
	slices.SortFunc(custom, func(a, b Basemap) int { return cmp.Compare(strings.ToLower(a.Label), strings.ToLower(b.Label)) })
	out := make([]Basemap, 0, len(presets)+len(custom))
	for _, b := range presets {
		b.Preset = true
		out = append(out, b)
	}
	out = append(out, custom...)
	kept := out[:0]
	for _, b := range out {
		b.Enabled = !slices.Contains(disabled, b.ID)
		if strings.Contains(b.URL, "{api_key}") {
			key := keys[b.Provider]
			if key == "" {
				continue
			}
			b.URL = strings.ReplaceAll(b.URL, "{api_key}", key)
		}
		kept = append(kept, b)
	}
	return kept, nil
}

// MapDefaults is the view and basemap a new map starts with (map_defaults group).
type MapDefaults struct {
	CenterLng         float64 `json:"center_lng"`
	CenterLat         float64 `json:"center_lat"`
	Zoom              float64 `json:"zoom"`
	BasemapStyle      string  `json:"basemap_style"`
	ShowBasemapLabels bool    `json:"show_basemap_labels"`
	BasemapPosition   string  `json:"basemap_position"`
	Projection        string  `json:"projection"`
}

func init() {
	for k, v := range map[string]any{
		"map_defaults.center_lng": 0.0, "map_defaults.center_lat": 20.0, "map_defaults.zoom": 2.0,
		"map_defaults.basemap_style": "carto-positron", "map_defaults.show_basemap_labels": true,
		"map_defaults.basemap_position": "bottom", "map_defaults.projection": "mercator",
	} {
		defaults[k] = v
	}
}

// MapDefaults reads the map defaults in one query.
func (r Reader) MapDefaults(ctx context.Context) (MapDefaults, error) {
	var m MapDefaults
	err := r.load(ctx, map[string]any{
		"map_defaults.center_lng": &m.CenterLng, "map_defaults.center_lat": &m.CenterLat, "map_defaults.zoom": &m.Zoom,
		"map_defaults.basemap_style": &m.BasemapStyle, "map_defaults.show_basemap_labels": &m.ShowBasemapLabels,
		"map_defaults.basemap_position": &m.BasemapPosition, "map_defaults.projection": &m.Projection,
	})
	return m, err
}
