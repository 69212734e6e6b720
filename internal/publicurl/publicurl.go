// Package publicurl tells the address clients reach the service at, for the absolute links of
// answers (OGC links, share URLs, tile templates, sign-in URLs): BASE_URL, or behind a trusted
// proxy what the proxy says it was asked for (Forwarded, X-Forwarded-Host/-Proto/-Prefix).
package publicurl

import (
	"context"
	"net/http"
	"regexp"
	"strings"
)

type key struct{}

// With returns ctx carrying base, the public base URL of the request.
func With(ctx context.Context, base string) context.Context {
	return context.WithValue(ctx, key{}, base)
}

// From is the request's public base URL, else fallback (BASE_URL).
func From(ctx context.Context, fallback string) string {
	if b, ok := ctx.Value(key{}).(string); ok && b != "" {
		return b
	}
	return fallback
}

var (
	hostPattern   = regexp.MustCompile(`^[A-Za-z0-9.-]+(:[0-9]{1,5})?$|^\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?$`)
	prefixPattern = regexp.MustCompile(`^(/[A-Za-z0-9._~-]+)*$`)
)

// FromHeaders reads the proxy's headers: RFC 7239 Forwarded (host, proto) first, then
// X-Forwarded-Host and X-Forwarded-Proto, and X-Forwarded-Prefix for a path the proxy mounts the
// service under. A value that is not a plain host, scheme or path is ignored, so a client cannot
// smuggle a link elsewhere through a header the proxy passes along. "" when the headers name no
// host.
func FromHeaders(h http.Header) string {
	var host, proto string
	if f := h.Get("Forwarded"); f != "" {
		first, _, _ := strings.Cut(f, ",")
		for _, pair := range strings.Split(first, ";") {
			k, v, _ := strings.Cut(strings.TrimSpace(pair), "=")
			v = strings.Trim(v, `"`)
			switch strings.ToLower(k) {
			case "host":
				host = v
			case "proto":
				proto = v
			}
		}
	}
	if host == "" {
		host, _, _ = strings.Cut(h.Get("X-Forwarded-Host"), ",")
		host = strings.TrimSpace(host)
	}
	if proto == "" {
		proto, _, _ = strings.Cut(h.Get("X-Forwarded-Proto"), ",")
		proto = strings.TrimSpace(proto)
	}
	proto = strings.ToLower(proto)
	if proto != "https" {
		proto = "http"
	}
	if !hostPattern.MatchString(host) {
		return ""
	}
	prefix := strings.TrimRight(strings.TrimSpace(h.Get("X-Forwarded-Prefix")), "/")
	if !prefixPattern.MatchString(prefix) {
		prefix = ""
	}
	return proto + "://" + host + prefix
}
