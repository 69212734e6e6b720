package handlers

// Operations of the Datasets - Data tag.

import (
	"context"
	"strconv"

	"github.com/google/uuid"

	"meridian/gen"
	"meridian/internal/auth"
	"meridian/internal/catalog"
	"meridian/internal/features"
)

// DatasetMaps: Dataset Maps (GET /datasets/{dataset_id}/maps/).
func (s *Server) DatasetMaps(ctx context.Context, request gen.DatasetMapsRequestObject) (gen.DatasetMapsResponseObject, error) {
	skip, limit := page(request.Params.Skip, request.Params.Limit, 50, 200)
	list, total, err := s.maps.DatasetMaps(ctx, auth.From(ctx), request.DatasetId, skip, limit)
	if err != nil {
		return nil, err
	}
	return gen.DatasetMaps200JSONResponse(mapListOut(list, total)), nil
}

// ListRelatedDatasets: List Related Datasets (GET /datasets/{dataset_id}/related/). At most 200,
// nearest first: declared relationships (similarity 1), then shared catalog collections (0.5).
func (s *Server) ListRelatedDatasets(ctx context.Context, request gen.ListRelatedDatasetsRequestObject) (gen.ListRelatedDatasetsResponseObject, error) {
	list, err := s.catalog.RelatedDatasets(ctx, auth.From(ctx), request.DatasetId)
	if err != nil {
		return nil, err
	}
	out := gen.ListRelatedDatasets200JSONResponse{Items: make([]gen.RelatedDatasetItem, len(list)), Total: len(list)}
	for i, r := range list {
		rt := r.RecordType
		out.Items[i] = gen.RelatedDatasetItem{Id: r.ID.String(), Name: r.Title, GeometryType: r.GeometryType, RecordType: &rt,
			FeatureCount: int64p(r.FeatureCount), Similarity: float32(r.Similarity)}
	}
	return out, nil
}

// UpdatePublicationStatus: Update Publication Status (PATCH /datasets/{dataset_id}/status/). One
// step of the workflow draft, ready, internal, published; other moves answer 409.
func (s *Server) UpdatePublicationStatus(ctx context.Context, request gen.UpdatePublicationStatusRequestObject) (gen.UpdatePublicationStatusResponseObject, error) {
	status, warnings, err := s.catalog.SetStatus(ctx, auth.From(ctx), request.DatasetId, request.Body.Status)
	if err != nil {
		return nil, err
	}
	out := gen.UpdatePublicationStatus200JSONResponse{Id: request.DatasetId.String(), RecordStatus: status}
	if len(warnings) > 0 {
		out.MetadataWarnings = &warnings
	}
	return out, nil
}

// SetTargetStatus: Set Target Status (PATCH /datasets/{dataset_id}/target-status/). Walks the
// workflow to the target, every step checked and recorded, all or nothing.
func (s *Server) SetTargetStatus(ctx context.Context, request gen.SetTargetStatusRequestObject) (gen.SetTargetStatusResponseObject, error) {
	status, warnings, err := s.catalog.WalkToStatus(ctx, auth.From(ctx), request.DatasetId, request.Body.Status)
	if err != nil {
		return nil, err
	}
	out := gen.SetTargetStatus200JSONResponse{Id: request.DatasetId.String(), RecordStatus: status}
	if len(warnings) > 0 {
		out.MetadataWarnings = &warnings
	}
	return out, nil
}

// datasetTable is the table of a dataset the caller may read.
func (s *Server) datasetTable(ctx context.Context, id uuid.UUID) (catalog.Dataset, features.Table, error) {
	d, err := s.catalog.Get(ctx, auth.From(ctx), id, false)
	if err != nil {
		return d, features.Table{}, err
	}
	t, err := features.TableOf(d.Entry.TableSchema, d.Entry.TableName, d.Entry.IDColumn, d.Entry.GeometryColumn, d.TableColumns)
	return d, t, err
}

