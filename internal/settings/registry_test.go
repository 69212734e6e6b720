package settings

import "testing"

// Every setting an admin may write has a default (secrets have none: absent means not set), and
// every default is a value its own rule accepts.
func TestEverySettingHasAValidDefault(t *testing.T) {
	for _, d := range registry {
		v, ok := defaults[d.Key]
		switch {
		case d.Secret:
			continue
		case !ok:
			t.Errorf("%s has no default", d.Key)
		case d.Check(jsonValue(t, v)) != nil:
			t.Errorf("%s: its default %v breaks its own rule: %v", d.Key, v, d.Check(jsonValue(t, v)))
		}
	}
}

func TestChecksRefuseWhatTheyShould(t *testing.T) {
	cases := []struct {
		key   string
		value any
		ok    bool
	}{
		{"tile_config.max_concurrent", 8.0, true},
		{"tile_config.max_concurrent", 0.0, false},
		{"tile_config.max_concurrent", 2.5, false},
		{"tile_config.max_concurrent", "8", false},
		{"auth.registration_mode", "open", true},
		{"auth.registration_mode", "everyone", false},
		{"branding.privacy_url", "javascript:alert(1)", false},
		{"branding.privacy_url", nil, true},
		{"branding.primary_color", "#aabbcc", true},
		{"branding.primary_color", "red", false},
		{"basemaps.custom", []any{map[string]any{"id": "ortho", "label": "Ortho", "url": "https://t.example.org/{z}/{x}/{y}.jpg"}}, true},
		{"basemaps.custom", []any{map[string]any{"id": "osm", "label": "Mine", "url": "https://t.example.org/{z}/{x}/{y}.jpg"}}, false},
		{"basemaps.custom", []any{map[string]any{"id": "x", "label": "X", "url": "file:///etc/passwd"}}, false},
		{"tile_config.mvt_source_layer_prefix", "data", true},
		{"tile_config.mvt_source_layer_prefix", "da ta", false},
	}
	for _, c := range cases {
		d, ok := Lookup(c.key)
		if !ok {
			t.Fatalf("no setting %s", c.key)
		}
		if err := d.Check(c.value); (err == nil) != c.ok {
			t.Errorf("%s = %v: accepted %v, want %v (%v)", c.key, c.value, err == nil, c.ok, err)
		}
	}
}

// jsonValue is v as JSON decoding gives it (numbers as float64, lists as []any).
func jsonValue(t *testing.T, v any) any {
	t.Helper()
	switch x := v.(type) {
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case []string:
		out := make([]any, len(x))
		for i, s := range x {
			out[i] = s
		}
		return out
	case []Basemap:
		return []any{}
	}
	return v
}
