// Package configdoc is configuration as code: the deployment's configuration (settings without
// secrets, identity providers without client secrets, catalog collections) as one versioned
// document that can be exported, checked (dry run, with a token naming exactly what it saw) and
// imported into this or another deployment in one transaction.
package configdoc

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"sort"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"meridian/internal/accounts"
	"meridian/internal/apperr"
	"meridian/internal/audit"
	"meridian/internal/auth"
	"meridian/internal/oauth"
	"meridian/internal/settings"
	"meridian/store"
)

// FormatVersion is the version of the document format this service reads and writes.
const FormatVersion = 1

// Sections of a document.
const (
	SectionSettings    = "settings"
	SectionProviders   = "oauth_providers"
	SectionCollections = "collections"
)

// Document is a configuration document.
type Document struct {
	FormatVersion  int                       `json:"format_version"`
	ExportedAt     *time.Time                `json:"exported_at,omitempty"`
	ServiceVersion string                    `json:"service_version,omitempty"`
	LockedKeys     []string                  `json:"locked_keys,omitempty"`
	Settings       map[string]map[string]any `json:"settings,omitempty"`
	OAuthProviders []Provider                `json:"oauth_providers,omitempty"`
	Collections    []Collection              `json:"collections,omitempty"`
}

// Provider is an identity provider, matched by slug; ClientSecret is only ever read.
type Provider struct {
	Slug         string  `json:"slug"`
	DisplayName  string  `json:"display_name"`
	ProviderType string  `json:"provider_type"`
	ClientID     string  `json:"client_id"`
	ClientSecret string  `json:"client_secret,omitempty"`
	DiscoveryURL *string `json:"discovery_url,omitempty"`
	AuthorizeURL *string `json:"authorize_url,omitempty"`
	TokenURL     *string `json:"token_url,omitempty"`
	UserinfoURL  *string `json:"userinfo_url,omitempty"`
	Scopes       string  `json:"scopes,omitempty"`
	DefaultRole  string  `json:"default_role,omitempty"`
	Enabled      *bool   `json:"enabled,omitempty"`
}

// Collection is a catalog collection, matched by id, then by name.
type Collection struct {
	ID          *uuid.UUID  `json:"id,omitempty"`
	Name        string      `json:"name"`
	Description *string     `json:"description,omitempty"`
	Visibility  string      `json:"visibility,omitempty"`
	DatasetIDs  []uuid.UUID `json:"dataset_ids"`
}

// Service exports and imports documents.
type Service struct {
	Pool      *pgxpool.Pool
	Q         *store.Queries
	Settings  settings.Admin
	Providers *accounts.Providers
	Version   string
	// Collections are told of an import's changes to the collections (catalog.Service); nil:
	// nobody keeps them.
	Collections interface{ ForgetCollections() }
}

// Export is the configuration as a document, of the sections asked for (all when none).
func (s *Service) Export(ctx context.Context, p auth.Principal, sections []string) (Document, error) {
	if !p.IsAdmin() {
		return Document{}, apperr.Forbidden("exporting the configuration needs the admin role")
	}
	now := time.Now().UTC().Truncate(time.Second)
	doc := Document{FormatVersion: FormatVersion, ExportedAt: &now, ServiceVersion: s.Version}
	return doc, s.fill(ctx, &doc, sections)
}

// fill reads the current configuration's sections into doc.
func (s *Service) fill(ctx context.Context, doc *Document, sections []string) error {
	var err error
	if wants(sections, SectionSettings) {
		if doc.Settings, doc.LockedKeys, err = s.Settings.Groups(ctx); err != nil {
			return err
		}
	}
	if wants(sections, SectionProviders) {
		list, err := s.Providers.List(ctx)
		if err != nil {
			return err
		}
		doc.OAuthProviders = []Provider{}
		for _, p := range list {
			enabled := p.Enabled
			doc.OAuthProviders = append(doc.OAuthProviders, Provider{Slug: p.Slug, DisplayName: p.DisplayName, ProviderType: p.ProviderType,
				ClientID: p.ClientID, DiscoveryURL: p.DiscoveryUrl, AuthorizeURL: p.AuthorizeUrl, TokenURL: p.TokenUrl,
				UserinfoURL: p.UserinfoUrl, Scopes: p.Scopes, DefaultRole: p.DefaultRole, Enabled: &enabled})
		}
	}
	if wants(sections, SectionCollections) {
		rows, err := s.Q.ListCollectionsForConfig(ctx)
		if err != nil {
			return err
		}
		doc.Collections = []Collection{}
		for _, r := range rows {
			id := r.ID
			doc.Collections = append(doc.Collections, Collection{ID: &id, Name: r.Name, Description: r.Description,
				Visibility: r.Visibility, DatasetIDs: r.DatasetIds})
		}
	}
	return nil
}

