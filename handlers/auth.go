package handlers

// Operations of the Auth tag.

import (
	"context"
	"net/http"

	"meridian/gen"
	"meridian/internal/accounts"
	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/internal/web"
)

// GetAuthConfig: Get Auth Config (GET /auth/config/).
func (s *Server) GetAuthConfig(ctx context.Context, request gen.GetAuthConfigRequestObject) (gen.GetAuthConfigResponseObject, error) {
	a, err := s.registration.Config(ctx)
	if err != nil {
		return nil, err
	}
	providers, err := s.publicProviders(ctx)
	if err != nil {
		return nil, err
	}
	methods := []string{}
	if a.LocalLoginEnabled {
		methods = append(methods, "password")
	}
	for _, p := range providers {
		methods = append(methods, "oauth:"+p.Slug)
	}
	open := a.RegistrationMode != "closed"
	return gen.GetAuthConfig200JSONResponse{
		RegistrationMode:          gen.AuthConfigResponseRegistrationMode(a.RegistrationMode),
		EmailVerificationRequired: a.EmailVerificationRequired,
		LocalLoginEnabled:         a.LocalLoginEnabled,
		PasswordPolicy:            gen.AuthPasswordPolicy{MinLength: auth.PasswordMinLength, MinClasses: auth.PasswordMinClasses},
		OauthProviders:            providers,
		RegistrationEnabled:       open, AllowSignup: open, PasswordLoginEnabled: a.LocalLoginEnabled, AuthMethods: methods,
		LandingFirst: a.LandingFirst, BannerEnabled: a.BannerEnabled, BannerText: a.BannerText, BannerColor: a.BannerColor,
	}, nil
}

// Login: Login (POST /auth/login). Form-encoded username and password; the TokenResponse of
// section 2.3, with the cookie transport when X-Service-Auth-Mode is "cookie".
func (s *Server) Login(ctx context.Context, request gen.LoginRequestObject) (gen.LoginResponseObject, error) {
	if request.Body == nil {
		return nil, apperr.Unprocessable("username and password are required")
	}
	pair, err := s.auth.Login(ctx, request.Body.Username, request.Body.Password, client(ctx))
	if err != nil {
		return nil, err
	}
	cookies := request.Params.XServiceAuthMode != nil && string(*request.Params.XServiceAuthMode) == cookieMode
	return s.respondTokens(ctx, pair, cookies), nil
}

// RefreshToken: Refresh Token (POST /auth/refresh/). Body transport, or the cookie transport with
// the CSRF double-submit check; the body is read once as a fallback so older sessions migrate.
func (s *Server) RefreshToken(ctx context.Context, request gen.RefreshTokenRequestObject) (gen.RefreshTokenResponseObject, error) {
	meta := web.MetaFrom(ctx)
	cookieMode := request.Params.XServiceAuthMode != nil && string(*request.Params.XServiceAuthMode) == cookieMode
	var token string
	switch {
	case cookieMode && meta.Cookie(refreshCookie) != "":
		if !csrfMatches(meta, request.Params.XCSRFToken) {
			return nil, apperr.Forbidden("X-CSRF-Token must echo the service_csrf cookie")
		}
		token = meta.Cookie(refreshCookie)
	case request.Body != nil && request.Body.RefreshToken != "":
		token = request.Body.RefreshToken
	default:
		return nil, apperr.Unauthorized("no refresh token presented")
	}
	pair, err := s.auth.Refresh(ctx, token, client(ctx))
	if err != nil {
		return nil, err
	}
	return s.respondTokens(ctx, pair, cookieMode), nil
}

// Logout: Logout (POST /auth/logout/). Rule 4a: a dead access token does not stop it; the refresh
// credential (cookie or body) names the session to end, else a live access token does;
// all_sessions ends every session of that user. 401 only when nothing presented resolves. API
// keys are never affected.
func (s *Server) Logout(ctx context.Context, request gen.LogoutRequestObject) (gen.LogoutResponseObject, error) {
	meta := web.MetaFrom(ctx)
	p := auth.From(ctx)
	token := meta.Cookie(refreshCookie)
	all := false
	if request.Body != nil {
		all = val(request.Body.AllSessions)
		if token == "" && request.Body.RefreshToken != nil {
			token = *request.Body.RefreshToken
		}
	}
	resolved := false
	if token != "" {
		ok, err := s.auth.Logout(ctx, token, all, client(ctx))
		if err != nil {
			return nil, err
		}
		resolved = ok
	}
	if !resolved && p.Via == auth.ViaBearer {
		if err := s.auth.EndSession(ctx, p, all, client(ctx)); err != nil {
			return nil, err
		}
		resolved = true
	}
	if !resolved && p.Via == auth.ViaAPIKey {
		resolved = true // nothing to end: keys outlive web sessions
	}
	if !resolved {
		return nil, apperr.Unauthorized("nothing presented resolves to a session")
	}
	return logoutResponse{}, nil
}

