package ingest

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"meridian/internal/blob"
	"meridian/internal/catalog"
	"meridian/store"
)

// A generation of a VRT dataset runs as an ingest job (its id is the job's): claimed once,
// beating while it runs (a run whose server dies is failed by the sweep of silent imports), its
// COG stored under a key fixed when it was queued and served only by the transaction that
// completes the job.

// vrtRefusals are the reasons a source is left out, for people.
var vrtRefusals = map[string]string{
	"not_raster":   "it is not a raster",
	"not_lendable": "the VRT's owner may not include it (another user's raster that is not public)",
	"narrower":     "fewer people may read it than the VRT",
	"no_data":      "it has no raster file yet",
	"registered":   "it is a registered raster, read from its remote server: a VRT combines stored rasters only",
}

// vrtWorkDir is where run attempt of job builds: under DATA_DIR, so the local object store's
// files are linked rather than copied and the finished COG is moved into place.
func vrtWorkDir(dataDir string, job uuid.UUID, attempt int32) string {
	return filepath.Join(dataDir, "vrt-work", fmt.Sprintf("%s-%d", job, attempt))
}

// RunVRT performs generation id from start to finish, once: a run that cannot claim its job
// (it runs elsewhere or has ended) does nothing. complete runs inside the transaction that serves
// the generation and completes the job. A failure fails the job with its reason and removes what
// the run stored; the VRT keeps serving what it served.
func (im *Importer) RunVRT(ctx context.Context, id uuid.UUID, complete func(context.Context, pgx.Tx) error) error {
	job, err := im.Q.ClaimIngestJob(ctx, store.ClaimIngestJobParams{ID: id, StallSeconds: im.Stall.Seconds()})
	if errors.Is(err, pgx.ErrNoRows) {
		im.Log.Info("VRT generation not claimed: it runs elsewhere or has ended", "job_id", id)
		return nil
	}
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go im.heartbeat(ctx, job, cancel)
	g, err := im.Q.GetVRTGeneration(ctx, id)
	if err == nil {
		err = im.buildVRT(ctx, job, g.CatalogVrtGeneration, complete)
	}
	if err == nil {
		im.Log.Info("VRT generation served", "job_id", id, "dataset_id", g.CatalogVrtGeneration.VrtID)
		return nil
	}
	if errors.Is(context.Cause(ctx), errLostJob) {
		im.Log.Warn("VRT generation abandoned: its job was failed as stalled", "job_id", id)
		return nil
	}
	msg := "the generation failed; see the server log"
	var ie *ImportError
	if errors.As(err, &ie) {
		msg = ie.Msg
	} else if ctx.Err() != nil {
		msg = "the generation was interrupted; regenerate the VRT"
	}
	im.Log.Warn("VRT generation failed", "job_id", id, "err", err)
	bg := context.WithoutCancel(ctx)
	if err := im.Q.FailVRTJob(bg, store.FailVRTJobParams{ID: id, Attempt: job.Attempts, ErrorMessage: &msg}); err != nil {
		return err
	}
	return im.Q.SetVRTStatus(bg, g.CatalogVrtGeneration.VrtID)
}

// builtSource is a source as a generation used it.
type builtSource struct {
	ID  uuid.UUID `json:"id"`
	Key string    `json:"key"`
}

type skippedSource struct {
	ID     uuid.UUID `json:"id"`
	Reason string    `json:"reason"`
}

// buildVRT builds generation g: the sources the VRT's owner may use now, linked or copied into
// the run's directory, mosaicked by a VRT of this code, converted and described as raster ingest
// converts and describes an upload, stored, and served.
func (im *Importer) buildVRT(ctx context.Context, job store.CatalogIngestJob, g store.CatalogVrtGeneration,
	complete func(context.Context, pgx.Tx) error) error {
	_ = im.Q.SetIngestJobStep(ctx, store.SetIngestJobStepParams{ID: job.ID, CurrentStep: ptr("validating"), Progress: ptr(0.0)})
	vrt, err := im.Q.GetVRTDataset(ctx, g.VrtID)
	if errors.Is(err, pgx.ErrNoRows) {
		return &ImportError{Msg: "the VRT dataset was deleted"}
	}
	if err != nil {
		return err
	}
	srcs, err := im.vrtSources(ctx, g, vrt.VrtType)
	if err != nil {
		return err
	}
	dir := vrtWorkDir(im.DataDir, job.ID, job.Attempts)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	for i := range srcs {
		srcs[i].Path = filepath.Join(dir, fmt.Sprintf("source-%04d.tif", i+1))
		if err := fetchSource(ctx, im.Objects, srcs[i].R.StorageKey, srcs[i].Path); err != nil {
			if errors.Is(err, blob.ErrNoObject) {
				return &ImportError{Msg: fmt.Sprintf("source %s changed while the generation ran; the next generation uses it as it is now", srcs[i].ID)}
			}
			return err
		}
		_ = im.Q.SetIngestJobStep(ctx, store.SetIngestJobStepParams{ID: job.ID, CurrentStep: ptr("validating"),
			Progress: ptr(0.05 * float64(i+1) / float64(len(srcs)))})
	}
	r, err := im.mosaic(ctx, job, vrt.VrtType, vrt.ResolutionStrategy, srcs, dir)
	if err != nil {
		return err
	}
	r.StorageKey = g.StorageKey
	if r.SizeBytes, err = im.Objects.PutFile(ctx, r.StorageKey, filepath.Join(dir, "mosaic.tif")); err != nil {
		return err
	}
	_ = im.Q.SetIngestJobStep(ctx, store.SetIngestJobStepParams{ID: job.ID, CurrentStep: ptr("registering"), Progress: ptr(0.95)})
	if err := im.serveVRT(ctx, job, g, srcs, r, complete); err != nil {
		bg := context.WithoutCancel(ctx)
		if im.Objects.Delete(bg, r.StorageKey) == nil {
			_ = im.Q.MarkVRTCOGRemoved(bg, g.ID)
		}
		return err
	}
	return nil
}

