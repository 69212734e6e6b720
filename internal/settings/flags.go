package settings

import "context"

// FeatureFlags are the deployment-wide switches clients read from GET /settings/feature-flags/,
// stored under feature_flags.<name> (the feature_flags group of Update Settings).
type FeatureFlags struct {
	EnableDatasetEditing bool // feature writes answer 403 when off
	EnableMapSharing     bool
	EnableEmbedTokens    bool
	EnableSQLQuery       bool
	EnableRemoteServices bool
}

// FeatureFlags reads every feature flag in one query.
func (r Reader) FeatureFlags(ctx context.Context) (FeatureFlags, error) {
	var f FeatureFlags
	err := r.load(ctx, map[string]any{
		"feature_flags.enable_dataset_editing": &f.EnableDatasetEditing,
		"feature_flags.enable_map_sharing":     &f.EnableMapSharing,
		"feature_flags.enable_embed_tokens":    &f.EnableEmbedTokens,
		"feature_flags.enable_sql_query":       &f.EnableSQLQuery,
		"feature_flags.enable_remote_services": &f.EnableRemoteServices,
	})
	return f, err
}
