package handlers

// Operations of the Datasets - Metadata tag.

import (
	"cmp"
	"context"
	"encoding/json"
	"strconv"
	"time"

	"meridian/gen"
	"meridian/internal/auth"
	"meridian/internal/catalog"
	"meridian/internal/features"
)

// DeleteDatasetRelationship: Delete Dataset Relationship (DELETE /datasets/relationships/{relationship_id}/).
func (s *Server) DeleteDatasetRelationship(ctx context.Context, request gen.DeleteDatasetRelationshipRequestObject) (gen.DeleteDatasetRelationshipResponseObject, error) {
	if err := s.catalog.DeleteRelationship(ctx, auth.From(ctx), request.RelationshipId); err != nil {
		return nil, err
	}
	return gen.DeleteDatasetRelationship204Response{}, nil
}

// ListAttributes: List Attributes (GET /datasets/{dataset_id}/attributes/). Not paged.
func (s *Server) ListAttributes(ctx context.Context, request gen.ListAttributesRequestObject) (gen.ListAttributesResponseObject, error) {
	list, err := s.catalog.Attributes(ctx, auth.From(ctx), request.DatasetId, val(request.Params.IncludeRemoved))
	if err != nil {
		return nil, err
	}
	out := gen.ListAttributes200JSONResponse{Attributes: make([]gen.AttributeMetadataResponse, len(list)), Total: len(list)}
	for i, a := range list {
		out.Attributes[i] = attributeOut(a)
	}
	return out, nil
}

// GetAttribute: Get Attribute (GET /datasets/{dataset_id}/attributes/{attribute_id}/).
func (s *Server) GetAttribute(ctx context.Context, request gen.GetAttributeRequestObject) (gen.GetAttributeResponseObject, error) {
	a, err := s.catalog.GetAttribute(ctx, auth.From(ctx), request.DatasetId, request.AttributeId)
	if err != nil {
		return nil, err
	}
	return gen.GetAttribute200JSONResponse(attributeOut(a)), nil
}

// UpdateAttribute: Update Attribute (PATCH /datasets/{dataset_id}/attributes/{attribute_id}/).
// Members present change (null clears), absent ones stay.
func (s *Server) UpdateAttribute(ctx context.Context, request gen.UpdateAttributeRequestObject) (gen.UpdateAttributeResponseObject, error) {
	b := request.Body
	members, _ := patchMembersOf(ctx)
	a, err := s.catalog.UpdateAttribute(ctx, auth.From(ctx), request.DatasetId, request.AttributeId, catalog.AttributePatch{
		Title: b.Title, Description: b.Description, Units: b.Units, SemanticRole: (*string)(b.SemanticRole),
		DomainType: (*string)(b.DomainType), Present: members.names()})
	if err != nil {
		return nil, err
	}
	return gen.UpdateAttribute200JSONResponse(attributeOut(a)), nil
}

// ResetAttribute: Reset Attribute (POST /datasets/{dataset_id}/attributes/{attribute_id}/reset/).
func (s *Server) ResetAttribute(ctx context.Context, request gen.ResetAttributeRequestObject) (gen.ResetAttributeResponseObject, error) {
	a, err := s.catalog.ResetAttribute(ctx, auth.From(ctx), request.DatasetId, request.AttributeId)
	if err != nil {
		return nil, err
	}
	return gen.ResetAttribute200JSONResponse(attributeOut(a)), nil
}

func attributeOut(a catalog.Attribute) gen.AttributeMetadataResponse {
	out := gen.AttributeMetadataResponse{Id: a.ID, DatasetId: a.DatasetID, FieldName: a.FieldName, Title: a.Title,
		Description: a.Description, Units: a.Units, DataType: a.DataType, DomainType: a.DomainType, SemanticRole: a.SemanticRole,
		OrdinalPosition: a.OrdinalPosition, IsCurrent: a.Current, UserModifiedFields: a.UserModified}
	if a.UserModified == nil {
		out.UserModifiedFields = []string{}
	}
	if a.ExampleValues != nil {
		out.ExampleValues = &a.ExampleValues
	}
	return out
}

// GetFeatureRelatedRecords: Get Feature Related Records (GET /datasets/{dataset_id}/features/{gid}/related/{relationship_id}/).
// The other dataset's rows that hold the feature's value, 50/500, keyset `after` as Get Dataset Rows.
func (s *Server) GetFeatureRelatedRecords(ctx context.Context, request gen.GetFeatureRelatedRecordsRequestObject) (gen.GetFeatureRelatedRecordsResponseObject, error) {
	prm := request.Params
	skip, limit := page(prm.Skip, prm.Limit, 50, 500)
	var after *int64
	if prm.After != nil {
		a := int64(*prm.After)
		after, skip = &a, 0
	}
	pg, err := s.catalog.RelatedRows(ctx, auth.From(ctx), request.DatasetId, strconv.FormatInt(request.Gid, 10), request.RelationshipId,
		features.RowsQuery{Skip: skip, Limit: limit, After: after})
	if err != nil {
		return nil, err
	}
	return gen.GetFeatureRelatedRecords200JSONResponse(rowsOut(pg, skip, limit)), nil
}

