package ingest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/internal/catalog"
	"meridian/store"
)

// The VRT operations: a VRT dataset is a record (record_type vrt_dataset) whose data is the COG
// of its newest served generation; who may put which source into which VRT is decided by the
// database's rules (catalog.vrt_refusal, migration 85) for every path, and checked here first to
// answer the caller why.

// VRTCreate is what Create VRT asks for.
type VRTCreate struct {
	Sources        []uuid.UUID
	Type, Strategy string
	Title, Summary string
	Visibility     string
}

// VRTQueued is a generation queued (or joined) by a change.
type VRTQueued struct {
	JobID, DatasetID uuid.UUID
	Message          string
}

// CreateVRT records a new VRT dataset of the caller's with its sources and queues its first
// generation.
func (j *Jobs) CreateVRT(ctx context.Context, p auth.Principal, in VRTCreate) (VRTQueued, error) {
	if p.Anonymous() || !p.Can(auth.CapUpload) {
		return VRTQueued{}, apperr.Forbidden("creating a VRT dataset needs the upload capability")
	}
	if err := checkVRTDefinition(in); err != nil {
		return VRTQueued{}, err
	}
	if l, err := j.Limits(ctx, p); err != nil {
		return VRTQueued{}, err
	} else if l.RemainingDatasets != nil && *l.RemainingDatasets == 0 {
		return VRTQueued{}, apperr.Unprocessable("dataset quota exceeded: you own the most datasets allowed per user; delete one first")
	}
	id := uuid.New()
	var out VRTQueued
	err := pgx.BeginFunc(ctx, j.Pool, func(tx pgx.Tx) error {
		q := j.Q.WithTx(tx)
		if _, err := q.LockDatasetsForShare(ctx, in.Sources); err != nil {
			return err
		}
		if _, err := j.candidates(ctx, q, p, &p.UserID, in.Visibility, in.Type, in.Sources, nil); err != nil {
			return err
		}
		raw, _ := json.Marshal(catalog.Raster{VRT: &catalog.VRTState{Type: in.Type, ResolutionStrategy: in.Strategy,
			SourceCount: len(in.Sources), Status: "pending"}})
		status, empty := catalog.StatusPublished, ""
		prm := store.InsertDatasetParams{ID: &id, TableSchema: "data", TableName: "vrt_" + strings.ReplaceAll(id.String(), "-", ""),
			Title: in.Title, Visibility: in.Visibility, RecordStatus: &status, RecordType: "vrt_dataset", Origin: ptr("vrt"),
			SourceFormat: ptr("VRT"), Srid: ptr(int32(3857)), ColumnInfo: []byte("[]"), CreatedBy: &p.UserID,
			GeometryColumn: &empty, Raster: raw}
		if in.Summary != "" {
			prm.Summary = &in.Summary
		}
		if _, err := catalog.AddRecord(ctx, q, prm, p); err != nil {
			return err
		}
		if err := q.InsertVRTDataset(ctx, store.InsertVRTDatasetParams{DatasetID: id, VrtType: in.Type,
			ResolutionStrategy: in.Strategy}); err != nil {
			return err
		}
		if _, err := q.AddVRTSources(ctx, store.AddVRTSourcesParams{VrtID: id, AddedBy: &p.UserID, Ids: in.Sources}); err != nil {
			return err
		}
		job, _, err := j.Queue.queueVRT(ctx, tx, id, "create", &p.UserID, &p.UserID)
		out = VRTQueued{JobID: job, DatasetID: id, Message: fmt.Sprintf("VRT dataset %s created; its first generation is queued", id)}
		return err
	})
	return out, err
}

func checkVRTDefinition(in VRTCreate) error {
	switch {
	case in.Type != VRTMosaic && in.Type != VRTBandStack:
		return apperr.Unprocessable("vrt_type %q is not one of mosaic, band_stack", in.Type)
	case !slices.Contains(vrtStrategies, in.Strategy):
		return apperr.Unprocessable("resolution_strategy %q is not one of %s", in.Strategy, strings.Join(vrtStrategies, ", "))
	case strings.TrimSpace(in.Title) == "":
		return apperr.Unprocessable("title is empty")
	case len(in.Sources) == 0 || len(in.Sources) > MaxVRTSources:
		return apperr.Unprocessable("a VRT has 1 to %d sources; %d were given", MaxVRTSources, len(in.Sources))
	case !slices.Contains([]string{auth.VisibilityPrivate, auth.VisibilityRestricted, auth.VisibilityInternal, auth.VisibilityPublic}, in.Visibility):
		return apperr.Unprocessable("visibility %q is not one of private, restricted, internal, public", in.Visibility)
	}
	return distinct(in.Sources)
}

