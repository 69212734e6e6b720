package handlers

// Operations of the Admin tag: settings, the web UI's frame, statistics, infrastructure and
// notifications.

import (
	"cmp"
	"context"
	"math"
	"slices"
	"time"

	"meridian/gen"
	"meridian/internal/ai"
	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/internal/config"
	"meridian/internal/health"
	"meridian/internal/settings"
	"meridian/internal/web"
)

// settingsActor is the signed-in admin changing settings, or the refusal.
func settingsActor(ctx context.Context) (settings.Actor, error) {
	p, err := requireCapability(ctx, auth.CapManageSettings)
	m := web.MetaFrom(ctx)
	return settings.Actor{ID: p.UserID, Username: p.Username, IP: m.IP, UA: m.UserAgent}, err
}

// allSettings answers every setting by tab.
func (s *Server) allSettings(ctx context.Context) (gen.SettingsAllResponse, error) {
	tabs, err := s.settingsAdmin.All(ctx)
	out := gen.SettingsAllResponse{EnvOnly: false, Tabs: map[string][]gen.SettingItem{}}
	for group, items := range tabs {
		out.Tabs[group] = make([]gen.SettingItem, 0, len(items)) // permissions and appearance are empty, and present
		for _, it := range items {
			out.Tabs[group] = append(out.Tabs[group], gen.SettingItem{Key: it.Key, Label: it.Label, Source: gen.SettingItemSource(it.Source), Value: it.Value})
		}
	}
	return out, err
}

// GetAllSettings: Get All Settings (GET /settings/all/).
func (s *Server) GetAllSettings(ctx context.Context, request gen.GetAllSettingsRequestObject) (gen.GetAllSettingsResponseObject, error) {
	if _, err := settingsActor(ctx); err != nil {
		return nil, err
	}
	out, err := s.allSettings(ctx)
	return gen.GetAllSettings200JSONResponse(out), err
}

