package sources

// Refresh (issue 33): a dataset read again from where it came from. A service layer is fetched
// again into a reupload job of the dataset, committed at once with the reupload rule for schema
// changes (removed columns or changed types fail the run; added columns are accepted), so the
// data is replaced in one transaction under the same id and table name; the job's commit
// completes the run (ingest.finishRefresh). A registered table only has its statistics read
// again. Anything else has nothing to refresh from.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/internal/catalog"
	"meridian/internal/ingest"
	"meridian/store"
)

// Triggers of a refresh run.
const (
	TriggerManual   = "manual"
	TriggerSchedule = "schedule"
)

// RefreshStart is a refresh as it was started: its run and the job doing its work.
type RefreshStart struct {
	RunID, JobID, DatasetID uuid.UUID
	OriginKind, Trigger     string
	Status, Message         string
}

// Refresh re-reads dataset id from its source for p, who must be allowed to replace its data
// (a registered table: an admin, as registering it). token authenticates the fetch and is never
// stored. A source that fails leaves the data untouched: the run is failed with the error, the
// dataset's source_health says what happened, and the error is answered (502 for a service
// that failed). New data that removes or retypes columns fails the run (409) and marks the
// schema drifted; its staged job stays pending, so Reupload Commit with allow_schema_change can
// still accept it.
func (s *Service) Refresh(ctx context.Context, p auth.Principal, id uuid.UUID, token, trigger string) (RefreshStart, error) {
	d, err := s.Catalog.Get(ctx, p, id, false)
	if err != nil {
		return RefreshStart{}, err
	}
	origin := ""
	if d.Entry.Origin != nil {
		origin = *d.Entry.Origin
	}
	switch {
	case d.Entry.Registered:
		return s.refreshRegistered(ctx, p, d, trigger)
	case origin != "service":
		return RefreshStart{}, apperr.Conflict("the dataset has nothing to refresh from: its origin is %q (an uploaded file, a dataset "+
			"created empty or an analysis result is replaced with Reupload Dataset)", origin)
	}
	if _, err := s.Catalog.Reuploadable(ctx, p, id); err != nil {
		return RefreshStart{}, err
	}
	if busy, err := s.Q.RefreshInProgress(ctx, id); err != nil || busy {
		if err == nil {
			err = apperr.Conflict("a refresh of this dataset is running; try again when it has finished")
		}
		return RefreshStart{}, err
	}
	src, err := layerOf(d.Entry)
	if err != nil {
		return RefreshStart{}, err
	}
	src.Token = token
	run, err := s.Q.CreateRefreshRun(ctx, store.CreateRefreshRunParams{DatasetID: id, OriginKind: origin, Trigger: trigger, TriggeredBy: userOf(p)})
	if err != nil {
		return RefreshStart{}, err
	}
	// The run outlives the request: a client that gives up does not leave it half done.
	ctx = context.WithoutCancel(ctx)
	job, err := s.stageReupload(ctx, p, id, src)
	if err != nil {
		return RefreshStart{}, s.failRun(ctx, run.ID, id, "source", err, true)
	}
	if err := s.Q.SetRefreshRunJob(ctx, store.SetRefreshRunJobParams{ID: run.ID, IngestJobID: &job.ID}); err != nil {
		return RefreshStart{}, err
	}
	queued, err := s.Jobs.CommitReupload(ctx, p, id, job.ID, ingest.ReuploadChoice{})
	if err != nil {
		code := "refused"
		if apperr.KindOf(err) == apperr.KindConflict {
			code = "schema_change"
			if derr := s.Q.SetDatasetSchemaDrift(ctx, store.SetDatasetSchemaDriftParams{ID: id, SchemaDriftStatus: "drifted"}); derr != nil {
				return RefreshStart{}, derr
			}
			err = apperr.Conflict("%s (the refreshed data is staged as reupload job %s of the dataset: Reupload Commit with "+
				"allow_schema_change true applies it)", detail(err), job.ID)
		}
		return RefreshStart{}, s.failRun(ctx, run.ID, id, code, err, false)
	}
	return RefreshStart{RunID: run.ID, JobID: queued.ID, DatasetID: id, OriginKind: origin, Trigger: trigger, Status: queued.Status,
		Message: "the layer was fetched from " + redact(src.URL) + "; its import replaces the data: follow it with Get Job Status"}, nil
}