func wants(sections []string, s string) bool {
	return len(sections) == 0 || slices.Contains(sections, s)
}

// Change is what an import does to one object: create, update, unchanged or delete, and for a
// setting its value before and after.
type Change struct {
	Action   string `json:"action"`
	From, To any    `json:"-"`
}

// Plan is what importing a document would do.
type Plan struct {
	Settings    settings.Plan
	Providers   map[string]string // slug → create, update, unchanged, delete
	Collections map[string]string // name → create, update, unchanged, delete
	Warnings    []string
	Token       string // names this plan against this state: Import with it applies exactly this
	doc         Document
	mode        string
	sections    []string
	current     Document
}

// DryRun says what Import would do, writing nothing.
func (s *Service) DryRun(ctx context.Context, p auth.Principal, doc Document, mode string, sections []string) (Plan, error) {
	if !p.IsAdmin() {
		return Plan{}, apperr.Forbidden("importing a configuration needs the admin role")
	}
	if doc.FormatVersion != FormatVersion {
		return Plan{}, apperr.Unprocessable("format_version %d: this service reads version %d", doc.FormatVersion, FormatVersion)
	}
	plan := Plan{doc: doc, mode: mode, sections: sections, Providers: map[string]string{}, Collections: map[string]string{}}
	if err := s.fill(ctx, &plan.current, sections); err != nil {
		return Plan{}, err
	}
	body := map[string]any{}
	for group, keys := range doc.Settings {
		if wants(sections, SectionSettings) {
			body[group] = keys
		}
	}
	if mode == "replace" && wants(sections, SectionSettings) {
		// Settings the document leaves out return to their defaults.
		for group, keys := range plan.current.Settings {
			for key := range keys {
				if _, ok := doc.Settings[group][key]; !ok {
					body[group+"."+key] = nil
				}
			}
		}
	}
	var err error
	if plan.Settings, err = s.Settings.Plan(ctx, body); err != nil {
		return Plan{}, err
	}
	for key, v := range plan.Settings.Writes {
		if reflect.DeepEqual(normal(v), normal(plan.Settings.Current[key])) {
			delete(plan.Settings.Writes, key)
		}
	}
	if wants(sections, SectionProviders) {
		s.planProviders(&plan)
	}
	if wants(sections, SectionCollections) {
		s.planCollections(&plan)
	}
	plan.Token = token(plan)
	return plan, nil
}

// normal makes values compare as JSON does (numbers as float64).
func normal(v any) any {
	raw, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(raw, &out)
	return out
}

func (s *Service) planProviders(plan *Plan) {
	have := map[string]Provider{}
	for _, p := range plan.current.OAuthProviders {
		have[p.Slug] = p
	}
	for _, p := range plan.doc.OAuthProviders {
		cur, ok := have[p.Slug]
		switch {
		case !ok:
			plan.Providers[p.Slug] = "create"
		case p.ClientSecret == "" && reflect.DeepEqual(normal(withDefaults(p)), normal(cur)):
			plan.Providers[p.Slug] = "unchanged"
		default:
			plan.Providers[p.Slug] = "update"
		}
		delete(have, p.Slug)
	}
	if plan.mode == "replace" {
		for slug := range have {
			plan.Providers[slug] = "delete"
		}
	}
}

// withDefaults fills what a document may leave out as the stored record has it.
func withDefaults(p Provider) Provider {
	if p.Enabled == nil {
		t := true
		p.Enabled = &t
	}
	if p.DefaultRole == "" {
		p.DefaultRole = "viewer"
	}
	return p
}

