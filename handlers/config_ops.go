package handlers

// Operations of the Config Ops tag.

import (
	"context"

	"meridian/gen"
	"meridian/internal/health"
	"meridian/internal/oauth"
)

// DryRunConfiguration: Dry Run Configuration (POST /config-ops/dry-run/).
func (s *Server) DryRunConfiguration(ctx context.Context, request gen.DryRunConfigurationRequestObject) (gen.DryRunConfigurationResponseObject, error) {
	return nil, notImplemented("dryRunConfiguration")
}

// ExportConfiguration: Export Configuration (GET /config-ops/export/).
func (s *Server) ExportConfiguration(ctx context.Context, request gen.ExportConfigurationRequestObject) (gen.ExportConfigurationResponseObject, error) {
	return nil, notImplemented("exportConfiguration")
}

// ImportConfiguration: Import Configuration (POST /config-ops/import/).
func (s *Server) ImportConfiguration(ctx context.Context, request gen.ImportConfigurationRequestObject) (gen.ImportConfigurationResponseObject, error) {
	return nil, notImplemented("importConfiguration")
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
