package handlers

// Operations of the Maps tag.

import (
	"context"

	"meridian/gen"
)

// AiAvailability: AI Availability (GET /ai/availability/).
func (s *Server) AiAvailability(ctx context.Context, request gen.AiAvailabilityRequestObject) (gen.AiAvailabilityResponseObject, error) {
	return nil, notImplemented("aiAvailability")
}

// Chat: Chat (POST /ai/chat/).
func (s *Server) Chat(ctx context.Context, request gen.ChatRequestObject) (gen.ChatResponseObject, error) {
	return nil, notImplemented("chat")
}

// DatasetChatStream: Dataset Chat Stream (POST /ai/chat/dataset/stream/).
func (s *Server) DatasetChatStream(ctx context.Context, request gen.DatasetChatStreamRequestObject) (gen.DatasetChatStreamResponseObject, error) {
	return nil, notImplemented("datasetChatStream")
}

// AiChatStream: AI Chat Stream (POST /ai/chat/stream/).
func (s *Server) AiChatStream(ctx context.Context, request gen.AiChatStreamRequestObject) (gen.AiChatStreamResponseObject, error) {
	return nil, notImplemented("aiChatStream")
}

// GenerateMap: Generate Map (POST /ai/generate-map/).
func (s *Server) GenerateMap(ctx context.Context, request gen.GenerateMapRequestObject) (gen.GenerateMapResponseObject, error) {
	return nil, notImplemented("generateMap")
}

// GenerateMapStream: Generate Map Stream (POST /ai/generate-map/stream/).
func (s *Server) GenerateMapStream(ctx context.Context, request gen.GenerateMapStreamRequestObject) (gen.GenerateMapStreamResponseObject, error) {
	return nil, notImplemented("generateMapStream")
}

// GenerateMetadataKeywords: Generate Metadata Keywords (POST /ai/metadata/keywords/).
func (s *Server) GenerateMetadataKeywords(ctx context.Context, request gen.GenerateMetadataKeywordsRequestObject) (gen.GenerateMetadataKeywordsResponseObject, error) {
	return nil, notImplemented("generateMetadataKeywords")
}

// GenerateMetadataLineage: Generate Metadata Lineage (POST /ai/metadata/lineage/).
func (s *Server) GenerateMetadataLineage(ctx context.Context, request gen.GenerateMetadataLineageRequestObject) (gen.GenerateMetadataLineageResponseObject, error) {
	return nil, notImplemented("generateMetadataLineage")
}

// GenerateMetadataQualityStatement: Generate Metadata Quality Statement (POST /ai/metadata/quality-statement/).
func (s *Server) GenerateMetadataQualityStatement(ctx context.Context, request gen.GenerateMetadataQualityStatementRequestObject) (gen.GenerateMetadataQualityStatementResponseObject, error) {
	return nil, notImplemented("generateMetadataQualityStatement")
}

// GenerateMetadataSummary: Generate Metadata Summary (POST /ai/metadata/summary/).
func (s *Server) GenerateMetadataSummary(ctx context.Context, request gen.GenerateMetadataSummaryRequestObject) (gen.GenerateMetadataSummaryResponseObject, error) {
	return nil, notImplemented("generateMetadataSummary")
}

// CreateLayer: Create Layer (POST /layers/).
func (s *Server) CreateLayer(ctx context.Context, request gen.CreateLayerRequestObject) (gen.CreateLayerResponseObject, error) {
	return nil, notImplemented("createLayer")
}

// AddColumn: Add Column (POST /layers/{dataset_id}/columns/).
func (s *Server) AddColumn(ctx context.Context, request gen.AddColumnRequestObject) (gen.AddColumnResponseObject, error) {
	return nil, notImplemented("addColumn")
}

// DropColumn: Drop Column (DELETE /layers/{dataset_id}/columns/{column_name}).
func (s *Server) DropColumn(ctx context.Context, request gen.DropColumnRequestObject) (gen.DropColumnResponseObject, error) {
	return nil, notImplemented("dropColumn")
}

// RenameColumn: Rename Column (PATCH /layers/{dataset_id}/columns/{column_name}/name).
func (s *Server) RenameColumn(ctx context.Context, request gen.RenameColumnRequestObject) (gen.RenameColumnResponseObject, error) {
	return nil, notImplemented("renameColumn")
}

