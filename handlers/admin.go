package handlers

// Operations of the Admin tag.

import (
	"cmp"
	"context"
	"encoding/csv"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"meridian/gen"
	"meridian/internal/accounts"
	"meridian/internal/apperr"
	"meridian/internal/audit"
	"meridian/internal/auth"
	"meridian/internal/ingest"
	"meridian/internal/maps"
	"meridian/internal/oauth"
)

// ListShareTokens: List Share Tokens (GET /admin/share-tokens/).
func (s *Server) ListShareTokens(ctx context.Context, request gen.ListShareTokensRequestObject) (gen.ListShareTokensResponseObject, error) {
	p := request.Params
	skip, limit := page(p.Skip, p.Limit, 50, 200)
	active := p.IsActive
	if active == nil && p.Status != nil {
		b := *p.Status == "active"
		active = &b
	}
	list, total, err := s.maps.ListShares(ctx, auth.From(ctx), maps.ShareFilter{MapID: p.MapId, Active: active, Q: p.Search, Skip: skip, Limit: limit}, time.Now())
	if err != nil {
		return nil, err
	}
	out := gen.ListShareTokens200JSONResponse{Tokens: make([]gen.AdminShareTokenResponse, len(list)), Total: total}
	for i, sh := range list {
		var by *string
		if sh.CreatedBy != nil {
			by = ptr(sh.CreatedBy.String())
		}
		out.Tokens[i] = gen.AdminShareTokenResponse{Id: &sh.ID, MapId: sh.MapID, MapName: sh.MapName, Token: &sh.Token, IsActive: &sh.Active,
			ExpiresAt: sh.ExpiresAt, CreatedAt: sh.CreatedAt, CreatedBy: by, EmbedTokenCount: ptr(0)}
	}
	return out, nil
}

// AdminRevokeShareToken: Admin Revoke Share Token (DELETE /admin/share-tokens/{token_id}).
func (s *Server) AdminRevokeShareToken(ctx context.Context, request gen.AdminRevokeShareTokenRequestObject) (gen.AdminRevokeShareTokenResponseObject, error) {
	if err := s.maps.RevokeShareByID(ctx, auth.From(ctx), request.TokenId); err != nil {
		return nil, err
	}
	return gen.AdminRevokeShareToken204Response{}, nil
}

// ListBasemaps: List Basemaps (GET /settings/basemaps/).
func (s *Server) ListBasemaps(ctx context.Context, request gen.ListBasemapsRequestObject) (gen.ListBasemapsResponseObject, error) {
	keys, err := s.settingsAdmin.ProviderKeys(ctx)
	if err != nil {
		return nil, err
	}
	list, err := s.settings.Basemaps(ctx, keys)
	if err != nil {
		return nil, err
	}
	out := make(gen.ListBasemaps200JSONResponse, len(list))
	for i, b := range list {
		out[i] = gen.Basemap{Id: b.ID, Label: b.Label, Url: b.URL, Attribution: b.Attribution, Enabled: b.Enabled, IsPreset: b.Preset}
	}
	return out, nil
}

// GetFeatureFlags: Get Feature Flags (GET /settings/feature-flags/). Public: desktop clients read
// it before offering editing.
func (s *Server) GetFeatureFlags(ctx context.Context, request gen.GetFeatureFlagsRequestObject) (gen.GetFeatureFlagsResponseObject, error) {
	f, err := s.settings.FeatureFlags(ctx)
	if err != nil {
		return nil, err
	}
	return gen.GetFeatureFlags200JSONResponse{EnableDatasetEditing: f.EnableDatasetEditing, EnableMapSharing: f.EnableMapSharing,
		EnableEmbedTokens: f.EnableEmbedTokens, EnableSqlQuery: f.EnableSQLQuery, EnableRemoteServices: f.EnableRemoteServices,
		RequireMetadataForPublish: f.RequireMetadataForPublish}, nil
}

// GetMapDefaults: Get Map Defaults (GET /settings/map-defaults/).
func (s *Server) GetMapDefaults(ctx context.Context, request gen.GetMapDefaultsRequestObject) (gen.GetMapDefaultsResponseObject, error) {
	d, err := s.settings.MapDefaults(ctx)
	if err != nil {
		return nil, err
	}
	return gen.GetMapDefaults200JSONResponse{CenterLng: d.CenterLng, CenterLat: d.CenterLat, Zoom: d.Zoom, BasemapStyle: d.BasemapStyle,
		ShowBasemapLabels: d.ShowBasemapLabels, BasemapPosition: gen.SettingsMapDefaultsBasemapPosition(d.BasemapPosition),
		Projection: gen.SettingsMapDefaultsProjection(d.Projection)}, nil
}

