package accounts

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"meridian/internal/apperr"
	"meridian/internal/audit"
	"meridian/internal/auth"
	"meridian/internal/health"
	"meridian/internal/oauth"
	"meridian/internal/secretbox"
	"meridian/internal/settings"
	"meridian/store"
)

// Providers stores the external identity providers. Client secrets are sealed with a key derived
// from JWT_SECRET_KEY; after that secret rotates they no longer open and the provider reports
// that its secret must be re-entered.
type Providers struct {
	Pool *pgxpool.Pool // sign-in resolves a user in a transaction of its own
	Q    *store.Queries
	Box  *secretbox.Box
	Log  *slog.Logger
}

// Secret states a provider reports (never the secret itself).
const (
	SecretOK           = "ok"
	SecretMissing      = "missing"
	SecretNeedsReentry = "needs_reentry"
)

// StoredProvider is a provider record with its secret opened (when it opens) and its state.
type StoredProvider struct {
	ProviderRecord
	SecretStatus string
	Secret       string
}

// ProviderRecord is what is stored of a provider, but its sealed secret.
type ProviderRecord struct {
	ID                                                uuid.UUID
	Slug, DisplayName, ProviderType, ClientID         string
	DiscoveryUrl, AuthorizeUrl, TokenUrl, UserinfoUrl *string
	Scopes, DefaultRole                               string
	Enabled                                           bool
	CreatedAt, UpdatedAt                              time.Time
}

func (p *Providers) open(row store.CatalogOauthProvider) StoredProvider {
	sp := StoredProvider{SecretStatus: SecretMissing, ProviderRecord: ProviderRecord{ID: row.ID, Slug: row.Slug,
		DisplayName: row.DisplayName, ProviderType: row.ProviderType, ClientID: row.ClientID, DiscoveryUrl: row.DiscoveryUrl,
		AuthorizeUrl: row.AuthorizeUrl, TokenUrl: row.TokenUrl, UserinfoUrl: row.UserinfoUrl, Scopes: row.Scopes,
		DefaultRole: row.DefaultRole, Enabled: row.Enabled, CreatedAt: row.CreatedAt, UpdatedAt: row.UpdatedAt}}
	if len(row.ClientSecretEnc) == 0 {
		return sp
	}
	plain, err := p.Box.Open(row.ClientSecretEnc)
	if err != nil {
		// ErrKeyRotated or damage: either way an admin has to enter the secret again.
		sp.SecretStatus = SecretNeedsReentry
		return sp
	}
	sp.Secret, sp.SecretStatus = string(plain), SecretOK
	return sp
}

// Config converts a stored provider into the sign-in package's form.
func (sp StoredProvider) Config() oauth.Provider {
	r := sp.ProviderRecord
	return oauth.Provider{ID: r.ID.String(), Slug: r.Slug, DisplayName: r.DisplayName, Type: r.ProviderType,
		ClientID: r.ClientID, ClientSecret: sp.Secret, DiscoveryURL: deref(r.DiscoveryUrl), AuthorizeURL: deref(r.AuthorizeUrl),
		TokenURL: deref(r.TokenUrl), UserinfoURL: deref(r.UserinfoUrl), Scopes: r.Scopes, DefaultRole: r.DefaultRole, Enabled: r.Enabled}
}

// List returns every provider with its secret state.
func (p *Providers) List(ctx context.Context) ([]StoredProvider, error) {
	rows, err := p.Q.ListOAuthProviders(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]StoredProvider, len(rows))
	for i, r := range rows {
		out[i] = p.open(r)
	}
	return out, nil
}

// BySlug returns an enabled provider; unknown and disabled ones are 404 alike.
func (p *Providers) BySlug(ctx context.Context, slug string) (StoredProvider, error) {
	r, err := p.Q.GetOAuthProviderBySlug(ctx, slug)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && !r.Enabled) {
		return StoredProvider{}, apperr.NotFound("no enabled identity provider %q", slug)
	}
	if err != nil {
		return StoredProvider{}, err
	}
	return p.open(r), nil
}

