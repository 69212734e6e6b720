package settings

import "context"

// FeatureFlags are the deployment-wide switches clients read from GET /settings/feature-flags/,
// stored under feature_flags.<name> (enable_dataset_editing is also the client key of that name).
type FeatureFlags struct {
	EnableDatasetEditing bool // feature writes answer 403 when off
	EnableMapSharing     bool
	EnableEmbedTokens    bool
	EnableSQLQuery       bool
	EnableRemoteServices bool
	// Publishing reports missing metadata as warnings whatever this says; it is stored for the
	// clients that read it.
	RequireMetadataForPublish bool
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
		"publication.require_metadata":         &f.RequireMetadataForPublish,
	})
	return f, err
}
