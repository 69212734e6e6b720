package oauth

import (
	"errors"
	"strings"
	"testing"
)

func TestNormalize(t *testing.T) {
	// base is the smallest valid provider of each type; cases change one thing.
	base := func(typ string) Provider {
		p := Provider{Slug: "corp-sso", DisplayName: "Corporate SSO", Type: typ, ClientID: "cid", ClientSecret: "s", Enabled: true}
		if typ == TypeOIDC {
			p.DiscoveryURL = "https://idp.example.org/realms/x/.well-known/openid-configuration"
		}
		return p
	}
	with := func(p Provider, f func(*Provider)) Provider { f(&p); return p }

	tests := []struct {
		name      string
		in        Provider
		wantField string // empty: Normalize must succeed
		check     func(t *testing.T, got Provider)
	}{
		{
			name: "google gets discovery, scopes and role defaults",
			in:   base(TypeGoogle),
			check: func(t *testing.T, got Provider) {
				want(t, "discovery_url", got.DiscoveryURL, GoogleDiscoveryURL)
				want(t, "scopes", got.Scopes, "openid profile email")
				want(t, "default_role", got.DefaultRole, "viewer")
			},
		},
		{
			name:  "microsoft gets the common discovery document",
			in:    base(TypeMicrosoft),
			check: func(t *testing.T, got Provider) { want(t, "discovery_url", got.DiscoveryURL, MicrosoftDiscoveryURL) },
		},
		{
			name: "microsoft keeps a tenant-specific discovery document",
			in: with(base(TypeMicrosoft), func(p *Provider) {
				p.DiscoveryURL = "https://login.microsoftonline.com/0b8a2a0e-1111-2222-3333-444455556666/v2.0/.well-known/openid-configuration"
			}),
			check: func(t *testing.T, got Provider) {
				want(t, "discovery_url", got.DiscoveryURL, "https://login.microsoftonline.com/0b8a2a0e-1111-2222-3333-444455556666/v2.0/.well-known/openid-configuration")
			},
		},
		{
			name: "github gets its OAuth endpoints and scopes",
			in:   base(TypeGitHub),
			check: func(t *testing.T, got Provider) {
				want(t, "authorize_url", got.AuthorizeURL, GitHubAuthorizeURL)
				want(t, "token_url", got.TokenURL, GitHubTokenURL)
				want(t, "userinfo_url", got.UserinfoURL, GitHubUserinfoURL)
				want(t, "scopes", got.Scopes, "read:user user:email")
				want(t, "discovery_url", got.DiscoveryURL, "")
			},
		},
		{
			name: "github enterprise endpoints are kept",
			in: with(base(TypeGitHub), func(p *Provider) {
				p.AuthorizeURL, p.TokenURL, p.UserinfoURL = "https://ghe.example.org/login/oauth/authorize",
					"https://ghe.example.org/login/oauth/access_token", "https://ghe.example.org/api/v3/user"
			}),
			check: func(t *testing.T, got Provider) {
				want(t, "userinfo_url", got.UserinfoURL, "https://ghe.example.org/api/v3/user")
			},
		},
		{
			name:  "github scopes with user:email are kept, whitespace collapsed",
			in:    with(base(TypeGitHub), func(p *Provider) { p.Scopes = "  user:email   read:org " }),
			check: func(t *testing.T, got Provider) { want(t, "scopes", got.Scopes, "user:email read:org") },
		},
		{
			name:  "oidc with discovery",
			in:    base(TypeOIDC),
			check: func(t *testing.T, got Provider) { want(t, "scopes", got.Scopes, "openid profile email") },
		},
		{
			name: "oidc with the three endpoints instead of discovery",
			in: with(base(TypeOIDC), func(p *Provider) {
				p.DiscoveryURL = ""
				p.AuthorizeURL, p.TokenURL, p.UserinfoURL = "https://idp.example.org/authorize", "https://idp.example.org/token", "https://idp.example.org/userinfo"
			}),
			check: func(t *testing.T, got Provider) { want(t, "discovery_url", got.DiscoveryURL, "") },
		},
		{
			name: "http is allowed on loopback hosts",
			in: with(base(TypeOIDC), func(p *Provider) {
				p.DiscoveryURL = ""
				p.AuthorizeURL, p.TokenURL, p.UserinfoURL = "http://localhost:8081/authorize", "http://127.0.0.1:8081/token", "http://[::1]:8081/userinfo"
			}),
		},
		{
			name:  "explicit role is kept",
			in:    with(base(TypeGoogle), func(p *Provider) { p.DefaultRole = "editor" }),
			check: func(t *testing.T, got Provider) { want(t, "default_role", got.DefaultRole, "editor") },
		},
		{
			name: "surrounding spaces are trimmed",
			in:   with(base(TypeGoogle), func(p *Provider) { p.Slug, p.ClientID = " google ", " cid\n" }),
			check: func(t *testing.T, got Provider) {
				want(t, "slug", got.Slug, "google")
				want(t, "client_id", got.ClientID, "cid")
			},
		},
		{
			name: "64-character slug",
			in:   with(base(TypeGoogle), func(p *Provider) { p.Slug = strings.Repeat("a", 64) }),
		},
		{
			name: "missing client secret is left to the create path",
			in:   with(base(TypeGoogle), func(p *Provider) { p.ClientSecret = "" }),
		},

		{name: "empty slug", in: with(base(TypeGoogle), func(p *Provider) { p.Slug = "" }), wantField: "slug"},
		{name: "uppercase slug", in: with(base(TypeGoogle), func(p *Provider) { p.Slug = "Google" }), wantField: "slug"},
		{name: "slug with slash", in: with(base(TypeGoogle), func(p *Provider) { p.Slug = "a/b" }), wantField: "slug"},
		{name: "slug with underscore", in: with(base(TypeGoogle), func(p *Provider) { p.Slug = "a_b" }), wantField: "slug"},
		{name: "65-character slug", in: with(base(TypeGoogle), func(p *Provider) { p.Slug = strings.Repeat("a", 65) }), wantField: "slug"},
		{name: "missing display name", in: with(base(TypeGoogle), func(p *Provider) { p.DisplayName = " " }), wantField: "display_name"},
		{name: "missing client id", in: with(base(TypeGoogle), func(p *Provider) { p.ClientID = "" }), wantField: "client_id"},
		{name: "unknown type", in: base("saml"), wantField: "provider_type"},
		{name: "empty type", in: base(""), wantField: "provider_type"},
		{name: "type is case-sensitive", in: base("Google"), wantField: "provider_type"},
		{
			name:      "github refuses discovery",
			in:        with(base(TypeGitHub), func(p *Provider) { p.DiscoveryURL = "https://github.com/.well-known/openid-configuration" }),
			wantField: "discovery_url",
		},
		{
			name:      "github scopes without user:email",
			in:        with(base(TypeGitHub), func(p *Provider) { p.Scopes = "read:user" }),
			wantField: "scopes",
		},
		{
			name:      "oidc scopes without openid",
			in:        with(base(TypeOIDC), func(p *Provider) { p.Scopes = "profile email" }),
			wantField: "scopes",
		},
		{
			name:      "oidc without discovery or endpoints",
			in:        with(base(TypeOIDC), func(p *Provider) { p.DiscoveryURL = "" }),
			wantField: "authorize_url",
		},
		{
			name: "oidc without discovery and without token url",
			in: with(base(TypeOIDC), func(p *Provider) {
				p.DiscoveryURL = ""
				p.AuthorizeURL, p.UserinfoURL = "https://idp.example.org/authorize", "https://idp.example.org/userinfo"
			}),
			wantField: "token_url",
		},
		{
			name: "oidc without discovery and without userinfo url",
			in: with(base(TypeOIDC), func(p *Provider) {
				p.DiscoveryURL = ""
				p.AuthorizeURL, p.TokenURL = "https://idp.example.org/authorize", "https://idp.example.org/token"
			}),
			wantField: "userinfo_url",
		},
		{
			name:      "discovery url with the wrong suffix",
			in:        with(base(TypeOIDC), func(p *Provider) { p.DiscoveryURL = "https://idp.example.org/.well-known/oauth-authorization-server" }),
			wantField: "discovery_url",
		},
		{
			name:      "discovery url with a query",
			in:        with(base(TypeOIDC), func(p *Provider) { p.DiscoveryURL = "https://idp.example.org/.well-known/openid-configuration?x=1" }),
			wantField: "discovery_url",
		},
		{
			name:      "discovery url over http",
			in:        with(base(TypeGoogle), func(p *Provider) { p.DiscoveryURL = "http://accounts.google.com/.well-known/openid-configuration" }),
			wantField: "discovery_url",
		},
		{
			name:      "relative discovery url",
			in:        with(base(TypeOIDC), func(p *Provider) { p.DiscoveryURL = "/.well-known/openid-configuration" }),
			wantField: "discovery_url",
		},
		{
			name:      "authorize url over http on a public host",
			in:        with(base(TypeGitHub), func(p *Provider) { p.AuthorizeURL = "http://github.com/login/oauth/authorize" }),
			wantField: "authorize_url",
		},
		{
			name:      "token url with another scheme",
			in:        with(base(TypeGitHub), func(p *Provider) { p.TokenURL = "ftp://github.com/token" }),
			wantField: "token_url",
		},
		{
			name:      "userinfo url with credentials",
			in:        with(base(TypeGitHub), func(p *Provider) { p.UserinfoURL = "https://u:p@api.github.com/user" }),
			wantField: "userinfo_url",
		},
		{
			name:      "authorize url with a fragment",
			in:        with(base(TypeGitHub), func(p *Provider) { p.AuthorizeURL = "https://github.com/login/oauth/authorize#x" }),
			wantField: "authorize_url",
		},
		{
			name:      "http on a host that only looks local",
			in:        with(base(TypeGitHub), func(p *Provider) { p.TokenURL = "http://localhost.example.org/token" }),
			wantField: "token_url",
		},
		{
			name: "endpoints are checked even when discovery is set",
			in: with(base(TypeOIDC), func(p *Provider) {
				p.UserinfoURL = "http://idp.example.org/userinfo"
			}),
			wantField: "userinfo_url",
		},
		{name: "unknown role", in: with(base(TypeGoogle), func(p *Provider) { p.DefaultRole = "owner" }), wantField: "default_role"},
		{name: "role is case-sensitive", in: with(base(TypeGoogle), func(p *Provider) { p.DefaultRole = "Admin" }), wantField: "default_role"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Normalize(tt.in)
			if tt.wantField == "" {
				if err != nil {
					t.Fatalf("Normalize: %v", err)
				}
				if tt.check != nil {
					tt.check(t, got)
				}
				// Normalizing twice must not change anything: Flow normalizes stored rows again.
				again, err := Normalize(got)
				if err != nil || again != got {
					t.Errorf("second Normalize = %+v, %v; want %+v", again, err, got)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Normalize error = %v, want *ValidationError", err)
			}
			if ve.Field != tt.wantField {
				t.Errorf("field = %q (%s), want %q", ve.Field, ve.Reason, tt.wantField)
			}
		})
	}
}

func want(t *testing.T, field, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %q, want %q", field, got, want)
	}
}
