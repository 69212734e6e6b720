package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"meridian/internal/apperr"
	"meridian/internal/audit"
	"meridian/internal/auth"
	"meridian/internal/blob"
	"meridian/internal/catalog"
	"meridian/internal/gate"
	"meridian/internal/gdalcmd"
	"meridian/internal/settings"
	"meridian/store"
)

// Jobs is the ingestion workflow callers drive: upload, commit, status, retry.
type Jobs struct {
	Pool               *pgxpool.Pool
	Q                  *store.Queries
	Queue              *Queue
	Storage            blob.Storage
	DataDir            string
	MaxUpload          int64
	PresignedThreshold int64 // above it presigned uploads are multipart
	PresignedPartSize  int64
	Stall              time.Duration // see Importer.Stall
	Catalog            *catalog.Service
	Settings           settings.Reader // the upload limits an admin sets (Limits)
	Bounds             Bounds          // what a staged file may expand to (Prepare)
	GDAL               gdalcmd.Limits  // the kernel limits of the GDAL tools a look at a file runs
	// Previews bound the GDAL looks at staged files running at once (previews, and the check a
	// commit makes), in all and per user.
	Previews *gate.Gate
	Staging  *Staging     // the staging quotas
	Objects  blob.Objects // where raster datasets' COGs are stored
}

// upload stages a file for a new pending job owned by the caller; with reuploadOf, a reupload
// job of that dataset, which the caller was found to may replace.
func (j *Jobs) upload(ctx context.Context, p auth.Principal, filename string, r io.Reader, reuploadOf *uuid.UUID) (store.CatalogIngestJob, error) {
	if !p.Can(auth.CapUpload) {
		return store.CatalogIngestJob{}, apperr.Forbidden("uploading needs the upload capability")
	}
	limits, err := j.uploadLimits(ctx, p, reuploadOf)
	if err != nil {
		return store.CatalogIngestJob{}, err
	}
	if err := limits.admit(filename, -1); err != nil {
		return store.CatalogIngestJob{}, err
	}
	id := uuid.New()
	// The staging quota is claimed chunk by chunk while the file is written, so an upload that
	// would break it stops there instead of filling the disk first.
	c, err := j.Staging.begin(ctx, p.UserID, p.IsAdmin())
	if err == nil {
		err = j.Q.OpenStagingArea(ctx, store.OpenStagingAreaParams{JobID: id, OwnerID: &p.UserID})
	}
	if err != nil {
		return store.CatalogIngestJob{}, err
	}
	path, size, err := Stage(j.DataDir, id, filename, r, limits.MaxBytes, c.take)
	if err == nil {
		err = limits.admit(filename, size) // the storage quota, now that the size is known
	}
	if err == nil {
		err = c.record(ctx, id)
	}
	var job store.CatalogIngestJob
	if err == nil {
		job, err = j.Q.CreateIngestJob(ctx, store.CreateIngestJobParams{ID: id, SourceFilename: &filename, StagingPath: &path, CreatedBy: &p.UserID,
			ReuploadOf: reuploadOf})
	}
	if err != nil {
		c.drop()
		_ = j.Staging.remove(context.WithoutCancel(ctx), id) // no orphaned files
	}
	return job, err
}

// get returns a job to its creator or an admin; to anyone else it does not exist.
func (j *Jobs) get(ctx context.Context, p auth.Principal, id uuid.UUID) (store.CatalogIngestJob, error) {
	job, err := j.Q.GetIngestJob(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && !p.IsAdmin() && (job.CreatedBy == nil || *job.CreatedBy != p.UserID)) {
		return store.CatalogIngestJob{}, apperr.NotFound("job %s not found", id)
	}
	return job, err
}

