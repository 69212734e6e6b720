package handlers

// Operations of the Datasets - Reupload tag.

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"mime/multipart"

	"meridian/gen"
	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/internal/ingest"
	"meridian/internal/sources"
)

// filePart finds the multipart body's part "file" and the file name it was sent with. The raw
// name, not part.FileName(): that strips directories silently, and a name that tries to climb
// out of the staging directory deserves a clear refusal.
func filePart(body *multipart.Reader) (*multipart.Part, string, error) {
	for {
		part, err := body.NextPart()
		if errors.Is(err, io.EOF) {
			return nil, "", apperr.Unprocessable("the multipart body has no file part")
		}
		if err != nil {
			return nil, "", apperr.Invalid("malformed multipart body: %v", err)
		}
		if part.FormName() == "file" {
			_, params, _ := mime.ParseMediaType(part.Header.Get("Content-Disposition"))
			return part, params["filename"], nil
		}
		_ = part.Close()
	}
}

// ReuploadDataset: Reupload Dataset (POST /datasets/{dataset_id}/reupload). The file is streamed
// to staging, as Upload File's; the reupload job waits, pending, for Reupload Commit.
func (s *Server) ReuploadDataset(ctx context.Context, request gen.ReuploadDatasetRequestObject) (gen.ReuploadDatasetResponseObject, error) {
	part, filename, err := filePart(request.Body)
	if err != nil {
		return nil, err
	}
	job, err := s.jobs.Reupload(ctx, auth.From(ctx), request.DatasetId, filename, part)
	if err != nil {
		return nil, err
	}
	pending := gen.UploadResponseStatusPending
	return gen.ReuploadDataset201JSONResponse{JobId: job.ID, Status: &pending,
		Message: "file staged; preview it with Reupload Preview, then apply it with Reupload Commit"}, nil
}

// RequestPresignedReupload: Request Presigned Reupload (POST /datasets/{dataset_id}/reupload/presigned).
func (s *Server) RequestPresignedReupload(ctx context.Context, request gen.RequestPresignedReuploadRequestObject) (gen.RequestPresignedReuploadResponseObject, error) {
	b := request.Body
	ps, err := s.jobs.RequestPresignedReupload(ctx, auth.From(ctx), request.DatasetId, b.Filename, int64(b.FileSize))
	if err != nil {
		return nil, err
	}
	out := gen.RequestPresignedReupload201JSONResponse{JobId: ps.Job.ID, Urls: ps.URLs,
		S3Key: "staging/" + ps.Job.ID.String() + "/" + b.Filename}
	if ps.PartSize != nil {
		uploadID := ps.Job.ID.String()
		out.UploadId, out.PartSize = &uploadID, ptr(int(*ps.PartSize))
	}
	return out, nil
}

// CompletePresignedReupload: Complete Presigned Reupload (POST /datasets/{dataset_id}/reupload/presigned/{job_id}/complete).
func (s *Server) CompletePresignedReupload(ctx context.Context, request gen.CompletePresignedReuploadRequestObject) (gen.CompletePresignedReuploadResponseObject, error) {
	var parts []ingest.PartETag
	if b := request.Body; b != nil {
		for _, pt := range val(b.Parts) {
			parts = append(parts, ingest.PartETag{Number: pt.PartNumber, ETag: pt.Etag})
		}
	}
	job, err := s.jobs.CompletePresignedReupload(ctx, auth.From(ctx), request.DatasetId, request.JobId, parts)
	if err != nil {
		return nil, err
	}
	pending := gen.UploadResponseStatusPending
	return gen.CompletePresignedReupload200JSONResponse{JobId: job.ID, Status: &pending,
		Message: "file received; preview it with Reupload Preview, then apply it with Reupload Commit"}, nil
}

// ReuploadServicePreview: Reupload Service Preview (POST /datasets/{dataset_id}/reupload/service/preview).
// The layer is fetched (every page) into a pending reupload job, previewed as Reupload Preview
// previews a file.
func (s *Server) ReuploadServicePreview(ctx context.Context, request gen.ReuploadServicePreviewRequestObject) (gen.ReuploadServicePreviewResponseObject, error) {
	b := request.Body
	var id any
	if b.LayerId != nil {
		raw, _ := b.LayerId.MarshalJSON()
		_ = json.Unmarshal(raw, &id)
	}
	pv, err := s.sources.ReuploadPreview(ctx, auth.From(ctx), request.DatasetId, sources.LayerSource{URL: b.Url, ServiceType: b.ServiceType,
		LayerName: b.LayerName, LayerID: id, ObjectIDField: val(b.ObjectIdField), Token: val(b.Token)}, 5)
	if err != nil {
		return nil, err
	}
	// The same preview under the operation's own schema (its columns and diff name the same fields).
	var out gen.ReuploadServicePreview200JSONResponse
	raw, err := json.Marshal(reuploadPreview(pv))
	if err == nil {
		err = json.Unmarshal(raw, &out)
	}
	return out, err
}

