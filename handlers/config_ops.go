package handlers

// Operations of the Config Ops tag.

import (
	"context"

	"meridian/gen"
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

// ValidateConfiguration: Validate Configuration (POST /config-ops/validate/).
func (s *Server) ValidateConfiguration(ctx context.Context, request gen.ValidateConfigurationRequestObject) (gen.ValidateConfigurationResponseObject, error) {
	return nil, notImplemented("validateConfiguration")
}
