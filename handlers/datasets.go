package handlers

// Operations of the Datasets tag.

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"meridian/gen"
	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/internal/catalog"
	"meridian/internal/cql2"
	"meridian/internal/export"
	"meridian/internal/features"
	"meridian/internal/ingest"
	"meridian/internal/sources"
)

// GetQuicklook: Get Quicklook (GET /datasets/{dataset_id}/quicklook).
// A raster's is drawn from its COG's overviews, named by its version.
func (s *Server) GetQuicklook(ctx context.Context, request gen.GetQuicklookRequestObject) (gen.GetQuicklookResponseObject, error) {
	size := cmp.Or(val(request.Params.Size), 256)
	q, err := s.rasters.Quicklook(ctx, auth.From(ctx), request.DatasetId, size, val(request.Params.IfNoneMatch), time.Now())
	if err != nil {
		return nil, err
	}
	if q.NotModified {
		return gen.GetQuicklook304Response{}, nil
	}
	return gen.GetQuicklook200ImagepngResponse{Body: bytes.NewReader(q.PNG), ContentLength: int64(len(q.PNG)),
		Headers: gen.GetQuicklook200ResponseHeaders{ETag: &q.ETag, CacheControl: &q.CacheControl}}, nil
}

// ListDatasetRefreshRuns: List Dataset Refresh Runs (GET /datasets/{dataset_id}/refresh-runs).
// Readable as the dataset is; who triggered a run is left out for anonymous callers.
func (s *Server) ListDatasetRefreshRuns(ctx context.Context, request gen.ListDatasetRefreshRunsRequestObject) (gen.ListDatasetRefreshRunsResponseObject, error) {
	skip, limit := page(request.Params.Skip, request.Params.Limit, 50, 200)
	runs, total, err := s.catalog.RefreshRuns(ctx, auth.From(ctx), request.DatasetId, skip, limit)
	if err != nil {
		return nil, err
	}
	out := gen.ListDatasetRefreshRuns200JSONResponse{Runs: make([]gen.DatasetRefreshRunResponse, len(runs)), Total: total}
	for i, r := range runs {
		out.Runs[i] = gen.DatasetRefreshRunResponse{Id: r.ID, DatasetId: r.DatasetID, DatasetVersionId: r.VersionID, IngestJobId: r.JobID,
			OriginKind: r.OriginKind, Trigger: r.Trigger, Status: r.Status, TriggeredBy: r.TriggeredBy, TriggeredByUsername: r.TriggeredByUsername,
			StartedAt: r.StartedAt, ClaimedAt: r.ClaimedAt, FinishedAt: r.FinishedAt, FeatureCountBefore: int64p(r.RowsBefore),
			FeatureCountAfter: int64p(r.RowsAfter), ErrorCode: r.ErrorCode, ErrorMessage: r.ErrorMessage}
		if r.SchemaDiff != nil {
			var d gen.SchemaDiff
			if json.Unmarshal(r.SchemaDiff, &d) == nil {
				out.Runs[i].SchemaDiff = &d
			}
		}
	}
	return out, nil
}

// CreateVRT: Create VRT (POST /ingest/vrt/create).
func (s *Server) CreateVRT(ctx context.Context, request gen.CreateVRTRequestObject) (gen.CreateVRTResponseObject, error) {
	b := request.Body
	out, err := s.jobs.CreateVRT(ctx, auth.From(ctx), ingest.VRTCreate{Sources: b.SourceDatasetIds, Type: string(b.VrtType),
		Strategy: string(b.ResolutionStrategy), Title: b.Title, Summary: val(b.Summary),
		Visibility: string(cmp.Or(val(b.Visibility), gen.VrtCreateRequestVisibilityPrivate))})
	if err != nil {
		return nil, err
	}
	return gen.CreateVRT202JSONResponse{JobId: out.JobID, DatasetId: &out.DatasetID, Status: ptr("accepted"), Message: out.Message}, nil
}

// AddVRTSource: Add VRT Source (POST /ingest/vrt/{dataset_id}/sources/).
// One source or several: exactly one of the two fields.
func (s *Server) AddVRTSource(ctx context.Context, request gen.AddVRTSourceRequestObject) (gen.AddVRTSourceResponseObject, error) {
	b := request.Body
	if (b.SourceDatasetId == nil) == (b.SourceDatasetIds == nil) {
		return nil, apperr.Unprocessable("send exactly one of source_dataset_id and source_dataset_ids")
	}
	ids := val(b.SourceDatasetIds)
	if b.SourceDatasetId != nil {
		ids = []uuid.UUID{*b.SourceDatasetId}
	}
	out, err := s.jobs.AddVRTSources(ctx, auth.From(ctx), request.DatasetId, ids)
	if err != nil {
		return nil, err
	}
	return gen.AddVRTSource202JSONResponse{JobId: out.JobID, Status: ptr("accepted"), Message: out.Message}, nil
}

// RemoveVRTSource: Remove VRT Source (DELETE /ingest/vrt/{dataset_id}/sources/{source_dataset_id}/).
func (s *Server) RemoveVRTSource(ctx context.Context, request gen.RemoveVRTSourceRequestObject) (gen.RemoveVRTSourceResponseObject, error) {
	out, err := s.jobs.RemoveVRTSource(ctx, auth.From(ctx), request.DatasetId, request.SourceDatasetId)
	if err != nil {
		return nil, err
	}
	return gen.RemoveVRTSource202JSONResponse{JobId: out.JobID, Status: ptr("accepted"), Message: out.Message}, nil
}

