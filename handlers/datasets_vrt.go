package handlers

// Operations of the Datasets - VRT tag.

import (
	"context"
	"time"

	"meridian/gen"
	"meridian/internal/auth"
	"meridian/internal/ingest"
)

// ListVRTSources: List VRT Sources (GET /datasets/{dataset_id}/vrt-sources/).
func (s *Server) ListVRTSources(ctx context.Context, request gen.ListVRTSourcesRequestObject) (gen.ListVRTSourcesResponseObject, error) {
	srcs, err := s.jobs.VRTSources(ctx, auth.From(ctx), request.DatasetId)
	if err != nil {
		return nil, err
	}
	out := gen.ListVRTSources200JSONResponse{Sources: make([]gen.VrtSourceItem, len(srcs))}
	for i, v := range srcs {
		out.Sources[i] = vrtSourceOut(v)
	}
	return out, nil
}

// vrtSourceOut is one source; one the caller may not read shows its id, position and state only.
func vrtSourceOut(v ingest.VRTSource) gen.VrtSourceItem {
	it := gen.VrtSourceItem{DatasetId: v.ID, Position: v.Position, Title: v.Title, AddedAt: &v.Added, Served: &v.Served,
		Status: ptr(gen.VrtSourceItemStatus(v.Status))}
	if r := v.Raster; r != nil {
		it.RecordType = &v.Type
		if len(r.Bands) > 0 {
			it.BandCount, it.Dtype = ptr(len(r.Bands)), &r.Bands[0].DType
			it.ResolutionX, it.ResolutionY = ptr(float32(r.ResX)), ptr(float32(r.ResY))
		}
		if r.EPSG > 0 {
			it.CrsEpsg = &r.EPSG
		}
	}
	if len(v.Extent) == 4 {
		box := make([]float32, 4)
		for i, c := range v.Extent {
			box[i] = float32(c)
		}
		it.ExtentBbox = &box
	}
	return it
}

// ListVRTGenerations: List VRT Generations (GET /datasets/{dataset_id}/vrt/generations/).
func (s *Server) ListVRTGenerations(ctx context.Context, request gen.ListVRTGenerationsRequestObject) (gen.ListVRTGenerationsResponseObject, error) {
	skip := request.Params.Skip
	if skip == nil {
		skip = request.Params.Offset
	}
	skipN, limit := page(skip, request.Params.Limit, 20, 100)
	gens, total, err := s.jobs.VRTGenerations(ctx, auth.From(ctx), request.DatasetId, skipN, limit)
	if err != nil {
		return nil, err
	}
	out := gen.ListVRTGenerations200JSONResponse{Generations: make([]gen.VrtGenerationItem, len(gens)), Total: total}
	for i, g := range gens {
		it := gen.VrtGenerationItem{Id: g.ID, Status: ingest.VRTJobWord(g.Job.Status), StartedAt: g.Job.StartedAt,
			CompletedAt: g.Job.CompletedAt, ErrorMessage: g.Job.ErrorMessage, CurrentStep: g.Job.CurrentStep,
			TriggeredBy: &g.Trigger, Generation: ptr(int(g.Generation)), CreatedAt: &g.CreatedAt, RequestedBy: g.RequestedBy,
			SourceDatasetIds: &g.Sources, SkippedDatasetIds: &g.Skipped, SizeBytes: g.SizeBytes, Served: &g.Served}
		if g.Job.Status != "pending" {
			it.SourceCount = ptr(len(g.Sources))
		}
		if g.Job.Progress != nil {
			it.Progress = ptr(float32(*g.Job.Progress))
		}
		if g.Job.StartedAt != nil && g.Job.CompletedAt != nil {
			it.DurationSeconds = ptr(float32(g.Job.CompletedAt.Sub(*g.Job.StartedAt).Seconds()))
		}
		out.Generations[i] = it
	}
	return out, nil
}

// RegenerateVRT: Regenerate VRT (POST /datasets/{dataset_id}/vrt/regenerate/).
func (s *Server) RegenerateVRT(ctx context.Context, request gen.RegenerateVRTRequestObject) (gen.RegenerateVRTResponseObject, error) {
	out, err := s.jobs.RegenerateVRT(ctx, auth.From(ctx), request.DatasetId)
	if err != nil {
		return nil, err
	}
	return gen.RegenerateVRT202JSONResponse{JobId: out.JobID, Status: ptr("accepted"), Message: out.Message}, nil
}

// GetVRTStatus: Get VRT Status (GET /datasets/{dataset_id}/vrt/status/).
func (s *Server) GetVRTStatus(ctx context.Context, request gen.GetVRTStatusRequestObject) (gen.GetVRTStatusResponseObject, error) {
	st, err := s.jobs.VRTStatus(ctx, auth.From(ctx), request.DatasetId)
	if err != nil {
		return nil, err
	}
	out := gen.GetVRTStatus200JSONResponse{Status: gen.VrtStatusResponseStatus(st.Status), LastGenerationAt: st.LastGenerationAt,
		SourceCount: st.SourceCount, SourceHealth: make([]gen.VrtSourceHealth, len(st.Sources)), Serving: &st.Serving,
		Queued: &st.Queued, JobId: st.JobID, ErrorMessage: st.Error}
	if st.State != "" {
		out.State = ptr(gen.VrtStatusResponseState(st.State))
	}
	if a := st.Active; a != nil {
		out.ActiveGeneration = &gen.VrtActiveGeneration{GenerationId: a.ID, StartedAt: a.Started, CurrentStep: a.Step,
			ElapsedSeconds: float32(time.Since(a.Started).Seconds())}
		if a.Progress != nil {
			out.ActiveGeneration.Progress = ptr(float32(*a.Progress))
		}
	}
	for i, h := range st.Sources {
		out.SourceHealth[i] = gen.VrtSourceHealth{DatasetId: h.ID, Title: h.Title, Status: gen.VrtSourceHealthStatus(h.Status)}
	}
	return out, nil
}