// open prepares a job's staged file (signature, archive members, what it expands to) and lists
// its layers, with counts and extents when full, for p. A file that is refused answers 422, or
// 413 for one that expands past a bound; a server already running as many looks at files as
// it allows (in all, or for p) answers 503 with Retry-After.
func (j *Jobs) open(ctx context.Context, p auth.Principal, job store.CatalogIngestJob, full bool) (Source, []Layer, error) {
	if job.StagingPath == nil {
		// A presigned upload not completed yet: nothing to read, and nothing wrong with the job.
		return Source{}, nil, apperr.Conflict("the upload of job %s is not complete yet; complete it before previewing or committing", job.ID)
	}
	release, err := j.Previews.Enter(ctx, p.UserID.String())
	if err != nil {
		return Source{}, nil, err
	}
	defer release()
	b := j.Bounds
	if dir, ok := stagingDir(*job.StagingPath); ok && job.CreatedBy != nil {
		owner := *job.CreatedBy
		b.Reserve = func(n int64) (func(bool), error) { return j.Staging.reserve(ctx, dir, owner, p.IsAdmin(), n) }
	}
	src, err := Prepare(*job.StagingPath, b)
	if err != nil {
		return src, nil, err
	}
	var layers []Layer
	if src.Raster {
		layers, err = rasterLayer(ctx, j.GDAL, src, j.Bounds.Raster)
	} else {
		layers, err = Inspect(ctx, j.GDAL, src, full)
	}
	var ie *ImportError
	if errors.As(err, &ie) {
		return src, nil, apperr.Unprocessable("%s", ie.Msg)
	}
	return src, layers, err
}

// refuse ends a pending job whose file was refused, with the reason, and returns that refusal.
// No retry can change the file, so it goes with the refusal: nothing refused (hostile archives
// included) stays on disk, and the job is not retryable (its staging file is gone). Other errors
// (a full staging quota included: the file is not at fault) leave the job as it was.
func (j *Jobs) refuse(ctx context.Context, id uuid.UUID, err error) error {
	if k := apperr.KindOf(err); (k == apperr.KindUnprocessable || k == apperr.KindTooLarge) && !errors.Is(err, errQuota) {
		msg := err.Error()
		var ae *apperr.Error
		if errors.As(err, &ae) {
			msg = ae.Detail
		}
		n, ferr := j.Q.RefuseIngestJob(ctx, store.RefuseIngestJobParams{ID: id, ErrorMessage: &msg})
		if ferr != nil {
			return ferr
		}
		if n == 1 { // this call ended the job: no run of it can be reading the file
			_ = j.Staging.remove(ctx, id)
		}
	}
	return err
}

// Preview is what a staged file will import as.
type Preview struct {
	Job    Job
	Format string // the GDAL driver that reads it
	Layers []Layer
	// Samples are each layer's first rows, keyed by the names the import gives the columns.
	Samples [][]map[string]any
}

// Preview lists every layer of the staged file with its columns, CRS, count, sample rows and
// the coordinate or WKT columns its geometry comes from, under the names the import will give
// the columns.
func (j *Jobs) Preview(ctx context.Context, p auth.Principal, id uuid.UUID, samples int) (Preview, error) {
	job, err := j.get(ctx, p, id)
	if err != nil {
		return Preview{}, err
	}
	src, layers, err := j.open(ctx, p, job, true)
	if err != nil {
		return Preview{}, err
	}
	pv := Preview{Job: jobOf(job), Format: src.Driver, Layers: layers, Samples: make([][]map[string]any, len(layers))}
	if src.Raster {
		pv.Samples[0] = []map[string]any{}
		return pv, nil
	}
	for i, l := range layers {
		names, _, _ := planColumns(l.Columns)
		// A layer GDAL cannot sample still previews its schema.
		sample, _ := Samples(ctx, j.GDAL, src, l.Name, len(layers) > 1, samples)
		pv.Samples[i] = renameSamples(sample, l.Columns, names)
		for k := range l.Columns {
			layers[i].Columns[k].Name = names[k]
		}
		layers[i].Detected = detectGeometryColumns(src, l, names)
	}
	return pv, nil
}

// chooseLayer finds the layer a commit names; without a name it is the first (the contract's
// rule for multi-layer files; Commit Fan Out imports them all).
func chooseLayer(layers []Layer, name string) (Layer, error) {
	if name == "" {
		return layers[0], nil
	}
	for _, l := range layers {
		if l.Name == name {
			return l, nil
		}
	}
	return Layer{}, apperr.Unprocessable("the file has no layer %q", name)
}