// vrtSources are the sources generation g may use, in order, with their descriptions; the
// others are recorded as skipped with why. None, or sources that cannot be combined, fail it.
func (im *Importer) vrtSources(ctx context.Context, g store.CatalogVrtGeneration, kind string) ([]mosaicSource, error) {
	rows, err := im.Q.VRTBuildSources(ctx, g.VrtID)
	if err != nil {
		return nil, err
	}
	var srcs []mosaicSource
	var layouts []vrtLayout
	built, skipped := []builtSource{}, []skippedSource{}
	var why []string
	for _, row := range rows {
		if row.Refusal != "" {
			skipped = append(skipped, skippedSource{ID: row.SourceID, Reason: row.Refusal})
			why = append(why, fmt.Sprintf("%s: %s", row.SourceID, vrtRefusals[row.Refusal]))
			continue
		}
		var r catalog.Raster
		if err := json.Unmarshal(row.Raster, &r); err != nil {
			return nil, fmt.Errorf("source %s: raster description: %w", row.SourceID, err)
		}
		srcs = append(srcs, mosaicSource{ID: row.SourceID, R: r})
		layouts = append(layouts, layoutOf(row.SourceID, row.Title, r))
		built = append(built, builtSource{ID: row.SourceID, Key: r.StorageKey})
	}
	ids := make([]uuid.UUID, len(built))
	for i, b := range built {
		ids[i] = b.ID
	}
	rawBuilt, _ := json.Marshal(built)
	rawSkipped, _ := json.Marshal(skipped)
	if err := im.Q.SnapshotVRTGeneration(ctx, store.SnapshotVRTGenerationParams{ID: g.ID, Sources: rawBuilt, SourceIds: ids,
		Skipped: rawSkipped}); err != nil {
		return nil, err
	}
	switch {
	case len(rows) == 0:
		return nil, &ImportError{Msg: "the VRT has no sources: add one"}
	case len(srcs) == 0:
		return nil, &ImportError{Msg: fmt.Sprintf("none of the VRT's %d sources can be used now (%s)", len(rows), strings.Join(why, "; "))}
	}
	if err := checkLayouts(kind, layouts); err != nil {
		return nil, &ImportError{Msg: err.Error()}
	}
	return srcs, nil
}

