package handlers

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"meridian/gen"
	"meridian/internal/accounts"
	"meridian/internal/apperr"
	"meridian/internal/oauth"
	"meridian/internal/web"
)

// The flow cookie carries the PKCE verifier, state and nonce between the login redirect and the
// callback, sealed (AES-GCM) so the browser can neither read nor forge it; replicas share
// nothing but the key.
const (
	flowCookie = "service_oauth_flow"
	flowTTL    = 10 * time.Minute
)

type flowState struct {
	State      oauth.State `json:"s"`
	RedirectTo string      `json:"r"`
	Mode       string      `json:"m"`
	Expires    time.Time   `json:"e"`
}

func (s *Server) callbackURL(slug string) string {
	return s.cfg.BaseURL + "/api/auth/oauth/" + slug + "/callback"
}

// signInProvider returns an enabled provider whose secret opens, or the problem the spec names.
func (s *Server) signInProvider(ctx context.Context, slug string) (accounts.StoredProvider, error) {
	sp, err := s.providers.BySlug(ctx, slug)
	if err != nil {
		return sp, err
	}
	if sp.SecretStatus != accounts.SecretOK {
		return sp, apperr.Conflict("the client secret of provider %q must be re-entered by an administrator", slug)
	}
	return sp, nil
}

// OauthLogin: OAuth Login (GET /auth/oauth/{provider_slug}/login). Redirects to the provider with
// an S256 code challenge (PKCE for every provider type).
func (s *Server) OauthLogin(ctx context.Context, request gen.OauthLoginRequestObject) (gen.OauthLoginResponseObject, error) {
	sp, err := s.signInProvider(ctx, request.ProviderSlug)
	if err != nil {
		return nil, err
	}
	authURL, st, err := s.oauthFlow.Begin(ctx, sp.Config(), s.callbackURL(sp.Slug))
	if err != nil {
		return nil, apperr.Wrap(apperr.KindUpstream, err, "the identity provider could not be reached")
	}
	fs := flowState{State: st, RedirectTo: safeRedirect(val(request.Params.RedirectTo)), Mode: "redirect", Expires: time.Now().Add(flowTTL)}
	if request.Params.ResponseMode != nil {
		fs.Mode = string(*request.Params.ResponseMode)
	}
	plain, _ := json.Marshal(fs)
	sealed, err := s.box.Seal(plain)
	if err != nil {
		return nil, err
	}
	cookie := &http.Cookie{Name: flowCookie, Value: base64.RawURLEncoding.EncodeToString(sealed), Path: "/api/auth/oauth/",
		MaxAge: int(flowTTL / time.Second), HttpOnly: true, Secure: strings.HasPrefix(s.cfg.BaseURL, "https"),
		// Lax: the cookie must ride along on the provider's top-level redirect back to us.
		SameSite: http.SameSiteLaxMode}
	return redirectResponse{location: authURL, cookies: []*http.Cookie{cookie}}, nil
}

