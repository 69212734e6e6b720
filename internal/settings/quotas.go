package settings

import "context"

// Quotas on what users store besides datasets (issue 28): icons, whose raster pixels make the
// sprite sheet every map style loads, and saved searches. Reaching one refuses the new item with
// a problem naming the setting; nothing stored is touched.
func init() {
	registry = append(registry,
		Def{Key: "map_icons.max_per_user", Label: "Icons per user", Check: number(1, 1e5, true)},
		Def{Key: "map_icons.max_total", Label: "Icons in all", Check: number(1, 1e6, true)},
		Def{Key: "map_icons.max_pixels_per_user", Label: "Raster icon pixels per user", Check: number(1<<18, 1<<30, true)},
		Def{Key: "map_icons.max_pixels_total", Label: "Raster icon pixels in all (the sprite sheet)", Check: number(1<<18, 1<<30, true)},
		Def{Key: "saved_searches.max_per_user", Label: "Saved searches per user", Check: number(1, 1e4, true)},
		Def{Key: "saved_searches.max_params_bytes", Label: "Largest saved search (bytes of params)", Check: number(1<<10, 1<<20, true)},
	)
	for k, v := range map[string]any{
		// 8 megapixels keep the sheet at 32 MB decoded and its build well under a second: 2,000
		// icons of 64x64, or 32 of the largest (512x512).
		"map_icons.max_per_user": 100, "map_icons.max_total": 1000,
		"map_icons.max_pixels_per_user": 2 << 20, "map_icons.max_pixels_total": 8 << 20,
		"saved_searches.max_per_user": 100, "saved_searches.max_params_bytes": 16 << 10,
	} {
		defaults[k] = v
	}
}

// IconQuotas bound the icons of one user and of the deployment.
type IconQuotas struct {
	PerUser, Total             int64 // icons, raster and SVG
	PixelsPerUser, PixelsTotal int64 // width x height of raster icons
}

// IconQuotas reads the icon quotas in one query.
func (r Reader) IconQuotas(ctx context.Context) (IconQuotas, error) {
	var q IconQuotas
	err := r.load(ctx, map[string]any{"map_icons.max_per_user": &q.PerUser, "map_icons.max_total": &q.Total,
		"map_icons.max_pixels_per_user": &q.PixelsPerUser, "map_icons.max_pixels_total": &q.PixelsTotal})
	return q, err
}

// SavedSearchQuotas bound one user's saved searches.
type SavedSearchQuotas struct {
	PerUser     int64
	ParamsBytes int64 // of a search's params, as JSON
}

// SavedSearchQuotas reads the saved search quotas in one query.
func (r Reader) SavedSearchQuotas(ctx context.Context) (SavedSearchQuotas, error) {
	var q SavedSearchQuotas
	err := r.load(ctx, map[string]any{"saved_searches.max_per_user": &q.PerUser, "saved_searches.max_params_bytes": &q.ParamsBytes})
	return q, err
}