// layerOf is the service layer a dataset was imported from (origin_ref, source_url).
func layerOf(e catalog.Entry) (LayerSource, error) {
	var ref struct {
		URL           string `json:"url"`
		ServiceType   string `json:"service_type"`
		LayerName     string `json:"layer_name"`
		LayerID       any    `json:"layer_id"`
		ObjectIDField string `json:"object_id_field"`
	}
	_ = json.Unmarshal(e.OriginRef, &ref)
	if ref.URL == "" && e.SourceUrl != nil {
		ref.URL = *e.SourceUrl
	}
	if ref.URL == "" || ref.ServiceType == "" || ref.LayerName == "" {
		return LayerSource{}, apperr.Conflict("the dataset's origin_ref does not say which service layer it came from (url, service_type, layer_name)")
	}
	return LayerSource{URL: ref.URL, ServiceType: ref.ServiceType, LayerName: ref.LayerName, LayerID: ref.LayerID, ObjectIDField: ref.ObjectIDField}, nil
}

// stageReupload fetches every page of src into a new pending reupload job of dataset, and
// remembers the layer on the job (its commit then keeps it as the dataset's source).
func (s *Service) stageReupload(ctx context.Context, p auth.Principal, dataset uuid.UUID, src LayerSource) (ingest.Job, error) {
	if _, err := s.Remote.Check(src.URL); err != nil {
		return ingest.Job{}, err
	}
	filename, fetch, err := s.layerFetch(src)
	if err != nil {
		return ingest.Job{}, err
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(fetch(ctx, pw)) }()
	job, err := s.Jobs.Reupload(ctx, p, dataset, filename, pr)
	_ = pr.CloseWithError(errors.New("staging stopped"))
	if err != nil {
		return ingest.Job{}, err
	}
	ref, _ := json.Marshal(map[string]any{"url": src.URL, "service_type": src.ServiceType, "layer_name": src.LayerName,
		"layer_id": src.LayerID, "object_id_field": src.ObjectIDField})
	return job, s.Q.SetIngestJobSource(ctx, store.SetIngestJobSourceParams{ID: job.ID, Source: ref})
}

// failRun records why run ended before its job could, and returns cause. A source that failed
// (fromSource) also sets the dataset's source_health; the service's own failures do not.
func (s *Service) failRun(ctx context.Context, run, dataset uuid.UUID, code string, cause error, fromSource bool) error {
	msg := detail(cause)
	if err := s.Q.FailRefreshRun(ctx, store.FailRefreshRunParams{ID: run, ErrorCode: &code, ErrorMessage: &msg}); err != nil {
		return err
	}
	if k := apperr.KindOf(cause); fromSource && (k == apperr.KindUpstream || k == apperr.KindUnprocessable) {
		status := Inaccessible
		if strings.Contains(msg, "answered 404") || strings.Contains(msg, "answered 410") {
			status = Missing // the service is there, the layer is not
		}
		d := "refresh failed: " + msg
		if _, err := s.Q.SetDatasetSourceHealth(ctx, store.SetDatasetSourceHealthParams{ID: dataset, SourceHealth: status, SourceHealthDetail: &d}); err != nil {
			return err
		}
	}
	return cause
}

func detail(err error) string {
	var ae *apperr.Error
	if errors.As(err, &ae) {
		return ae.Detail
	}
	return err.Error()
}

func userOf(p auth.Principal) *uuid.UUID {
	if p.Anonymous() {
		return nil
	}
	return &p.UserID
}

