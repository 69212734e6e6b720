package web

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"meridian/internal/apperr"
	"meridian/internal/audit"
	"meridian/internal/auth"
	"meridian/internal/db"
)

// Authenticator resolves identity credentials (internal/auth.Service).
type Authenticator interface {
	AuthenticateKey(ctx context.Context, key string) (auth.Principal, error)
	AuthenticateBearer(ctx context.Context, token string) (auth.Principal, error)
}

// Capability authorizes a request by something other than identity (an embed token, a signed tile
// URL). It answers ok=false when the request carries no valid capability of its kind; a present
// but invalid capability must also answer false, so the request falls back to rule 3.
type Capability func(c echo.Context) (p auth.Principal, ok bool, err error)

// Meta is what handlers may know about the HTTP request beyond their typed request object.
type Meta struct {
	IP        string
	UserAgent string
	Secure    bool // the client reached us over HTTPS (cookies get the Secure flag)
	cookies   []*http.Cookie
	// Query is the raw query string: OGC API property filters are query parameters named after a
	// collection's queryables, which no static parameter list can declare.
	Query    url.Values
	RawQuery string // as sent: page links keep the client's own parameters byte for byte
	// DeadCredential is set when the request carried an identity credential that did not resolve
	// and the operation accepts that (logout, rule 4a).
	DeadCredential bool
	// Language is the caller's preferred language: the Accept-Language tag of the highest
	// quality ("" for none or only "*").
	Language string
	// Method is the request's method: a HEAD of a download sends the headers and reads nothing.
	Method string
	// Accept is the Accept header as sent: operations answering several media types negotiate.
	Accept string
}

// Cookie returns the value of the named request cookie, or "".
func (m Meta) Cookie(name string) string {
	for _, c := range m.cookies {
		if c.Name == name {
			return c.Value
		}
	}
	return ""
}

type metaKey struct{}

// MetaFrom returns the request metadata of ctx.
func MetaFrom(ctx context.Context) Meta {
	m, _ := ctx.Value(metaKey{}).(Meta)
	return m
}

// WithMeta returns ctx carrying m (used by tests of handlers).
func WithMeta(ctx context.Context, m Meta) context.Context {
	return audit.WithClient(context.WithValue(ctx, metaKey{}, m), m.IP, m.UserAgent)
}

// AuthOptions tune Authenticate per operation.
type AuthOptions struct {
	// AcceptDeadCredential lets the handler see the request as anonymous when its identity
	// credential does not resolve, instead of answering 401 (logout, spec section 5 rule 4a).
	AcceptDeadCredential bool
	Capabilities         []Capability
}

// Authenticate implements spec section 5: one credential is resolved by priority (X-Api-Key
// header, api_key query, Bearer token, anonymous); a credential that does not resolve answers 401
// on every operation that reads credentials; a valid capability (embed token, signed tile URL)
// authorizes the request and a dead identity credential beside it is ignored (rule 4b); operations
// with `security: []` read no credential at all (rule 5).
func Authenticate(a Authenticator, op *Operation, opts AuthOptions) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			meta := Meta{IP: c.RealIP(), UserAgent: req.UserAgent(), Secure: c.Scheme() == "https", cookies: req.Cookies(), Query: c.QueryParams(),
				RawQuery: req.URL.RawQuery, Language: preferredLanguage(req.Header.Get("Accept-Language")), Method: req.Method,
				Accept: req.Header.Get("Accept")}
			if op.NoCreds {
				c.SetRequest(req.WithContext(WithMeta(req.Context(), meta)))
				return next(c)
			}
			p, err := resolve(c, a, opts)
			if err != nil {
				if db.Unavailable(err) || apperr.KindOf(err) != apperr.KindUnauthorized {
					return err
				}
				if !opts.AcceptDeadCredential {
					c.Response().Header().Set("WWW-Authenticate", `Bearer realm="meridian", error="invalid_token"`)
					return err
				}
				meta.DeadCredential = true
				p = auth.Principal{}
			}
			if p.Anonymous() && !op.Anonymous && !opts.AcceptDeadCredential {
				c.Response().Header().Set("WWW-Authenticate", `Bearer realm="meridian"`)
				return apperr.Unauthorized("authentication required: send X-Api-Key or Authorization: Bearer")
			}
			if p.Via == auth.ViaAPIKey && p.KeyScope == "read_only" && !readOnlyMethod(req.Method) {
				return apperr.Forbidden("this API key is read-only: it authenticates only GET, HEAD and OPTIONS requests")
			}
			ctx := auth.WithPrincipal(WithMeta(req.Context(), meta), p)
			c.SetRequest(req.WithContext(ctx))
			return next(c)
		}
	}
}

func resolve(c echo.Context, a Authenticator, opts AuthOptions) (auth.Principal, error) {
	for _, capability := range opts.Capabilities {
		p, ok, err := capability(c)
		if err != nil {
			return auth.Principal{}, err
		}
		if ok {
			return p, nil
		}
	}
	req := c.Request()
	ctx := req.Context()
	if key := req.Header.Get("X-Api-Key"); key != "" {
		return a.AuthenticateKey(ctx, key)
	}
	if key := req.URL.Query().Get("api_key"); key != "" {
		// Deprecated transport (spec section 9): it works, and says so.
		c.Response().Header().Set("Deprecation", "true")
		return a.AuthenticateKey(ctx, key)
	}
	if h := req.Header.Get(echo.HeaderAuthorization); h != "" {
		scheme, token, _ := strings.Cut(h, " ")
		if !strings.EqualFold(scheme, "bearer") || strings.TrimSpace(token) == "" {
			return auth.Principal{}, apperr.Unauthorized("unsupported Authorization scheme; use Bearer")
		}
		return a.AuthenticateBearer(ctx, strings.TrimSpace(token))
	}
	return auth.Principal{}, nil
}

func readOnlyMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// preferredLanguage is the tag of highest quality in an Accept-Language header (the first of
// equals), "" when there is none but "*".
func preferredLanguage(header string) string {
	best, bestQ := "", 0.0
	for _, part := range strings.Split(header, ",") {
		tag, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		q := 1.0
		if v, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				q = f
			}
		}
		if tag = strings.TrimSpace(tag); tag != "" && tag != "*" && q > bestQ {
			best, bestQ = tag, q
		}
	}
	return best
}