func (s *Service) planCollections(plan *Plan) {
	byID, byName := map[uuid.UUID]Collection{}, map[string]Collection{}
	for _, c := range plan.current.Collections {
		byID[*c.ID], byName[c.Name] = c, c
	}
	seen := map[string]bool{}
	for _, c := range plan.doc.Collections {
		cur, ok := Collection{}, false
		if c.ID != nil {
			cur, ok = byID[*c.ID]
		}
		if !ok {
			cur, ok = byName[c.Name]
		}
		switch {
		case !ok:
			plan.Collections[c.Name] = "create"
		case cur.Name == c.Name && reflect.DeepEqual(cur.Description, c.Description) && sameSet(cur.DatasetIDs, c.DatasetIDs) &&
			(c.Visibility == "" || c.Visibility == cur.Visibility):
			plan.Collections[c.Name] = "unchanged"
		default:
			plan.Collections[c.Name] = "update"
		}
		if ok {
			seen[cur.Name] = true
		}
	}
	if plan.mode == "replace" {
		for _, c := range plan.current.Collections {
			if !seen[c.Name] {
				plan.Collections[c.Name] = "delete"
			}
		}
	}
}

func sameSet(a, b []uuid.UUID) bool {
	x, y := slices.Clone(a), slices.Clone(b)
	sort.Slice(x, func(i, j int) bool { return x[i].String() < x[j].String() })
	sort.Slice(y, func(i, j int) bool { return y[i].String() < y[j].String() })
	return slices.Equal(x, y)
}

// token names a plan: the document, the mode and the configuration it was made against.
func token(plan Plan) string {
	raw, _ := json.Marshal([]any{plan.doc, plan.mode, plan.sections, plan.current.Settings, plan.current.OAuthProviders, plan.current.Collections})
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:16])
}

// Result is what an import did.
type Result struct {
	SettingsApplied, SettingsSkipped       int
	SettingsRestricted                     []string
	ProvidersCreated, ProvidersUpdated     int
	ProvidersDeleted, AccountsDeleted      int
	CollectionsCreated, CollectionsUpdated int
	CollectionsDeleted                     int
	Warnings                               []string
}

// Import applies doc in one transaction: all of it or nothing. previewToken, when given, must
// be the token of a dry run against the same configuration (409 when it changed since).
func (s *Service) Import(ctx context.Context, p auth.Principal, c auth.Client, doc Document, mode string, sections []string, previewToken string) (Result, error) {
	plan, err := s.DryRun(ctx, p, doc, mode, sections)
	if err != nil {
		return Result{}, err
	}
	if previewToken != "" && previewToken != plan.Token {
		return Result{}, apperr.Conflict("the configuration changed since the dry run that gave this preview token; run it again")
	}
	res := Result{SettingsApplied: len(plan.Settings.Writes), SettingsRestricted: plan.Settings.Restricted, Warnings: []string{}}
	for _, keys := range doc.Settings {
		res.SettingsSkipped += len(keys)
	}
	res.SettingsSkipped = max(res.SettingsSkipped-res.SettingsApplied, 0)
	actor := settings.Actor{ID: p.UserID, Username: p.Username, IP: c.IP, UA: c.UserAgent}
	err = pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := s.Q.WithTx(tx)
		if err := s.Settings.Apply(ctx, q, actor, plan.Settings); err != nil {
			return err
		}
		if err := s.applyProviders(ctx, q, p, c, plan, &res); err != nil {
			return err
		}
		return s.applyCollections(ctx, q, p, plan, &res)
	})
	if err != nil {
		return Result{}, err
	}
	s.Settings.Written()
	if s.Collections != nil {
		s.Collections.ForgetCollections()
	}
	return res, nil
}

