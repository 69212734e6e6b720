package handlers

// Operations of the Tiles tag.

import (
	"context"

	"meridian/gen"
)

// ClusterTile: Cluster Tile (GET /tiles/clusters/{table_path}/{z}/{x}/{y}.pbf).
func (s *Server) ClusterTile(ctx context.Context, request gen.ClusterTileRequestObject) (gen.ClusterTileResponseObject, error) {
	return nil, notImplemented("clusterTile")
}

// RasterTileProxy: Raster Tile Proxy (GET /tiles/raster-proxy/{dataset_id}/{z}/{x}/{y}.{fmt}).
func (s *Server) RasterTileProxy(ctx context.Context, request gen.RasterTileProxyRequestObject) (gen.RasterTileProxyResponseObject, error) {
	return nil, notImplemented("rasterTileProxy")
}

// GetTileToken: Get Tile Token (GET /tiles/token/{dataset_id}/).
func (s *Server) GetTileToken(ctx context.Context, request gen.GetTileTokenRequestObject) (gen.GetTileTokenResponseObject, error) {
	return nil, notImplemented("getTileToken")
}

// GetTileTokensBatch: Get Tile Tokens Batch (POST /tiles/tokens/).
func (s *Server) GetTileTokensBatch(ctx context.Context, request gen.GetTileTokensBatchRequestObject) (gen.GetTileTokensBatchResponseObject, error) {
	return nil, notImplemented("getTileTokensBatch")
}

// Tile: Tile (GET /tiles/{table_path}/{z}/{x}/{y}.pbf).
func (s *Server) Tile(ctx context.Context, request gen.TileRequestObject) (gen.TileResponseObject, error) {
	return nil, notImplemented("tile")
}