// commit records the import options and queues the import, once. The file is inspected first, so
// a file GDAL cannot read, an empty one or an ambiguous layer choice is refused at once.
func (j *Jobs) commit(ctx context.Context, p auth.Principal, id uuid.UUID, opts Options) (store.CatalogIngestJob, error) {
	cur, err := j.get(ctx, p, id)
	if err != nil {
		return cur, err
	}
	if opts.Mode != "" && opts.Mode != "create" {
		// Writing into an existing dataset is Reupload's work (its version, schema check, map
		// layers and attribute edits); done here it would skip all of them. The job stays pending.
		return cur, apperr.Unprocessable("mode %q is not done by Commit Import, which always creates a new dataset: to %s the data of "+
			"an existing dataset, upload the file with Reupload Dataset (POST /datasets/{dataset_id}/reupload) and commit it with "+
			"Reupload Commit; or commit this job with mode create", opts.Mode, opts.Mode)
	}
	if err := notReupload(cur); err != nil {
		return cur, err
	}
	if cur.Status != "pending" || cur.Committed {
		return cur, apperr.Conflict("job %s was already processed: it was committed before or is no longer pending", id)
	}
	if opts.RecordStatus != "" {
		if err := catalog.KnownStatus(opts.RecordStatus); err != nil {
			return cur, err
		}
	}
	src, layers, err := j.open(ctx, p, cur, false)
	if err != nil {
		return cur, j.refuse(ctx, id, err)
	}
	if src.Raster {
		if opts, err = checkRasterCommit(opts, *layers[0].Raster); err != nil {
			return cur, err
		}
		return j.enqueue(ctx, id, opts)
	}
	if r := opts.Raster; r.Compression != "" || r.Resampling != "" || r.NoData != "" {
		return cur, apperr.Unprocessable("compression, resampling and nodata_override apply to raster imports; %s is a vector file", src.Name)
	}
	layer, err := chooseLayer(layers, opts.LayerName)
	if err != nil {
		return cur, err
	}
	opts.LayerName = layer.Name
	if opts.SourceSRID == 0 {
		opts.SourceSRID = layer.SRID
	}
	if opts, err = geometryColumns(src, layer, opts); err != nil {
		return cur, err
	}
	return j.enqueue(ctx, id, opts)
}

func (j *Jobs) enqueue(ctx context.Context, id uuid.UUID, opts Options) (store.CatalogIngestJob, error) {
	raw, _ := json.Marshal(opts)
	var job store.CatalogIngestJob
	err := pgx.BeginFunc(ctx, j.Pool, func(tx pgx.Tx) error {
		var err error
		job, err = j.Q.WithTx(tx).CommitIngestJob(ctx, store.CommitIngestJobParams{ID: id, Options: raw})
		if errors.Is(err, pgx.ErrNoRows) {
			return apperr.Conflict("job %s was already processed: it was committed before or is no longer pending", id)
		}
		if err != nil {
			return err
		}
		return j.Queue.Enqueue(ctx, tx, id)
	})
	return job, err
}

// FanOutChoice names a layer to import and, optionally, its dataset title.
type FanOutChoice struct{ Layer, Title string }

// fanOut imports every chosen layer (all when none are chosen) as its own dataset, each in a job
// of its own; the upload's job ends as fanned_out.
func (j *Jobs) fanOut(ctx context.Context, p auth.Principal, id uuid.UUID, choices []FanOutChoice, base Options) ([]store.CatalogIngestJob, []string, error) {
	cur, err := j.get(ctx, p, id)
	if err != nil {
		return nil, nil, err
	}
	if err := notReupload(cur); err != nil {
		return nil, nil, err
	}
	if cur.Status != "pending" || cur.Committed {
		return nil, nil, apperr.Conflict("job %s was already processed: it was committed before or is no longer pending", id)
	}
	_, layers, err := j.open(ctx, p, cur, false)
	if err != nil {
		return nil, nil, j.refuse(ctx, id, err)
	}
	if len(choices) == 0 {
		for _, l := range layers {
			choices = append(choices, FanOutChoice{Layer: l.Name})
		}
	}
	var children []store.CatalogIngestJob
	var names []string
	err = pgx.BeginFunc(ctx, j.Pool, func(tx pgx.Tx) error {
		q := j.Q.WithTx(tx)
		if n, err := q.FanOutIngestJob(ctx, id); err != nil || n == 0 {
			if err == nil {
				err = apperr.Conflict("job %s was already processed: it was committed before or is no longer pending", id)
			}
			return err
		}
		for _, c := range choices {
			layer, err := chooseLayer(layers, c.Layer)
			if err != nil {
				return err
			}
			opts := base
			opts.LayerName, opts.Title, opts.SourceSRID = layer.Name, c.Title, layer.SRID
			if opts.Title == "" {
				opts.Title = fileTitle(base.Title, deref(cur.SourceFilename)) + ": " + layer.Name
			}
			raw, _ := json.Marshal(opts)
			child, err := q.CreateIngestJob(ctx, store.CreateIngestJobParams{ID: uuid.New(), SourceFilename: cur.SourceFilename,
				StagingPath: cur.StagingPath, CreatedBy: cur.CreatedBy})
			if err != nil {
				return err
			}
			if child, err = q.CommitIngestJob(ctx, store.CommitIngestJobParams{ID: child.ID, Options: raw}); err != nil {
				return err
			}
			if err := j.Queue.Enqueue(ctx, tx, child.ID); err != nil {
				return err
			}
			children = append(children, child)
			names = append(names, layer.Name)
		}
		return nil
	})
	return children, names, err
}