// ColumnReferences: Column References (GET /layers/{dataset_id}/columns/{column_name}/references).
func (s *Server) ColumnReferences(ctx context.Context, request gen.ColumnReferencesRequestObject) (gen.ColumnReferencesResponseObject, error) {
	return nil, notImplemented("columnReferences")
}

// AlterColumnType: Alter Column Type (PATCH /layers/{dataset_id}/columns/{column_name}/type).
func (s *Server) AlterColumnType(ctx context.Context, request gen.AlterColumnTypeRequestObject) (gen.AlterColumnTypeResponseObject, error) {
	return nil, notImplemented("alterColumnType")
}

// ListMaps: List Maps (GET /maps/).
func (s *Server) ListMaps(ctx context.Context, request gen.ListMapsRequestObject) (gen.ListMapsResponseObject, error) {
	return nil, notImplemented("listMaps")
}

// CreateMap: Create Map (POST /maps/).
func (s *Server) CreateMap(ctx context.Context, request gen.CreateMapRequestObject) (gen.CreateMapResponseObject, error) {
	return nil, notImplemented("createMap")
}

// ListMapIcons: List Map Icons (GET /maps/icons).
func (s *Server) ListMapIcons(ctx context.Context, request gen.ListMapIconsRequestObject) (gen.ListMapIconsResponseObject, error) {
	return nil, notImplemented("listMapIcons")
}

// UploadMapIcon: Upload Map Icon (POST /maps/icons).
func (s *Server) UploadMapIcon(ctx context.Context, request gen.UploadMapIconRequestObject) (gen.UploadMapIconResponseObject, error) {
	return nil, notImplemented("uploadMapIcon")
}

// GetMapIconAsset: Get Map Icon Asset (GET /maps/icons/{icon_id}/asset).
func (s *Server) GetMapIconAsset(ctx context.Context, request gen.GetMapIconAssetRequestObject) (gen.GetMapIconAssetResponseObject, error) {
	return nil, notImplemented("getMapIconAsset")
}

// ImportMapStyle: Import Map Style (POST /maps/import).
func (s *Server) ImportMapStyle(ctx context.Context, request gen.ImportMapStyleRequestObject) (gen.ImportMapStyleResponseObject, error) {
	return nil, notImplemented("importMapStyle")
}

// GetSharedMap: Get Shared Map (GET /maps/shared/{token}).
func (s *Server) GetSharedMap(ctx context.Context, request gen.GetSharedMapRequestObject) (gen.GetSharedMapResponseObject, error) {
	return nil, notImplemented("getSharedMap")
}

// SpriteIndex: Sprite index (GET /maps/sprites/service.json).
func (s *Server) SpriteIndex(ctx context.Context, request gen.SpriteIndexRequestObject) (gen.SpriteIndexResponseObject, error) {
	return nil, notImplemented("spriteIndex")
}

// SpriteImage: Sprite image (GET /maps/sprites/service.png).
func (s *Server) SpriteImage(ctx context.Context, request gen.SpriteImageRequestObject) (gen.SpriteImageResponseObject, error) {
	return nil, notImplemented("spriteImage")
}

// DeleteMap: Delete Map (DELETE /maps/{map_id}).
func (s *Server) DeleteMap(ctx context.Context, request gen.DeleteMapRequestObject) (gen.DeleteMapResponseObject, error) {
	return nil, notImplemented("deleteMap")
}

// GetMap: Get Map (GET /maps/{map_id}).
func (s *Server) GetMap(ctx context.Context, request gen.GetMapRequestObject) (gen.GetMapResponseObject, error) {
	return nil, notImplemented("getMap")
}

// UpdateMap: Update Map (PUT /maps/{map_id}).
func (s *Server) UpdateMap(ctx context.Context, request gen.UpdateMapRequestObject) (gen.UpdateMapResponseObject, error) {
	return nil, notImplemented("updateMap")
}

// GetMapAccess: Get Map Access (GET /maps/{map_id}/access/).
func (s *Server) GetMapAccess(ctx context.Context, request gen.GetMapAccessRequestObject) (gen.GetMapAccessResponseObject, error) {
	return nil, notImplemented("getMapAccess")
}

// DuplicateMap: Duplicate Map (POST /maps/{map_id}/duplicate/).
func (s *Server) DuplicateMap(ctx context.Context, request gen.DuplicateMapRequestObject) (gen.DuplicateMapResponseObject, error) {
	return nil, notImplemented("duplicateMap")
}

