package settings

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
)

// Every client key stands for registry settings that exist, in one of the client tabs, and shows
// exactly its documented default while nothing is stored (client-semantics.md).
func TestClientKeysShowTheirDefaults(t *testing.T) {
	seen := map[string]bool{}
	a := Admin{}
	for _, k := range clientKeys {
		if seen[k.Key] {
			t.Errorf("%s is listed twice", k.Key)
		}
		seen[k.Key] = true
		if !slices.Contains(clientTabs, k.Tab) {
			t.Errorf("%s is in tab %s, not a client tab", k.Key, k.Tab)
		}
		if (k.Env == "") == (len(k.keys) == 0) {
			t.Errorf("%s must stand for registry settings or for the environment", k.Key)
		}
		for _, key := range k.keys {
			if _, ok := Lookup(key); !ok {
				t.Errorf("%s stands for %s, which is not a setting", k.Key, key)
			}
		}
		if it := a.clientItem(k, nil); !reflect.DeepEqual(decoded(it.Value), decoded(k.Default)) {
			t.Errorf("%s shows %#v by default, want %#v", k.Key, it.Value, decoded(k.Default))
		}
	}
}

// A value written under a client key and read back shows as written (the store and show of each
// conversion agree).
func TestClientKeysRoundTrip(t *testing.T) {
	a := Admin{}
	cases := map[string]any{
		"registration_enabled": true, "privacy_url": "https://example.org/privacy", "llm_provider": "",
		"llm_model": "gpt-x", "embedding_dims": "768", "map_defaults": map[string]any{"center_lat": 1.0, "center_lng": 2.0, "zoom": 3.0},
		"allowed_email_domains": []any{"example.org"}, "enable_dataset_editing": true,
	}
	for name, v := range cases {
		writes := map[string]any{}
		if err := a.collect(writes, nil, name, v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		stored := map[string]json.RawMessage{}
		for key, sv := range writes {
			if d, _ := Lookup(key); sv != nil && d.Check(sv) != nil {
				t.Errorf("%s writes %s = %v, which its rule refuses: %v", name, key, sv, d.Check(sv))
			}
			if sv != nil {
				stored[key], _ = json.Marshal(sv)
			}
		}
		k, _ := clientKeyOf(name)
		if got := a.clientItem(k, stored); !reflect.DeepEqual(got.Value, v) {
			t.Errorf("%s: wrote %#v, shows %#v (writes %v)", name, v, got.Value, writes)
		}
	}
}

func TestEmailAllowed(t *testing.T) {
	a := Auth{AllowedEmailDomains: []string{"example.org"}}
	for email, want := range map[string]bool{"x@example.org": true, "x@EXAMPLE.ORG": true, "x@evil.org": false,
		"x@sub.example.org": false, "nobody": false} {
		if a.EmailAllowed(email) != want {
			t.Errorf("%s: allowed %v", email, !want)
		}
	}
	if !(Auth{}).EmailAllowed("x@anything.net") {
		t.Error("no domains listed must allow every address")
	}
}