// GetTileConfig: Get Tile Config (GET /settings/tile-config/). Anyone reads what drawing data
// layers needs; the operator's part is for admins (tiles.ConfigView).
func (s *Server) GetTileConfig(ctx context.Context, request gen.GetTileConfigRequestObject) (gen.GetTileConfigResponseObject, error) {
	c, err := s.tiles.ConfigFor(ctx, auth.From(ctx), s.base(ctx))
	if err != nil {
		return nil, err
	}
	simplify := float32(c.SimplifyTolerance)
	out := gen.GetTileConfig200JSONResponse{CdnBaseUrl: c.CDNBaseURL, PublicAppUrl: &c.AppURL, PublicApiUrl: &c.APIURL,
		PublicBaseUrl: &c.BaseURL, MvtSourceLayerPrefix: &c.LayerPrefix, MaxFeaturesPerTile: &c.MaxFeaturesPerTile,
		SimplifyTolerance: &simplify, Extent: &c.Extent, Buffer: &c.Buffer, MinZoom: &c.MinZoom, MaxZoom: &c.MaxZoom}
	if o := c.Operator; o != nil {
		out.CacheMaxBytes, out.CacheUsedBytes, out.CacheTiles = &o.CacheMaxBytes, &o.CacheUsedBytes, &o.CacheTiles
		out.TokenTtlSeconds, out.MaxConcurrent = &o.TokenTTLSeconds, &o.MaxConcurrent
	}
	return out, nil
}

// CreateAPIKey: Create API Key (POST /admin/api-keys/). Admin only; the key belongs to user_id.
func (s *Server) CreateAPIKey(ctx context.Context, request gen.CreateAPIKeyRequestObject) (gen.CreateAPIKeyResponseObject, error) {
	p, err := requireCapability(ctx, auth.CapManageUsers)
	if err != nil {
		return nil, err
	}
	nk := auth.NewKey{OwnerID: request.Body.UserId, Name: request.Body.Name, ExpiresAt: request.Body.ExpiresAt, Actor: p, Client: client(ctx)}
	if request.Body.Scope != nil {
		nk.Scope = string(*request.Body.Scope)
	}
	k, err := s.auth.CreateKey(ctx, nk)
	if err != nil {
		return nil, err
	}
	return gen.CreateAPIKey201JSONResponse(keyCreatedOut(k)), nil
}

// ListAPIKeys: List API Keys (GET /admin/api-keys/). Admin only; paged 50/200.
func (s *Server) ListAPIKeys(ctx context.Context, request gen.ListAPIKeysRequestObject) (gen.ListAPIKeysResponseObject, error) {
	if _, err := requireCapability(ctx, auth.CapManageUsers); err != nil {
		return nil, err
	}
	prm := request.Params
	skip, limit := page(prm.Skip, prm.Limit, 50, 200)
	var scope *string
	if prm.Scope != nil {
		v := string(*prm.Scope)
		scope = &v
	}
	keys, total, err := s.auth.ListKeys(ctx, auth.KeyFilter{UserID: prm.UserId, IsActive: prm.IsActive, Scope: scope}, skip, limit)
	if err != nil {
		return nil, err
	}
	out := gen.ListAPIKeys200JSONResponse{Items: make([]gen.AdminApiKeyListItem, len(keys)), Total: total, Skip: skip, Limit: limit}
	for i, k := range keys {
		out.Items[i] = gen.AdminApiKeyListItem{Id: k.ID, UserId: k.UserID, Username: k.Username, Name: k.Name,
			Fingerprint: k.Fingerprint, IsActive: k.IsActive, ExpiresAt: k.ExpiresAt, Scope: gen.AdminApiKeyListItemScope(k.Scope),
			CreatedAt: k.CreatedAt, LastUsedAt: k.LastUsedAt}
	}
	return out, nil
}