func distinct(ids []uuid.UUID) error {
	seen := map[uuid.UUID]bool{}
	for _, id := range ids {
		if seen[id] {
			return apperr.Unprocessable("source %s is listed twice", id)
		}
		seen[id] = true
	}
	return nil
}

// candidates checks the datasets ids for a VRT of owner with visibility vis: each one the caller
// may read (404 otherwise, the answer of any read of it), one the owner may include (422 saying
// why), and all of them, with the VRT's present sources (have), combinable as kind.
func (j *Jobs) candidates(ctx context.Context, q *store.Queries, p auth.Principal, owner *uuid.UUID, vis, kind string,
	ids []uuid.UUID, have []vrtLayout) ([]vrtLayout, error) {
	caller, role := p.UserID, p.Role
	rows, err := q.VRTSourceCandidates(ctx, store.VRTSourceCandidatesParams{CallerID: &caller, CallerRole: &role, IsAdmin: p.IsAdmin(),
		OwnerID: owner, VrtVisibility: vis, Ids: ids})
	if err != nil {
		return nil, err
	}
	layouts := have
	for _, r := range rows {
		if !r.Visible {
			return nil, apperr.NotFound("source dataset %s not found", r.ID)
		}
		switch r.Refusal {
		case "", "no_data": // a VRT without a generation yet is judged once it has one
		case "narrower":
			return nil, apperr.Unprocessable("a VRT is never seen by more people than any of its sources: source %s (%q) is seen by fewer "+
				"than a %s dataset is", r.ID, r.Title, vis)
		default:
			return nil, apperr.Unprocessable("source %s (%q) cannot be a source of this VRT: %s", r.ID, r.Title, vrtRefusals[r.Refusal])
		}
		var rr catalog.Raster
		_ = json.Unmarshal(r.Raster, &rr)
		layouts = append(layouts, layoutOf(r.ID, r.Title, rr))
	}
	return layouts, checkLayouts(kind, layouts)
}

// vrtOf reads dataset id for p (write: to change it) and insists it is a VRT.
func (j *Jobs) vrtOf(ctx context.Context, p auth.Principal, id uuid.UUID, write bool) (catalog.Dataset, error) {
	d, err := j.Catalog.Get(ctx, p, id, write)
	if err != nil {
		return d, err
	}
	if d.Entry.RecordType != "vrt_dataset" {
		return d, apperr.Conflict("dataset %s is a %s, not a VRT dataset", id, d.Entry.RecordType)
	}
	return d, nil
}

// AddVRTSources appends sources to VRT v and queues a regeneration (or joins a queued one).
func (j *Jobs) AddVRTSources(ctx context.Context, p auth.Principal, v uuid.UUID, ids []uuid.UUID) (VRTQueued, error) {
	if _, err := j.vrtOf(ctx, p, v, true); err != nil {
		return VRTQueued{}, err
	}
	if len(ids) == 0 || len(ids) > 100 {
		return VRTQueued{}, apperr.Unprocessable("name 1 to 100 sources: source_dataset_id or source_dataset_ids")
	}
	if err := distinct(ids); err != nil {
		return VRTQueued{}, err
	}
	defer j.Catalog.Forget(v)
	var out VRTQueued
	err := pgx.BeginFunc(ctx, j.Pool, func(tx pgx.Tx) error {
		q := j.Q.WithTx(tx)
		if _, err := q.LockDatasetsForShare(ctx, ids); err != nil {
			return err
		}
		x, err := q.LockVRTDataset(ctx, v)
		if err != nil {
			return err
		}
		cycles, err := q.VRTReachedFrom(ctx, store.VRTReachedFromParams{VrtID: v, Ids: ids})
		if err != nil {
			return err
		}
		if len(cycles) > 0 {
			return apperr.Unprocessable("source %s is this VRT or holds it: a VRT cannot be its own source, directly or through other VRTs", cycles[0])
		}
		present, err := q.VRTSourceLayouts(ctx, v)
		if err != nil {
			return err
		}
		var have []vrtLayout
		for _, s := range present {
			var r catalog.Raster
			_ = json.Unmarshal(s.Raster, &r)
			have = append(have, layoutOf(s.SourceID, "", r))
		}
		if _, err := j.candidates(ctx, q, p, x.CreatedBy, x.Visibility, x.VrtType, ids, have); err != nil {
			return err
		}
		added, err := q.AddVRTSources(ctx, store.AddVRTSourcesParams{VrtID: v, AddedBy: &p.UserID, Ids: ids})
		if err != nil {
			return err
		}
		if n, err := q.CountVRTSources(ctx, v); err != nil {
			return err
		} else if n > MaxVRTSources {
			return apperr.Unprocessable("a VRT has at most %d sources; this one would have %d", MaxVRTSources, n)
		}
		if len(added) == 0 {
			latest, err := q.LatestVRTGeneration(ctx, v)
			out = VRTQueued{JobID: latest, DatasetID: v, Message: "every source named is in the VRT already: nothing changed"}
			return err
		}
		job, fresh, err := j.Queue.queueVRT(ctx, tx, v, "source_added", &p.UserID, x.CreatedBy)
		out = VRTQueued{JobID: job, DatasetID: v, Message: queuedMessage(fmt.Sprintf("%d source(s) added", len(added)), fresh)}
		return err
	})
	return out, err
}

