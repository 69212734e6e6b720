package oauth

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zitadel/oidc/v3/pkg/client/rp"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"golang.org/x/oauth2"
)

// Errors of Begin and Complete. Each is wrapped together with the underlying cause, so errors.Is
// also finds the library's own sentinels (for example oidc.ErrNonceInvalid).
var (
	// ErrProviderDisabled: the provider exists but is switched off (spec 2.1 enabled).
	ErrProviderDisabled = errors.New("oauth: provider is disabled")
	// ErrStateMismatch: the callback's state is not the one this browser started with, or the kept
	// State is incomplete or belongs to another provider. Nothing was sent to the provider.
	ErrStateMismatch = errors.New("oauth: state mismatch")
	// ErrExchangeFailed: the token endpoint refused the code, for example a wrong PKCE verifier, a
	// reused or expired code, or wrong client credentials.
	ErrExchangeFailed = errors.New("oauth: code exchange failed")
	// ErrInvalidIDToken: the ID token is missing or fails verification (signature, issuer,
	// audience, expiry, nonce).
	ErrInvalidIDToken = errors.New("oauth: invalid id token")
	// ErrNoVerifiedEmail: the provider vouches for no email address of the account.
	ErrNoVerifiedEmail = errors.New("oauth: no verified email")
	// ErrProviderFailed: discovery, userinfo or the GitHub API failed or answered nonsense.
	ErrProviderFailed = errors.New("oauth: identity provider request failed")
)

// State is what one sign-in must remember between Begin and Complete. The caller keeps it in an
// encrypted, short-lived cookie; the JSON names are part of that cookie's format.
type State struct {
	// Provider is the slug the sign-in began with; Complete refuses a State of another provider so
	// a response cannot be replayed against a different one (a mix-up, RFC 9700 section 4.4).
	Provider string `json:"provider"`
	State    string `json:"state"`
	Nonce    string `json:"nonce"`
	// Verifier is the PKCE code_verifier (RFC 7636); only its S256 hash leaves the server before
	// the token exchange, so a code intercepted on the way back is useless without this cookie.
	Verifier string `json:"verifier"`
}

// Identity is the account the provider vouched for. Email is only trustworthy for linking to an
// existing local user (spec 4.6 step 3b) when EmailVerified is true; GitHub identities always carry
// a verified email or fail with ErrNoVerifiedEmail.
type Identity struct {
	Subject           string
	Email             string
	EmailVerified     bool
	Name              string
	PreferredUsername string
}

// Cached relying parties are rebuilt after partyTTL so changed discovery documents are picked up;
// signing keys rotate independently through the JWKS cache of the library.
const (
	partyTTL        = time.Hour
	maxParties      = 64
	maxResponseBody = 1 << 20
	defaultTimeout  = 10 * time.Second
)

// Flow runs the relying-party side of sign-in. Create it with NewFlow; it is safe for concurrent
// use. Keep one per process (or per provider) so discovery documents and signing keys are fetched
// once, not per sign-in.
type Flow struct {
	client *http.Client

	mu      sync.Mutex
	parties map[partyKey]cachedParty
}

// The whole provider is part of the key so an edited provider never reuses a stale party.
type partyKey struct {
	provider    Provider
	redirectURI string
}

type cachedParty struct {
	party rp.RelyingParty
	built time.Time
}

// NewFlow returns a Flow whose every request to a provider (discovery, JWKS, token, userinfo)
// goes through client. A nil client means one with a 10 second timeout, because
// http.DefaultClient has none and a hanging provider would hold the sign-in request forever.
func NewFlow(client *http.Client) *Flow {
	if client == nil {
		client = &http.Client{Timeout: defaultTimeout}
	}
	return &Flow{client: client, parties: map[partyKey]cachedParty{}}
}

// Begin starts a sign-in at p: it returns the provider's authorize URL to redirect the browser to
// and the State to keep until the callback. redirectURI is the callback registered at the
// provider ({base_url}/api/auth/oauth/{slug}/callback). PKCE S256 is used for every provider type
// (spec 4.6 step 1).
func (f *Flow) Begin(ctx context.Context, p Provider, redirectURI string) (string, State, error) {
	p, err := usable(p)
	if err != nil {
		return "", State{}, err
	}
	party, err := f.party(ctx, p, redirectURI)
	if err != nil {
		return "", State{}, err
	}
	st := State{Provider: p.Slug, State: randomToken(), Nonce: randomToken(), Verifier: randomToken()}
	opts := []rp.AuthURLOpt{rp.WithCodeChallenge(oidc.NewSHACodeChallenge(st.Verifier))}
	if verifiesIDToken(p) {
		opts = append(opts, rp.AuthURLOpt(rp.WithURLParam("nonce", st.Nonce)))
	}
	return rp.AuthURL(st.State, party, opts...), st, nil
}