// RevokeAPIKey: Revoke API Key (DELETE /admin/api-keys/{key_id}). Admin only; takes effect on the
// key's next request.
func (s *Server) RevokeAPIKey(ctx context.Context, request gen.RevokeAPIKeyRequestObject) (gen.RevokeAPIKeyResponseObject, error) {
	p, err := requireCapability(ctx, auth.CapManageUsers)
	if err != nil {
		return nil, err
	}
	if err := s.auth.RevokeKey(ctx, request.KeyId, p, false, client(ctx)); err != nil {
		return nil, err
	}
	return gen.RevokeAPIKey204Response{}, nil
}

// CreateUser: Create User (POST /admin/users/). Admin only; the account is active at once.
func (s *Server) CreateUser(ctx context.Context, request gen.CreateUserRequestObject) (gen.CreateUserResponseObject, error) {
	p, err := requireCapability(ctx, auth.CapManageUsers)
	if err != nil {
		return nil, err
	}
	b := request.Body
	nu := accounts.NewUser{Username: b.Username, Email: string(val(b.Email))}
	if b.Password != nil {
		nu.Password = *b.Password
	}
	if b.Role != nil {
		nu.Role = string(*b.Role)
	}
	if b.EmailVerified != nil {
		nu.EmailVerified = *b.EmailVerified
	}
	u, err := s.accounts.Create(ctx, nu, p, client(ctx))
	if err != nil {
		return nil, err
	}
	return gen.CreateUser201JSONResponse(userOut(u)), nil
}

// GetUser: Get User (GET /admin/users/{user_id}). Admin only.
func (s *Server) GetUser(ctx context.Context, request gen.GetUserRequestObject) (gen.GetUserResponseObject, error) {
	if _, err := requireCapability(ctx, auth.CapManageUsers); err != nil {
		return nil, err
	}
	u, err := s.accounts.Get(ctx, request.UserId)
	if err != nil {
		return nil, err
	}
	return gen.GetUser200JSONResponse(userOut(u)), nil
}

// UpdateUser: Update User (PATCH /admin/users/{user_id}). Admin only; a role, status or password
// change invalidates the user's tokens and API keys.
func (s *Server) UpdateUser(ctx context.Context, request gen.UpdateUserRequestObject) (gen.UpdateUserResponseObject, error) {
	p, err := requireCapability(ctx, auth.CapManageUsers)
	if err != nil {
		return nil, err
	}
	b := request.Body
	ch := accounts.Change{Username: b.Username, Password: b.Password, EmailVerified: b.EmailVerified}
	if b.Email != nil {
		e := string(*b.Email)
		ch.Email = &e
	}
	if b.Role != nil {
		r := string(*b.Role)
		ch.Role = &r
	}
	if b.IsActive != nil {
		st := map[bool]string{true: "active", false: "deactivated"}[*b.IsActive]
		ch.Status = &st
	}
	if b.Status != nil {
		st := string(*b.Status)
		ch.Status = &st
	}
	u, err := s.accounts.Update(ctx, request.UserId, ch, p, client(ctx))
	if err != nil {
		return nil, err
	}
	return gen.UpdateUser200JSONResponse(userOut(u)), nil
}

// ListUsers: List Users (GET /admin/users/). Admin only; paged 50/200, filters role, status, q.
func (s *Server) ListUsers(ctx context.Context, request gen.ListUsersRequestObject) (gen.ListUsersResponseObject, error) {
	if _, err := requireCapability(ctx, auth.CapManageUsers); err != nil {
		return nil, err
	}
	prm := request.Params
	skip, limit := page(prm.Skip, prm.Limit, 50, 200)
	f := accounts.Filter{Role: (*string)(prm.Role), Status: (*string)(prm.Status), Q: cmp.Or(prm.Q, prm.Search),
		Sort: string(val(prm.Sort)), Descending: val(prm.Order) == gen.ListUsersParamsOrderDesc}
	users, total, err := s.accounts.List(ctx, f, skip, limit)
	if err != nil {
		return nil, err
	}
	out := gen.ListUsers200JSONResponse{Users: make([]gen.User, len(users)), Total: total, Skip: skip, Limit: limit}
	for i, u := range users {
		out.Users[i] = userOut(u)
	}
	return out, nil
}

