package handlers

import "meridian/gen"

// link builds an absolute link under the API root from the configured base URL.
func (s *Server) link(path, rel, mediaType, title string) gen.Link {
	l := gen.Link{Href: s.cfg.BaseURL + "/api" + path, Rel: rel, Type: mediaType}
	if title != "" {
		l.Title = &title
	}
	return l
}