// Complete finishes a sign-in from the callback's state and code parameters, with the State Begin
// returned and the same redirectURI. The state is checked before anything is sent to the provider.
func (f *Flow) Complete(ctx context.Context, p Provider, redirectURI string, st State, gotState, code string) (Identity, error) {
	p, err := usable(p)
	if err != nil {
		return Identity{}, err
	}
	if st.State == "" || st.Nonce == "" || st.Verifier == "" || st.Provider != p.Slug ||
		subtle.ConstantTimeCompare([]byte(st.State), []byte(gotState)) != 1 {
		return Identity{}, ErrStateMismatch
	}
	if code == "" {
		return Identity{}, fmt.Errorf("%w: the callback carries no code", ErrExchangeFailed)
	}
	party, err := f.party(ctx, p, redirectURI)
	if err != nil {
		return Identity{}, err
	}
	// The exchange is done here rather than with rp.CodeExchange so that a refused code and a bad
	// ID token come back as different errors.
	tok, err := party.OAuthConfig().Exchange(context.WithValue(ctx, oauth2.HTTPClient, f.client), code,
		oauth2.VerifierOption(st.Verifier))
	if err != nil {
		return Identity{}, fmt.Errorf("%w: %w", ErrExchangeFailed, err)
	}
	switch {
	case p.Type == TypeGitHub:
		return f.githubIdentity(ctx, p, tok)
	case verifiesIDToken(p):
		return oidcIdentity(ctx, party, tok, st.Nonce)
	default:
		return f.userinfoIdentity(ctx, p, tok)
	}
}

func usable(p Provider) (Provider, error) {
	p, err := Normalize(p)
	if err != nil {
		return p, err
	}
	if !p.Enabled {
		return p, ErrProviderDisabled
	}
	return p, nil
}

// Only providers with discovery publish a JWKS to check ID token signatures against; the others
// are trusted through their TLS userinfo endpoint, like plain OAuth 2.0.
func verifiesIDToken(p Provider) bool {
	return p.DiscoveryURL != ""
}

// 32 random bytes give a 43-character PKCE verifier, the minimum RFC 7636 section 4.1 allows, and
// 256 bits for state and nonce.
func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails since Go 1.24
	return base64.RawURLEncoding.EncodeToString(b)
}

func (f *Flow) party(ctx context.Context, p Provider, redirectURI string) (rp.RelyingParty, error) {
	key := partyKey{provider: p, redirectURI: redirectURI}
	f.mu.Lock()
	c, ok := f.parties[key]
	f.mu.Unlock()
	if ok && time.Since(c.built) < partyTTL {
		return c.party, nil
	}
	// Built outside the lock: discovery is a network round trip and must not stall other
	// providers' sign-ins. Two concurrent builds of one party are harmless.
	party, err := f.newParty(ctx, p, redirectURI)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	if len(f.parties) >= maxParties {
		clear(f.parties)
	}
	f.parties[key] = cachedParty{party: party, built: time.Now()}
	f.mu.Unlock()
	return party, nil
}

type nonceKey struct{}

// The party is shared by all sign-ins at a provider, so the expected nonce reaches the ID token
// verifier through the context of the one Complete call.
func nonceFromContext(ctx context.Context) string {
	n, _ := ctx.Value(nonceKey{}).(string)
	return n
}