// ListUserNames: List User Names (GET /admin/users/names/). Admin only; 500/1000.
func (s *Server) ListUserNames(ctx context.Context, request gen.ListUserNamesRequestObject) (gen.ListUserNamesResponseObject, error) {
	if _, err := requireCapability(ctx, auth.CapManageUsers); err != nil {
		return nil, err
	}
	prm := request.Params
	skip, limit := page(prm.Skip, prm.Limit, 500, 1000)
	names, err := s.accounts.Names(ctx, val(prm.IncludeInactive), prm.Q, skip, limit)
	if err != nil {
		return nil, err
	}
	out := make(gen.ListUserNames200JSONResponse, len(names))
	for i, n := range names {
		out[i] = gen.AdminUserName{Id: n.ID, Username: n.Username}
	}
	return out, nil
}

// DeleteUser: Delete User (DELETE /admin/users/{user_id}). Admin only.
func (s *Server) DeleteUser(ctx context.Context, request gen.DeleteUserRequestObject) (gen.DeleteUserResponseObject, error) {
	p, err := requireCapability(ctx, auth.CapManageUsers)
	if err != nil {
		return nil, err
	}
	if err := s.accounts.Delete(ctx, request.UserId, request.Params.TransferTo, p, client(ctx)); err != nil {
		return nil, err
	}
	return gen.DeleteUser204Response{}, nil
}

// ApproveUser: Approve User (POST /admin/users/{user_id}/approve/). Pending accounts only.
func (s *Server) ApproveUser(ctx context.Context, request gen.ApproveUserRequestObject) (gen.ApproveUserResponseObject, error) {
	p, err := requireCapability(ctx, auth.CapManageUsers)
	if err != nil {
		return nil, err
	}
	u, err := s.accounts.Transition(ctx, request.UserId, "active", []string{"pending"}, p, client(ctx))
	if err != nil {
		return nil, err
	}
	if b := request.Body; b != nil && b.Role != nil && string(*b.Role) != u.Role {
		role := string(*b.Role)
		if u, err = s.accounts.Update(ctx, request.UserId, accounts.Change{Role: &role}, p, client(ctx)); err != nil {
			return nil, err
		}
	}
	return gen.ApproveUser200JSONResponse(userOut(u)), nil
}

// RejectUser: Reject User (POST /admin/users/{user_id}/reject/). A rejected registration is kept
// as a suspended account, so the same email cannot simply register again.
func (s *Server) RejectUser(ctx context.Context, request gen.RejectUserRequestObject) (gen.RejectUserResponseObject, error) {
	p, err := requireCapability(ctx, auth.CapManageUsers)
	if err != nil {
		return nil, err
	}
	if _, err := s.accounts.Transition(ctx, request.UserId, "suspended", []string{"pending"}, p, client(ctx)); err != nil {
		return nil, err
	}
	return gen.RejectUser204Response{}, nil
}

// DeactivateUser: Deactivate User (POST /admin/users/{user_id}/deactivate/). Ends every session,
// token and API key of the user at once.
func (s *Server) DeactivateUser(ctx context.Context, request gen.DeactivateUserRequestObject) (gen.DeactivateUserResponseObject, error) {
	p, err := requireCapability(ctx, auth.CapManageUsers)
	if err != nil {
		return nil, err
	}
	u, err := s.accounts.Transition(ctx, request.UserId, "deactivated", []string{"active", "pending", "suspended"}, p, client(ctx))
	if err != nil {
		return nil, err
	}
	return gen.DeactivateUser200JSONResponse(userOut(u)), nil
}