// Save creates (id == uuid.Nil) or replaces a provider. cfg is the whole desired record; an empty
// ClientSecret keeps the stored one (required on create).
func (p *Providers) Save(ctx context.Context, id uuid.UUID, cfg oauth.Provider, actor auth.Principal, c auth.Client) (StoredProvider, error) {
	norm, err := oauth.Normalize(cfg)
	if err != nil {
		var ve *oauth.ValidationError
		if errors.As(err, &ve) {
			return StoredProvider{}, apperr.Unprocessable("%s: %s", ve.Field, ve.Reason)
		}
		return StoredProvider{}, err
	}
	var sealed []byte
	if norm.ClientSecret != "" {
		if sealed, err = p.Box.Seal([]byte(norm.ClientSecret)); err != nil {
			return StoredProvider{}, err
		}
	} else if id == uuid.Nil {
		return StoredProvider{}, apperr.Unprocessable("client_secret: required when creating a provider")
	}
	var row store.CatalogOauthProvider
	action := "oauth_provider.update"
	if id == uuid.Nil {
		action = "oauth_provider.create"
		row, err = p.Q.CreateOAuthProvider(ctx, store.CreateOAuthProviderParams{Slug: norm.Slug, DisplayName: norm.DisplayName,
			ProviderType: norm.Type, ClientID: norm.ClientID, ClientSecretEnc: sealed, DiscoveryUrl: ptr(norm.DiscoveryURL),
			AuthorizeUrl: ptr(norm.AuthorizeURL), TokenUrl: ptr(norm.TokenURL), UserinfoUrl: ptr(norm.UserinfoURL),
			Scopes: norm.Scopes, DefaultRole: norm.DefaultRole, Enabled: norm.Enabled})
	} else {
		row, err = p.Q.UpdateOAuthProvider(ctx, store.UpdateOAuthProviderParams{ID: id, Slug: norm.Slug, DisplayName: norm.DisplayName,
			ProviderType: norm.Type, ClientID: norm.ClientID, ClientSecretEnc: sealed, DiscoveryUrl: ptr(norm.DiscoveryURL),
			AuthorizeUrl: ptr(norm.AuthorizeURL), TokenUrl: ptr(norm.TokenURL), UserinfoUrl: ptr(norm.UserinfoURL),
			Scopes: norm.Scopes, DefaultRole: norm.DefaultRole, Enabled: norm.Enabled})
		if errors.Is(err, pgx.ErrNoRows) {
			return StoredProvider{}, apperr.NotFound("identity provider %s not found", id)
		}
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		return StoredProvider{}, apperr.Conflict("an identity provider with slug %q already exists", norm.Slug)
	}
	if err != nil {
		return StoredProvider{}, err
	}
	audit.Record(ctx, p.Q, p.Log, audit.Entry{ActorID: actor.UserID, ActorDisplay: actor.Username, Action: action,
		ResourceType: "oauth_provider", ResourceID: row.ID.String(), IP: c.IP, UA: c.UserAgent,
		Detail: map[string]any{"slug": row.Slug, "secret_rotated": norm.ClientSecret != "", "enabled": row.Enabled}})
	return p.open(row), nil
}

// Get returns one provider by id.
func (p *Providers) Get(ctx context.Context, id uuid.UUID) (StoredProvider, error) {
	r, err := p.Q.GetOAuthProvider(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return StoredProvider{}, apperr.NotFound("identity provider %s not found", id)
	}
	if err != nil {
		return StoredProvider{}, err
	}
	return p.open(r), nil
}

// Delete removes a provider; its linked accounts go with it (foreign key cascade).
func (p *Providers) Delete(ctx context.Context, id uuid.UUID, actor auth.Principal, c auth.Client) error {
	slug, err := p.Q.DeleteOAuthProvider(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return apperr.NotFound("identity provider %s not found", id)
	}
	if err != nil {
		return err
	}
	audit.Record(ctx, p.Q, p.Log, audit.Entry{ActorID: actor.UserID, ActorDisplay: actor.Username, Action: "oauth_provider.delete",
		ResourceType: "oauth_provider", ResourceID: id.String(), IP: c.IP, UA: c.UserAgent, Detail: map[string]any{"slug": slug}})
	return nil
}