// UpdateSettings: Update Settings (PUT /settings/).
func (s *Server) UpdateSettings(ctx context.Context, request gen.UpdateSettingsRequestObject) (gen.UpdateSettingsResponseObject, error) {
	actor, err := settingsActor(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.settingsAdmin.Update(ctx, actor, request.Body.Settings); err != nil {
		return nil, err
	}
	out, err := s.allSettings(ctx)
	return gen.UpdateSettings200JSONResponse(out), err
}

// ResetSettings: Reset Settings (POST /settings/reset/).
func (s *Server) ResetSettings(ctx context.Context, request gen.ResetSettingsRequestObject) (gen.ResetSettingsResponseObject, error) {
	actor, err := settingsActor(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.settingsAdmin.Reset(ctx, actor, request.Body.Keys); err != nil {
		return nil, err
	}
	out, err := s.allSettings(ctx)
	return gen.ResetSettings200JSONResponse(out), err
}

// GetConfigMode: Get Config Mode (GET /settings/config-mode/).
func (s *Server) GetConfigMode(ctx context.Context, request gen.GetConfigModeRequestObject) (gen.GetConfigModeResponseObject, error) {
	if _, err := settingsActor(ctx); err != nil {
		return nil, err
	}
	pinned := make([]string, 0, len(s.settingsAdmin.Pinned)+len(s.settingsAdmin.Fixed))
	for k := range s.settingsAdmin.Pinned {
		pinned = append(pinned, k)
	}
	for k := range s.settingsAdmin.Fixed {
		pinned = append(pinned, k)
	}
	slices.Sort(pinned)
	mode := gen.ConfigModeResponseModeDatabase
	if len(pinned) > 0 {
		mode = gen.ConfigModeResponseModeHybrid
	}
	return gen.GetConfigMode200JSONResponse{EnvOnly: false, Mode: &mode, PinnedKeys: &pinned}, nil
}

// ListRestrictedSettingsTabs: List restricted settings tabs (GET /settings/enterprise-tabs/).
// No tab is locked: this edition has no overlay and nothing held back.
func (s *Server) ListRestrictedSettingsTabs(ctx context.Context, request gen.ListRestrictedSettingsTabsRequestObject) (gen.ListRestrictedSettingsTabsResponseObject, error) {
	if _, err := settingsActor(ctx); err != nil {
		return nil, err
	}
	return gen.ListRestrictedSettingsTabs200JSONResponse{Tabs: []string{}}, nil
}

// GetEnabledPlugins: Get Enabled Plugins (GET /settings/enabled-plugins/): the enabled_plugins
// setting (this server builds no map plugin in; the web UI brings its own).
func (s *Server) GetEnabledPlugins(ctx context.Context, request gen.GetEnabledPluginsRequestObject) (gen.GetEnabledPluginsResponseObject, error) {
	plugins, err := s.settings.EnabledPlugins(ctx)
	return gen.GetEnabledPlugins200JSONResponse(plugins), err
}

// GetRuntimeCapabilities: Get runtime capabilities (GET /settings/edition/). The features are
// what this server has built and configured now.
func (s *Server) GetRuntimeCapabilities(ctx context.Context, request gen.GetRuntimeCapabilitiesRequestObject) (gen.GetRuntimeCapabilitiesResponseObject, error) {
	features := []string{"catalog", "search", "saved_searches", "ogc_api_features", "ogc_api_records", "vector_tiles",
		"maps", "map_sharing", "embed_tokens", "map_styles", "feature_editing", "column_editing", "dataset_export", "oauth_login"}
	if s.cfg.S3Endpoint != "" {
		features = append(features, "presigned_uploads")
	}
	if s.cfg.SMTPHost != "" {
		features = append(features, "email_notifications")
	}
	tenancy := "single_tenant"
	return gen.GetRuntimeCapabilities200JSONResponse{Edition: "community", Features: features, TenancyMode: &tenancy}, nil
}

// GetBranding: Get Branding (GET /settings/branding/).
func (s *Server) GetBranding(ctx context.Context, request gen.GetBrandingRequestObject) (gen.GetBrandingResponseObject, error) {
	b, err := s.settings.Branding(ctx)
	if err != nil {
		return nil, err
	}
	return gen.GetBranding200JSONResponse{SiteName: &b.SiteName, ShowBadge: b.ShowBadge, PrivacyUrl: b.PrivacyURL, LogoUrl: b.LogoURL,
		PrimaryColor: b.PrimaryColor}, nil
}

// GetAIStatus: Get AI Status (GET /admin/ai-status/). configured: a chat provider, model and
// key (or a keyless OpenAI-compatible server) are set; enabled: that, and ai_enabled. With probe,
// each configured provider gets one tiny request (none while AI is off).
func (s *Server) GetAIStatus(ctx context.Context, request gen.GetAIStatusRequestObject) (gen.GetAIStatusResponseObject, error) {
	if _, err := settingsActor(ctx); err != nil {
		return nil, err
	}
	st, err := s.ai.Status(ctx, val(request.Params.Probe))
	return gen.GetAIStatus200JSONResponse(aiStatusOf(st)), err
}

func aiStatusOf(st ai.Status) gen.AIStatusResponse {
	semantic := st.SemanticAvailable()
	out := gen.AIStatusResponse{Provider: st.Provider, Model: st.Model, Configured: st.ChatConfigured(), Enabled: st.Available(),
		SemanticSearchEnabled: &semantic, HasEmbeddings: ptr(st.HasEmbeddings)}
	if st.Chat != nil && st.Embeddings != nil {
		check := func(p *ai.Probe) gen.AIProbeCheck {
			return gen.AIProbeCheck{Configured: p.Configured, Ok: p.OK, Status: p.Status, Error: p.Error}
		}
		out.Probe = &gen.AIProbeReport{Chat: check(st.Chat), Embeddings: check(st.Embeddings)}
	}
	return out
}

// UpdateAIStatus: Update AI Status (PATCH /admin/ai-status/).
func (s *Server) UpdateAIStatus(ctx context.Context, request gen.UpdateAIStatusRequestObject) (gen.UpdateAIStatusResponseObject, error) {
	actor, err := settingsActor(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.settingsAdmin.Update(ctx, actor, map[string]any{"ai_enabled": request.Body.Enabled}); err != nil {
		return nil, err
	}
	st, err := s.ai.Status(ctx, false)
	return gen.UpdateAIStatus200JSONResponse(aiStatusOf(st)), err
}

// GetEmbeddingStats: Get Embedding Stats (GET /admin/embedding-stats/). Counts are of the
// configured embedding model and dimensions: a record embedded with another is stale.
func (s *Server) GetEmbeddingStats(ctx context.Context, request gen.GetEmbeddingStatsRequestObject) (gen.GetEmbeddingStatsResponseObject, error) {
	if _, err := settingsActor(ctx); err != nil {
		return nil, err
	}
	st, err := s.ai.Stats(ctx)
	if err != nil {
		return nil, err
	}
	coverage := float32(0)
	if st.Total > 0 {
		coverage = float32(math.Round(float64(st.Embedded)*1000/float64(st.Total)) / 10)
	}
	return gen.GetEmbeddingStats200JSONResponse{TotalRecords: int(st.Total), EmbeddedRecords: int(st.Embedded),
		MissingRecords: int(st.Missing), StaleRecords: int(st.Stale), CoveragePercent: coverage}, nil
}

// DetectEmbeddingDims: Detect Embedding Dims (POST /settings/detect-embedding-dims/).
func (s *Server) DetectEmbeddingDims(ctx context.Context, request gen.DetectEmbeddingDimsRequestObject) (gen.DetectEmbeddingDimsResponseObject, error) {
	if _, err := settingsActor(ctx); err != nil {
		return nil, err
	}
	n, _, err := s.ai.DetectDims(ctx)
	return gen.DetectEmbeddingDims200JSONResponse{Dimensions: n}, err
}

// TriggerBackfill: Trigger Backfill (POST /admin/backfill-embeddings/). mode missing (the
// default), stale or all, of some datasets when named; force is mode all.
func (s *Server) TriggerBackfill(ctx context.Context, request gen.TriggerBackfillRequestObject) (gen.TriggerBackfillResponseObject, error) {
	if _, err := settingsActor(ctx); err != nil {
		return nil, err
	}
	var body gen.AdminBackfillRequest
	if request.Body != nil {
		body = *request.Body
	}
	mode := string(cmp.Or(val(body.Mode), "missing"))
	if val(request.Params.Force) {
		mode = "all"
	}
	run, err := s.ai.Backfill(ctx, auth.From(ctx), mode, val(body.DatasetIds))
	return gen.TriggerBackfill200JSONResponse{JobId: run.ID, Status: run.Status}, err
}

// GetCatalogStats: Get Catalog Stats (GET /admin/stats/).
func (s *Server) GetCatalogStats(ctx context.Context, request gen.GetCatalogStatsRequestObject) (gen.GetCatalogStatsResponseObject, error) {
	if _, err := settingsActor(ctx); err != nil {
		return nil, err
	}
	st, err := s.catalog.Stats(ctx)
	if err != nil {
		return nil, err
	}
	storage, users := int(st.StorageBytes), int(st.TotalUsers)
	return gen.GetCatalogStats200JSONResponse{TotalDatasets: int(st.TotalDatasets), RecentAdditions: int(st.RecentAdditions),
		TotalStorageBytes: &storage, DatasetsByGeometryType: st.ByGeometryType, DatasetsByVisibility: st.ByVisibility,
		UsersByStatus: &st.UsersByStatus, TotalUsers: &users}, nil
}

// GetInfrastructure: Get Infrastructure (GET /admin/infrastructure/). What the deployment runs
// on, and the health of what it depends on, each "ok" or "error": the database, the backups, and
// every enabled identity provider by slug (an empty object without any); and the age of the latest
// backup. No address or credential.
func (s *Server) GetInfrastructure(ctx context.Context, request gen.GetInfrastructureRequestObject) (gen.GetInfrastructureResponseObject, error) {
	if _, err := settingsActor(ctx); err != nil {
		return nil, err
	}
	tc, err := s.tiles.Config(ctx)
	if err != nil {
		return nil, err
	}
	checks, err := s.providers.Checks(ctx, s.oauthFlow, nil)
	if err != nil {
		return nil, err
	}
	deps := map[string]gen.ProviderHealth{}
	for name, p := range s.health.Check(ctx).Providers {
		deps[name] = probeHealth(health.Probe{Up: p.Up, Latency: p.Latency, Detail: p.Detail})
	}
	oidc := map[string]gen.ProviderHealth{}
	for slug, p := range health.Probes(ctx, probeTimeout, checks) {
		oidc[slug] = probeHealth(p)
	}
	b, err := s.backups.Status(ctx, time.Now())
	if err != nil {
		return nil, err
	}
	backups := gen.AdminBackupInfo{Status: gen.AdminBackupInfoStatus(b.Status), LastBackupAt: b.LastAt, AgeMinutes: b.AgeMinutes, MaxAgeMinutes: b.MaxAgeMinutes}
	return gen.GetInfrastructure200JSONResponse{Health: deps, OidcProviders: oidc, Backups: backups, Config: gen.InfrastructureConfig{
		StorageProvider: s.jobs.Storage.Name(), CacheProvider: "memory", DatabaseType: "postgresql+postgis", DatabasePooler: "pgxpool",
		TileCache: "memory", TileCacheTtl: tc.TokenTTLSeconds, CdnConfigured: tc.CDNBaseURL != nil}}, nil
}

// probeTimeout bounds each probe of the admin pages: a provider that hangs reports an error
// instead of holding the page.
const probeTimeout = 5 * time.Second

func probeHealth(p health.Probe) gen.ProviderHealth {
	h := gen.ProviderHealth{Status: "ok", LatencyMs: float32(p.Latency.Microseconds()) / 1000}
	if !p.Up {
		h.Status, h.Error = "error", ptr(p.Detail)
	}
	return h
}

// GetNotificationStatus: Get Notification Status (GET /settings/notifications/status/).
func (s *Server) GetNotificationStatus(ctx context.Context, request gen.GetNotificationStatusRequestObject) (gen.GetNotificationStatusResponseObject, error) {
	if _, err := settingsActor(ctx); err != nil {
		return nil, err
	}
	on, err := s.settings.NotificationsEnabled(ctx)
	smtp := s.registration.Mail.Enabled()
	return gen.GetNotificationStatus200JSONResponse{NotificationsEnabled: on && smtp, SmtpConfigured: smtp}, err
}

// SendTestNotification: Send Test Notification (POST /settings/notifications/test/).
func (s *Server) SendTestNotification(ctx context.Context, request gen.SendTestNotificationRequestObject) (gen.SendTestNotificationResponseObject, error) {
	actor, err := settingsActor(ctx)
	if err != nil {
		return nil, err
	}
	if !s.registration.Mail.Enabled() {
		return nil, apperr.Conflict("email notifications are not configured (SMTP_HOST)")
	}
	var to string
	if request.Body != nil && request.Body.Recipient != nil {
		to = string(*request.Body.Recipient)
	}
	if to == "" {
		u, err := s.accounts.Get(ctx, actor.ID)
		if err != nil {
			return nil, err
		}
		to = u.Email
	}
	err = s.registration.Mail.Send(ctx, to, cmp.Or(config.Version, "Meridian")+" test notification",
		"This is a test message from Meridian's settings screen. Email notifications work.")
	if err != nil {
		return nil, &apperr.Error{Kind: apperr.KindUpstream, Title: "Bad Gateway", Detail: "the mail server refused the message: " + err.Error(), Err: err}
	}
	return gen.SendTestNotification200JSONResponse{Sent: true, Channels: []gen.NotificationTestChannelResult{{Channel: "email", Ok: true}},
		Message: "sent to " + to}, nil
}
