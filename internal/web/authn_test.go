package web

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"meridian/internal/accounts"
	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/internal/testdb"
	"meridian/store"
)

// fixedCreds is a tiny Authenticator for the transport tests: one good key, one good token.
type fixedCreds struct{}

func (fixedCreds) AuthenticateKey(_ context.Context, k string) (auth.Principal, error) {
	if k == "good-key-0123456789" {
		return auth.Principal{UserID: uuid.MustParse("00000000-0000-4000-8000-000000000001"), Role: auth.RoleViewer, Via: auth.ViaAPIKey, KeyScope: "full"}, nil
	}
	return auth.Principal{}, apperr.Unauthorized("bad key")
}

func (fixedCreds) AuthenticateBearer(_ context.Context, tok string) (auth.Principal, error) {
	if tok == "good.jwt.token" {
		return auth.Principal{UserID: uuid.MustParse("00000000-0000-4000-8000-000000000002"), Role: auth.RoleEditor, Via: auth.ViaBearer}, nil
	}
	return auth.Principal{}, apperr.Unauthorized("bad token")
}

func authEcho(a Authenticator, anonymous bool) *echo.Echo {
	e := echo.New()
	e.HTTPErrorHandler = ErrorHandler(discardLogger(), time.Second)
	op := &Operation{ID: "op", Method: http.MethodGet, Anonymous: anonymous}
	e.GET("/x", func(c echo.Context) error {
		return c.String(200, auth.From(c.Request().Context()).Via)
	}, Authenticate(a, op, AuthOptions{}))
	return e
}

// FuzzAuthenticateHeaders: whatever arrives in the credential headers and query, the middleware
// answers 200 only for the known credentials or no credential (anonymous operation), 401
// otherwise, and never panics.
func FuzzAuthenticateHeaders(f *testing.F) {
	e := authEcho(fixedCreds{}, true)
	f.Add("", "", "")
	f.Add("good-key-0123456789", "", "")
	f.Add("", "Bearer good.jwt.token", "")
	f.Add("", "bearer  good.jwt.token ", "")
	f.Add("", "Basic abc", "")
	f.Add("", "", "good-key-0123456789")
	f.Fuzz(func(t *testing.T, key, authz, query string) {
		req := httptest.NewRequest(http.MethodGet, "/x", nil)
		if key != "" {
			req.Header["X-Api-Key"] = []string{key}
		}
		if authz != "" {
			req.Header["Authorization"] = []string{authz}
		}
		if query != "" {
			req.URL.RawQuery = "api_key=" + url.QueryEscape(query)
		}
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		switch rec.Code {
		case 200, 401:
		default:
			t.Fatalf("status %d for key=%q authz=%q query=%q", rec.Code, key, authz, query)
		}
		// With no credential present at all, the caller must be served anonymously.
		if key == "" && authz == "" && query == "" && (rec.Code != 200 || rec.Body.String() != auth.ViaAnonymous) {
			t.Fatalf("anonymous request: %d %s", rec.Code, rec.Body)
		}
	})
}

// BenchmarkAuthenticate measures the authentication middleware against a real database: the
// JWT path (signature check plus one user lookup) and the API key path (one joined lookup),
// next to the anonymous path as the baseline, in one run.
func BenchmarkAuthenticate(b *testing.B) {
	pool := testdb.New(b)
	ctx := context.Background()
	q := store.New(pool)
	svc := &auth.Service{Pool: pool, Q: q, Signer: auth.NewSigner("bench-secret-0123456789-abcdefghijklmn", 15*time.Minute),
		RefreshTTL: time.Hour, Grace: 30 * time.Second, Log: discardLogger()}
	acc := &accounts.Service{Pool: pool, Q: q, Log: discardLogger()}
	u, err := acc.Create(ctx, accounts.NewUser{Username: "bench", Email: "bench@example.org", Password: "Bench-password-1", Role: auth.RoleEditor}, auth.Principal{}, auth.Client{})
	if err != nil {
		b.Fatal(err)
	}
	pair, err := svc.Login(ctx, "bench", "Bench-password-1", auth.Client{})
	if err != nil {
		b.Fatal(err)
	}
	key, err := svc.CreateKey(ctx, auth.NewKey{OwnerID: u.ID, Name: "bench", Actor: auth.Principal{UserID: u.ID}})
	if err != nil {
		b.Fatal(err)
	}
	e := authEcho(svc, true)
	cases := []struct{ name, header, value string }{
		{"anonymous", "", ""},
		{"jwt", "Authorization", "Bearer " + pair.AccessToken},
		{"api_key", "X-Api-Key", key.Secret},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				req := httptest.NewRequest(http.MethodGet, "/x", nil)
				if c.header != "" {
					req.Header.Set(c.header, c.value)
				}
				rec := httptest.NewRecorder()
				e.ServeHTTP(rec, req)
				if rec.Code != 200 {
					b.Fatalf("%s: %d %s", c.name, rec.Code, rec.Body)
				}
			}
		})
	}
}

// TestCapabilityOverridesDeadCredential: spec section 5 rule 4b. A valid capability (embed token,
// signed tile URL) serves the request and a dead identity credential beside it is ignored; an
// invalid or absent capability puts the request back under rule 3 (401).
func TestCapabilityOverridesDeadCredential(t *testing.T) {
	embed := func(c echo.Context) (auth.Principal, bool, error) {
		if c.Request().Header.Get("X-Embed-Token") == "emb_valid" {
			return auth.Principal{Via: "embed_token"}, true, nil
		}
		return auth.Principal{}, false, nil
	}
	e := echo.New()
	e.HTTPErrorHandler = ErrorHandler(discardLogger(), time.Second)
	op := &Operation{ID: "tile", Method: http.MethodGet, Anonymous: true}
	e.GET("/t", func(c echo.Context) error {
		return c.String(200, auth.From(c.Request().Context()).Via)
	}, Authenticate(fixedCreds{}, op, AuthOptions{Capabilities: []Capability{embed}}))
	tests := []struct {
		name, embed, bearer string
		status              int
		via                 string
	}{
		{"valid capability, dead bearer", "emb_valid", "dead.token", 200, "embed_token"},
		{"junk capability, dead bearer", "emb_junk", "dead.token", 401, ""},
		{"no capability, dead bearer", "", "dead.token", 401, ""},
		{"junk capability, live bearer", "emb_junk", "good.jwt.token", 200, auth.ViaBearer},
		{"nothing", "", "", 200, auth.ViaAnonymous},
	}
	for _, tt := range tests {
		req := httptest.NewRequest(http.MethodGet, "/t", nil)
		if tt.embed != "" {
			req.Header.Set("X-Embed-Token", tt.embed)
		}
		if tt.bearer != "" {
			req.Header.Set("Authorization", "Bearer "+tt.bearer)
		}
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		if rec.Code != tt.status || (tt.via != "" && rec.Body.String() != tt.via) {
			t.Errorf("%s: %d %s", tt.name, rec.Code, rec.Body)
		}
	}
}