// ListConnectors: List Connectors (GET /services/connectors/).
func (s *Server) ListConnectors(ctx context.Context, request gen.ListConnectorsRequestObject) (gen.ListConnectorsResponseObject, error) {
	no := false
	out := gen.ListConnectors200JSONResponse{Connectors: []gen.ConnectorDefinition{}}
	for _, c := range s.connectors.List() {
		out.Connectors = append(out.Connectors, gen.ConnectorDefinition{Name: c.Name(), DisplayName: c.DisplayName(),
			ConfigSchema: c.ConfigSchema(), SupportsCredentials: &no, SupportsScheduledSync: &no})
	}
	return out, nil
}

// DiscoverConnectorResources: Discover Connector Resources (POST /services/connectors/{connector_name}/discover/).
func (s *Server) DiscoverConnectorResources(ctx context.Context, request gen.DiscoverConnectorResourcesRequestObject) (gen.DiscoverConnectorResourcesResponseObject, error) {
	found, err := s.connectors.Discover(ctx, auth.From(ctx), request.ConnectorName, val(request.Body.Config), request.Body.CredentialId)
	if err != nil {
		return nil, err
	}
	out := gen.DiscoverConnectorResources200JSONResponse{Resources: make([]gen.ConnectorResourceResponse, len(found))}
	for i, r := range found {
		out.Resources[i] = gen.ConnectorResourceResponse{Id: r.ID, Name: r.Name, Kind: r.Kind, Metadata: &found[i].Metadata}
	}
	return out, nil
}

// DispatchConnectorIngest: Dispatch Connector Ingest (POST /services/connectors/{connector_name}/ingest/).
func (s *Server) DispatchConnectorIngest(ctx context.Context, request gen.DispatchConnectorIngestRequestObject) (gen.DispatchConnectorIngestResponseObject, error) {
	b := request.Body
	job, err := s.connectors.Ingest(ctx, auth.From(ctx), request.ConnectorName, val(b.Config), b.CredentialId, b.ResourceId)
	if err != nil {
		return nil, err
	}
	queued := gen.ConnectorIngestResponseStatus("queued")
	return gen.DispatchConnectorIngest202JSONResponse{JobId: job.ID.String(), Status: &queued}, nil
}

// PreviewServiceLayer: Preview Service Layer (POST /services/preview/).
func (s *Server) PreviewServiceLayer(ctx context.Context, request gen.PreviewServiceLayerRequestObject) (gen.PreviewServiceLayerResponseObject, error) {
	b := request.Body
	var id any
	if b.LayerId != nil {
		raw, _ := b.LayerId.MarshalJSON()
		_ = json.Unmarshal(raw, &id)
	}
	pv, err := s.sources.PreviewLayer(ctx, auth.From(ctx), sources.LayerSource{URL: b.Url, ServiceType: b.ServiceType, LayerName: b.LayerName,
		LayerID: id, ObjectIDField: val(b.ObjectIdField), Token: val(b.Token)}, 5)
	if err != nil {
		return nil, err
	}
	if len(pv.Layers) == 0 {
		return nil, apperr.Unprocessable("the layer's features could not be read")
	}
	l := previewLayer(pv.Layers[0], pv.Samples[0])
	out := gen.PreviewServiceLayer200JSONResponse{JobId: pv.Job.ID, SourceFilename: pv.Job.SourceFilename, LayerName: b.LayerName,
		Crs: l.Crs, GeometryType: l.GeometryType, FeatureCount: int64p(l.FeatureCount), SampleRows: l.SampleRows, Columns: make([]map[string]string, len(l.Columns))}
	for i, c := range l.Columns {
		out.Columns[i] = map[string]string{"name": c.Name, "type": c.Type}
	}
	return out, nil
}

// ProbeServiceURL: Probe Service URL (POST /services/probe/).
func (s *Server) ProbeServiceURL(ctx context.Context, request gen.ProbeServiceURLRequestObject) (gen.ProbeServiceURLResponseObject, error) {
	pr, err := s.sources.Probe(ctx, auth.From(ctx), request.Body.Url, val(request.Body.Token))
	if err != nil {
		return nil, err
	}
	out := gen.ProbeServiceURL200JSONResponse{ServiceType: pr.ServiceType, Url: pr.URL, Layers: make([]gen.LayerInfo, len(pr.Layers))}
	for i, l := range pr.Layers {
		out.Layers[i] = layerOut(l)
	}
	if pr.Selected != nil {
		raw, _ := json.Marshal(pr.Selected)
		out.SelectedLayerId = &gen.ProbeResponse_SelectedLayerId{}
		_ = out.SelectedLayerId.UnmarshalJSON(raw)
	}
	return out, nil
}

// layerOut maps a probed layer; its id is a number or a string, as the service keys it.
func layerOut(l sources.Layer) gen.LayerInfo {
	kind, lt := gen.LayerInfoKind("vector"), l.LayerType
	if l.Raster {
		kind = "raster"
	}
	out := gen.LayerInfo{Name: l.Name, Title: nonEmpty(l.Title), GeometryType: nonEmpty(l.GeometryType), FeatureCount: l.FeatureCount,
		LayerType: &lt, Kind: &kind, ObjectIdField: nonEmpty(l.ObjectIDField)}
	if l.ID != nil {
		raw, _ := json.Marshal(l.ID)
		out.LayerId = &gen.LayerInfo_LayerId{}
		_ = out.LayerId.UnmarshalJSON(raw)
	}
	return out
}

// CreateDataset: Create Dataset (POST /datasets/create/). An empty table with the given columns
// and a generic geometry column; origin "created".
func (s *Server) CreateDataset(ctx context.Context, request gen.CreateDatasetRequestObject) (gen.CreateDatasetResponseObject, error) {
	cols := make([]catalog.Column, len(request.Body.Columns))
	for i, c := range request.Body.Columns {
		cols[i] = catalog.Column{Name: c.Name, Type: string(c.Type)}
	}
	d, err := s.catalog.Create(ctx, auth.From(ctx), request.Body.Title, cols)
	if err != nil {
		return nil, err
	}
	out, err := s.datasetDetail(ctx, d)
	if err != nil {
		return nil, err
	}
	return gen.CreateDataset200JSONResponse(out), nil
}

