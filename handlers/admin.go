package handlers

// Operations of the Admin tag.

import (
	"context"

	"meridian/gen"
)

// GetAIStatus: Get AI Status (GET /admin/ai-status/).
func (s *Server) GetAIStatus(ctx context.Context, request gen.GetAIStatusRequestObject) (gen.GetAIStatusResponseObject, error) {
	return nil, notImplemented("getAIStatus")
}

// UpdateAIStatus: Update AI Status (PATCH /admin/ai-status/).
func (s *Server) UpdateAIStatus(ctx context.Context, request gen.UpdateAIStatusRequestObject) (gen.UpdateAIStatusResponseObject, error) {
	return nil, notImplemented("updateAIStatus")
}

// ListAPIKeys: List API Keys (GET /admin/api-keys/).
func (s *Server) ListAPIKeys(ctx context.Context, request gen.ListAPIKeysRequestObject) (gen.ListAPIKeysResponseObject, error) {
	return nil, notImplemented("listAPIKeys")
}

// CreateAPIKey: Create API Key (POST /admin/api-keys/).
func (s *Server) CreateAPIKey(ctx context.Context, request gen.CreateAPIKeyRequestObject) (gen.CreateAPIKeyResponseObject, error) {
	return nil, notImplemented("createAPIKey")
}

// RevokeAPIKey: Revoke API Key (DELETE /admin/api-keys/{key_id}).
func (s *Server) RevokeAPIKey(ctx context.Context, request gen.RevokeAPIKeyRequestObject) (gen.RevokeAPIKeyResponseObject, error) {
	return nil, notImplemented("revokeAPIKey")
}

// ListAuditLogs: List Audit Logs (GET /admin/audit-logs/).
func (s *Server) ListAuditLogs(ctx context.Context, request gen.ListAuditLogsRequestObject) (gen.ListAuditLogsResponseObject, error) {
	return nil, notImplemented("listAuditLogs")
}

// DownloadAuditRecords: Download audit records (GET /admin/audit-logs/export/{format}).
func (s *Server) DownloadAuditRecords(ctx context.Context, request gen.DownloadAuditRecordsRequestObject) (gen.DownloadAuditRecordsResponseObject, error) {
	return nil, notImplemented("downloadAuditRecords")
}

// TriggerBackfill: Trigger Backfill (POST /admin/backfill-embeddings/).
func (s *Server) TriggerBackfill(ctx context.Context, request gen.TriggerBackfillRequestObject) (gen.TriggerBackfillResponseObject, error) {
	return nil, notImplemented("triggerBackfill")
}

// GetEmbeddingStats: Get Embedding Stats (GET /admin/embedding-stats/).
func (s *Server) GetEmbeddingStats(ctx context.Context, request gen.GetEmbeddingStatsRequestObject) (gen.GetEmbeddingStatsResponseObject, error) {
	return nil, notImplemented("getEmbeddingStats")
}

// GetInfrastructure: Get Infrastructure (GET /admin/infrastructure/).
func (s *Server) GetInfrastructure(ctx context.Context, request gen.GetInfrastructureRequestObject) (gen.GetInfrastructureResponseObject, error) {
	return nil, notImplemented("getInfrastructure")
}

// ListAdminJobs: List Admin Jobs (GET /admin/jobs/).
func (s *Server) ListAdminJobs(ctx context.Context, request gen.ListAdminJobsRequestObject) (gen.ListAdminJobsResponseObject, error) {
	return nil, notImplemented("listAdminJobs")
}

// ListShareTokens: List Share Tokens (GET /admin/share-tokens/).
func (s *Server) ListShareTokens(ctx context.Context, request gen.ListShareTokensRequestObject) (gen.ListShareTokensResponseObject, error) {
	return nil, notImplemented("listShareTokens")
}

// AdminRevokeShareToken: Admin Revoke Share Token (DELETE /admin/share-tokens/{token_id}).
func (s *Server) AdminRevokeShareToken(ctx context.Context, request gen.AdminRevokeShareTokenRequestObject) (gen.AdminRevokeShareTokenResponseObject, error) {
	return nil, notImplemented("adminRevokeShareToken")
}

// GetCatalogStats: Get Catalog Stats (GET /admin/stats/).
func (s *Server) GetCatalogStats(ctx context.Context, request gen.GetCatalogStatsRequestObject) (gen.GetCatalogStatsResponseObject, error) {
	return nil, notImplemented("getCatalogStats")
}

// ListUsers: List Users (GET /admin/users/).
func (s *Server) ListUsers(ctx context.Context, request gen.ListUsersRequestObject) (gen.ListUsersResponseObject, error) {
	return nil, notImplemented("listUsers")
}

// CreateUser: Create User (POST /admin/users/).
func (s *Server) CreateUser(ctx context.Context, request gen.CreateUserRequestObject) (gen.CreateUserResponseObject, error) {
	return nil, notImplemented("createUser")
}

