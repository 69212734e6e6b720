package handlers

// Operations of the Config Ops tag.

import (
	"context"
	"encoding/json"

	"meridian/gen"
	"meridian/internal/auth"
	"meridian/internal/configdoc"
	"meridian/internal/health"
	"meridian/internal/oauth"
)

// DryRunConfiguration: Dry Run Configuration (POST /config-ops/dry-run/).
func (s *Server) DryRunConfiguration(ctx context.Context, request gen.DryRunConfigurationRequestObject) (gen.DryRunConfigurationResponseObject, error) {
	plan, err := s.configs.DryRun(ctx, auth.From(ctx), configDocument(request.Body), string(val(request.Params.Mode)), sectionsOf(request.Params.Sections))
	if err != nil {
		return nil, err
	}
	out := gen.DryRunConfiguration200JSONResponse{Settings: map[string]any{}, OauthProviders: map[string]any{}, PreviewToken: &plan.Token}
	for key, v := range plan.Settings.Writes {
		out.Settings[key] = map[string]any{"from": plan.Settings.Current[key], "to": v}
	}
	for slug, action := range plan.Providers {
		out.OauthProviders[slug] = action
	}
	out.Collections, out.SettingsRestricted = &plan.Collections, &plan.Settings.Restricted
	return out, nil
}

// ExportConfiguration: Export Configuration (GET /config-ops/export/).
func (s *Server) ExportConfiguration(ctx context.Context, request gen.ExportConfigurationRequestObject) (gen.ExportConfigurationResponseObject, error) {
	doc, err := s.configs.Export(ctx, auth.From(ctx), sectionsOf(request.Params.Sections))
	if err != nil {
		return nil, err
	}
	raw, _ := json.Marshal(doc)
	disposition := `attachment; filename="meridian-config-` + doc.ExportedAt.Format("2006-01-02") + `.json"`
	return gen.ExportConfiguration200JSONResponse{Body: *decoded[gen.ConfigDocument](raw),
		Headers: gen.ExportConfiguration200ResponseHeaders{ContentDisposition: &disposition}}, nil
}

// ImportConfiguration: Import Configuration (POST /config-ops/import/). All of it in one
// transaction, or nothing.
func (s *Server) ImportConfiguration(ctx context.Context, request gen.ImportConfigurationRequestObject) (gen.ImportConfigurationResponseObject, error) {
	res, err := s.configs.Import(ctx, auth.From(ctx), client(ctx), configDocument(request.Body), string(val(request.Params.Mode)),
		sectionsOf(request.Params.Sections), val(request.Params.XConfigPreviewToken))
	if err != nil {
		return nil, err
	}
	return gen.ImportConfiguration200JSONResponse{SettingsApplied: res.SettingsApplied, SettingsSkipped: res.SettingsSkipped,
		SettingsSkippedRestricted: &res.SettingsRestricted, OauthCreated: res.ProvidersCreated, OauthUpdated: res.ProvidersUpdated,
		OauthDeleted: res.ProvidersDeleted, OauthAccountsDeleted: &res.AccountsDeleted, CollectionsCreated: &res.CollectionsCreated,
		CollectionsUpdated: &res.CollectionsUpdated, CollectionsDeleted: &res.CollectionsDeleted, Warnings: &res.Warnings}, nil
}

// configDocument reads an import body as a configuration document (format 1 when it does not say).
func configDocument(b *gen.ConfigImportRequest) configdoc.Document {
	doc := configdoc.Document{FormatVersion: configdoc.FormatVersion}
	if b == nil {
		return doc
	}
	raw, _ := json.Marshal(b)
	_ = json.Unmarshal(raw, &doc)
	if b.FormatVersion == nil {
		doc.FormatVersion = configdoc.FormatVersion
	}
	return doc
}

func sectionsOf(p *gen.ConfigSections) []string {
	var out []string
	for _, s := range val(p) {
		out = append(out, string(s))
	}
	return out
}

// ValidateConfiguration: Validate Configuration (POST /config-ops/validate/). Probes the
// configuration in force: upload storage, cache and identity providers. Clients send no body; a
// configuration document, when sent, has its providers probed instead of the stored ones.
func (s *Server) ValidateConfiguration(ctx context.Context, request gen.ValidateConfigurationRequestObject) (gen.ValidateConfigurationResponseObject, error) {
	if _, err := settingsActor(ctx); err != nil {
		return nil, err
	}
	oidc, err := s.providers.Checks(ctx, s.oauthFlow, documentProviders(request.Body))
	if err != nil {
		return nil, err
	}
	core := health.Probes(ctx, probeTimeout, map[string]health.Check{
		"storage": {Name: s.jobs.Storage.Name(), Run: s.jobs.Storage.Probe},
		"cache":   {Name: "memory", Run: func(context.Context) error { return nil }}, // in this process
	})
	out := gen.ValidateConfiguration200JSONResponse{Storage: probeResult(core["storage"]), Cache: probeResult(core["cache"]),
		OidcProviders: map[string]gen.ServiceProbeResult{}}
	for slug, p := range health.Probes(ctx, probeTimeout, oidc) {
		out.OidcProviders[slug] = probeResult(p)
	}
	return out, nil
}

// documentProviders are the enabled identity providers of a configuration document, nil without
// a document (an empty body binds as one without its format_version, which a document requires).
func documentProviders(doc *gen.ConfigDocument) []oauth.Provider {
	if doc == nil || doc.FormatVersion == 0 {
		return nil
	}
	out := []oauth.Provider{} // a document without providers probes none
	for _, p := range val(doc.OauthProviders) {
		if p.Enabled == nil || *p.Enabled {
			out = append(out, oauth.Provider{Slug: p.Slug, DisplayName: p.DisplayName, Type: string(p.ProviderType),
				ClientID: p.ClientId, DiscoveryURL: val(p.DiscoveryUrl), AuthorizeURL: val(p.AuthorizeUrl),
				TokenURL: val(p.TokenUrl), UserinfoURL: val(p.UserinfoUrl), Scopes: val(p.Scopes), Enabled: true})
		}
	}
	return out
}

func probeResult(p health.Probe) gen.ServiceProbeResult {
	h := probeHealth(p)
	return gen.ServiceProbeResult{Name: p.Name, Status: gen.ServiceProbeResultStatus(h.Status), LatencyMs: h.LatencyMs, Error: h.Error}
}