// ResolveUser applies the rules of spec section 4.6 to a verified external identity: (a) a prior
// link logs into the linked account; (b) a local user with the same email (case-insensitive) is
// linked and keeps its password; (c) otherwise a new user is created with a derived, unique
// username and the provider's default role.
func (p *Providers) ResolveUser(ctx context.Context, sp StoredProvider, id oauth.Identity, c auth.Client) (uuid.UUID, string, error) {
	var userID uuid.UUID
	rule := ""
	err := pgx.BeginFunc(ctx, p.Pool, func(tx pgx.Tx) error {
		q := p.Q.WithTx(tx)
		// One sign-in per identity at a time, so two tabs cannot create two users.
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext($1))", sp.ID.String()+"/"+id.Subject); err != nil {
			return err
		}
		linked, err := q.GetLinkedUser(ctx, store.GetLinkedUserParams{ProviderID: sp.ID, Subject: id.Subject})
		if err == nil {
			userID, rule = linked, "a"
			return nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if !id.EmailVerified || id.Email == "" {
			return apperr.Forbidden("the identity provider did not give a verified email address")
		}
		u, err := q.GetUserByEmail(ctx, id.Email)
		switch {
		case err == nil:
			userID, rule = u.ID, "b"
		case errors.Is(err, pgx.ErrNoRows):
			a, err := settings.Reader{Q: q}.Auth(ctx)
			if err != nil {
				return err
			}
			if !a.EmailAllowed(id.Email) {
				return apperr.Forbidden("new accounts are limited to addresses at %s; ask an administrator", strings.Join(a.AllowedEmailDomains, ", "))
			}
			name := oauth.DeriveUsername(id.Email, firstNonEmpty(id.PreferredUsername, id.Name), func(n string) bool {
				taken, err := q.UsernameTaken(ctx, n)
				return err != nil || taken
			})
			nu, err := q.CreateUser(ctx, store.CreateUserParams{Username: name, Email: id.Email, Role: sp.DefaultRole,
				Status: "active", EmailVerified: true})
			if err != nil {
				return uniqueConflict(err)
			}
			userID, rule = nu.ID, "c"
		default:
			return err
		}
		return q.LinkOAuthAccount(ctx, store.LinkOAuthAccountParams{ProviderID: sp.ID, Subject: id.Subject, UserID: userID, Email: id.Email})
	})
	if err != nil {
		return uuid.Nil, "", err
	}
	audit.Record(ctx, p.Q, p.Log, audit.Entry{ActorID: userID, ActorDisplay: id.Email, Action: "user.login.success", IP: c.IP, UA: c.UserAgent,
		ResourceType: "user", ResourceID: userID.String(), Detail: map[string]any{"method": "oauth", "provider": sp.Slug, "rule": rule}})
	return userID, rule, nil
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if strings.TrimSpace(v) != "" {
			return v
		}
	}
	return ""
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func ptr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Checks are the probes of the identity providers users can sign in with, keyed by slug: the
// enabled stored providers, or those of given (a configuration document's, not stored).
func (p *Providers) Checks(ctx context.Context, flow *oauth.Flow, given []oauth.Provider) (map[string]health.Check, error) {
	list := given
	if list == nil {
		stored, err := p.List(ctx)
		if err != nil {
			return nil, err
		}
		for _, sp := range stored {
			if sp.Enabled {
				list = append(list, sp.Config())
			}
		}
	}
	out := make(map[string]health.Check, len(list))
	for _, pr := range list {
		out[pr.Slug] = health.Check{Name: pr.Type, Run: func(ctx context.Context) error { return flow.Probe(ctx, pr) }}
	}
	return out, nil
}