// GetSingleDataset: Get Single Dataset (GET /datasets/{dataset_id}). 404 for datasets the caller
// may not see; the view is recorded in the history after the answer (dataset.view).
func (s *Server) GetSingleDataset(ctx context.Context, request gen.GetSingleDatasetRequestObject) (gen.GetSingleDatasetResponseObject, error) {
	d, err := s.catalog.View(ctx, auth.From(ctx), request.DatasetId)
	if err != nil {
		return nil, err
	}
	out, err := s.datasetDetail(ctx, d)
	if err != nil {
		return nil, err
	}
	return gen.GetSingleDataset200JSONResponse(out), nil
}

// ListAllDatasets: List All Datasets (GET /datasets/). The datasets the caller may see, 50/200.
func (s *Server) ListAllDatasets(ctx context.Context, request gen.ListAllDatasetsRequestObject) (gen.ListAllDatasetsResponseObject, error) {
	prm := request.Params
	skip, limit := page(prm.Skip, prm.Limit, 50, 200)
	f := catalog.Filter{Q: prm.Q, RecordStatus: prm.RecordStatus, Collection: prm.CollectionId, Skip: skip, Limit: limit, Sort: string(val(prm.Sort))}
	f.RecordType, f.Visibility = (*string)(prm.RecordType), (*string)(prm.Visibility)
	list, total, err := s.catalog.List(ctx, auth.From(ctx), f)
	if err != nil {
		return nil, err
	}
	out := gen.ListAllDatasets200JSONResponse{Datasets: make([]gen.DatasetResponse, len(list)), Total: total, Skip: skip, Limit: limit}
	for i, d := range list {
		out.Datasets[i] = datasetOut(d, false)
	}
	return out, nil
}

// UpdateDatasetMetadata: Update Dataset Metadata (PATCH /datasets/{dataset_id}). Write access and
// edit_metadata, and ownership (or admin) to move the visibility; members present change, null
// clears, absent ones stay; every change is recorded in the history (no new data version).
func (s *Server) UpdateDatasetMetadata(ctx context.Context, request gen.UpdateDatasetMetadataRequestObject) (gen.UpdateDatasetMetadataResponseObject, error) {
	b := request.Body
	ch := catalog.Change{Title: b.Title, Summary: b.Summary, Visibility: (*string)(b.Visibility), License: b.License,
		Attribution: b.Attribution, SourceOrganization: b.SourceOrganization, SourceURL: b.SourceUrl,
		QualityStatement: b.QualityStatement, LineageSummary: b.LineageSummary, UpdateFrequency: (*string)(b.UpdateFrequency),
		UsageConstraints: b.UsageConstraints, AccessConstraints: b.AccessConstraints,
		SensitivityClassification: b.SensitivityClassification, OwnerOrg: b.OwnerOrg, Language: b.Language,
		ThemeCategory: val(b.ThemeCategory), TileColumns: val(b.TileColumns), RecordStatus: b.RecordStatus}
	members, _ := patchMembersOf(ctx)
	ch.Clear = members.nulls()
	ch.IsDEM, ch.SetDEM = b.IsDem, members.names()["is_dem"]
	if b.DataVintageStart != nil {
		ch.DataVintageStart = &b.DataVintageStart.Time
	}
	if b.DataVintageEnd != nil {
		ch.DataVintageEnd = &b.DataVintageEnd.Time
	}
	d, err := s.catalog.UpdateMetadata(ctx, auth.From(ctx), request.DatasetId, ch)
	if err != nil {
		return nil, err
	}
	out, err := s.datasetDetail(ctx, d)
	if err != nil {
		return nil, err
	}
	return gen.UpdateDatasetMetadata200JSONResponse(out), nil
}

// DeleteDataset: Delete Dataset (DELETE /datasets/{dataset_id}). Owner or admin; ingested and
// created datasets are dropped in full, registered tables are only detached. A confirm_title sent
// must match as in a bulk delete.
func (s *Server) DeleteDataset(ctx context.Context, request gen.DeleteDatasetRequestObject) (gen.DeleteDatasetResponseObject, error) {
	var confirm *string
	if request.Body != nil && request.Body.ConfirmTitle != "" { // the binding leaves an absent body empty (minLength 1 otherwise)
		confirm = &request.Body.ConfirmTitle
	}
	if _, err := s.catalog.Delete(ctx, auth.From(ctx), request.DatasetId, confirm); err != nil {
		return nil, err
	}
	return gen.DeleteDataset204Response{}, nil
}

// ListDatasetGrants: List Dataset Grants (GET /datasets/{dataset_id}/grants/). Extension.
func (s *Server) ListDatasetGrants(ctx context.Context, request gen.ListDatasetGrantsRequestObject) (gen.ListDatasetGrantsResponseObject, error) {
	grants, err := s.catalog.Grants(ctx, auth.From(ctx), request.DatasetId)
	if err != nil {
		return nil, err
	}
	out := gen.ListDatasetGrants200JSONResponse{Items: make([]gen.DatasetGrant, len(grants))}
	for i, g := range grants {
		out.Items[i] = grantOut(g)
	}
	return out, nil
}