// refreshRegistered reads a registered table's statistics again (count, extent, columns) into
// its record, as a new data version, in the request: there is nothing to copy. Its job is made
// complete, so clients follow it as any other.
func (s *Service) refreshRegistered(ctx context.Context, p auth.Principal, d catalog.Dataset, trigger string) (RefreshStart, error) {
	if !p.IsAdmin() {
		return RefreshStart{}, apperr.Forbidden("refreshing a registered table needs the admin role, as registering it does")
	}
	id := d.Entry.ID
	run, err := s.Q.CreateRefreshRun(ctx, store.CreateRefreshRunParams{DatasetID: id, OriginKind: "registered", Trigger: trigger, TriggeredBy: userOf(p)})
	if err != nil {
		return RefreshStart{}, err
	}
	ctx = context.WithoutCancel(ctx)
	st, err := s.Catalog.RegisteredStats(ctx, d.Entry)
	if err != nil {
		if apperr.KindOf(err) == apperr.KindUnprocessable {
			msg := detail(err)
			_, _ = s.Q.SetDatasetSourceHealth(ctx, store.SetDatasetSourceHealthParams{ID: id, SourceHealth: Missing, SourceHealthDetail: &msg})
		}
		return RefreshStart{}, s.failRun(ctx, run.ID, id, "source", err, false)
	}
	oldCols, newCols := profileColumns(d.Entry.ColumnInfo), profileColumns(st.ColumnInfo)
	added, removed, changed := ingest.DiffColumns(oldCols, newCols)
	drift := "none"
	if len(added)+len(removed)+len(changed) > 0 {
		drift = "drifted"
	}
	var job uuid.UUID
	err = pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := s.Q.WithTx(tx)
		version, err := q.RestatRegisteredDataset(ctx, store.RestatRegisteredDatasetParams{ID: id, FeatureCount: &st.Count,
			ExtentBbox: st.BBox, ColumnInfo: st.ColumnInfo, SchemaDriftStatus: drift})
		if err != nil {
			return err
		}
		if job, err = q.CreateFinishedRefreshJob(ctx, store.CreateFinishedRefreshJobParams{RowsProcessed: &st.Count, DatasetID: &id, CreatedBy: userOf(p)}); err != nil {
			return err
		}
		diff := map[string]any{"columns_added": added, "columns_removed": removed, "type_changes": changed,
			"row_count_old": d.Entry.FeatureCount, "row_count_new": st.Count, "row_count_delta": st.Count - deref64(d.Entry.FeatureCount)}
		js, _ := json.Marshal(diff)
		if err := q.SetRefreshRunJob(ctx, store.SetRefreshRunJobParams{ID: run.ID, IngestJobID: &job}); err != nil {
			return err
		}
		if err := q.CompleteRefreshRun(ctx, store.CompleteRefreshRunParams{ID: run.ID, FeatureCountAfter: &st.Count, SchemaDiff: js, DatasetVersion: &version}); err != nil {
			return err
		}
		return catalog.RecordRefresh(ctx, q, id, version, p, map[string]any{"job_id": job, "feature_count": map[string]any{"old": d.Entry.FeatureCount, "new": st.Count},
			"columns_added": added, "columns_removed": removed, "type_changes": changed})
	})
	if err != nil {
		return RefreshStart{}, s.failRun(ctx, run.ID, id, "internal", err, false)
	}
	s.Catalog.Forget(id)
	return RefreshStart{RunID: run.ID, JobID: job, DatasetID: id, OriginKind: "registered", Trigger: trigger, Status: "complete",
		Message: fmt.Sprintf("the registered table's statistics were read again: %d features", st.Count)}, nil
}

func profileColumns(info []byte) []ingest.ColumnType {
	var cols []ingest.ColumnType
	_ = json.Unmarshal(info, &cols)
	return cols
}

func deref64(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// ReuploadPreview fetches a service layer as a new version of dataset: a pending reupload job
// of it, previewed as Reupload Preview previews a file (the schema difference included).
// Reupload Commit applies it, and the dataset then comes from that layer.
func (s *Service) ReuploadPreview(ctx context.Context, p auth.Principal, dataset uuid.UUID, src LayerSource, samples int) (ingest.ReuploadPreview, error) {
	if _, err := s.Catalog.Reuploadable(ctx, p, dataset); err != nil {
		return ingest.ReuploadPreview{}, err
	}
	job, err := s.stageReupload(ctx, p, dataset, src)
	if err != nil {
		return ingest.ReuploadPreview{}, err
	}
	return s.Jobs.PreviewReupload(ctx, p, dataset, job.ID, "", samples)
}