// GetMapHistory: Get Map History (GET /maps/{map_id}/history).
func (s *Server) GetMapHistory(ctx context.Context, request gen.GetMapHistoryRequestObject) (gen.GetMapHistoryResponseObject, error) {
	return nil, notImplemented("getMapHistory")
}

// PatchMapLayers: Patch Map Layers (PATCH /maps/{map_id}/layers).
func (s *Server) PatchMapLayers(ctx context.Context, request gen.PatchMapLayersRequestObject) (gen.PatchMapLayersResponseObject, error) {
	return nil, notImplemented("patchMapLayers")
}

// AddLayer: Add Layer (POST /maps/{map_id}/layers).
func (s *Server) AddLayer(ctx context.Context, request gen.AddLayerRequestObject) (gen.AddLayerResponseObject, error) {
	return nil, notImplemented("addLayer")
}

// BulkDeleteLayers: Bulk Delete Layers (POST /maps/{map_id}/layers/bulk-delete).
func (s *Server) BulkDeleteLayers(ctx context.Context, request gen.BulkDeleteLayersRequestObject) (gen.BulkDeleteLayersResponseObject, error) {
	return nil, notImplemented("bulkDeleteLayers")
}

// RemoveLayer: Remove Layer (DELETE /maps/{map_id}/layers/{layer_id}).
func (s *Server) RemoveLayer(ctx context.Context, request gen.RemoveLayerRequestObject) (gen.RemoveLayerResponseObject, error) {
	return nil, notImplemented("removeLayer")
}

// GetOGImage: Get OG Image (GET /maps/{map_id}/og-image/).
func (s *Server) GetOGImage(ctx context.Context, request gen.GetOGImageRequestObject) (gen.GetOGImageResponseObject, error) {
	return nil, notImplemented("getOGImage")
}

// UploadOGImage: Upload OG Image (PUT /maps/{map_id}/og-image/).
func (s *Server) UploadOGImage(ctx context.Context, request gen.UploadOGImageRequestObject) (gen.UploadOGImageResponseObject, error) {
	return nil, notImplemented("uploadOGImage")
}

// RevokeMapShare: Revoke Map Share (DELETE /maps/{map_id}/share/).
func (s *Server) RevokeMapShare(ctx context.Context, request gen.RevokeMapShareRequestObject) (gen.RevokeMapShareResponseObject, error) {
	return nil, notImplemented("revokeMapShare")
}

// GetMapShareToken: Get Map Share Token (GET /maps/{map_id}/share/).
func (s *Server) GetMapShareToken(ctx context.Context, request gen.GetMapShareTokenRequestObject) (gen.GetMapShareTokenResponseObject, error) {
	return nil, notImplemented("getMapShareToken")
}

// UpdateMapShareToken: Update Map Share Token (PATCH /maps/{map_id}/share/).
func (s *Server) UpdateMapShareToken(ctx context.Context, request gen.UpdateMapShareTokenRequestObject) (gen.UpdateMapShareTokenResponseObject, error) {
	return nil, notImplemented("updateMapShareToken")
}

// ShareMap: Share Map (POST /maps/{map_id}/share/).
func (s *Server) ShareMap(ctx context.Context, request gen.ShareMapRequestObject) (gen.ShareMapResponseObject, error) {
	return nil, notImplemented("shareMap")
}

// ExportMapStyle: Export Map Style (GET /maps/{map_id}/style.json).
func (s *Server) ExportMapStyle(ctx context.Context, request gen.ExportMapStyleRequestObject) (gen.ExportMapStyleResponseObject, error) {
	return nil, notImplemented("exportMapStyle")
}

// GetThumbnail: Get Thumbnail (GET /maps/{map_id}/thumbnail/).
func (s *Server) GetThumbnail(ctx context.Context, request gen.GetThumbnailRequestObject) (gen.GetThumbnailResponseObject, error) {
	return nil, notImplemented("getThumbnail")
}

// UploadThumbnail: Upload Thumbnail (PUT /maps/{map_id}/thumbnail/).
func (s *Server) UploadThumbnail(ctx context.Context, request gen.UploadThumbnailRequestObject) (gen.UploadThumbnailResponseObject, error) {
	return nil, notImplemented("uploadThumbnail")
}

// VisibilityCheck: Visibility Check (GET /maps/{map_id}/visibility-check/).
func (s *Server) VisibilityCheck(ctx context.Context, request gen.VisibilityCheckRequestObject) (gen.VisibilityCheckResponseObject, error) {
	return nil, notImplemented("visibilityCheck")
}
