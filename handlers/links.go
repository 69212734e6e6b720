package handlers

import (
	"context"

	"meridian/gen"
	"meridian/internal/publicurl"
)

// base is the public base URL of the request: BASE_URL, or behind a trusted proxy the address
// the proxy was asked for.
func (s *Server) base(ctx context.Context) string { return publicurl.From(ctx, s.cfg.BaseURL) }

// link builds an absolute link under the API root of the request's public base URL.
func (s *Server) link(ctx context.Context, path, rel, mediaType, title string) gen.Link {
	l := gen.Link{Href: s.base(ctx) + "/api" + path, Rel: rel, Type: mediaType}
	if title != "" {
		l.Title = &title
	}
	return l
}