func (s *Service) applyProviders(ctx context.Context, q *store.Queries, p auth.Principal, c auth.Client, plan Plan, res *Result) error {
	in := *s.Providers
	in.Q = q // the provider writes join the import's transaction
	ids := map[string]uuid.UUID{}
	list, err := in.List(ctx)
	if err != nil {
		return err
	}
	for _, sp := range list {
		ids[sp.Slug] = sp.ID
	}
	for _, d := range plan.doc.OAuthProviders {
		switch plan.Providers[d.Slug] {
		case "create", "update":
			d = withDefaults(d)
			cfg := oauth.Provider{Slug: d.Slug, DisplayName: d.DisplayName, Type: d.ProviderType, ClientID: d.ClientID, ClientSecret: d.ClientSecret,
				DiscoveryURL: deref(d.DiscoveryURL), AuthorizeURL: deref(d.AuthorizeURL), TokenURL: deref(d.TokenURL), UserinfoURL: deref(d.UserinfoURL),
				Scopes: d.Scopes, DefaultRole: d.DefaultRole, Enabled: *d.Enabled}
			if _, err := in.Save(ctx, ids[d.Slug], cfg, p, c); err != nil {
				var ae *apperr.Error
				if errors.As(err, &ae) {
					return apperr.Unprocessable("oauth_providers %s: %s", d.Slug, ae.Detail)
				}
				return err
			}
			if plan.Providers[d.Slug] == "create" {
				res.ProvidersCreated++
			} else {
				res.ProvidersUpdated++
			}
		}
	}
	for slug, action := range plan.Providers {
		if action != "delete" {
			continue
		}
		n, err := q.CountProviderAccounts(ctx, ids[slug])
		if err != nil {
			return err
		}
		if err := in.Delete(ctx, ids[slug], p, c); err != nil {
			return err
		}
		res.ProvidersDeleted++
		res.AccountsDeleted += int(n)
	}
	return nil
}

func (s *Service) applyCollections(ctx context.Context, q *store.Queries, p auth.Principal, plan Plan, res *Result) error {
	byName := map[string]uuid.UUID{}
	for _, c := range plan.current.Collections {
		byName[c.Name] = *c.ID
	}
	for _, c := range plan.doc.Collections {
		action := plan.Collections[c.Name]
		if action == "unchanged" {
			continue
		}
		var id uuid.UUID
		vis := c.Visibility
		if vis == "" {
			vis = auth.VisibilityPrivate
		}
		switch {
		case action == "create":
			row, err := q.CreateCollection(ctx, store.CreateCollectionParams{Name: c.Name, Description: c.Description, Visibility: vis, CreatedBy: &p.UserID})
			if err != nil {
				return apperr.Unprocessable("collections %s: %v", c.Name, err)
			}
			id = row.ID
			res.CollectionsCreated++
		default:
			id = byName[c.Name]
			if c.ID != nil && slices.ContainsFunc(plan.current.Collections, func(x Collection) bool { return *x.ID == *c.ID }) {
				id = *c.ID
			}
			if _, err := q.UpdateCollection(ctx, store.UpdateCollectionParams{ID: id, Name: &c.Name, Description: c.Description, Visibility: &vis}); err != nil {
				return apperr.Unprocessable("collections %s: %v", c.Name, err)
			}
			if err := q.ClearCollectionDatasets(ctx, id); err != nil {
				return err
			}
			res.CollectionsUpdated++
		}
		known, err := q.ExistingDatasetIDs(ctx, c.DatasetIDs)
		if err != nil {
			return err
		}
		for _, d := range c.DatasetIDs {
			if !slices.Contains(known, d) {
				res.Warnings = append(res.Warnings, "collections "+c.Name+": dataset "+d.String()+" does not exist here; skipped")
			}
		}
		if _, err := q.AddCollectionDatasets(ctx, store.AddCollectionDatasetsParams{CollectionID: id, DatasetIds: known}); err != nil {
			return err
		}
		audit.Record(ctx, q, nil, audit.Entry{ActorID: p.UserID, ActorDisplay: p.Username, Action: "collection.import",
			ResourceType: "collection", ResourceID: id.String(), Detail: map[string]any{"name": c.Name, "action": action}})
	}
	for name, action := range plan.Collections {
		if action == "delete" {
			if err := q.DeleteCollection(ctx, byName[name]); err != nil {
				return err
			}
			res.CollectionsDeleted++
		}
	}
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
