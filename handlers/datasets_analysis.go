package handlers

// Operations of the Datasets - Analysis tag.

import (
	"context"

	"meridian/gen"
)

// AnalysisMaterialize: Analysis Materialize (POST /datasets/{dataset_id}/analysis/materialize/).
func (s *Server) AnalysisMaterialize(ctx context.Context, request gen.AnalysisMaterializeRequestObject) (gen.AnalysisMaterializeResponseObject, error) {
	return nil, notImplemented("analysisMaterialize")
}

// AnalysisPreview: Analysis Preview (POST /datasets/{dataset_id}/analysis/preview/).
func (s *Server) AnalysisPreview(ctx context.Context, request gen.AnalysisPreviewRequestObject) (gen.AnalysisPreviewResponseObject, error) {
	return nil, notImplemented("analysisPreview")
}