// OauthCallback: OAuth Callback (GET /auth/oauth/{provider_slug}/callback). Checks the state
// against the flow cookie, exchanges the code with the PKCE verifier, resolves the user (spec
// 4.6 rules a, b, c) and issues the same token pair as a local login.
func (s *Server) OauthCallback(ctx context.Context, request gen.OauthCallbackRequestObject) (gen.OauthCallbackResponseObject, error) {
	sp, err := s.signInProvider(ctx, request.ProviderSlug)
	if err != nil {
		return nil, err
	}
	fs, err := s.readFlow(web.MetaFrom(ctx).Cookie(flowCookie), sp.Slug)
	if err != nil {
		return nil, err
	}
	prm := request.Params
	if prm.Error != nil {
		return nil, apperr.Invalid("the identity provider refused the sign-in: %s", *prm.Error)
	}
	ident, err := s.oauthFlow.Complete(ctx, sp.Config(), s.callbackURL(sp.Slug), fs.State, prm.State, val(prm.Code))
	switch {
	case errors.Is(err, oauth.ErrStateMismatch):
		return nil, apperr.Invalid("state does not match this browser's sign-in")
	case errors.Is(err, oauth.ErrNoVerifiedEmail):
		return nil, apperr.Forbidden("the identity provider did not give a verified email address")
	case errors.Is(err, oauth.ErrExchangeFailed), errors.Is(err, oauth.ErrInvalidIDToken), errors.Is(err, oauth.ErrProviderFailed):
		return nil, apperr.Wrap(apperr.KindUpstream, err, "the sign-in could not be completed with the identity provider")
	case err != nil:
		return nil, err
	}
	userID, _, err := s.providers.ResolveUser(ctx, sp, ident, client(ctx))
	if err != nil {
		return nil, err
	}
	pair, err := s.auth.IssueFor(ctx, userID, client(ctx))
	if err != nil {
		return nil, err
	}
	clear := &http.Cookie{Name: flowCookie, Value: "", Path: "/api/auth/oauth/", MaxAge: -1, HttpOnly: true}
	if fs.Mode == "json" {
		tr := s.respondTokens(ctx, pair, false)
		tr.cookies = append(tr.cookies, clear)
		return tr, nil
	}
	tr := s.respondTokens(ctx, pair, true)
	return redirectResponse{location: s.cfg.BaseURL + fs.RedirectTo, cookies: append(tr.cookies, clear)}, nil
}

func (s *Server) readFlow(cookie, slug string) (flowState, error) {
	var fs flowState
	bad := apperr.Invalid("no sign-in in progress in this browser, or it expired; start again")
	raw, err := base64.RawURLEncoding.DecodeString(cookie)
	if cookie == "" || err != nil {
		return fs, bad
	}
	plain, err := s.box.Open(raw)
	if err != nil || json.Unmarshal(plain, &fs) != nil || time.Now().After(fs.Expires) || fs.State.Provider != slug {
		return fs, bad
	}
	return fs, nil
}

// safeRedirect keeps post-sign-in redirects on this site: only absolute paths, never "//host".
func safeRedirect(p string) string {
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || strings.Contains(p, "\\") {
		return "/"
	}
	return p
}

// redirectResponse is a 302 with any number of cookies; the generated type carries one.
type redirectResponse struct {
	location string
	cookies  []*http.Cookie
}

func (r redirectResponse) write(w http.ResponseWriter) error {
	for _, c := range r.cookies {
		http.SetCookie(w, c)
	}
	w.Header().Set("Location", r.location)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusFound)
	return nil
}

func (r redirectResponse) VisitOauthLoginResponse(w http.ResponseWriter) error    { return r.write(w) }
func (r redirectResponse) VisitOauthCallbackResponse(w http.ResponseWriter) error { return r.write(w) }
func (r tokenResponse) VisitOauthCallbackResponse(w http.ResponseWriter) error    { return r.write(w) }

// ListPublicOAuthProviders: List Public OAuth Providers (GET /auth/oauth/providers/).
func (s *Server) ListPublicOAuthProviders(ctx context.Context, request gen.ListPublicOAuthProvidersRequestObject) (gen.ListPublicOAuthProvidersResponseObject, error) {
	list, err := s.publicProviders(ctx)
	if err != nil {
		return nil, err
	}
	return gen.ListPublicOAuthProviders200JSONResponse(list), nil
}

// publicProviders lists what the login page offers: enabled providers whose secret opens.
func (s *Server) publicProviders(ctx context.Context) ([]gen.AuthPublicOAuthProvider, error) {
	all, err := s.providers.List(ctx)
	if err != nil {
		return nil, err
	}
	out := []gen.AuthPublicOAuthProvider{}
	for _, sp := range all {
		if !sp.Enabled || sp.SecretStatus != accounts.SecretOK {
			continue
		}
		out = append(out, gen.AuthPublicOAuthProvider{Slug: sp.Slug, DisplayName: sp.DisplayName,
			ProviderType: gen.AuthPublicOAuthProviderProviderType(sp.ProviderType),
			LoginUrl:     s.base(ctx) + "/api/auth/oauth/" + sp.Slug + "/login"})
	}
	return out, nil
}