func (f *Flow) newParty(ctx context.Context, p Provider, redirectURI string) (rp.RelyingParty, error) {
	scopes := strings.Fields(p.Scopes)
	if !verifiesIDToken(p) {
		party, err := rp.NewRelyingPartyOAuth(&oauth2.Config{
			ClientID:     p.ClientID,
			ClientSecret: p.ClientSecret,
			RedirectURL:  redirectURI,
			Scopes:       scopes,
			Endpoint:     oauth2.Endpoint{AuthURL: p.AuthorizeURL, TokenURL: p.TokenURL},
		}, rp.WithHTTPClient(f.client))
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrProviderFailed, err)
		}
		return party, nil
	}

	issuer := strings.TrimSuffix(p.DiscoveryURL, discoverySuffix)
	verifierOpts := []rp.VerifierOption{rp.WithNonce(nonceFromContext)}
	switch p.Type {
	case TypeMicrosoft:
		var doc struct {
			Issuer string `json:"issuer"`
		}
		if err := getJSON(ctx, f.client, p.DiscoveryURL, "", "application/json", &doc); err != nil {
			return nil, fmt.Errorf("%w: discovery: %w", ErrProviderFailed, err)
		}
		iss, verify, err := microsoftIssuer(p.DiscoveryURL, doc.Issuer)
		if err != nil {
			return nil, fmt.Errorf("%w: discovery: %w", ErrProviderFailed, err)
		}
		issuer = iss
		if verify != nil {
			verifierOpts = append(verifierOpts, rp.WithISSVerifier(verify))
		}
	case TypeGoogle:
		// Google documents that its ID tokens carry iss "accounts.google.com" or
		// "https://accounts.google.com".
		verifierOpts = append(verifierOpts, rp.WithISSVerifier(oneOfIssuers(issuer, strings.TrimPrefix(issuer, "https://"))))
	}
	party, err := rp.NewRelyingPartyOIDC(ctx, issuer, p.ClientID, p.ClientSecret, redirectURI, scopes,
		rp.WithCustomDiscoveryUrl(p.DiscoveryURL),
		rp.WithHTTPClient(f.client),
		rp.WithVerifierOpts(verifierOpts...))
	if err != nil {
		return nil, fmt.Errorf("%w: discovery: %w", ErrProviderFailed, err)
	}
	return party, nil
}

func oneOfIssuers(allowed ...string) oidc.ISSVerifier {
	return func(iss string) error {
		for _, a := range allowed {
			if iss == a {
				return nil
			}
		}
		return fmt.Errorf("%w: got %s", oidc.ErrIssuerInvalid, iss)
	}
}

var tenantPlaceholder = regexp.QuoteMeta("{tenantid}")

// microsoftIssuer returns the issuer to expect from Microsoft's discovery document. The
// multi-tenant documents (common, organizations) break OpenID Connect Discovery section 4.3: their
// issuer is the template https://login.microsoftonline.com/{tenantid}/v2.0, and each ID token names
// the signing-in user's tenant. For those the returned verifier accepts the template with a tenant
// GUID; the audience check still binds the token to our client. Single-tenant and consumers
// documents name a concrete issuer, which only has to live on the discovery host.
func microsoftIssuer(discoveryURL, docIssuer string) (string, oidc.ISSVerifier, error) {
	d, err := url.Parse(discoveryURL)
	if err != nil {
		return "", nil, err
	}
	i, err := url.Parse(docIssuer)
	if err != nil || i.Scheme != d.Scheme || i.Host != d.Host {
		return "", nil, fmt.Errorf("%w: issuer %q is not on the discovery host", oidc.ErrIssuerInvalid, docIssuer)
	}
	if !strings.Contains(docIssuer, "{tenantid}") {
		return docIssuer, nil, nil
	}
	pattern := regexp.MustCompile("^" + strings.Replace(regexp.QuoteMeta(docIssuer), tenantPlaceholder,
		"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", 1) + "$")
	return docIssuer, func(iss string) error {
		if !pattern.MatchString(iss) {
			return fmt.Errorf("%w: got %s", oidc.ErrIssuerInvalid, iss)
		}
		return nil
	}, nil
}

func oidcIdentity(ctx context.Context, party rp.RelyingParty, tok *oauth2.Token, nonce string) (Identity, error) {
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return Identity{}, fmt.Errorf("%w: %w", ErrInvalidIDToken, rp.ErrMissingIDToken)
	}
	claims, err := rp.VerifyTokens[*oidc.IDTokenClaims](context.WithValue(ctx, nonceKey{}, nonce),
		tok.AccessToken, raw, party.IDTokenVerifier())
	if err != nil {
		return Identity{}, fmt.Errorf("%w: %w", ErrInvalidIDToken, err)
	}
	id := Identity{
		Subject:           claims.Subject,
		Email:             claims.Email,
		EmailVerified:     bool(claims.EmailVerified),
		Name:              claims.Name,
		PreferredUsername: claims.PreferredUsername,
	}
	if party.UserinfoEndpoint() == "" {
		return id, nil
	}
	// Providers may keep profile and email out of the ID token (the zitadel example OP does); the
	// library checks that userinfo's sub is the ID token's.
	info, err := rp.Userinfo[*oidc.UserInfo](ctx, tok.AccessToken, tok.Type(), claims.Subject, party)
	if err != nil {
		return Identity{}, fmt.Errorf("%w: userinfo: %w", ErrProviderFailed, err)
	}
	mergeUserinfo(&id, info)
	return id, nil
}

// mergeUserinfo prefers userinfo over ID token claims, taking email and email_verified together so
// a verified flag never vouches for an address from the other source.
func mergeUserinfo(id *Identity, info *oidc.UserInfo) {
	if info.Email != "" {
		id.Email, id.EmailVerified = info.Email, bool(info.EmailVerified)
	}
	if info.Name != "" {
		id.Name = info.Name
	}
	if info.PreferredUsername != "" {
		id.PreferredUsername = info.PreferredUsername
	}
}