func queuedMessage(what string, fresh bool) string {
	if fresh {
		return what + "; a regeneration is queued"
	}
	return what + "; the regeneration queued before will show it"
}

// RemoveVRTSource takes source src out of VRT v and queues a regeneration (or joins one).
func (j *Jobs) RemoveVRTSource(ctx context.Context, p auth.Principal, v, src uuid.UUID) (VRTQueued, error) {
	if _, err := j.vrtOf(ctx, p, v, true); err != nil {
		return VRTQueued{}, err
	}
	defer j.Catalog.Forget(v)
	var out VRTQueued
	err := pgx.BeginFunc(ctx, j.Pool, func(tx pgx.Tx) error {
		q := j.Q.WithTx(tx)
		x, err := q.LockVRTDataset(ctx, v)
		if err != nil {
			return err
		}
		n, err := q.CountVRTSources(ctx, v)
		if err != nil {
			return err
		}
		gone, err := q.RemoveVRTSource(ctx, store.RemoveVRTSourceParams{VrtID: v, SourceID: src})
		switch {
		case err != nil:
			return err
		case gone == 0:
			return apperr.NotFound("dataset %s is not a source of VRT %s", src, v)
		case n <= 1:
			return apperr.Conflict("dataset %s is the last source of VRT %s: delete the VRT instead", src, v)
		}
		job, fresh, err := j.Queue.queueVRT(ctx, tx, v, "source_removed", &p.UserID, x.CreatedBy)
		out = VRTQueued{JobID: job, DatasetID: v, Message: queuedMessage("source removed", fresh)}
		return err
	})
	return out, err
}

// RegenerateVRT queues a generation of VRT v; 409 while one is queued or running.
func (j *Jobs) RegenerateVRT(ctx context.Context, p auth.Principal, v uuid.UUID) (VRTQueued, error) {
	if _, err := j.vrtOf(ctx, p, v, true); err != nil {
		return VRTQueued{}, err
	}
	defer j.Catalog.Forget(v)
	var out VRTQueued
	err := pgx.BeginFunc(ctx, j.Pool, func(tx pgx.Tx) error {
		q := j.Q.WithTx(tx)
		x, err := q.LockVRTDataset(ctx, v)
		if err != nil {
			return err
		}
		active, err := q.ActiveVRTGenerations(ctx, v)
		if err != nil {
			return err
		}
		if len(active) > 0 {
			return apperr.Conflict("a generation of VRT %s is already %s (job %s)", v, VRTJobWord(active[0].Status), active[0].ID)
		}
		job, _, err := j.Queue.queueVRT(ctx, tx, v, "manual", &p.UserID, x.CreatedBy)
		out = VRTQueued{JobID: job, DatasetID: v, Message: "a regeneration is queued"}
		return err
	})
	return out, err
}

// VRTJobWord is a generation's status in the contract's words.
func VRTJobWord(status string) string {
	if status == "pending" {
		return "queued"
	}
	return status
}

// VRTStatus is Get VRT Status's answer.
type VRTStatus struct {
	Status, State    string // ready, regenerating, failed; the record's pending, stale, ready, failed
	Serving, Queued  bool
	LastGenerationAt *time.Time
	SourceCount      int
	JobID            *uuid.UUID
	Error            *string
	Active           *VRTActive
	Sources          []VRTSourceHealth
}

// VRTActive is the generation running now.
type VRTActive struct {
	ID       uuid.UUID
	Started  time.Time
	Step     *string
	Progress *float64
}

// VRTSourceHealth is one source's state: healthy, stale, inaccessible, missing.
type VRTSourceHealth struct {
	ID     uuid.UUID
	Title  string
	Status string
}

