package handlers

// Operations of the Datasets - Analysis tag.

import (
	"context"
	"encoding/json"

	"meridian/gen"
	"meridian/internal/analysis"
	"meridian/internal/auth"
)

// AnalysisMaterialize: Analysis Materialize (POST /datasets/{dataset_id}/analysis/materialize/).
// The analysis runs as a job; its dataset appears when the job completes.
func (s *Server) AnalysisMaterialize(ctx context.Context, request gen.AnalysisMaterializeRequestObject) (gen.AnalysisMaterializeResponseObject, error) {
	b := request.Body
	job, status, err := s.analysis.Materialize(ctx, auth.From(ctx), request.DatasetId, analysis.Request{
		Operation: string(b.Operation), DistanceMeters: b.DistanceMeters, Mask: val(b.Mask), MaskDatasetID: b.MaskDatasetId,
		JoinDatasetID: b.JoinDatasetId, JoinFields: val(b.JoinFields), ByField: val(b.ByField), Title: b.Title})
	if err != nil {
		return nil, err
	}
	return gen.AnalysisMaterialize200JSONResponse{JobId: job, Status: status}, nil
}

// AnalysisPreview: Analysis Preview (POST /datasets/{dataset_id}/analysis/preview/).
func (s *Server) AnalysisPreview(ctx context.Context, request gen.AnalysisPreviewRequestObject) (gen.AnalysisPreviewResponseObject, error) {
	b := request.Body
	r, err := s.analysis.Preview(ctx, auth.From(ctx), request.DatasetId, analysis.Request{
		Operation: string(b.Operation), DistanceMeters: b.DistanceMeters, Mask: val(b.Mask), MaskDatasetID: b.MaskDatasetId,
		JoinDatasetID: b.JoinDatasetId, JoinFields: val(b.JoinFields), BBox: val(b.Bbox)})
	if err != nil {
		return nil, err
	}
	source, matched := int(r.SourceCount), int64p(r.Matched)
	out := gen.AnalysisPreview200JSONResponse{FeatureCount: int(r.Total), Truncated: r.Total > int64(r.Returned),
		Geojson: map[string]any{"type": "FeatureCollection", "features": json.RawMessage(r.Features)}, SourceFeatureCount: &source, MatchCount: matched}
	if r.BBox != nil {
		out.Bbox = &r.BBox
	}
	return out, nil
}