// CreateDatasetGrant: Create Dataset Grant (POST /datasets/{dataset_id}/grants/). Extension.
func (s *Server) CreateDatasetGrant(ctx context.Context, request gen.CreateDatasetGrantRequestObject) (gen.CreateDatasetGrantResponseObject, error) {
	p, b := auth.From(ctx), request.Body
	level := auth.GrantRead
	if b.Level != nil {
		level = string(*b.Level)
	}
	id, err := s.catalog.AddGrant(ctx, p, request.DatasetId, b.UserId, (*string)(b.Role), level)
	if err != nil {
		return nil, err
	}
	grants, err := s.catalog.Grants(ctx, p, request.DatasetId)
	if err != nil {
		return nil, err
	}
	for _, g := range grants {
		if g.ID == id {
			return gen.CreateDatasetGrant201JSONResponse(grantOut(g)), nil
		}
	}
	return nil, apperr.Conflict("the grant was removed concurrently")
}

// DeleteDatasetGrant: Delete Dataset Grant (DELETE /datasets/{dataset_id}/grants/{grant_id}). Extension.
func (s *Server) DeleteDatasetGrant(ctx context.Context, request gen.DeleteDatasetGrantRequestObject) (gen.DeleteDatasetGrantResponseObject, error) {
	if err := s.catalog.RemoveGrant(ctx, auth.From(ctx), request.DatasetId, request.GrantId); err != nil {
		return nil, err
	}
	return gen.DeleteDatasetGrant204Response{}, nil
}

// BulkDeleteDatasets: Bulk Delete Datasets (POST /datasets/bulk-delete/). 1..100 items, each
// confirmed by its exact title and reported on its own.
func (s *Server) BulkDeleteDatasets(ctx context.Context, request gen.BulkDeleteDatasetsRequestObject) (gen.BulkDeleteDatasetsResponseObject, error) {
	items := make([]catalog.Confirmed, len(request.Body.Datasets))
	for i, it := range request.Body.Datasets {
		items[i] = catalog.Confirmed{ID: it.DatasetId, Title: it.ConfirmTitle}
	}
	results, err := s.catalog.BulkDelete(ctx, auth.From(ctx), items)
	if err != nil {
		return nil, err
	}
	out := gen.BulkDeleteDatasets200JSONResponse{Results: make([]gen.DatasetBulkDeleteResult, len(results))}
	for i, r := range results {
		out.Results[i] = gen.DatasetBulkDeleteResult{DatasetId: r.ID, Status: r.Status}
		if r.Err != nil {
			out.Errors++
			detail := problemDetail(r.Err)
			out.Results[i].Detail = &detail
		} else {
			out.Deleted++
		}
	}
	return out, nil
}

func collectionOut(c catalog.Collection) gen.CatalogCollection {
	out := gen.CatalogCollection{Id: c.ID, Name: c.Name, Description: c.Description, DatasetCount: c.DatasetCount,
		Visibility: gen.CatalogCollectionVisibility(c.Visibility), CreatedBy: c.CreatedBy, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt,
		TemporalStart: dateOut(c.Temporal[0]), TemporalEnd: dateOut(c.Temporal[1])}
	if c.Extent != nil {
		out.ExtentBbox = &c.Extent
	}
	return out
}

// ListCollections: List Collections (GET /catalog/collections/). 50/200, by name.
func (s *Server) ListCollections(ctx context.Context, request gen.ListCollectionsRequestObject) (gen.ListCollectionsResponseObject, error) {
	skip, limit := page(request.Params.Skip, request.Params.Limit, 50, 200)
	list, total, err := s.catalog.Collections(ctx, auth.From(ctx), request.Params.Q, nil, skip, limit)
	if err != nil {
		return nil, err
	}
	out := gen.ListCollections200JSONResponse{Collections: make([]gen.CatalogCollection, len(list)), Total: total, Skip: skip, Limit: limit}
	for i, c := range list {
		out.Collections[i] = collectionOut(c)
	}
	return out, nil
}

// CreateCollection: Create Collection (POST /catalog/collections/). manage_collections.
func (s *Server) CreateCollection(ctx context.Context, request gen.CreateCollectionRequestObject) (gen.CreateCollectionResponseObject, error) {
	b := request.Body
	c, err := s.catalog.CreateCollection(ctx, auth.From(ctx), b.Name, b.Description, string(val(b.Visibility)))
	if err != nil {
		return nil, err
	}
	return gen.CreateCollection201JSONResponse(collectionOut(c)), nil
}

// GetCollection: Get Collection (GET /catalog/collections/{collection_id}).
func (s *Server) GetCollection(ctx context.Context, request gen.GetCollectionRequestObject) (gen.GetCollectionResponseObject, error) {
	c, err := s.catalog.Collection(ctx, auth.From(ctx), request.CollectionId)
	if err != nil {
		return nil, err
	}
	return gen.GetCollection200JSONResponse(collectionOut(c)), nil
}

// UpdateCollection: Update Collection (PATCH /catalog/collections/{collection_id}). Owner or admin.
func (s *Server) UpdateCollection(ctx context.Context, request gen.UpdateCollectionRequestObject) (gen.UpdateCollectionResponseObject, error) {
	b := request.Body
	c, err := s.catalog.UpdateCollection(ctx, auth.From(ctx), request.CollectionId, b.Name, b.Description, (*string)(b.Visibility))
	if err != nil {
		return nil, err
	}
	return gen.UpdateCollection200JSONResponse(collectionOut(c)), nil
}

// DeleteCollection: Delete Collection (DELETE /catalog/collections/{collection_id}). Owner or admin;
// the datasets stay.
func (s *Server) DeleteCollection(ctx context.Context, request gen.DeleteCollectionRequestObject) (gen.DeleteCollectionResponseObject, error) {
	if err := s.catalog.DeleteCollection(ctx, auth.From(ctx), request.CollectionId); err != nil {
		return nil, err
	}
	return gen.DeleteCollection204Response{}, nil
}