// ExportRegisteredUsersAsCSV: Export registered users as CSV (GET /admin/users/export.csv).
func (s *Server) ExportRegisteredUsersAsCSV(ctx context.Context, request gen.ExportRegisteredUsersAsCSVRequestObject) (gen.ExportRegisteredUsersAsCSVResponseObject, error) {
	return nil, notImplemented("exportRegisteredUsersAsCSV")
}

// ListUserNames: List User Names (GET /admin/users/names/).
func (s *Server) ListUserNames(ctx context.Context, request gen.ListUserNamesRequestObject) (gen.ListUserNamesResponseObject, error) {
	return nil, notImplemented("listUserNames")
}

// DeleteUser: Delete User (DELETE /admin/users/{user_id}).
func (s *Server) DeleteUser(ctx context.Context, request gen.DeleteUserRequestObject) (gen.DeleteUserResponseObject, error) {
	return nil, notImplemented("deleteUser")
}

// GetUser: Get User (GET /admin/users/{user_id}).
func (s *Server) GetUser(ctx context.Context, request gen.GetUserRequestObject) (gen.GetUserResponseObject, error) {
	return nil, notImplemented("getUser")
}

// UpdateUser: Update User (PATCH /admin/users/{user_id}).
func (s *Server) UpdateUser(ctx context.Context, request gen.UpdateUserRequestObject) (gen.UpdateUserResponseObject, error) {
	return nil, notImplemented("updateUser")
}

// ApproveUser: Approve User (POST /admin/users/{user_id}/approve/).
func (s *Server) ApproveUser(ctx context.Context, request gen.ApproveUserRequestObject) (gen.ApproveUserResponseObject, error) {
	return nil, notImplemented("approveUser")
}

// DeactivateUser: Deactivate User (POST /admin/users/{user_id}/deactivate/).
func (s *Server) DeactivateUser(ctx context.Context, request gen.DeactivateUserRequestObject) (gen.DeactivateUserResponseObject, error) {
	return nil, notImplemented("deactivateUser")
}

// RejectUser: Reject User (POST /admin/users/{user_id}/reject/).
func (s *Server) RejectUser(ctx context.Context, request gen.RejectUserRequestObject) (gen.RejectUserResponseObject, error) {
	return nil, notImplemented("rejectUser")
}

// GetJobStatusByDataset: Get Job Status By Dataset (GET /jobs/by-dataset/{dataset_id}).
func (s *Server) GetJobStatusByDataset(ctx context.Context, request gen.GetJobStatusByDatasetRequestObject) (gen.GetJobStatusByDatasetResponseObject, error) {
	return nil, notImplemented("getJobStatusByDataset")
}

// CleanupStaleJobs: Cleanup Stale Jobs (POST /jobs/cleanup/stale/).
func (s *Server) CleanupStaleJobs(ctx context.Context, request gen.CleanupStaleJobsRequestObject) (gen.CleanupStaleJobsResponseObject, error) {
	return nil, notImplemented("cleanupStaleJobs")
}

// GetJobStatus: Get Job Status (GET /jobs/{job_id}).
func (s *Server) GetJobStatus(ctx context.Context, request gen.GetJobStatusRequestObject) (gen.GetJobStatusResponseObject, error) {
	return nil, notImplemented("getJobStatus")
}

// RetryJob: Retry Job (POST /jobs/{job_id}/retry).
func (s *Server) RetryJob(ctx context.Context, request gen.RetryJobRequestObject) (gen.RetryJobResponseObject, error) {
	return nil, notImplemented("retryJob")
}

// UpdateSettings: Update Settings (PUT /settings/).
func (s *Server) UpdateSettings(ctx context.Context, request gen.UpdateSettingsRequestObject) (gen.UpdateSettingsResponseObject, error) {
	return nil, notImplemented("updateSettings")
}

// GetAllSettings: Get All Settings (GET /settings/all/).
func (s *Server) GetAllSettings(ctx context.Context, request gen.GetAllSettingsRequestObject) (gen.GetAllSettingsResponseObject, error) {
	return nil, notImplemented("getAllSettings")
}

// GetAPIKeyStatus: Get API Key Status (GET /settings/api-key-status/).
func (s *Server) GetAPIKeyStatus(ctx context.Context, request gen.GetAPIKeyStatusRequestObject) (gen.GetAPIKeyStatusResponseObject, error) {
	return nil, notImplemented("getAPIKeyStatus")
}

// ListBasemaps: List Basemaps (GET /settings/basemaps/).
func (s *Server) ListBasemaps(ctx context.Context, request gen.ListBasemapsRequestObject) (gen.ListBasemapsResponseObject, error) {
	return nil, notImplemented("listBasemaps")
}

// GetBranding: Get Branding (GET /settings/branding/).
func (s *Server) GetBranding(ctx context.Context, request gen.GetBrandingRequestObject) (gen.GetBrandingResponseObject, error) {
	return nil, notImplemented("getBranding")
}

// GetConfigMode: Get Config Mode (GET /settings/config-mode/).
func (s *Server) GetConfigMode(ctx context.Context, request gen.GetConfigModeRequestObject) (gen.GetConfigModeResponseObject, error) {
	return nil, notImplemented("getConfigMode")
}

