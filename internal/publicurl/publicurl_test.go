package publicurl

import (
	"net/http"
	"testing"
)

func TestFromHeaders(t *testing.T) {
	cases := []struct {
		name    string
		headers map[string]string
		want    string
	}{
		{"none", nil, ""},
		{"forwarded", map[string]string{"Forwarded": `for=10.0.0.1;host=maps.example.org;proto=https`}, "https://maps.example.org"},
		{"forwarded, first hop", map[string]string{"Forwarded": `host=a.example.org;proto=https, host=b.example.org`}, "https://a.example.org"},
		{"x-forwarded", map[string]string{"X-Forwarded-Host": "maps.example.org:8443", "X-Forwarded-Proto": "https"}, "https://maps.example.org:8443"},
		{"prefix", map[string]string{"X-Forwarded-Host": "example.org", "X-Forwarded-Proto": "https", "X-Forwarded-Prefix": "/gis/"}, "https://example.org/gis"},
		{"proto defaults to http", map[string]string{"X-Forwarded-Host": "example.org"}, "http://example.org"},
		{"odd proto", map[string]string{"X-Forwarded-Host": "example.org", "X-Forwarded-Proto": "javascript"}, "http://example.org"},
		{"host with a path", map[string]string{"X-Forwarded-Host": "evil.example/x"}, ""},
		{"host with userinfo", map[string]string{"X-Forwarded-Host": "a@evil.example"}, ""},
		{"odd prefix", map[string]string{"X-Forwarded-Host": "example.org", "X-Forwarded-Prefix": "//evil.example"}, "http://example.org"},
	}
	for _, c := range cases {
		h := http.Header{}
		for k, v := range c.headers {
			h.Set(k, v)
		}
		if got := FromHeaders(h); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
