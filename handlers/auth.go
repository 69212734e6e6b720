package handlers

// Operations of the Auth tag.

import (
	"context"

	"meridian/gen"
	"meridian/internal/auth"
	"meridian/internal/settings"
)

// ListMyAPIKeys: List My API Keys (GET /auth/api-keys/).
func (s *Server) ListMyAPIKeys(ctx context.Context, request gen.ListMyAPIKeysRequestObject) (gen.ListMyAPIKeysResponseObject, error) {
	return nil, notImplemented("listMyAPIKeys")
}

// CreateMyAPIKey: Create My API Key (POST /auth/api-keys/).
func (s *Server) CreateMyAPIKey(ctx context.Context, request gen.CreateMyAPIKeyRequestObject) (gen.CreateMyAPIKeyResponseObject, error) {
	return nil, notImplemented("createMyAPIKey")
}

// RevokeMyAPIKey: Revoke My API Key (DELETE /auth/api-keys/{key_id}).
func (s *Server) RevokeMyAPIKey(ctx context.Context, request gen.RevokeMyAPIKeyRequestObject) (gen.RevokeMyAPIKeyResponseObject, error) {
	return nil, notImplemented("revokeMyAPIKey")
}

// ChangePassword: Change Password (POST /auth/change-password/).
func (s *Server) ChangePassword(ctx context.Context, request gen.ChangePasswordRequestObject) (gen.ChangePasswordResponseObject, error) {
	return nil, notImplemented("changePassword")
}

// GetAuthConfig: Get Auth Config (GET /auth/config/).
func (s *Server) GetAuthConfig(ctx context.Context, request gen.GetAuthConfigRequestObject) (gen.GetAuthConfigResponseObject, error) {
	a, err := settings.Reader{Q: s.q}.Auth(ctx)
	if err != nil {
		return nil, err
	}
	return gen.GetAuthConfig200JSONResponse{
		RegistrationMode:          gen.AuthConfigResponseRegistrationMode(a.RegistrationMode),
		EmailVerificationRequired: a.EmailVerificationRequired,
		LocalLoginEnabled:         a.LocalLoginEnabled,
		PasswordPolicy:            gen.AuthPasswordPolicy{MinLength: auth.PasswordMinLength, MinClasses: auth.PasswordMinClasses},
		// OAuth providers are configured through /settings/oauth-providers/ (Identity capability);
		// until one exists the list is empty.
		OauthProviders: []gen.AuthPublicOAuthProvider{},
	}, nil
}

// CreateDownloadToken: Create Download Token (POST /auth/download-token/{dataset_id}).
func (s *Server) CreateDownloadToken(ctx context.Context, request gen.CreateDownloadTokenRequestObject) (gen.CreateDownloadTokenResponseObject, error) {
	return nil, notImplemented("createDownloadToken")
}

// Login: Login (POST /auth/login).
func (s *Server) Login(ctx context.Context, request gen.LoginRequestObject) (gen.LoginResponseObject, error) {
	return nil, notImplemented("login")
}

// Logout: Logout (POST /auth/logout/).
func (s *Server) Logout(ctx context.Context, request gen.LogoutRequestObject) (gen.LogoutResponseObject, error) {
	return nil, notImplemented("logout")
}

// GetMe: Get Me (GET /auth/me/).
func (s *Server) GetMe(ctx context.Context, request gen.GetMeRequestObject) (gen.GetMeResponseObject, error) {
	return nil, notImplemented("getMe")
}

// GetMyPermissions: Get My Permissions (GET /auth/me/permissions/).
func (s *Server) GetMyPermissions(ctx context.Context, request gen.GetMyPermissionsRequestObject) (gen.GetMyPermissionsResponseObject, error) {
	return nil, notImplemented("getMyPermissions")
}

// GetMyUsage: Get My Usage (GET /auth/me/usage/).
func (s *Server) GetMyUsage(ctx context.Context, request gen.GetMyUsageRequestObject) (gen.GetMyUsageResponseObject, error) {
	return nil, notImplemented("getMyUsage")
}

// ListPublicOAuthProviders: List Public OAuth Providers (GET /auth/oauth/providers/).
func (s *Server) ListPublicOAuthProviders(ctx context.Context, request gen.ListPublicOAuthProvidersRequestObject) (gen.ListPublicOAuthProvidersResponseObject, error) {
	return nil, notImplemented("listPublicOAuthProviders")
}

// OauthCallback: OAuth Callback (GET /auth/oauth/{provider_slug}/callback).
func (s *Server) OauthCallback(ctx context.Context, request gen.OauthCallbackRequestObject) (gen.OauthCallbackResponseObject, error) {
	return nil, notImplemented("oauthCallback")
}

// OauthLogin: OAuth Login (GET /auth/oauth/{provider_slug}/login).
func (s *Server) OauthLogin(ctx context.Context, request gen.OauthLoginRequestObject) (gen.OauthLoginResponseObject, error) {
	return nil, notImplemented("oauthLogin")
}

// RefreshToken: Refresh Token (POST /auth/refresh/).
func (s *Server) RefreshToken(ctx context.Context, request gen.RefreshTokenRequestObject) (gen.RefreshTokenResponseObject, error) {
	return nil, notImplemented("refreshToken")
}

// Register: Register (POST /auth/register/).
func (s *Server) Register(ctx context.Context, request gen.RegisterRequestObject) (gen.RegisterResponseObject, error) {
	return nil, notImplemented("register")
}

// ResendVerification: Resend Verification (POST /auth/resend-verification/).
func (s *Server) ResendVerification(ctx context.Context, request gen.ResendVerificationRequestObject) (gen.ResendVerificationResponseObject, error) {
	return nil, notImplemented("resendVerification")
}

// VerifyEmail: Verify Email (POST /auth/verify-email/).
func (s *Server) VerifyEmail(ctx context.Context, request gen.VerifyEmailRequestObject) (gen.VerifyEmailResponseObject, error) {
	return nil, notImplemented("verifyEmail")
}