// ListDatasetRelationships: List Dataset Relationships (GET /datasets/{dataset_id}/relationships/). 100/1000.
func (s *Server) ListDatasetRelationships(ctx context.Context, request gen.ListDatasetRelationshipsRequestObject) (gen.ListDatasetRelationshipsResponseObject, error) {
	prm := request.Params
	skip, limit := page(prm.Skip, prm.Limit, 100, 1000)
	dir := val(prm.Direction)
	out, in := dir != gen.ListDatasetRelationshipsParamsDirectionIncoming, dir != gen.ListDatasetRelationshipsParamsDirectionOutgoing
	list, total, err := s.catalog.Relationships(ctx, auth.From(ctx), request.DatasetId, out, in, skip, limit)
	if err != nil {
		return nil, err
	}
	resp := gen.ListDatasetRelationships200JSONResponse{Relationships: make([]gen.DatasetRelationshipResponse, len(list)), Total: total,
		Skip: skip, Limit: limit}
	for i, r := range list {
		resp.Relationships[i] = relationshipOut(r)
	}
	return resp, nil
}

// CreateDatasetRelationship: Create Dataset Relationship (POST /datasets/{dataset_id}/relationships/).
func (s *Server) CreateDatasetRelationship(ctx context.Context, request gen.CreateDatasetRelationshipRequestObject) (gen.CreateDatasetRelationshipResponseObject, error) {
	b := request.Body
	r, err := s.catalog.AddRelationship(ctx, auth.From(ctx), request.DatasetId, catalog.Relationship{Target: b.TargetDatasetId,
		SourceColumn: b.SourceColumn, TargetColumn: cmp.Or(val(b.TargetColumn), "gid"), Label: b.Label})
	if err != nil {
		return nil, err
	}
	return gen.CreateDatasetRelationship201JSONResponse(relationshipOut(r)), nil
}

func relationshipOut(r catalog.Relationship) gen.DatasetRelationshipResponse {
	out := gen.DatasetRelationshipResponse{Id: r.ID, SourceDatasetId: r.Source, TargetDatasetId: r.Target, SourceColumn: r.SourceColumn,
		TargetColumn: r.TargetColumn, RelationshipType: r.Type, Label: r.Label}
	if r.TargetTitle != "" {
		out.TargetDatasetTitle = &r.TargetTitle
	}
	return out
}

// GetColumnStats: Get Column Stats (GET /datasets/{dataset_id}/columns/{column_name}/stats/).
func (s *Server) GetColumnStats(ctx context.Context, request gen.GetColumnStatsRequestObject) (gen.GetColumnStatsResponseObject, error) {
	_, t, err := s.datasetTable(ctx, request.DatasetId)
	if err != nil {
		return nil, err
	}
	st, err := s.tables.ColumnStats(ctx, t, request.ColumnName, cmp.Or(val(request.Params.ClassCount), features.DefaultClasses))
	if err != nil {
		return nil, err
	}
	out := gen.GetColumnStats200JSONResponse{Column: st.Column, Type: st.Type, Count: st.Count, NullCount: st.NullCount,
		DistinctCount: &st.DistinctCount, Min: st.Min, Max: st.Max, Mean: st.Mean, Stddev: st.Stddev, P25: st.P25,
		Median: st.Median, P75: st.P75, ComputedAt: time.Now().UTC(), DataType: &st.DataType, Quantiles: st.Quantiles}
	if st.Histogram != nil {
		bins := make([]gen.DatasetHistogramBin, len(st.Histogram))
		for i, b := range st.Histogram {
			bins[i] = gen.DatasetHistogramBin{Lower: b.Lower, Upper: b.Upper, Count: b.Count}
		}
		out.Histogram = &bins
	}
	if st.TopValues != nil {
		top := valueCounts(st.TopValues)
		out.TopValues = &top
	}
	return out, nil
}