// GetDatasetRows: Get Dataset Rows (GET /datasets/{dataset_id}/rows/). Attribute rows, 50/500.
func (s *Server) GetDatasetRows(ctx context.Context, request gen.GetDatasetRowsRequestObject) (gen.GetDatasetRowsResponseObject, error) {
	d, t, err := s.datasetTable(ctx, request.DatasetId)
	if err != nil {
		return nil, err
	}
	prm := request.Params
	skip, limit := page(prm.Skip, prm.Limit, 50, 500)
	pg, err := s.tables.Rows(ctx, t, features.RowsQuery{Sort: val(prm.Sort), Q: val(prm.Q), Columns: val(prm.Columns),
		Contains: val(prm.Filter), Skip: skip, Limit: limit, After: prm.After, KnownCount: d.Entry.FeatureCount})
	if err != nil {
		return nil, err
	}
	if prm.After != nil {
		skip = 0
	}
	return gen.GetDatasetRows200JSONResponse(rowsOut(pg, skip, limit)), nil
}

// rowsOut is a page of rows as the contract's rows response (the key column first).
func rowsOut(pg features.RowsPage, skip, limit int) gen.DatasetRowsResponse {
	out := gen.DatasetRowsResponse{Rows: pg.Rows, Total: int(pg.Total), ApproximateTotal: pg.Total, NextCursor: pg.Next,
		Skip: skip, Limit: limit, Columns: []gen.DatasetColumnType{{Name: pg.Key, Type: "key"}}}
	for _, c := range pg.Columns {
		out.Columns = append(out.Columns, gen.DatasetColumnType{Name: c.Name, Type: c.Type})
	}
	return out
}

// ValidateDataset: Validate Dataset (GET /datasets/{dataset_id}/validate/). Invalid, empty, null
// and out-of-range geometries (first 100 listed with ST_IsValidReason), CRS presence, and the
// quality scores, which are also stored on the record.
func (s *Server) ValidateDataset(ctx context.Context, request gen.ValidateDatasetRequestObject) (gen.ValidateDatasetResponseObject, error) {
	v, q, err := s.catalog.Validate(ctx, auth.From(ctx), request.DatasetId)
	if err != nil {
		return nil, err
	}
	qd := gen.QualityDetail{Overall: q.Overall, MetadataCompleteness: q.MetadataCompleteness, AttributeCompleteness: q.AttributeCompleteness,
		GeometryValidity: q.GeometryValidity, CrsDefined: q.CRSDefined, ComputedAt: &q.ComputedAt}
	out := gen.ValidateDataset200JSONResponse{DatasetId: request.DatasetId, CheckedAt: q.ComputedAt, FeatureCount: &v.FeatureCount,
		InvalidGeometryCount: v.Invalid, EmptyGeometryCount: v.Empty, NullGeometryCount: v.Null, OutOfRangeCount: v.OutOfRange,
		CrsDefined: v.CRSDefined, IssuesTruncated: v.Truncated, QualityDetail: qd, Issues: make([]gen.DatasetValidationIssue, len(v.Issues))}
	out.Errors, out.Warnings = []gen.DatasetValidationMessage{}, []gen.DatasetValidationMessage{}
	for i, is := range v.Issues {
		out.Issues[i] = gen.DatasetValidationIssue{Gid: is.Gid, Kind: gen.DatasetValidationIssueKind(is.Kind), Message: is.Message}
		msg := gen.DatasetValidationMessage{Field: issueField(is.Kind, is.Gid), Message: is.Message, Severity: gen.DatasetValidationMessageSeverityError}
		if is.Kind == "missing_overviews" {
			msg.Severity = gen.DatasetValidationMessageSeverityWarning
			out.Warnings = append(out.Warnings, msg)
		} else {
			out.Errors = append(out.Errors, msg)
		}
	}
	out.Valid = v.Invalid == 0 && v.Empty == 0 && v.Null == 0 && v.OutOfRange == 0 && v.CRSDefined
	out.IsValid = out.Valid
	score, err := merged[map[string]any](qd)
	out.QualityScore = &score
	return out, err
}

// issueField names what a validation issue is about, in the errors/warnings lists clients read.
func issueField(kind string, gid *int64) string {
	switch {
	case kind == "crs_undefined":
		return "crs"
	case gid != nil:
		return "geometry:" + strconv.FormatInt(*gid, 10)
	case kind == "unreadable_raster" || kind == "missing_overviews":
		return "raster"
	}
	return "geometry"
}