// retry queues a failed job again with its kept staging file, whatever made it fail and however
// often it failed before (interface spec 3.1): the cause may be gone (a fixed server, freed disk)
// and only the caller can tell. A job refused at commit was never queued: it is pending again, to
// be committed. Audited as job.retry.
func (j *Jobs) retry(ctx context.Context, p auth.Principal, id uuid.UUID, c auth.Client) (store.CatalogIngestJob, error) {
	cur, err := j.get(ctx, p, id)
	if err != nil {
		return cur, err
	}
	if cur.Status != "failed" {
		return cur, apperr.Conflict("only failed jobs can be retried; this one is %s", cur.Status)
	}
	if !retryable(cur) {
		return cur, apperr.Conflict("the staging file of this job is gone; upload the file again")
	}
	var job store.CatalogIngestJob
	err = pgx.BeginFunc(ctx, j.Pool, func(tx pgx.Tx) error {
		q := j.Q.WithTx(tx)
		var err error
		job, err = q.RequeueIngestJob(ctx, id)
		if errors.Is(err, pgx.ErrNoRows) {
			return apperr.Conflict("only failed jobs can be retried")
		}
		if err != nil {
			return err
		}
		audit.Record(ctx, q, nil, audit.Entry{ActorID: p.UserID, ActorDisplay: p.Username, Action: "job.retry", ResourceType: "job",
			ResourceID: id.String(), IP: c.IP, UA: c.UserAgent, Detail: map[string]any{"error": deref(cur.ErrorMessage),
				"source_filename": deref(cur.SourceFilename)}})
		if !job.Committed {
			return nil
		}
		return j.Queue.Enqueue(ctx, tx, id)
	})
	return job, err
}

// CleanupStale fails running jobs that have given no sign of life for olderThanMinutes (at
// least the stall time, so a healthy run is never caught) and drops their partial tables; their
// staging files are kept for a retry. It also cancels presigned uploads that expired without
// being completed (their received parts are deleted). dryRun only reports them.
func (j *Jobs) CleanupStale(ctx context.Context, olderThanMinutes int, dryRun bool) (Cleanup, error) {
	silence := max(time.Duration(olderThanMinutes)*time.Minute, j.Stall)
	var c Cleanup
	var err error
	if dryRun {
		c.Running, err = j.Q.ListStalledIngestJobs(ctx, silence.Seconds())
	} else {
		c.Running, err = failStalled(ctx, j.Pool, j.Objects, silence)
	}
	if err != nil {
		return c, err
	}
	if c.Pending, err = j.Q.ExpiredPresignedJobs(ctx); err != nil || dryRun {
		return c, err
	}
	if len(c.Pending) > 0 {
		if err := j.Q.CancelExpiredPresignedJobs(ctx, c.Pending); err != nil {
			return c, err
		}
		for _, id := range c.Pending {
			c.StagedConsidered++
			if j.Staging.remove(ctx, id) == nil {
				c.StagedReaped++
			} else {
				c.StagedFailures++
			}
		}
	}
	return c, nil
}

