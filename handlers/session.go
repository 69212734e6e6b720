package handlers

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"time"

	"meridian/gen"
	"meridian/internal/auth"
	"meridian/internal/web"
)

// Cookie transport of spec section 4.1: the refresh token lives in an httpOnly cookie scoped to the
// auth endpoints, and a script-readable CSRF cookie must be echoed in X-CSRF-Token.
const (
	refreshCookie = "service_refresh"
	csrfCookie    = "service_csrf"
	cookieMode    = "cookie"
)

// tokenResponse answers login, refresh and OAuth callbacks: a TokenResponse body and, in cookie
// mode, two cookies. The generated response types can set only one Set-Cookie header.
type tokenResponse struct {
	body    gen.TokenResponse
	cookies []*http.Cookie
}

func (r tokenResponse) write(w http.ResponseWriter) error {
	for _, c := range r.cookies {
		http.SetCookie(w, c)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	return json.NewEncoder(w).Encode(r.body)
}

func (r tokenResponse) VisitLoginResponse(w http.ResponseWriter) error        { return r.write(w) }
func (r tokenResponse) VisitRefreshTokenResponse(w http.ResponseWriter) error { return r.write(w) }

// respondTokens builds the answer for pair: the refresh token in the body, or in cookies when the
// browser transport was asked for.
func (s *Server) respondTokens(ctx context.Context, pair auth.TokenPair, cookies bool) tokenResponse {
	bearer := "bearer"
	r := tokenResponse{body: gen.TokenResponse{AccessToken: pair.AccessToken, ExpiresIn: pair.ExpiresIn, TokenType: &bearer}}
	if !cookies {
		r.body.RefreshToken = &pair.RefreshToken
		return r
	}
	secure := web.MetaFrom(ctx).Secure || len(s.cfg.BaseURL) > 5 && s.cfg.BaseURL[:5] == "https"
	maxAge := int(s.cfg.RefreshTokenTTL / time.Second)
	r.cookies = []*http.Cookie{
		{Name: refreshCookie, Value: pair.RefreshToken, Path: "/api/auth/", MaxAge: maxAge, HttpOnly: true,
			Secure: secure, SameSite: http.SameSiteStrictMode},
		{Name: csrfCookie, Value: auth.NewOpaqueToken(), Path: "/", MaxAge: maxAge, Secure: secure,
			SameSite: http.SameSiteStrictMode},
	}
	return r
}

// clearSessionCookies expires both cookies (logout).
func clearSessionCookies() []*http.Cookie {
	return []*http.Cookie{
		{Name: refreshCookie, Value: "", Path: "/api/auth/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode},
		{Name: csrfCookie, Value: "", Path: "/", MaxAge: -1, SameSite: http.SameSiteStrictMode},
	}
}

// csrfMatches is the double-submit check: the header must equal the cookie, compared in constant time.
func csrfMatches(meta web.Meta, header *string) bool {
	cookie := meta.Cookie(csrfCookie)
	if cookie == "" || header == nil || *header == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(cookie), []byte(*header)) == 1
}

func client(ctx context.Context) auth.Client {
	m := web.MetaFrom(ctx)
	return auth.Client{IP: m.IP, UserAgent: m.UserAgent}
}
