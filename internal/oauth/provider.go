// Package oauth holds the identity provider rules (spec section 2.1) and the relying-party side of
// OAuth 2.0 / OpenID Connect sign-in (spec section 4.6). It keeps no state of its own: the caller
// stores providers, keeps the per-sign-in State in a cookie and resolves the returned Identity to a
// user.
package oauth

import (
	"cmp"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Provider types of spec section 2.1.
const (
	TypeGoogle    = "google"
	TypeGitHub    = "github"
	TypeMicrosoft = "microsoft"
	TypeOIDC      = "oidc"
)

// Well-known endpoints filled in by Normalize.
const (
	GoogleDiscoveryURL    = "https://accounts.google.com/.well-known/openid-configuration"
	MicrosoftDiscoveryURL = "https://login.microsoftonline.com/common/v2.0/.well-known/openid-configuration"
	GitHubAuthorizeURL    = "https://github.com/login/oauth/authorize"
	GitHubTokenURL        = "https://github.com/login/oauth/access_token"
	GitHubUserinfoURL     = "https://api.github.com/user"
)

const (
	defaultOIDCScopes   = "openid profile email"
	defaultGitHubScopes = "read:user user:email"
	defaultRole         = "viewer"
	discoverySuffix     = "/.well-known/openid-configuration"
)

// Provider is one configured identity provider. Field names follow spec section 2.1; Type is the
// provider_type.
type Provider struct {
	ID           string
	Slug         string
	DisplayName  string
	Type         string
	ClientID     string
	ClientSecret string
	DiscoveryURL string
	AuthorizeURL string
	TokenURL     string
	UserinfoURL  string
	Scopes       string
	DefaultRole  string
	Enabled      bool
}

// ValidationError names the offending field by its spec (JSON) name so the caller can report it in
// a 422 problem without a mapping table.
type ValidationError struct {
	Field  string
	Reason string
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("oauth provider: %s: %s", e.Field, e.Reason)
}

func invalid(field, format string, args ...any) error {
	return &ValidationError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// The slug ends up in the callback path {base_url}/api/auth/oauth/{slug}/callback, which is
// registered verbatim at the provider, so it must never need escaping.
var slugPattern = regexp.MustCompile(`^[a-z0-9-]{1,64}$`)

// Normalize applies the per-type defaults of spec section 2.1 and validates the result. It is pure:
// the caller runs it before storing a created or patched provider, and Flow runs it again so rows
// stored before a default changed still sign in correctly.
//
// ClientSecret is not required here because a PATCH without it keeps the stored secret; the create
// path must check its presence itself. Explicit endpoints next to a discovery_url are validated but
// unused: discovery is authoritative for them.
func Normalize(p Provider) (Provider, error) {
	p.Slug = strings.TrimSpace(p.Slug)
	p.DisplayName = strings.TrimSpace(p.DisplayName)
	p.Type = strings.TrimSpace(p.Type)
	p.ClientID = strings.TrimSpace(p.ClientID)
	p.DiscoveryURL = strings.TrimSpace(p.DiscoveryURL)
	p.AuthorizeURL = strings.TrimSpace(p.AuthorizeURL)
	p.TokenURL = strings.TrimSpace(p.TokenURL)
	p.UserinfoURL = strings.TrimSpace(p.UserinfoURL)
	p.DefaultRole = strings.TrimSpace(p.DefaultRole)
	// Spaces are the scope separator (RFC 6749 section 3.3); collapsing runs of them keeps the
	// stored value comparable.
	p.Scopes = strings.Join(strings.Fields(p.Scopes), " ")

	if !slugPattern.MatchString(p.Slug) {
		return p, invalid("slug", "must be 1 to 64 lowercase letters, digits or hyphens")
	}
	if p.DisplayName == "" {
		return p, invalid("display_name", "is required")
	}
	if p.ClientID == "" {
		return p, invalid("client_id", "is required")
	}

	switch p.Type {
	case TypeGoogle:
		p.DiscoveryURL = cmp.Or(p.DiscoveryURL, GoogleDiscoveryURL)
	case TypeMicrosoft:
		p.DiscoveryURL = cmp.Or(p.DiscoveryURL, MicrosoftDiscoveryURL)
	case TypeGitHub:
		// GitHub has no OpenID Connect discovery; accepting a URL would suggest ID tokens are
		// verified when they are not.
		if p.DiscoveryURL != "" {
			return p, invalid("discovery_url", "is not supported for github")
		}
		p.AuthorizeURL = cmp.Or(p.AuthorizeURL, GitHubAuthorizeURL)
		p.TokenURL = cmp.Or(p.TokenURL, GitHubTokenURL)
		p.UserinfoURL = cmp.Or(p.UserinfoURL, GitHubUserinfoURL)
	case TypeOIDC:
		if p.DiscoveryURL == "" {
			for _, f := range []struct{ name, value string }{
				{"authorize_url", p.AuthorizeURL}, {"token_url", p.TokenURL}, {"userinfo_url", p.UserinfoURL},
			} {
				if f.value == "" {
					return p, invalid(f.name, "is required when discovery_url is not set")
				}
			}
		}
	default:
		return p, invalid("provider_type", "must be one of google, github, microsoft, oidc")
	}

	if p.DiscoveryURL != "" {
		if err := checkEndpoint("discovery_url", p.DiscoveryURL); err != nil {
			return p, err
		}
		u, _ := url.Parse(p.DiscoveryURL)
		// The issuer is the discovery URL minus this suffix (OpenID Connect Discovery 1.0 section
		// 4), so a query would end up inside the expected issuer.
		if !strings.HasSuffix(u.Path, discoverySuffix) || u.RawQuery != "" {
			return p, invalid("discovery_url", "must end with .well-known/openid-configuration")
		}
	}
	for _, f := range []struct{ name, value string }{
		{"authorize_url", p.AuthorizeURL}, {"token_url", p.TokenURL}, {"userinfo_url", p.UserinfoURL},
	} {
		if f.value != "" {
			if err := checkEndpoint(f.name, f.value); err != nil {
				return p, err
			}
		}
	}

	scopes := strings.Fields(p.Scopes)
	if p.Type == TypeGitHub {
		if len(scopes) == 0 {
			p.Scopes = defaultGitHubScopes
		} else if !slices.Contains(scopes, "user:email") {
			// Without it /user/emails answers 404 and the verified address the account link
			// relies on (spec 4.6 step 3b) cannot be read.
			return p, invalid("scopes", "must include user:email for github")
		}
	} else {
		if len(scopes) == 0 {
			p.Scopes = defaultOIDCScopes
		} else if !slices.Contains(scopes, "openid") {
			// Without openid the provider issues no ID token and no userinfo, so sign-in could
			// never complete.
			return p, invalid("scopes", "must include openid")
		}
	}

	switch p.DefaultRole {
	case "":
		p.DefaultRole = defaultRole
	case "viewer", "editor", "admin":
	default:
		return p, invalid("default_role", "must be one of viewer, editor, admin")
	}
	return p, nil
}

// checkEndpoint refuses anything but absolute https URLs: client secrets, codes and tokens travel
// to these addresses. Plain http is allowed for loopback hosts only, where nothing leaves the
// machine (tests, a provider on the same host).
func checkEndpoint(field, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Opaque != "" {
		return invalid(field, "must be an absolute URL")
	}
	if u.User != nil {
		return invalid(field, "must not contain credentials")
	}
	// RFC 6749 section 3.1: endpoint URIs must not include a fragment.
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return invalid(field, "must not contain a fragment")
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !isLoopback(u.Hostname()) {
			return invalid(field, "must use https (http only for localhost)")
		}
	default:
		return invalid(field, "must use https")
	}
	return nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && (ip.Equal(net.IPv4(127, 0, 0, 1)) || ip.Equal(net.IPv6loopback))
}