// DetectEmbeddingDims: Detect Embedding Dims (POST /settings/detect-embedding-dims/).
func (s *Server) DetectEmbeddingDims(ctx context.Context, request gen.DetectEmbeddingDimsRequestObject) (gen.DetectEmbeddingDimsResponseObject, error) {
	return nil, notImplemented("detectEmbeddingDims")
}

// GetRuntimeCapabilities: Get runtime capabilities (GET /settings/edition/).
func (s *Server) GetRuntimeCapabilities(ctx context.Context, request gen.GetRuntimeCapabilitiesRequestObject) (gen.GetRuntimeCapabilitiesResponseObject, error) {
	return nil, notImplemented("getRuntimeCapabilities")
}

// GetEnabledPlugins: Get Enabled Plugins (GET /settings/enabled-plugins/).
func (s *Server) GetEnabledPlugins(ctx context.Context, request gen.GetEnabledPluginsRequestObject) (gen.GetEnabledPluginsResponseObject, error) {
	return nil, notImplemented("getEnabledPlugins")
}

// ListRestrictedSettingsTabs: List restricted settings tabs (GET /settings/enterprise-tabs/).
func (s *Server) ListRestrictedSettingsTabs(ctx context.Context, request gen.ListRestrictedSettingsTabsRequestObject) (gen.ListRestrictedSettingsTabsResponseObject, error) {
	return nil, notImplemented("listRestrictedSettingsTabs")
}

// GetFeatureFlags: Get Feature Flags (GET /settings/feature-flags/).
func (s *Server) GetFeatureFlags(ctx context.Context, request gen.GetFeatureFlagsRequestObject) (gen.GetFeatureFlagsResponseObject, error) {
	return nil, notImplemented("getFeatureFlags")
}

// GetMapDefaults: Get Map Defaults (GET /settings/map-defaults/).
func (s *Server) GetMapDefaults(ctx context.Context, request gen.GetMapDefaultsRequestObject) (gen.GetMapDefaultsResponseObject, error) {
	return nil, notImplemented("getMapDefaults")
}

// GetNotificationStatus: Get Notification Status (GET /settings/notifications/status/).
func (s *Server) GetNotificationStatus(ctx context.Context, request gen.GetNotificationStatusRequestObject) (gen.GetNotificationStatusResponseObject, error) {
	return nil, notImplemented("getNotificationStatus")
}

// SendTestNotification: Send Test Notification (POST /settings/notifications/test/).
func (s *Server) SendTestNotification(ctx context.Context, request gen.SendTestNotificationRequestObject) (gen.SendTestNotificationResponseObject, error) {
	return nil, notImplemented("sendTestNotification")
}

// ListOAuthProviders: List OAuth Providers (GET /settings/oauth-providers/).
func (s *Server) ListOAuthProviders(ctx context.Context, request gen.ListOAuthProvidersRequestObject) (gen.ListOAuthProvidersResponseObject, error) {
	return nil, notImplemented("listOAuthProviders")
}

// CreateOAuthProvider: Create OAuth Provider (POST /settings/oauth-providers/).
func (s *Server) CreateOAuthProvider(ctx context.Context, request gen.CreateOAuthProviderRequestObject) (gen.CreateOAuthProviderResponseObject, error) {
	return nil, notImplemented("createOAuthProvider")
}

// DeleteOAuthProvider: Delete OAuth Provider (DELETE /settings/oauth-providers/{provider_id}).
func (s *Server) DeleteOAuthProvider(ctx context.Context, request gen.DeleteOAuthProviderRequestObject) (gen.DeleteOAuthProviderResponseObject, error) {
	return nil, notImplemented("deleteOAuthProvider")
}

// UpdateOAuthProvider: Update OAuth Provider (PATCH /settings/oauth-providers/{provider_id}).
func (s *Server) UpdateOAuthProvider(ctx context.Context, request gen.UpdateOAuthProviderRequestObject) (gen.UpdateOAuthProviderResponseObject, error) {
	return nil, notImplemented("updateOAuthProvider")
}

// ReplaceOAuthProvider: Replace OAuth Provider (PUT /settings/oauth-providers/{provider_id}).
func (s *Server) ReplaceOAuthProvider(ctx context.Context, request gen.ReplaceOAuthProviderRequestObject) (gen.ReplaceOAuthProviderResponseObject, error) {
	return nil, notImplemented("replaceOAuthProvider")
}

// ResetSettings: Reset Settings (POST /settings/reset/).
func (s *Server) ResetSettings(ctx context.Context, request gen.ResetSettingsRequestObject) (gen.ResetSettingsResponseObject, error) {
	return nil, notImplemented("resetSettings")
}

// GetTileConfig: Get Tile Config (GET /settings/tile-config/).
func (s *Server) GetTileConfig(ctx context.Context, request gen.GetTileConfigRequestObject) (gen.GetTileConfigResponseObject, error) {
	return nil, notImplemented("getTileConfig")
}