// AddDatasets: Add Datasets (POST /catalog/collections/{collection_id}/datasets/). All or nothing.
func (s *Server) AddDatasets(ctx context.Context, request gen.AddDatasetsRequestObject) (gen.AddDatasetsResponseObject, error) {
	c, added, err := s.catalog.AddToCollection(ctx, auth.From(ctx), request.CollectionId, request.Body.DatasetIds)
	if err != nil {
		return nil, err
	}
	out, err := merged[gen.AddDatasets200JSONResponse](collectionOut(c), map[string]int{"added": added})
	return out, err
}

// RemoveDataset: Remove Dataset (DELETE /catalog/collections/{collection_id}/datasets/{dataset_id}).
func (s *Server) RemoveDataset(ctx context.Context, request gen.RemoveDatasetRequestObject) (gen.RemoveDatasetResponseObject, error) {
	if err := s.catalog.RemoveFromCollection(ctx, auth.From(ctx), request.CollectionId, request.DatasetId); err != nil {
		return nil, err
	}
	return gen.RemoveDataset204Response{}, nil
}

// GetCollectionDatasets: Get Collection Datasets (GET /catalog/collections/{collection_id}/datasets/).
func (s *Server) GetCollectionDatasets(ctx context.Context, request gen.GetCollectionDatasetsRequestObject) (gen.GetCollectionDatasetsResponseObject, error) {
	skip, limit := page(request.Params.Skip, request.Params.Limit, 50, 200)
	list, total, err := s.catalog.CollectionDatasets(ctx, auth.From(ctx), request.CollectionId, skip, limit)
	if err != nil {
		return nil, err
	}
	out := gen.GetCollectionDatasets200JSONResponse{Datasets: make([]gen.DatasetResponse, len(list)), Total: total, Skip: skip, Limit: limit}
	for i, d := range list {
		out.Datasets[i] = datasetOut(d, false)
	}
	return out, nil
}

// datasetDetail is the detail-endpoint form of a dataset: datasetOut plus its collections.
func (s *Server) datasetDetail(ctx context.Context, d catalog.Dataset) (gen.DatasetResponse, error) {
	out := datasetOut(d, true)
	cols, err := s.catalog.CollectionsOf(ctx, auth.From(ctx), d.Entry.ID)
	if err != nil {
		return out, err
	}
	refs := make([]gen.DatasetCollectionRef, len(cols))
	for i, c := range cols {
		refs[i] = gen.DatasetCollectionRef{Id: c.ID, Name: c.Name}
	}
	out.Collections = &refs
	pv, err := s.catalog.ProvenanceFor(ctx, auth.From(ctx), d)
	if pv != nil {
		out.DerivedFrom = &gen.DerivedFrom{DatasetId: pv.DatasetID, Operation: pv.Operation, Params: pv.Params, CreatedAt: pv.CreatedAt}
	}
	return out, err
}

// UploadFile: Upload File (POST /ingest/upload). The file part is streamed to the staging
// directory (never held in memory); the job waits, pending, for Commit Import.
func (s *Server) UploadFile(ctx context.Context, request gen.UploadFileRequestObject) (gen.UploadFileResponseObject, error) {
	part, filename, err := filePart(request.Body)
	if err != nil {
		return nil, err
	}
	job, err := s.jobs.Upload(ctx, auth.From(ctx), filename, part)
	if err != nil {
		return nil, err
	}
	pending := gen.UploadResponseStatusPending
	return gen.UploadFile201JSONResponse{JobId: job.ID, Status: &pending,
		Message: "file staged; preview it or commit the import with /ingest/commit/{job_id}"}, nil
}

// CommitImport: Commit Import (POST /ingest/commit/{job_id}). Queues the import; 202 with the job.
func (s *Server) CommitImport(ctx context.Context, request gen.CommitImportRequestObject) (gen.CommitImportResponseObject, error) {
	var opts ingest.Options
	if b := request.Body; b != nil {
		raster, err := rasterOptions(b)
		if err != nil {
			return nil, err
		}
		opts = ingest.Options{Raster: raster, Title: val(b.Title), Summary: val(b.Summary), LayerName: val(b.LayerName),
			Visibility: string(val(b.Visibility)), RecordStatus: val(b.RecordStatus), SourceSRID: val(b.SourceSrid), XColumn: val(b.XColumn), YColumn: val(b.YColumn),
			GeomColumn: val(b.GeomColumn), VintageStart: b.TemporalStart, VintageEnd: b.TemporalEnd, Mode: string(val(b.Mode))}
		if b.SridOverride != nil {
			opts.SourceSRID = *b.SridOverride
		}
		if opts.VintageStart != nil && opts.VintageEnd != nil && opts.VintageEnd.Before(*opts.VintageStart) {
			return nil, apperr.Unprocessable("temporal_end is before temporal_start")
		}
	}
	job, err := s.jobs.Commit(ctx, auth.From(ctx), request.JobId, opts)
	if err != nil {
		return nil, err
	}
	return merged[gen.CommitImport202JSONResponse](jobOut(job),
		map[string]any{"job_id": job.ID, "message": "import queued; follow it with Get Job Status"})
}

// GetUploadConfig: Get Upload Config (GET /ingest/upload/config). What the upload form needs to
// know before sending a file, under the caller's limits. Presigned uploads are offered to
// browsers only with object storage (S3): without it they post the file to /ingest/upload.
func (s *Server) GetUploadConfig(ctx context.Context, request gen.GetUploadConfigRequestObject) (gen.GetUploadConfigResponseObject, error) {
	l, err := s.jobs.Limits(ctx, auth.From(ctx))
	if err != nil {
		return nil, err
	}
	out := gen.GetUploadConfig200JSONResponse{AllowedExtensions: strings.Join(l.Extensions, ","), AllowedExtensionsList: l.Extensions,
		MaxFileSizeBytes: l.MaxBytes, PresignedUploads: s.jobs.Storage.Name() == "s3", PresignedThresholdBytes: s.cfg.PresignedThresholdBytes}
	if l.RemainingDatasets != nil {
		out.RemainingDatasetQuota = ptr(int(*l.RemainingDatasets))
	}
	return out, nil
}

