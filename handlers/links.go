package handlers

import (
	"context"

	"meridian/gen"
	"meridian/internal/cql2"
	"meridian/internal/publicurl"
)

// base is the public base URL of the request: BASE_URL, or behind a trusted proxy the address
// the proxy was asked for.
func (s *Server) base(ctx context.Context) string { return publicurl.From(ctx, s.cfg.BaseURL) }

// filterLimits bound the filters clients send (CQL2_MAX_BYTES, CQL2_MAX_TERMS).
func (s *Server) filterLimits() cql2.Limits {
	return cql2.Limits{Bytes: s.cfg.CQL2MaxBytes, Terms: s.cfg.CQL2MaxTerms}
}

// link builds an absolute link under the API root of the request's public base URL.
func (s *Server) link(ctx context.Context, path, rel, mediaType, title string) gen.Link {
	l := gen.Link{Href: s.base(ctx) + "/api" + path, Rel: rel, Type: mediaType}
	if title != "" {
		l.Title = &title
	}
	return l
}