// fetchSource puts the COG stored under key at dst: on the local store a hard link (same disk,
// no copy; it keeps the file even if the key is deleted meanwhile), from S3 a download. GDAL
// never gets the store's credentials or a URL.
func fetchSource(ctx context.Context, objects blob.Objects, key, dst string) error {
	if l, ok := objects.(blob.LocalObjects); ok {
		if p, err := l.LocalPath(key); err == nil && os.Link(p, dst) == nil {
			return nil
		}
	}
	o, err := objects.Open(ctx, key)
	if err != nil {
		return err
	}
	defer o.Close()
	body, err := o.Range(ctx, 0, o.Size())
	if err != nil {
		return err
	}
	defer body.Close()
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// mosaic writes the VRT of srcs, converts it to dir/mosaic.tif with raster ingest's conversion
// (the VRT driver registered for this run only) and describes the result as ingest does.
func (im *Importer) mosaic(ctx context.Context, job store.CatalogIngestJob, kind, strategy string, srcs []mosaicSource, dir string) (catalog.Raster, error) {
	plan, err := planMosaic(kind, strategy, srcs)
	if err != nil {
		return catalog.Raster{}, err
	}
	info := plan.info()
	name := fmt.Sprintf("the %s of %d sources", strings.ReplaceAll(kind, "_", " "), len(srcs))
	if err := im.Bounds.Raster.check(name, info); err != nil {
		return catalog.Raster{}, err
	}
	// The sources' own resampling when they agree (nearest for classes), else ingest's default.
	resampling := srcs[0].R.Resampling
	for _, s := range srcs {
		if s.R.Resampling != resampling {
			resampling = ""
		}
	}
	ro, err := CheckRasterOptions(RasterOptions{Resampling: resampling}, info)
	if err != nil {
		return catalog.Raster{}, err
	}
	vrtPath := filepath.Join(dir, "mosaic.vrt")
	if err := writeVRT(vrtPath, kind, ro.Resampling, plan, srcs); err != nil {
		return catalog.Raster{}, err
	}
	out := filepath.Join(dir, "mosaic.tif")
	if err := im.convert(ctx, job, Source{Driver: "VRT", Path: vrtPath, Name: name}, ro, 0, out); err != nil {
		return catalog.Raster{}, err
	}
	_ = im.Q.SetIngestJobStep(ctx, store.SetIngestJobStepParams{ID: job.ID, CurrentStep: ptr("analyzing"), Progress: ptr(0.85)})
	return im.describeCOG(ctx, out, info, ro)
}

// serveVRT makes generation g the one its VRT serves, in one transaction with the completion of
// its job: unless a newer generation is served already, or a source's audience changed while it
// ran so that the VRT's owner may no longer include it (that change has asked for the next
// generation). The sources are locked before the VRT, as a change of a source locks them (its
// triggers then withdraw the VRT), so the two wait for each other instead of deadlocking.
func (im *Importer) serveVRT(ctx context.Context, job store.CatalogIngestJob, g store.CatalogVrtGeneration, srcs []mosaicSource,
	r catalog.Raster, complete func(context.Context, pgx.Tx) error) error {
	ids := make([]uuid.UUID, len(srcs))
	for i, s := range srcs {
		ids[i] = s.ID
	}
	raw, err := json.Marshal(r)
	if err != nil {
		return err
	}
	bbox := mercatorToLonLat(r.COG.Bounds)
	if len(r.Extent) == 4 {
		bbox = mercatorToLonLat(r.Extent)
	}
	return pgx.BeginFunc(ctx, im.Pool, func(tx pgx.Tx) error {
		q := im.Q.WithTx(tx)
		if _, err := q.LockDatasetsForShare(ctx, ids); err != nil {
			return err
		}
		rec, err := q.LockVRTRecord(ctx, g.VrtID)
		if errors.Is(err, pgx.ErrNoRows) {
			return &ImportError{Msg: "the VRT dataset was deleted"}
		}
		if err != nil {
			return err
		}
		if int(g.Generation) <= int(rec.LiveNumber) {
			return &ImportError{Msg: fmt.Sprintf("generation %d finished after generation %d was served: it is not served", g.Generation, rec.LiveNumber)}
		}
		now, err := q.LockVRTBuildSources(ctx, store.LockVRTBuildSourcesParams{Ids: ids, OwnerID: rec.CreatedBy, VrtVisibility: rec.Visibility})
		if err != nil {
			return err
		}
		if err := stillIncluded(ids, now); err != nil {
			return err
		}
		if err := q.RetireServedVRTGeneration(ctx, g.VrtID); err != nil {
			return err
		}
		if err := q.ServeVRTGeneration(ctx, store.ServeVRTGenerationParams{GenerationID: &g.ID, VrtID: g.VrtID}); err != nil {
			return err
		}
		if err := q.MarkVRTGenerationServed(ctx, store.MarkVRTGenerationServedParams{ID: g.ID, SizeBytes: &r.SizeBytes}); err != nil {
			return err
		}
		version, err := q.SetVRTRecordData(ctx, store.SetVRTRecordDataParams{ID: g.VrtID, Raster: raw, ExtentBbox: bbox,
			OriginalSrid: ptr(int32(3857)), NewVersion: rec.EverServed})
		if err != nil {
			return err
		}
		if rec.EverServed {
			changes, _ := json.Marshal(map[string]any{"generation": g.Generation, "trigger": g.Trigger, "source_count": len(ids)})
			if err := q.RecordDatasetHistory(ctx, store.RecordDatasetHistoryParams{DatasetID: g.VrtID, Version: version,
				Action: catalog.ActionDatasetRegeneration, ActorID: g.RequestedBy, Changes: changes}); err != nil {
				return err
			}
		}
		n, err := q.CompleteVRTJob(ctx, store.CompleteVRTJobParams{ID: job.ID, Attempt: job.Attempts})
		if err == nil && n == 0 {
			err = errLostJob
		}
		if err == nil && complete != nil {
			err = complete(ctx, tx)
		}
		if err != nil {
			return err
		}
		return q.SetVRTStatus(ctx, g.VrtID)
	})
}

// stillIncluded checks, at the commit, that every source a generation used is still there and
// may still be included.
func stillIncluded(ids []uuid.UUID, now []store.LockVRTBuildSourcesRow) error {
	refusal := map[uuid.UUID]string{}
	for _, row := range now {
		refusal[row.ID] = cmp.Or(row.Refusal, "ok")
	}
	for _, id := range ids {
		switch why := refusal[id]; why {
		case "ok":
		case "":
			return &ImportError{Msg: fmt.Sprintf("source %s was deleted while the generation ran: it is not served; the next generation leaves the source out", id)}
		default:
			return &ImportError{Msg: fmt.Sprintf("source %s changed while the generation ran (%s): it is not served; the next generation leaves it out",
				id, vrtRefusals[why])}
		}
	}
	return nil
}