// userinfoIdentity serves oidc providers configured with explicit endpoints instead of discovery.
func (f *Flow) userinfoIdentity(ctx context.Context, p Provider, tok *oauth2.Token) (Identity, error) {
	var info oidc.UserInfo
	if err := getJSON(ctx, f.client, p.UserinfoURL, tok.AccessToken, "application/json", &info); err != nil {
		return Identity{}, fmt.Errorf("%w: userinfo: %w", ErrProviderFailed, err)
	}
	if info.Subject == "" {
		return Identity{}, fmt.Errorf("%w: userinfo has no sub", ErrProviderFailed)
	}
	id := Identity{Subject: info.Subject}
	mergeUserinfo(&id, &info)
	return id, nil
}

// githubIdentity reads the account from GitHub's REST API. GitHub is OAuth 2.0 only: no ID token,
// and /user's email is the public profile address, which may be unverified or absent, so the
// address comes from /user/emails (hence the mandatory user:email scope).
func (f *Flow) githubIdentity(ctx context.Context, p Provider, tok *oauth2.Token) (Identity, error) {
	const accept = "application/vnd.github+json"
	var user struct {
		ID    int64  `json:"id"`
		Login string `json:"login"`
		Name  string `json:"name"`
	}
	if err := getJSON(ctx, f.client, p.UserinfoURL, tok.AccessToken, accept, &user); err != nil {
		return Identity{}, fmt.Errorf("%w: github user: %w", ErrProviderFailed, err)
	}
	if user.ID == 0 {
		return Identity{}, fmt.Errorf("%w: github user has no id", ErrProviderFailed)
	}
	emailsURL, err := githubEmailsURL(p.UserinfoURL)
	if err != nil {
		return Identity{}, fmt.Errorf("%w: %w", ErrProviderFailed, err)
	}
	var emails []struct {
		Email    string `json:"email"`
		Primary  bool   `json:"primary"`
		Verified bool   `json:"verified"`
	}
	if err := getJSON(ctx, f.client, emailsURL, tok.AccessToken, accept, &emails); err != nil {
		return Identity{}, fmt.Errorf("%w: github emails: %w", ErrProviderFailed, err)
	}
	id := Identity{Subject: strconv.FormatInt(user.ID, 10), Name: user.Name, PreferredUsername: user.Login}
	for _, e := range emails {
		if e.Primary && e.Verified && e.Email != "" {
			id.Email, id.EmailVerified = e.Email, true
			return id, nil
		}
	}
	return Identity{}, ErrNoVerifiedEmail
}

// githubEmailsURL puts the emails endpoint beside the user endpoint on the same host: /user/emails
// on api.github.com, /api/v3/user/emails on GitHub Enterprise Server, and the test's fake host.
func githubEmailsURL(userinfoURL string) (string, error) {
	u, err := url.Parse(userinfoURL)
	if err != nil {
		return "", err
	}
	u.Path = path.Join(u.Path, "emails")
	u.RawPath, u.RawQuery = "", ""
	return u.String(), nil
}

func getJSON(ctx context.Context, client *http.Client, endpoint, token, accept string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", accept)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", endpoint, resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxResponseBody)).Decode(out); err != nil {
		return fmt.Errorf("GET %s: %w", endpoint, err)
	}
	return nil
}

// Probe tells whether a provider can be reached for sign-in now: its discovery document loads
// and names the authorize and token endpoints, or, for a provider configured without discovery,
// its authorize endpoint answers at all (any status below 500: it expects a browser with
// parameters). Nothing is sent that starts a sign-in.
func (f *Flow) Probe(ctx context.Context, p Provider) error {
	p, err := Normalize(p)
	if err != nil {
		return err
	}
	if p.DiscoveryURL != "" {
		var doc struct {
			Authorize string `json:"authorization_endpoint"`
			Token     string `json:"token_endpoint"`
		}
		if err := getJSON(ctx, f.client, p.DiscoveryURL, "", "application/json", &doc); err != nil {
			return err
		}
		if doc.Authorize == "" || doc.Token == "" {
			return fmt.Errorf("the discovery document %s names no authorization or token endpoint", p.DiscoveryURL)
		}
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.AuthorizeURL, nil)
	if err != nil {
		return err
	}
	client := *f.client
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode >= 500 {
		return fmt.Errorf("GET %s: %s", p.AuthorizeURL, resp.Status)
	}
	return nil
}