// ExportRegisteredUsersAsCSV: Export registered users as CSV (GET /admin/users/export.csv).
// Streamed: rows are written as they are read, page by page.
func (s *Server) ExportRegisteredUsersAsCSV(ctx context.Context, request gen.ExportRegisteredUsersAsCSVRequestObject) (gen.ExportRegisteredUsersAsCSVResponseObject, error) {
	if _, err := requireCapability(ctx, auth.CapManageUsers); err != nil {
		return nil, err
	}
	prm := request.Params
	filter := accounts.Filter{Role: (*string)(prm.Role), Status: (*string)(prm.Status), Q: prm.Q}
	// The first page is read before the answer starts, so a failing database still gets a problem.
	first, _, err := s.accounts.List(ctx, filter, 0, accounts.ExportPage)
	if err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	go func() {
		w := csv.NewWriter(pw)
		_ = w.Write([]string{"id", "username", "email", "role", "status", "email_verified", "last_login_at", "created_at"})
		row := func(u accounts.User) error {
			last := ""
			if u.LastLoginAt != nil {
				last = u.LastLoginAt.UTC().Format(time.RFC3339)
			}
			return w.Write([]string{u.ID.String(), csvSafe(u.Username), csvSafe(u.Email), u.Role, u.Status,
				strconv.FormatBool(u.EmailVerified), last, u.CreatedAt.UTC().Format(time.RFC3339)})
		}
		var err error
		for _, u := range first {
			if err = row(u); err != nil {
				break
			}
		}
		if err == nil && len(first) == accounts.ExportPage {
			err = s.accounts.Each(ctx, filter, accounts.ExportPage, row)
		}
		w.Flush()
		if err == nil {
			err = w.Error()
		}
		pw.CloseWithError(err)
	}()
	disposition := `attachment; filename="users.csv"`
	return gen.ExportRegisteredUsersAsCSV200TextcsvResponse{Body: pr, Headers: gen.ExportRegisteredUsersAsCSV200ResponseHeaders{ContentDisposition: &disposition}}, nil
}