// VRTStatus reports VRT v's generations and sources to a reader of it.
func (j *Jobs) VRTStatus(ctx context.Context, p auth.Principal, v uuid.UUID) (VRTStatus, error) {
	d, err := j.vrtOf(ctx, p, v, false)
	if err != nil {
		return VRTStatus{}, err
	}
	row, err := j.Q.VRTStatusOf(ctx, v)
	if err != nil {
		return VRTStatus{}, err
	}
	members, err := j.VRTSources(ctx, p, v)
	if err != nil {
		return VRTStatus{}, err
	}
	out := VRTStatus{Serving: row.LiveGeneration != nil, LastGenerationAt: row.ServedAt, SourceCount: len(members),
		Queued: row.Queued || row.Wanted != nil}
	if r, ok, _ := catalog.RasterOf(d.Entry); ok && r.VRT != nil {
		out.State = r.VRT.Status
	}
	if latest, err := j.Q.LatestVRTGeneration(ctx, v); err == nil {
		out.JobID = &latest
	}
	switch {
	case out.Queued || row.RunningID != uuid.Nil:
		out.Status = "regenerating"
	case row.NewestStatus == "failed":
		out.Status, out.Error = "failed", row.NewestError
	default:
		out.Status = "ready"
	}
	if row.RunningID != uuid.Nil && row.RunningStartedAt != nil {
		out.Active = &VRTActive{ID: row.RunningID, Started: *row.RunningStartedAt, Step: row.RunningStep, Progress: row.RunningProgress}
	}
	for _, m := range members {
		out.Sources = append(out.Sources, VRTSourceHealth{ID: m.ID, Title: m.Title, Status: m.Status})
	}
	return out, nil
}

// VRTGeneration is one generation in List VRT Generations.
type VRTGeneration struct {
	store.CatalogVrtGeneration
	Job     store.CatalogIngestJob
	Served  bool
	Sources []uuid.UUID
	Skipped []uuid.UUID
}

// VRTGenerations lists VRT v's generations, newest first, to a signed-in reader of it.
func (j *Jobs) VRTGenerations(ctx context.Context, p auth.Principal, v uuid.UUID, skip, limit int) ([]VRTGeneration, int, error) {
	if p.Anonymous() {
		return nil, 0, apperr.Unauthorized("listing a VRT's generations needs a signed-in caller")
	}
	if _, err := j.vrtOf(ctx, p, v, false); err != nil {
		return nil, 0, err
	}
	rows, err := j.Q.ListVRTGenerations(ctx, store.ListVRTGenerationsParams{VrtID: v, Off: int32(skip), Lim: int32(limit)})
	if err != nil {
		return nil, 0, err
	}
	total := 0
	out := make([]VRTGeneration, len(rows))
	for i, r := range rows {
		total = int(r.Total)
		g := VRTGeneration{CatalogVrtGeneration: r.CatalogVrtGeneration, Job: r.CatalogIngestJob, Served: r.Served,
			Sources: r.CatalogVrtGeneration.SourceIds, Skipped: []uuid.UUID{}}
		var skipped []skippedSource
		_ = json.Unmarshal(r.CatalogVrtGeneration.Skipped, &skipped)
		for _, s := range skipped {
			g.Skipped = append(g.Skipped, s.ID)
		}
		out[i] = g
	}
	if len(rows) == 0 && skip > 0 {
		n, err := j.Q.ListVRTGenerations(ctx, store.ListVRTGenerationsParams{VrtID: v, Off: 0, Lim: 1})
		if err == nil && len(n) > 0 {
			total = int(n[0].Total)
		}
	}
	return out, total, nil
}

// VRTSource is one source of a VRT as List VRT Sources shows it; Raster and Extent are nil for
// a source the caller may not read.
type VRTSource struct {
	ID       uuid.UUID
	Position int
	Title    string
	Added    time.Time
	Type     string
	Raster   *catalog.Raster
	Extent   []float64
	Status   string
	Served   bool
}

// VRTSources lists VRT v's sources in order to a reader of it.
func (j *Jobs) VRTSources(ctx context.Context, p auth.Principal, v uuid.UUID) ([]VRTSource, error) {
	if _, err := j.vrtOf(ctx, p, v, false); err != nil {
		return nil, err
	}
	var caller *uuid.UUID
	var role *string
	if !p.Anonymous() {
		caller, role = &p.UserID, &p.Role
	}
	rows, err := j.Q.ListVRTMembers(ctx, store.ListVRTMembersParams{CallerID: caller, CallerRole: role, IsAdmin: p.IsAdmin(), VrtID: v})
	if err != nil {
		return nil, err
	}
	out := make([]VRTSource, len(rows))
	for i, r := range rows {
		var rr catalog.Raster
		_ = json.Unmarshal(r.Raster, &rr)
		var served []builtSource
		_ = json.Unmarshal(r.Served, &served)
		s := VRTSource{ID: r.SourceID, Position: i + 1, Added: r.AddedAt, Status: "stale"}
		for _, b := range served {
			if b.ID == r.SourceID {
				s.Served = true
				if b.Key == rr.StorageKey {
					s.Status = "healthy"
				}
			}
		}
		switch r.Refusal {
		case "":
		case "no_data":
			s.Status = "missing"
		default:
			s.Status = "inaccessible"
		}
		if r.Visible {
			s.Title, s.Type, s.Raster, s.Extent = r.Title, r.RecordType, &rr, r.ExtentBbox
		}
		out[i] = s
	}
	return out, nil
}