// Cleanup is what CleanupStale did (or, in a dry run, would do).
type Cleanup struct {
	Running, Pending []uuid.UUID // stalled runs failed; presigned uploads never completed, cancelled
	StagedConsidered int         // staging directories of cancelled jobs looked at
	StagedReaped     int         // ... and removed
	StagedFailures   int         // ... that could not be removed
}

// failStalled fails the running jobs silent for longer than silence and drops the tables of
// their runs, and the COG a raster run may have stored before its record (none is written for a
// failed job). Every replica may call it: the UPDATE hands each job to one caller.
func failStalled(ctx context.Context, pool *pgxpool.Pool, objects blob.Objects, silence time.Duration) ([]uuid.UUID, error) {
	var ids []uuid.UUID
	var keys []string
	// One transaction: a job is only seen failed (and retryable) once its partial table is gone.
	// A table still locked by a run that is alive after all makes the sweep give up until its
	// next round rather than wait behind it.
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL lock_timeout = '5s'"); err != nil {
			return err
		}
		rows, err := store.New(tx).FailStalledIngestJobs(ctx, silence.Seconds())
		if err != nil {
			return err
		}
		ids = make([]uuid.UUID, len(rows))
		for i, r := range rows {
			ids[i] = r.ID
			keys = append(keys, blob.RasterKey(rasterDatasetID(r.ID, r.Attempts), 1))
			if err := dropTable(ctx, tx, TableName(r.ID, r.Attempts)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		if objects != nil {
			_ = objects.Delete(ctx, k) // a key never stored is no error; a failed delete is only clutter
		}
	}
	return ids, nil
}

// dropTable removes a run's table of the data schema, if it got that far.
func dropTable(ctx context.Context, db store.DBTX, table string) error {
	_, err := db.Exec(ctx, "DROP TABLE IF EXISTS "+pgx.Identifier{"data", table}.Sanitize())
	return err
}

// fileTitle is the title an upload gets when the caller gives none: the file's name without
// its extension.
func fileTitle(title, filename string) string {
	if title != "" {
		return title
	}
	return strings.TrimSuffix(filename, filepath.Ext(filename))
}

// geometryColumns checks the coordinate or WKT columns a commit names against the layer (a name
// as the file has it or as it will be stored) and records x and y under their stored names,
// the WKT column under the file's. They override detection, for CSVs and spreadsheets only.
func geometryColumns(src Source, layer Layer, o Options) (Options, error) {
	if o.XColumn == "" && o.YColumn == "" && o.GeomColumn == "" {
		return o, nil
	}
	switch {
	case src.Driver != "CSV" && src.Driver != "XLSX":
		return o, apperr.Unprocessable("x_column, y_column and geom_column apply to CSV files and spreadsheets; %s has a geometry of its own", src.Name)
	case (o.XColumn == "") != (o.YColumn == ""):
		return o, apperr.Unprocessable("x_column and y_column are named together")
	case o.XColumn != "" && o.GeomColumn != "":
		return o, apperr.Unprocessable("name either x_column and y_column or geom_column, not both")
	case o.GeomColumn != "" && src.Driver != "CSV":
		return o, apperr.Unprocessable("geom_column (WKT) applies to CSV files")
	case strings.ContainsAny(o.GeomColumn, ",*"):
		return o, apperr.Unprocessable("geom_column %q: a WKT column whose name holds a comma or * cannot be read; rename it in the file", o.GeomColumn)
	}
	names, _, _ := planColumns(layer.Columns)
	find := func(param, name string) (source, stored string, err error) {
		for i, f := range layer.Columns {
			if f.Name == name || names[i] == name {
				return f.Name, names[i], nil
			}
		}
		return "", "", apperr.Unprocessable("%s %q is not a column of %s (its columns: %s)", param, name, layer.Name, strings.Join(names, ", "))
	}
	var err error
	if o.XColumn != "" {
		if _, o.XColumn, err = find("x_column", o.XColumn); err != nil {
			return o, err
		}
		if _, o.YColumn, err = find("y_column", o.YColumn); err != nil {
			return o, err
		}
	}
	if o.GeomColumn != "" {
		if o.GeomColumn, _, err = find("geom_column", o.GeomColumn); err != nil {
			return o, err
		}
	}
	return o, nil
}