// ExportDataset: Export Dataset (GET /datasets/{dataset_id}/export). Streams the dataset in the
// chosen format; a download token stands in for headers a browser link cannot send.
func (s *Server) ExportDataset(ctx context.Context, request gen.ExportDatasetRequestObject) (gen.ExportDatasetResponseObject, error) {
	p, err := s.downloader(ctx, request.DatasetId, request.Params.Token)
	if err != nil {
		return nil, err
	}
	d, err := s.catalog.Get(ctx, p, request.DatasetId, false)
	if err != nil {
		return nil, err
	}
	if d.Entry.RecordType != "vector_dataset" && d.Entry.RecordType != "table" {
		return nil, apperr.Conflict("a %s is not exported as features; use Download COG for rasters", d.Entry.RecordType)
	}
	req, err := exportRequest(d, request.Params, s.filterLimits())
	if err != nil {
		return nil, err
	}
	req.Client = exportClient(ctx, p)
	body, size, err := s.exporter.Open(ctx, req)
	if err != nil {
		return nil, err
	}
	s.catalog.Exported(p, d.Entry.ID, req.Format)
	f := export.Formats[req.Format]
	return exportResponse{mediaType: f.MediaType, filename: req.Name + "." + f.Ext, body: body, size: size}, nil
}

// exportRequest reads an export's parameters against the dataset's table.
func exportRequest(d catalog.Dataset, prm gen.ExportDatasetParams, limits cql2.Limits) (export.Request, error) {
	t, err := features.TableOf(d.Entry.TableSchema, d.Entry.TableName, d.Entry.IDColumn, d.Entry.GeometryColumn, d.TableColumns)
	if err != nil {
		return export.Request{}, err
	}
	cols := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		cols[i] = c.Name
	}
	crs, err := exportCRS(prm.Crs, prm.TargetCrs)
	if err != nil {
		return export.Request{}, err
	}
	req := export.Request{DatasetID: d.Entry.ID.String(), Schema: d.Entry.TableSchema, Table: d.Entry.TableName,
		ID: t.ID, IDType: t.IDType, Geom: t.Geom, Columns: cols, SRID: int(val(d.Entry.Srid)),
		GeometryType: val(d.Entry.GeometryType), Is3D: val(d.Entry.Is3d), Name: export.LayerName(d.Entry.Title),
		Format: cmp.Or(string(val(prm.Format)), "gpkg"), CRS: crs, BBox: val(prm.Bbox)}
	if w := val(prm.Where); w != "" {
		if req.Where, err = cql2.ParseFilterWithin("cql2-text", w, 4326, false, limits); err != nil {
			return export.Request{}, err
		}
		req.Props = features.Queryables(t)
	}
	return req, nil
}

// exportCRS is the EPSG code an export is written in: crs, or target_crs as clients send it
// (`EPSG:3857`, `3857`, an OGC CRS URI or URN); 0 for WGS84.
func exportCRS(crs *int, target *string) (int, error) {
	code := val(crs)
	if target == nil || *target == "" {
		return code, nil
	}
	s := *target
	if s == crs84 {
		s = "4326"
	}
	for _, prefix := range []string{"EPSG:", "epsg:", epsgPrefix, "urn:ogc:def:crs:EPSG::"} {
		s = strings.TrimPrefix(s, prefix)
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, apperr.Invalid("target_crs: %q is not an EPSG code (EPSG:<code>, <code>, or an OGC CRS URI)", *target)
	}
	if crs != nil && *crs != n {
		return 0, apperr.Invalid("crs %d and target_crs %q disagree; send one", *crs, *target)
	}
	return n, nil
}

// downloader is the caller of a download: the request's principal, or the user a valid download
// token was issued to when the request carries no credential of its own.
func (s *Server) downloader(ctx context.Context, dataset uuid.UUID, token *string) (auth.Principal, error) {
	p := auth.From(ctx)
	if token != nil && *token != "" && p.Anonymous() {
		userID, err := s.downloads.Verify(*token, dataset)
		if err != nil {
			return p, apperr.Unauthorized("the download token is invalid or expired; ask for a new one")
		}
		if p, err = s.auth.DownloadPrincipal(ctx, userID); err != nil {
			return p, err
		}
	}
	if !p.Anonymous() && !p.Can(auth.CapExport) {
		return p, apperr.Forbidden("exports need the export capability")
	}
	return p, nil
}

// PreviewFile: Preview File (POST /ingest/preview/{job_id}). Every layer of the staged file with
// its columns, CRS, count, extent and a few sample rows (sample_size, default 5, at most 50).
func (s *Server) PreviewFile(ctx context.Context, request gen.PreviewFileRequestObject) (gen.PreviewFileResponseObject, error) {
	n := 5
	if request.Body != nil && request.Body.SampleSize != nil {
		n = min(max(*request.Body.SampleSize, 0), 50)
	}
	pv, err := s.jobs.Preview(ctx, auth.From(ctx), request.JobId, n)
	if err != nil {
		return nil, err
	}
	out := gen.PreviewFile200JSONResponse{JobId: pv.Job.ID, SourceFilename: pv.Job.SourceFilename, DetectedFormat: &pv.Format,
		Layers: make([]gen.IngestPreviewLayer, len(pv.Layers))}
	for i, l := range pv.Layers {
		out.Layers[i] = previewLayer(l, pv.Samples[i])
		if l.Raster != nil {
			rasterPreview(&out, l.Raster)
		}
	}
	return previewTop(out, val(request.Params.LayerName))
}