// csvSafe neutralises spreadsheet formulas in user-chosen text (CSV injection).
func csvSafe(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

// CreateOAuthProvider: Create OAuth Provider (POST /settings/oauth-providers/). manage_settings.
func (s *Server) CreateOAuthProvider(ctx context.Context, request gen.CreateOAuthProviderRequestObject) (gen.CreateOAuthProviderResponseObject, error) {
	p, err := requireCapability(ctx, auth.CapManageSettings)
	if err != nil {
		return nil, err
	}
	b := request.Body
	if err := unsupportedProviderFields(b.IdpEntityId, b.IdpSsoUrl, b.IdpCertificate, b.SpEntityId, b.GroupClaim, b.GroupRoleMapping); err != nil {
		return nil, err
	}
	if b.ClientId == nil || b.ClientSecret == nil {
		return nil, apperr.Unprocessable("client_id and client_secret: every supported provider type needs both")
	}
	sp, err := s.providers.Save(ctx, uuid.Nil, providerConfig(b), p, client(ctx))
	if err != nil {
		return nil, err
	}
	return gen.CreateOAuthProvider201JSONResponse(s.providerOut(sp)), nil
}

// ListOAuthProviders: List OAuth Providers (GET /settings/oauth-providers/). Never contains secrets.
func (s *Server) ListOAuthProviders(ctx context.Context, request gen.ListOAuthProvidersRequestObject) (gen.ListOAuthProvidersResponseObject, error) {
	if _, err := requireCapability(ctx, auth.CapManageSettings); err != nil {
		return nil, err
	}
	all, err := s.providers.List(ctx)
	if err != nil {
		return nil, err
	}
	out := gen.ListOAuthProviders200JSONResponse{}
	for _, sp := range all {
		out = append(out, s.providerOut(sp))
	}
	return out, nil
}

// UpdateOAuthProvider: Update OAuth Provider (PATCH /settings/oauth-providers/{provider_id}).
// Any subset of fields; without client_secret the stored secret is kept.
func (s *Server) UpdateOAuthProvider(ctx context.Context, request gen.UpdateOAuthProviderRequestObject) (gen.UpdateOAuthProviderResponseObject, error) {
	sp, err := s.patchProvider(ctx, request.ProviderId, request.Body)
	if err != nil {
		return nil, err
	}
	return gen.UpdateOAuthProvider200JSONResponse(s.providerOut(sp)), nil
}

// patchProvider applies the fields of b that are present and keeps the rest (PUT and PATCH: the
// clients of this interface send only what they change).
func (s *Server) patchProvider(ctx context.Context, id uuid.UUID, b *gen.OAuthProviderUpdateRequest) (accounts.StoredProvider, error) {
	p, err := requireCapability(ctx, auth.CapManageSettings)
	if err != nil {
		return accounts.StoredProvider{}, err
	}
	if err := unsupportedProviderFields(b.IdpEntityId, b.IdpSsoUrl, b.IdpCertificate, b.SpEntityId, b.GroupClaim, b.GroupRoleMapping); err != nil {
		return accounts.StoredProvider{}, err
	}
	cur, err := s.providers.Get(ctx, id)
	if err != nil {
		return accounts.StoredProvider{}, err
	}
	cfg := cur.Config()
	cfg.ClientSecret = val(b.ClientSecret)
	set(&cfg.Slug, b.Slug)
	set(&cfg.DisplayName, b.DisplayName)
	set(&cfg.ClientID, b.ClientId)
	set(&cfg.DiscoveryURL, b.DiscoveryUrl)
	set(&cfg.AuthorizeURL, b.AuthorizeUrl)
	set(&cfg.TokenURL, b.TokenUrl)
	set(&cfg.UserinfoURL, b.UserinfoUrl)
	set(&cfg.Scopes, b.Scopes)
	set(&cfg.Type, (*string)(b.ProviderType))
	set(&cfg.DefaultRole, (*string)(b.DefaultRole))
	set(&cfg.Enabled, b.Enabled)
	return s.providers.Save(ctx, id, cfg, p, client(ctx))
}

// unsupportedProviderFields refuses values for SAML and group-to-role mapping, which this server
// does not support; clients that send them as null or empty are fine.
func unsupportedProviderFields(idp, sso, cert, sp, claim *string, mapping *map[string]any) error {
	for _, v := range []*string{idp, sso, cert, sp, claim} {
		if v != nil && *v != "" {
			return apperr.Unprocessable("SAML providers and group claims are not supported by this server")
		}
	}
	if mapping != nil && len(*mapping) > 0 {
		return apperr.Unprocessable("group_role_mapping: group-to-role mapping is not supported by this server")
	}
	return nil
}

// ReplaceOAuthProvider: Replace OAuth Provider (PUT /settings/oauth-providers/{provider_id}).
// The whole configuration; client_secret omitted keeps the stored one.
func (s *Server) ReplaceOAuthProvider(ctx context.Context, request gen.ReplaceOAuthProviderRequestObject) (gen.ReplaceOAuthProviderResponseObject, error) {
	sp, err := s.patchProvider(ctx, request.ProviderId, request.Body)
	if err != nil {
		return nil, err
	}
	return gen.ReplaceOAuthProvider200JSONResponse(s.providerOut(sp)), nil
}

// DeleteOAuthProvider: Delete OAuth Provider (DELETE /settings/oauth-providers/{provider_id}).
func (s *Server) DeleteOAuthProvider(ctx context.Context, request gen.DeleteOAuthProviderRequestObject) (gen.DeleteOAuthProviderResponseObject, error) {
	p, err := requireCapability(ctx, auth.CapManageSettings)
	if err != nil {
		return nil, err
	}
	if err := s.providers.Delete(ctx, request.ProviderId, p, client(ctx)); err != nil {
		return nil, err
	}
	return gen.DeleteOAuthProvider204Response{}, nil
}

// providerConfig reads a new provider's configuration.
func providerConfig(b *gen.OAuthProviderCreateRequest) oauth.Provider {
	return oauth.Provider{Slug: b.Slug, DisplayName: b.DisplayName, Type: string(b.ProviderType), ClientID: val(b.ClientId),
		ClientSecret: val(b.ClientSecret), DiscoveryURL: val(b.DiscoveryUrl), AuthorizeURL: val(b.AuthorizeUrl),
		TokenURL: val(b.TokenUrl), UserinfoURL: val(b.UserinfoUrl), Scopes: val(b.Scopes), DefaultRole: string(val(b.DefaultRole)),
		Enabled: b.Enabled == nil || *b.Enabled}
}

func (s *Server) providerOut(sp accounts.StoredProvider) gen.OAuthProvider {
	r := sp.ProviderRecord
	status := gen.OAuthProviderSecretStatus(sp.SecretStatus)
	callback := s.cfg.BaseURL + "/api/auth/oauth/" + r.Slug + "/callback"
	return gen.OAuthProvider{ProviderId: &r.ID, Id: &r.ID, Slug: r.Slug, DisplayName: r.DisplayName,
		ProviderType: gen.OAuthProviderProviderType(r.ProviderType), ClientId: r.ClientID, DiscoveryUrl: r.DiscoveryUrl,
		AuthorizeUrl: r.AuthorizeUrl, TokenUrl: r.TokenUrl, UserinfoUrl: r.UserinfoUrl, Scopes: r.Scopes,
		DefaultRole: gen.OAuthProviderDefaultRole(r.DefaultRole), Enabled: r.Enabled, SecretStatus: &status,
		CallbackUrl: &callback, CreatedAt: &r.CreatedAt, UpdatedAt: &r.UpdatedAt}
}

func auditFilter(action *string, actor *uuid.UUID, rtype, rid, outcome *string, since, until *time.Time) audit.Filter {
	return audit.Filter{Action: action, ActorID: actor, ResourceType: rtype, ResourceID: rid, Outcome: outcome, Since: since, Until: until}
}

// ListAuditLogs: List Audit Logs (GET /admin/audit-logs/). Admin only; newest first, 50/200.
func (s *Server) ListAuditLogs(ctx context.Context, request gen.ListAuditLogsRequestObject) (gen.ListAuditLogsResponseObject, error) {
	if _, err := requireCapability(ctx, auth.CapManageSettings); err != nil {
		return nil, err
	}
	prm := request.Params
	skip, limit := page(prm.Skip, prm.Limit, 50, 200)
	f := auditFilter(prm.Action, cmp.Or(prm.ActorId, prm.UserId), prm.ResourceType, prm.ResourceId, (*string)(prm.Outcome),
		cmp.Or(prm.Since, prm.DateFrom), cmp.Or(prm.Until, prm.DateTo))
	f.Search, f.Sort, f.Ascending = prm.Search, string(val(prm.Sort)), val(prm.Order) == gen.ListAuditLogsParamsOrderAsc
	events, total, err := s.audit.List(ctx, f, skip, limit)
	if err != nil {
		return nil, err
	}
	out := gen.ListAuditLogs200JSONResponse{Logs: make([]gen.AuditRecord, len(events)), Total: total, Skip: skip, Limit: limit}
	for i, e := range events {
		out.Logs[i] = auditOut(e)
	}
	return out, nil
}

// DownloadAuditRecords: Download audit records (GET /admin/audit-logs/export/{format}). Admin
// only; streamed in the chosen format.
func (s *Server) DownloadAuditRecords(ctx context.Context, request gen.DownloadAuditRecordsRequestObject) (gen.DownloadAuditRecordsResponseObject, error) {
	p, err := requireCapability(ctx, auth.CapManageSettings)
	if err != nil {
		return nil, err
	}
	prm := request.Params
	f := auditFilter(prm.Action, cmp.Or(prm.ActorId, prm.UserId), prm.ResourceType, prm.ResourceId, (*string)(prm.Outcome),
		cmp.Or(prm.Since, prm.DateFrom), cmp.Or(prm.Until, prm.DateTo))
	f.Search = prm.Search
	c := client(ctx)
	s.audit.Exported(ctx, audit.Entry{ActorID: p.UserID, ActorDisplay: p.Username, IP: c.IP, UA: c.UserAgent}, string(request.Format), f)
	return auditExport{trail: s.audit, filter: f, format: string(request.Format), max: val(prm.MaxRows), ctx: ctx}, nil
}

// GetAPIKeyStatus: Get API Key Status (GET /settings/api-key-status/). manage_settings; tells
// whether each third-party key is configured and where from, never the key.
func (s *Server) GetAPIKeyStatus(ctx context.Context, request gen.GetAPIKeyStatusRequestObject) (gen.GetAPIKeyStatusResponseObject, error) {
	if _, err := requireCapability(ctx, auth.CapManageSettings); err != nil {
		return nil, err
	}
	keys, err := s.settings.ProviderKeyStatus(ctx, s.cfg.ProviderKeys)
	if err != nil {
		return nil, err
	}
	out := gen.GetAPIKeyStatus200JSONResponse{Providers: make([]gen.SettingsProviderKeyStatus, len(keys))}
	for i, k := range keys {
		out.AnthropicConfigured = out.AnthropicConfigured || k.Name == "anthropic" && k.Source != ""
		out.OpenaiConfigured = out.OpenaiConfigured || k.Name == "ai" && k.Source != "" // the AI provider speaks the OpenAI API
		st := gen.SettingsProviderKeyStatus{Provider: k.Name, Label: k.Label, UsedFor: k.UsedFor, Configured: k.Source != ""}
		if k.Source != "" {
			src := gen.SettingsProviderKeyStatusSource(k.Source)
			st.Source = &src
		}
		out.Providers[i] = st
	}
	return out, nil
}

// GetJobStatus: Get Job Status (GET /jobs/{job_id}). The job's creator or an admin.
func (s *Server) GetJobStatus(ctx context.Context, request gen.GetJobStatusRequestObject) (gen.GetJobStatusResponseObject, error) {
	job, err := s.jobs.Get(ctx, auth.From(ctx), request.JobId)
	if err != nil {
		return nil, err
	}
	return gen.GetJobStatus200JSONResponse(jobOut(job)), nil
}

// RetryJob: Retry Job (POST /jobs/{job_id}/retry). Any failed job whose staging file is kept
// (409 otherwise).
func (s *Server) RetryJob(ctx context.Context, request gen.RetryJobRequestObject) (gen.RetryJobResponseObject, error) {
	job, err := s.jobs.Retry(ctx, auth.From(ctx), request.JobId, client(ctx))
	if err != nil {
		return nil, err
	}
	pending := gen.UploadResponseStatusPending
	return gen.RetryJob200JSONResponse{JobId: job.ID, Status: &pending, Message: "the job is pending again"}, nil
}

// ListAdminJobs: List Admin Jobs (GET /admin/jobs/). Admin only; newest first, 50/200.
func (s *Server) ListAdminJobs(ctx context.Context, request gen.ListAdminJobsRequestObject) (gen.ListAdminJobsResponseObject, error) {
	if _, err := requireCapability(ctx, auth.CapManageSettings); err != nil {
		return nil, err
	}
	prm := request.Params
	skip, limit := page(prm.Skip, prm.Limit, 50, 200)
	jobs, total, err := s.jobs.List(ctx, ingest.JobFilter{Status: (*string)(prm.Status), CreatedBy: cmp.Or(prm.CreatedBy, prm.UserId),
		DatasetID: prm.DatasetId, Since: prm.Since, Search: prm.Search, Sort: string(val(prm.Sort)),
		Descending: val(prm.Order) != gen.ListAdminJobsParamsOrderAsc}, skip, limit)
	if err != nil {
		return nil, err
	}
	out := gen.ListAdminJobs200JSONResponse{Jobs: make([]gen.AdminJobResponse, len(jobs)), Total: total, Skip: skip, Limit: limit}
	for i, j := range jobs {
		out.Jobs[i] = adminJobOut(j)
	}
	return out, nil
}

// GetJobStatusByDataset: Get Job Status By Dataset (GET /jobs/by-dataset/{dataset_id}). The latest
// job of a dataset, for the job's creator, the dataset's owner or an admin; 404 to anyone else.
func (s *Server) GetJobStatusByDataset(ctx context.Context, request gen.GetJobStatusByDatasetRequestObject) (gen.GetJobStatusByDatasetResponseObject, error) {
	job, err := s.jobs.LatestOfDataset(ctx, auth.From(ctx), request.DatasetId)
	if err != nil {
		return nil, err
	}
	return gen.GetJobStatusByDataset200JSONResponse(jobOut(job)), nil
}

// CleanupStaleJobs: Cleanup Stale Jobs (POST /jobs/cleanup/stale/). Admin only.
func (s *Server) CleanupStaleJobs(ctx context.Context, request gen.CleanupStaleJobsRequestObject) (gen.CleanupStaleJobsResponseObject, error) {
	if _, err := requireCapability(ctx, auth.CapManageSettings); err != nil {
		return nil, err
	}
	older, dry := 60, false
	if b := request.Body; b != nil {
		older, dry = val(b.OlderThanMinutes), val(b.DryRun)
		if b.OlderThanMinutes == nil {
			older = 60
		}
	}
	c, err := s.jobs.CleanupStale(ctx, older, dry)
	if err != nil {
		return nil, err
	}
	ids := append(append([]uuid.UUID{}, c.Running...), c.Pending...)
	total := len(ids)
	return gen.CleanupStaleJobs200JSONResponse{CleanedCount: total, DryRun: dry, JobIds: ids,
		PendingFailed: len(c.Pending), RunningFailed: len(c.Running), TotalCleaned: total,
		StagedPathsConsidered: c.StagedConsidered, LocalFilesReaped: c.StagedReaped, StagedCleanupFailures: c.StagedFailures,
		TotalAffected: total + c.StagedReaped}, nil
}
