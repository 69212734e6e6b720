package handlers

import (
	"context"

	"meridian/gen"
	"meridian/internal/auth"
	"meridian/internal/manifest"
)

// ApplyManifest: Apply Manifest (POST /ingest/manifest/apply). Entries are created, updated or
// skipped per key; with dry_run the actions are only answered.
func (s *Server) ApplyManifest(ctx context.Context, request gen.ApplyManifestRequestObject) (gen.ApplyManifestResponseObject, error) {
	b := request.Body
	m := manifest.Manifest{Title: b.Catalog.Title, Description: val(b.Catalog.Description), Organization: val(b.Catalog.Organization),
		DryRun: val(b.DryRun), Entries: make([]manifest.Entry, len(b.Datasets))}
	for i, d := range b.Datasets {
		src := d.Sources[0]
		e := manifest.Entry{Key: d.Key, Source: manifest.Source{Type: string(src.Type), URI: src.Uri, Format: val(src.Format), Layer: val(src.Layer)},
			Meta: manifest.Meta{Title: d.Title, Description: val(d.Description), Intent: d.Publication.Intent}}
		if md := d.Metadata; md != nil {
			e.Source.CRS = val(md.Crs)
			e.Meta.Tags, e.Meta.Organization, e.Meta.License, e.Meta.Attribution = val(md.Tags), val(md.Organization), val(md.License), val(md.Attribution)
			for _, v := range val(md.Bbox) {
				e.Meta.BBox = append(e.Meta.BBox, float64(v))
			}
		}
		m.Entries[i] = e
	}
	out, err := s.manifests.Apply(ctx, auth.From(ctx), m)
	if err != nil {
		return nil, err
	}
	res := gen.ApplyManifest200JSONResponse{Accepted: out.Accepted, DryRun: out.DryRun, Results: make([]gen.ManifestApplyEntryResult, len(out.Results))}
	for i, r := range out.Results {
		res.Results[i] = gen.ManifestApplyEntryResult{DatasetKey: r.Key, Action: gen.ManifestApplyEntryResultAction(r.Action), JobId: r.JobID,
			DatasetId: r.DatasetID, Message: r.Message}
		if len(r.Errors) > 0 {
			res.Results[i].Errors = &r.Errors
		}
	}
	return res, nil
}