// previewLayer is one layer of a preview.
func previewLayer(l ingest.Layer, samples []map[string]any) gen.IngestPreviewLayer {
	pl := gen.IngestPreviewLayer{Name: l.Name, SampleRows: samples, Columns: make([]gen.DatasetColumnType, len(l.Columns))}
	if d := l.Detected; d != nil {
		pl.DetectedGeometryColumns = &gen.IngestDetectedGeometryColumns{X: nonEmpty(d.X), Y: nonEmpty(d.Y), Wkt: nonEmpty(d.WKT)}
	}
	for k, c := range l.Columns {
		pl.Columns[k] = gen.DatasetColumnType{Name: c.Name, Type: c.Type}
	}
	fields := len(pl.Columns)
	pl.FieldCount = &fields
	if l.GeometryType != "" {
		pl.GeometryType = &l.GeometryType
	}
	if l.FeatureCount >= 0 {
		pl.FeatureCount = &l.FeatureCount
	}
	if l.SRID > 0 {
		pl.Crs = &l.SRID
	}
	if len(l.Extent) == 4 {
		// ogrinfo prints (minx, miny) - (maxx, maxy) in the layer's CRS; a raster's is its native box.
		bbox := []float64{l.Extent[0], l.Extent[1], l.Extent[2], l.Extent[3]}
		pl.ExtentBbox = &bbox
	}
	if l.Raster != nil {
		pl.BandCount = ptr(len(l.Raster.Bands))
	}
	return pl
}

// previewTop describes one layer (the named one, else the first) at the top level of a preview,
// where clients that import one layer read it.
func previewTop(out gen.PreviewFile200JSONResponse, name string) (gen.PreviewFile200JSONResponse, error) {
	for _, l := range out.Layers {
		if name == "" || l.Name == name {
			out.LayerName, out.Columns, out.Crs, out.GeometryType = l.Name, l.Columns, l.Crs, l.GeometryType
			out.FeatureCount, out.SampleRows, out.DetectedGeometryColumns = l.FeatureCount, l.SampleRows, l.DetectedGeometryColumns
			return out, nil
		}
	}
	if name != "" {
		return out, apperr.Unprocessable("layer_name: the file has no layer %q", name)
	}
	return out, apperr.Unprocessable("the file has no layer to preview")
}

// CommitFanOut: Commit Fan Out (POST /ingest/commit-fan-out/{job_id}). One dataset per layer.
func (s *Server) CommitFanOut(ctx context.Context, request gen.CommitFanOutRequestObject) (gen.CommitFanOutResponseObject, error) {
	var choices []ingest.FanOutChoice
	var base ingest.Options
	if b := request.Body; b != nil {
		for _, c := range val(b.Layers) {
			choices = append(choices, ingest.FanOutChoice{Layer: c.LayerName, Title: val(c.Title)})
		}
		base = ingest.Options{Summary: val(b.Summary), Visibility: string(val(b.Visibility))}
	}
	children, names, err := s.jobs.FanOut(ctx, auth.From(ctx), request.JobId, choices, base)
	if err != nil {
		return nil, err
	}
	out := gen.CommitFanOut202JSONResponse{JobId: request.JobId, FanOutId: request.JobId, Status: gen.IngestCommitFanOutResponseStatusFannedOut,
		Items: make([]gen.IngestFanOutItem, len(children)), Results: make([]gen.IngestFanOutResult, len(children))}
	for i, c := range children {
		out.Items[i] = gen.IngestFanOutItem{JobId: c.ID, LayerName: names[i], Status: gen.IngestFanOutItemStatusPending}
		out.Results[i] = gen.IngestFanOutResult{NewJobId: &c.ID, LayerName: names[i], Status: gen.IngestFanOutResultStatusQueued}
	}
	return out, nil
}

// GetDatasetHistory: Get Dataset History (GET /datasets/{dataset_id}/history). Newest first, 50/200.
func (s *Server) GetDatasetHistory(ctx context.Context, request gen.GetDatasetHistoryRequestObject) (gen.GetDatasetHistoryResponseObject, error) {
	skip, limit := page(request.Params.Skip, request.Params.Limit, 50, 200)
	rows, total, err := s.catalog.History(ctx, auth.From(ctx), request.DatasetId, false, skip, limit)
	if err != nil {
		return nil, err
	}
	out := gen.GetDatasetHistory200JSONResponse{Logs: make([]gen.DatasetHistoryEntry, len(rows)), Total: total, Skip: skip, Limit: limit}
	for i, r := range rows {
		changes := map[string]gen.DatasetFieldChange{}
		_ = json.Unmarshal(r.Changes, &changes)
		version := r.Version
		display, summary := r.ActorDisplay, r.Summary()
		details := map[string]any{}
		_ = json.Unmarshal(r.Changes, &details)
		out.Logs[i] = gen.DatasetHistoryEntry{Id: r.ID, Action: r.Action, ActorId: r.ActorID, UserId: r.ActorID, Summary: &summary,
			ActorDisplay: &display, Username: &display, Changes: &changes, Details: &details, OccurredAt: r.OccurredAt,
			CreatedAt: r.OccurredAt, Version: &version, ResourceType: gen.DatasetHistoryEntryResourceTypeDataset,
			ResourceId: &r.DatasetID, ResourceName: &r.DatasetTitle}
	}
	return out, nil
}

// RequestPresignedUpload: Request Presigned Upload (POST /ingest/upload/presigned). Without S3
// the local storage backend signs PUT URLs that Meridian itself accepts under /api/storage/uploads/.
func (s *Server) RequestPresignedUpload(ctx context.Context, request gen.RequestPresignedUploadRequestObject) (gen.RequestPresignedUploadResponseObject, error) {
	b := request.Body
	ps, err := s.jobs.RequestPresigned(ctx, auth.From(ctx), b.Filename, b.FileSize)
	if err != nil {
		return nil, err
	}
	out := gen.RequestPresignedUpload200JSONResponse{JobId: ps.Job.ID, Urls: ps.URLs, PartSize: ps.PartSize,
		S3Key: "staging/" + ps.Job.ID.String() + "/" + b.Filename}
	if ps.PartSize != nil {
		uploadID := ps.Job.ID.String()
		out.UploadId = &uploadID
	}
	return out, nil
}