// GetColumnValues: Get Column Values (GET /datasets/{dataset_id}/columns/{column_name}/values/).
// Distinct values with counts, most frequent first (sort=value orders by value), 100/500.
func (s *Server) GetColumnValues(ctx context.Context, request gen.GetColumnValuesRequestObject) (gen.GetColumnValuesResponseObject, error) {
	_, t, err := s.datasetTable(ctx, request.DatasetId)
	if err != nil {
		return nil, err
	}
	prm := request.Params
	skip, limit := page(prm.Skip, prm.Limit, 100, 500)
	byValue := prm.Sort != nil && *prm.Sort == gen.GetColumnValuesParamsSortValue
	vals, total, err := s.tables.Values(ctx, t, request.ColumnName, val(prm.Q), byValue, skip, limit)
	if err != nil {
		return nil, err
	}
	values := make([]*any, len(vals))
	for i := range vals {
		values[i] = &vals[i].Value
	}
	return gen.GetColumnValues200JSONResponse{Column: request.ColumnName, Values: values, ValueCounts: valueCounts(vals),
		Total: int(total), Count: int(total), Skip: skip, Limit: limit}, nil
}

func valueCounts(vs []features.ValueCount) []gen.DatasetValueCount {
	out := make([]gen.DatasetValueCount, len(vs))
	for i, v := range vs {
		out[i] = gen.DatasetValueCount{Value: v.Value, Count: v.Count}
	}
	return out
}

// versionReasons maps the history actions that make data versions to DatasetVersion reasons; a
// creation is created, or ingest for an uploaded file.
var versionReasons = map[string]gen.DatasetVersionReason{
	catalog.ActionDatasetReupload: gen.DatasetVersionReasonReupload, catalog.ActionDatasetRefresh: gen.DatasetVersionReasonRefresh,
	catalog.ActionDatasetAnalysis: gen.DatasetVersionReasonAnalysis, catalog.ActionDatasetRegeneration: gen.DatasetVersionReasonRegenerate,
	catalog.ActionColumnAdd: gen.DatasetVersionReasonSchemaChange, catalog.ActionColumnRename: gen.DatasetVersionReasonSchemaChange,
	catalog.ActionColumnAlterType: gen.DatasetVersionReasonSchemaChange, catalog.ActionColumnDrop: gen.DatasetVersionReasonSchemaChange,
	catalog.ActionFeatureInsert: gen.DatasetVersionReasonFeatureEdit, catalog.ActionFeatureUpdate: gen.DatasetVersionReasonFeatureEdit,
	catalog.ActionFeatureReplace: gen.DatasetVersionReasonFeatureEdit, catalog.ActionFeatureDelete: gen.DatasetVersionReasonFeatureEdit}

// GetDatasetVersions: Get Dataset Versions (GET /datasets/{dataset_id}/versions/). The content
// versions (creation, reuploads, refreshes ...), newest first, 50/200.
func (s *Server) GetDatasetVersions(ctx context.Context, request gen.GetDatasetVersionsRequestObject) (gen.GetDatasetVersionsResponseObject, error) {
	skip, limit := page(request.Params.Skip, request.Params.Limit, 50, 200)
	rows, total, err := s.catalog.History(ctx, auth.From(ctx), request.DatasetId, true, skip, limit)
	if err != nil {
		return nil, err
	}
	out := gen.GetDatasetVersions200JSONResponse{Versions: make([]gen.DatasetVersion, len(rows)), Total: total, Skip: skip, Limit: limit}
	for i, r := range rows {
		var ch struct {
			Origin         struct{ New *string } `json:"origin"`
			FeatureCount   struct{ New *int64 }  `json:"feature_count"`
			SourceFilename struct{ New *string } `json:"source_filename"`
			SourceFormat   struct{ New *string } `json:"source_format"`
			SRID           struct{ New *int }    `json:"srid"`
			GeometryType   struct{ New *string } `json:"geometry_type"`
		}
		_ = json.Unmarshal(r.Changes, &ch)
		reason, ok := versionReasons[r.Action]
		if !ok {
			reason = gen.DatasetVersionReasonCreated
			if o := ch.Origin.New; o != nil && *o == "upload" {
				reason = gen.DatasetVersionReasonIngest
			}
		}
		out.Versions[i] = gen.DatasetVersion{Id: r.ID, DatasetId: r.DatasetID, Version: r.Version, VersionNumber: r.Version,
			Reason: reason, CreatedAt: r.OccurredAt, UploadedAt: r.OccurredAt, CreatedBy: r.ActorID, UploadedBy: r.ActorID,
			CreatedByDisplay: nonEmpty(r.ActorDisplay), FeatureCount: ch.FeatureCount.New, SourceFilename: ch.SourceFilename.New,
			SourceFormat: ch.SourceFormat.New, Srid: ch.SRID.New, GeometryType: ch.GeometryType.New, IsCurrent: i == 0 && skip == 0}
	}
	return out, nil
}