// ReuploadCommit: Reupload Commit (POST /datasets/{dataset_id}/reupload/{job_id}/commit). Queues
// the replacement; 202 with the job.
func (s *Server) ReuploadCommit(ctx context.Context, request gen.ReuploadCommitRequestObject) (gen.ReuploadCommitResponseObject, error) {
	var c ingest.ReuploadChoice
	if b := request.Body; b != nil {
		c = ingest.ReuploadChoice{LayerName: val(b.LayerName), SourceSRID: val(b.SridOverride), AllowSchemaChange: val(b.AllowSchemaChange)}
	}
	job, err := s.jobs.CommitReupload(ctx, auth.From(ctx), request.DatasetId, request.JobId, c)
	if err != nil {
		return nil, err
	}
	return gen.ReuploadCommit202JSONResponse{JobId: job.ID, Status: job.Status,
		Message: "reupload queued; follow it with Get Job Status"}, nil
}

// ReuploadPreview: Reupload Preview (POST /datasets/{dataset_id}/reupload/{job_id}/preview). The
// staged file's layer with 5 sample rows, and its difference from the dataset.
func (s *Server) ReuploadPreview(ctx context.Context, request gen.ReuploadPreviewRequestObject) (gen.ReuploadPreviewResponseObject, error) {
	var layer string
	if b := request.Body; b != nil {
		layer = val(b.LayerName)
	}
	pv, err := s.jobs.PreviewReupload(ctx, auth.From(ctx), request.DatasetId, request.JobId, layer, 5)
	if err != nil {
		return nil, err
	}
	return gen.ReuploadPreview200JSONResponse(reuploadPreview(pv)), nil
}

// reuploadPreview is a staged reupload's preview as the document shows it.
func reuploadPreview(pv ingest.ReuploadPreview) gen.DatasetReuploadPreviewResponse {
	l, d := pv.Layer, pv.Diff
	out := gen.DatasetReuploadPreviewResponse{JobId: pv.Job.ID, SourceFilename: pv.Job.SourceFilename, LayerName: l.Name,
		Columns: columnTypes(l.Columns), SampleRows: pv.Samples, PreviousSourceLayer: pv.PreviousLayer,
		GeometryType: nonEmpty(l.GeometryType), Crs: nonZero(l.SRID), SchemaDiff: schemaDiff(d)}
	if l.FeatureCount >= 0 {
		out.FeatureCount = &l.FeatureCount
	}
	if len(pv.Layers) > 1 {
		all := make([]map[string]any, len(pv.Layers))
		for i, x := range pv.Layers {
			all[i] = map[string]any{"name": x.Name, "geometry_type": nonEmpty(x.GeometryType), "feature_count": x.FeatureCount}
		}
		out.AllLayers = &all
	}
	return out
}

func columnTypes[T ingest.Field | ingest.ColumnType](cols []T) []gen.DatasetColumnType {
	out := make([]gen.DatasetColumnType, len(cols))
	for i, c := range cols {
		f := ingest.Field(c)
		out[i] = gen.DatasetColumnType{Name: f.Name, Type: f.Type}
	}
	return out
}

// schemaDiff is a reupload's difference from its dataset as the document shows it.
func schemaDiff(d ingest.SchemaDiff) gen.DatasetSchemaDiff {
	out := gen.DatasetSchemaDiff{ColumnsAdded: columnTypes(d.Added), ColumnsRemoved: columnTypes(d.Removed),
		TypeChanges: make([]gen.DatasetColumnTypeChange, len(d.Changed)), RowCountOld: d.RowsOld, RowCountNew: d.RowsNew,
		GeometryTypeOld: nonEmpty(d.GeometryOld), GeometryTypeNew: nonEmpty(d.GeometryNew), CrsOld: nonZero(d.CRSOld), CrsNew: nonZero(d.CRSNew)}
	for i, c := range d.Changed {
		out.TypeChanges[i] = gen.DatasetColumnTypeChange{Name: c.Name, OldType: c.Old, NewType: c.New}
	}
	if d.RowsOld != nil && d.RowsNew != nil {
		out.RowCountDelta = *d.RowsNew - *d.RowsOld
	}
	return out
}

func nonZero(n int) *int {
	if n == 0 {
		return nil
	}
	return &n
}