// CompletePresignedUpload: Complete Presigned Upload (POST /ingest/upload/presigned/{job_id}/complete).
func (s *Server) CompletePresignedUpload(ctx context.Context, request gen.CompletePresignedUploadRequestObject) (gen.CompletePresignedUploadResponseObject, error) {
	var parts []ingest.PartETag
	if b := request.Body; b != nil {
		for _, pt := range val(b.Parts) {
			parts = append(parts, ingest.PartETag{Number: pt.PartNumber, ETag: pt.Etag})
		}
	}
	job, err := s.jobs.CompletePresigned(ctx, auth.From(ctx), request.JobId, parts)
	if err != nil {
		return nil, err
	}
	pending := gen.UploadResponseStatusPending
	return gen.CompletePresignedUpload200JSONResponse{JobId: job.ID, Status: &pending,
		Message: "file received; preview it or commit the import"}, nil
}

// DiscoverTables: Discover Tables (GET /ingest/discover/). Admin only; 1000/5000.
func (s *Server) DiscoverTables(ctx context.Context, request gen.DiscoverTablesRequestObject) (gen.DiscoverTablesResponseObject, error) {
	prm := request.Params
	skip, limit := page(prm.Skip, prm.Limit, 1000, 5000)
	list, total, err := s.catalog.Discover(ctx, auth.From(ctx), s.cfg.RegisterSchemas, val(prm.Schema), val(prm.Q),
		val(prm.IncludeRegistered), skip, limit)
	if err != nil {
		return nil, err
	}
	out := gen.DiscoverTables200JSONResponse{Tables: make([]gen.IngestDiscoveredTable, len(list)), Total: total, Skip: skip, Limit: limit}
	for i, d := range list {
		rows := d.EstimatedRows
		it := gen.IngestDiscoveredTable{Schema: d.Schema, Table: d.Table, TablePath: d.Schema + "." + d.Table, TableName: d.Schema + "." + d.Table,
			Kind: gen.IngestDiscoveredTableKind(d.Kind), GeometryColumn: d.GeometryColumn, GeometryType: d.GeomType,
			EstimatedRows: &rows, HasPrimaryKey: d.HasPrimaryKey, Registered: d.DatasetID != nil, DatasetId: d.DatasetID}
		if d.SRID != nil {
			srid := int(*d.SRID)
			it.Srid = &srid
		}
		out.Tables[i] = it
	}
	return out, nil
}

// registration reads a table registration: clients send the table as table_name, older ones
// as table_path.
func registration(b gen.IngestRegisterTableRequest) (catalog.Registration, error) {
	name, path := val(b.TableName), val(b.TablePath)
	switch {
	case name == "" && path == "":
		return catalog.Registration{}, apperr.Unprocessable("table_name is required")
	case name != "" && path != "" && name != path:
		return catalog.Registration{}, apperr.Unprocessable("table_name %q and table_path %q name different tables; send one", name, path)
	case name == "":
		name = path
	}
	return catalog.Registration{TablePath: name, GeometryColumn: val(b.GeometryColumn), IDColumn: val(b.IdColumn),
		Title: val(b.Title), Summary: val(b.Summary), Visibility: string(val(b.Visibility))}, nil
}

// RegisterTable: Register Table (POST /ingest/register/). Admin only; the table is not copied.
func (s *Server) RegisterTable(ctx context.Context, request gen.RegisterTableRequestObject) (gen.RegisterTableResponseObject, error) {
	reg, err := registration(*request.Body)
	if err != nil {
		return nil, err
	}
	id, err := s.catalog.Register(ctx, auth.From(ctx), s.cfg.RegisterSchemas, reg)
	if err != nil {
		return nil, err
	}
	d, err := s.catalog.Get(ctx, auth.From(ctx), id, false)
	if err != nil {
		return nil, err
	}
	out, err := s.datasetDetail(ctx, d)
	if err != nil {
		return nil, err
	}
	return merged[gen.RegisterTable201JSONResponse](out, map[string]any{"dataset_id": id})
}

// BulkRegisterTables: Bulk Register Tables (POST /ingest/register/bulk/). Per-table results; a
// malformed item refuses the whole request.
func (s *Server) BulkRegisterTables(ctx context.Context, request gen.BulkRegisterTablesRequestObject) (gen.BulkRegisterTablesResponseObject, error) {
	regs := make([]catalog.Registration, len(request.Body.Tables))
	for i, b := range request.Body.Tables {
		r, err := registration(b)
		if err != nil {
			return nil, apperr.Unprocessable("tables[%d]: %s", i, problemDetail(err))
		}
		regs[i] = r
	}
	results, err := s.catalog.BulkRegister(ctx, auth.From(ctx), s.cfg.RegisterSchemas, regs)
	if err != nil {
		return nil, err
	}
	out := gen.BulkRegisterTables201JSONResponse{Results: make([]gen.IngestBulkRegisterResult, len(results))}
	for i, r := range results {
		res := gen.IngestBulkRegisterResult{TablePath: regs[i].TablePath, TableName: regs[i].TablePath,
			Status: gen.IngestBulkRegisterResultStatus(r.Status), Title: nonEmpty(regs[i].Title)}
		if r.Err != nil {
			out.Errors++
			detail := problemDetail(r.Err)
			res.Detail, res.Error = &detail, &detail
		} else {
			res.DatasetId = &r.ID
			out.Registered++
		}
		out.Results[i] = res
	}
	return out, nil
}