type logoutResponse struct{}

func (logoutResponse) VisitLogoutResponse(w http.ResponseWriter) error {
	for _, c := range clearSessionCookies() {
		http.SetCookie(w, c)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// ChangePassword: Change Password (POST /auth/change-password/).
func (s *Server) ChangePassword(ctx context.Context, request gen.ChangePasswordRequestObject) (gen.ChangePasswordResponseObject, error) {
	p := auth.From(ctx)
	if err := s.auth.ChangePassword(ctx, p.UserID, request.Body.CurrentPassword, request.Body.NewPassword, client(ctx)); err != nil {
		return nil, err
	}
	return gen.ChangePassword204Response{}, nil
}

// GetMe: Get Me (GET /auth/me/).
func (s *Server) GetMe(ctx context.Context, request gen.GetMeRequestObject) (gen.GetMeResponseObject, error) {
	u, err := s.accounts.Get(ctx, auth.From(ctx).UserID)
	if err != nil {
		return nil, err
	}
	out := userOut(u)
	usage, err := s.accounts.UsageOf(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	out.QuotaUsage = &gen.UserQuotaUsage{BytesUsed: usage.StorageBytes, DatasetCount: usage.Datasets}
	return gen.GetMe200JSONResponse(out), nil
}

// GetMyPermissions: Get My Permissions (GET /auth/me/permissions/).
func (s *Server) GetMyPermissions(ctx context.Context, request gen.GetMyPermissionsRequestObject) (gen.GetMyPermissionsResponseObject, error) {
	p := auth.From(ctx)
	out := gen.GetMyPermissions200JSONResponse{Role: gen.AuthPermissionsResponseRole(p.Role), Capabilities: []gen.AuthPermissionsResponseCapabilities{},
		Permissions: map[string]bool{}}
	for _, c := range auth.Capabilities(auth.RoleAdmin) {
		out.Permissions[string(c)] = false
	}
	for _, c := range auth.Capabilities(p.Role) {
		out.Capabilities = append(out.Capabilities, gen.AuthPermissionsResponseCapabilities(c))
		out.Permissions[string(c)] = true
	}
	if p.Via == auth.ViaAPIKey {
		scope := gen.AuthPermissionsResponseApiKeyScope(p.KeyScope)
		out.ApiKeyScope = &scope
	}
	return out, nil
}

// CreateMyAPIKey: Create My API Key (POST /auth/api-keys/).
func (s *Server) CreateMyAPIKey(ctx context.Context, request gen.CreateMyAPIKeyRequestObject) (gen.CreateMyAPIKeyResponseObject, error) {
	p := auth.From(ctx)
	nk := auth.NewKey{OwnerID: p.UserID, Name: request.Body.Name, ExpiresAt: request.Body.ExpiresAt, Actor: p, Client: client(ctx)}
	if request.Body.Scope != nil {
		nk.Scope = string(*request.Body.Scope)
	}
	k, err := s.auth.CreateKey(ctx, nk)
	if err != nil {
		return nil, err
	}
	return gen.CreateMyAPIKey201JSONResponse(keyCreatedOut(k)), nil
}

// ListMyAPIKeys: List My API Keys (GET /auth/api-keys/).
func (s *Server) ListMyAPIKeys(ctx context.Context, request gen.ListMyAPIKeysRequestObject) (gen.ListMyAPIKeysResponseObject, error) {
	keys, err := s.auth.KeysOf(ctx, auth.From(ctx).UserID)
	if err != nil {
		return nil, err
	}
	skip, limit := page(request.Params.Skip, request.Params.Limit, 50, 200)
	out := gen.ListMyAPIKeys200JSONResponse{Items: []gen.ApiKeyListItem{}, Total: len(keys), Skip: &skip, Limit: &limit}
	for _, k := range keys[min(skip, len(keys)):min(skip+limit, len(keys))] {
		out.Items = append(out.Items, gen.ApiKeyListItem{Id: k.ID, Name: k.Name, Fingerprint: k.Fingerprint, IsActive: k.IsActive,
			ExpiresAt: k.ExpiresAt, Scope: gen.ApiKeyListItemScope(k.Scope), CreatedAt: k.CreatedAt, LastUsedAt: k.LastUsedAt})
	}
	return out, nil
}

// RevokeMyAPIKey: Revoke My API Key (DELETE /auth/api-keys/{key_id}). Another user's key answers
// 404, as if it did not exist.
func (s *Server) RevokeMyAPIKey(ctx context.Context, request gen.RevokeMyAPIKeyRequestObject) (gen.RevokeMyAPIKeyResponseObject, error) {
	if err := s.auth.RevokeKey(ctx, request.KeyId, auth.From(ctx), true, client(ctx)); err != nil {
		return nil, err
	}
	return gen.RevokeMyAPIKey204Response{}, nil
}

// Register: Register (POST /auth/register/). Reads no credential; see the operation description
// for the registration modes and why a known email answers like a success.
func (s *Server) Register(ctx context.Context, request gen.RegisterRequestObject) (gen.RegisterResponseObject, error) {
	b := request.Body
	next, err := s.registration.Register(ctx, b.Username, string(val(b.Email)), b.Password, client(ctx))
	if err != nil {
		return nil, err
	}
	out := gen.Register201JSONResponse{Message: "account created"}
	switch next {
	case accounts.StepVerifyEmail:
		out.Message = "check your mailbox for the verification link"
	case accounts.StepAwaitApproval:
		out.Message = "an administrator will review the registration"
	}
	if next != "" {
		step := gen.AuthRegisterResponseNextStep(next)
		out.NextStep = &step
	}
	return out, nil
}

// VerifyEmail: Verify Email (POST /auth/verify-email/).
func (s *Server) VerifyEmail(ctx context.Context, request gen.VerifyEmailRequestObject) (gen.VerifyEmailResponseObject, error) {
	status, err := s.registration.Verify(ctx, request.Body.Token)
	if err != nil {
		return nil, err
	}
	if status == "active" {
		return gen.VerifyEmail200JSONResponse{Status: gen.AuthVerifyEmailResponseStatusActive, Message: "email verified; you can sign in"}, nil
	}
	step := gen.AuthVerifyEmailResponseNextStep(accounts.StepAwaitApproval)
	return gen.VerifyEmail200JSONResponse{Status: gen.AuthVerifyEmailResponseStatusPending, NextStep: &step,
		Message: "email verified; an administrator will review the registration"}, nil
}

// ResendVerification: Resend Verification (POST /auth/resend-verification/). Same answer whether
// or not the address belongs to an unverified account.
func (s *Server) ResendVerification(ctx context.Context, request gen.ResendVerificationRequestObject) (gen.ResendVerificationResponseObject, error) {
	if err := s.registration.Resend(ctx, string(request.Body.Email)); err != nil {
		return nil, err
	}
	step := gen.AuthNextStepResponseNextStep(accounts.StepVerifyEmail)
	return gen.ResendVerification200JSONResponse{Message: "if the address belongs to an unverified account, a new link is on its way", NextStep: &step}, nil
}

// CreateDownloadToken: Create Download Token (POST /auth/download-token/{dataset_id}). Needs read
// access to the dataset and the export capability; 404 for datasets the caller cannot see.
func (s *Server) CreateDownloadToken(ctx context.Context, request gen.CreateDownloadTokenRequestObject) (gen.CreateDownloadTokenResponseObject, error) {
	p, err := requireCapability(ctx, auth.CapExport)
	if err != nil {
		return nil, err
	}
	if _, err := s.catalog.Get(ctx, p, request.DatasetId, false); err != nil {
		return nil, err
	}
	return gen.CreateDownloadToken200JSONResponse{Token: s.downloads.Issue(request.DatasetId, p.UserID),
		ExpiresIn: int(auth.DownloadTokenTTL.Seconds())}, nil
}

// GetMyUsage: Get My Usage (GET /auth/me/usage/). The caps are the quota settings
// (max_storage_bytes_per_user, max_datasets_per_user; 0: none), and the largest upload the
// caller may send now.
func (s *Server) GetMyUsage(ctx context.Context, request gen.GetMyUsageRequestObject) (gen.GetMyUsageResponseObject, error) {
	u, err := s.accounts.UsageOf(ctx, auth.From(ctx).UserID)
	if err != nil {
		return nil, err
	}
	q, err := s.settings.Uploads(ctx)
	if err != nil {
		return nil, err
	}
	maxFile := q.MaxBytes(s.cfg.MaxUploadBytes)
	return gen.GetMyUsage200JSONResponse{DatasetCount: u.Datasets, StorageBytes: u.StorageBytes, BytesUsed: u.StorageBytes, ApiKeyCount: u.APIKeys,
		// Maps are a later capability; until they exist nobody owns one.
		MapCount: 0, StorageCap: q.MaxStorageBytesPerUser, CountCap: int(q.MaxDatasetsPerUser),
		Quotas: gen.AuthUsageQuotas{MaxFileSizeBytes: &maxFile}}, nil
}
