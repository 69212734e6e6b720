package ingest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"meridian/internal/analysis"
	"meridian/internal/blob"
	"meridian/internal/catalog"
	"meridian/internal/gdalcmd"
	"meridian/store"
)

// Options are what the caller chose at commit.
type Options struct {
	Title      string `json:"title,omitempty"`
	Summary    string `json:"summary,omitempty"`
	LayerName  string `json:"layer_name,omitempty"`
	Visibility string `json:"visibility,omitempty"`
	// RecordStatus is the new record's publication status; empty: published.
	RecordStatus string `json:"record_status,omitempty"`
	SourceSRID   int    `json:"source_srid,omitempty"` // the CRS the coordinates are in (srid_override wins over the file's)
	// XColumn and YColumn name the coordinate columns (as stored: planned names), overriding
	// detection; GeomColumn names a CSV's WKT column as the file has it.
	XColumn    string `json:"x_column,omitempty"`
	YColumn    string `json:"y_column,omitempty"`
	GeomColumn string `json:"geom_column,omitempty"`
	// Vintage is the data's temporal extent, stored on the new dataset as its data vintage.
	VintageStart *time.Time `json:"vintage_start,omitempty"`
	VintageEnd   *time.Time `json:"vintage_end,omitempty"`
	// Mode is what the commit asked for: only create (or nothing) is done here.
	Mode string `json:"-"`
	// Raster are the choices of a raster commit (compression, resampling, nodata, CRS override).
	Raster RasterOptions `json:"raster,omitempty"`
	// Analysis, when set, makes the job materialize an analysis instead of loading a file; the
	// new dataset records DerivedFrom as its provenance.
	Analysis    *analysis.Spec  `json:"analysis,omitempty"`
	DerivedFrom json.RawMessage `json:"derived_from,omitempty"`
	// Reupload are the choices of a reupload commit (reupload jobs only).
	Reupload *ReuploadOptions `json:"reupload,omitempty"`
}

// Importer loads a staged file into a new table of the data schema with ogr2ogr and creates
// its catalog record.
type Importer struct {
	Pool    *pgxpool.Pool
	Q       *store.Queries
	Log     *slog.Logger
	DataDir string
	Bounds  Bounds         // what a staged file may expand to (Prepare)
	GDAL    gdalcmd.Limits // the kernel limits of ogrinfo and ogr2ogr
	Role    ImportRole     // the database role ogr2ogr writes as
	Stall   time.Duration  // a run silent for this long is queued again or failed (Queue.sweep)
	// Rescues is how many times a job whose run went silent is queued again for any replica
	// before it is failed instead; 0 fails it at once.
	Rescues int
	Staging *Staging           // staging accounting and expiry; nil: files are only removed
	Objects blob.Objects       // where raster datasets' COGs are stored
	Refs    catalog.ColumnRefs // map layers' references to columns a reupload removes
	// AnalysisTimeout bounds the statements of one analysis materialization.
	AnalysisTimeout time.Duration
	// Finish, when set, runs in the transaction that writes a new dataset's record and completes
	// its job (a STAC import keeps the item's metadata there, or moves the data into the dataset
	// an earlier import of the item made); after, when it returns one, runs once that commits.
	Finish func(ctx context.Context, tx pgx.Tx, job, dataset uuid.UUID) (after func(context.Context), err error)
	// requeue queues an import again inside tx (set by NewQueue; nil: never handed back).
	requeue func(ctx context.Context, tx pgx.Tx, job uuid.UUID) error
	// RetireGrace is how long the COG of a VRT generation no longer served is kept (a tile or a
	// download that opened it just before it was replaced still reads it whole).
	RetireGrace time.Duration
}

// finish runs the Finish hook, if any, inside the record's transaction.
func (im *Importer) finish(ctx context.Context, tx pgx.Tx, job, dataset uuid.UUID, after *func(context.Context)) error {
	if im.Finish == nil {
		return nil
	}
	f, err := im.Finish(ctx, tx, job, dataset)
	*after = f
	return err
}

// ImportError is a failure the caller can act on; its message is shown as the job's error.
// Retry says whether running the import again on the same file could end differently.
type ImportError struct {
	Msg   string
	Retry bool
}

func (e *ImportError) Error() string { return e.Msg }

// errLostJob stops a run whose job was failed as stalled behind its back.
var errLostJob = errors.New("the job was failed as stalled while this run was still going")

// importTime bounds one import; a 500 MB GeoPackage takes minutes, not hours.
const importTime = 2 * time.Hour

// TableName is the table a run of a job writes: named from the job and the run, so every table
// an import creates is known to it and to the sweeper.
func TableName(job uuid.UUID, attempt int32) string {
	return fmt.Sprintf("ds_%s_%d", strings.ReplaceAll(job.String(), "-", ""), attempt)
}

// Run performs job id from start to finish, once: a run that cannot claim the job (it runs
// elsewhere or has ended) does nothing. complete runs inside the transaction that creates the
// record and completes the job, so the queue's own bookkeeping commits with them. Every failure
// drops the run's table and keeps the staging file, so the job can be retried.
func (im *Importer) Run(ctx context.Context, id uuid.UUID, complete func(context.Context, pgx.Tx) error) error {
	job, err := im.Q.ClaimIngestJob(ctx, store.ClaimIngestJobParams{ID: id, StallSeconds: im.Stall.Seconds()})
	if errors.Is(err, pgx.ErrNoRows) {
		im.Log.Info("import not claimed: it runs elsewhere or has ended", "job_id", id)
		return nil
	}
	if err != nil {
		return err
	}
	var opts Options
	_ = json.Unmarshal(job.Options, &opts)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	beatCtx, stopBeat := context.WithCancel(ctx)
	beating := make(chan struct{})
	go func() { im.heartbeat(beatCtx, job, cancel); close(beating) }()
	table := TableName(id, job.Attempts)
	res, err := im.load(ctx, job, opts, table, complete)
	// The beat ends with the load: a beat after the job completed finds it no longer running and
	// would cancel ctx as a lost job's, abandoning the staging clean-up below (found by
	// TestScale/endurance: staging directories of completed jobs left behind).
	stopBeat()
	<-beating
	if err != nil && im.completedBy(context.WithoutCancel(ctx), job) {
		// The finalize transaction committed and an error came after it (a context cancelled by
		// a stop while COMMIT's answer was on its way): the job is complete, and its table is
		// the dataset's, which the failure path below would drop.
		im.Log.Warn("import complete, though its run ended with an error after the commit", "job_id", id, "err", err)
		err = nil
	}
	if err != nil {
		im.drop(table)
		if errors.Is(context.Cause(ctx), errLostJob) {
			im.Log.Warn("import abandoned: its job was failed as stalled", "job_id", id)
			return nil
		}
		// Interrupted because this server is stopping (not by the import's own time limit): the
		// job goes back to the queue for another replica instead of failing.
		if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) && im.handBack(context.WithoutCancel(ctx), job) {
			im.Log.Info("import handed back to the queue: its server is stopping", "job_id", id)
			return nil
		}
		msg, retry := "the import failed; see the server log", true
		var ie *ImportError
		if errors.As(err, &ie) {
			msg, retry = ie.Msg, ie.Retry
		}
		if ctx.Err() != nil {
			msg, retry = "the import was interrupted; retry it", true
		}
		var reason *string
		if retry {
			reason = ptr("the staging file is kept; retry once the cause is fixed")
		}
		im.Log.Warn("import failed", "job_id", id, "err", err)
		return im.Q.FailIngestJob(context.WithoutCancel(ctx), store.FailIngestJobParams{ID: id, Attempt: job.Attempts,
			ErrorMessage: &msg, CanRetry: retry, RetryReason: reason})
	}
	im.Log.Info("import complete", "job_id", id, "dataset_id", res.DatasetID, "rows", res.Rows)
	if job.StagingPath == nil { // an analysis: nothing was staged
		return nil
	}
	// The staging file goes once no other job (a fan-out sibling, a failed one awaiting retry) needs
	// it, even if the server is stopping: the job is complete, nothing else would remove it.
	ctx = context.WithoutCancel(ctx)
	if busy, err := im.Q.OtherJobsNeedStaging(ctx, store.OtherJobsNeedStagingParams{StagingPath: job.StagingPath, ID: id}); err == nil && !busy {
		if dir, ok := stagingDir(deref(job.StagingPath)); ok && im.Staging != nil {
			return im.Staging.remove(ctx, dir)
		}
		return os.RemoveAll(filepath.Dir(deref(job.StagingPath)))
	}
	return nil
}

// handBack returns the job of an interrupted run to the queue while it has rescues left
// (Rescues), in one transaction with its River job; false: the job is still the run's to fail.
func (im *Importer) handBack(ctx context.Context, job store.CatalogIngestJob) bool {
	if im.requeue == nil || im.Rescues <= 0 {
		return false
	}
	err := pgx.BeginFunc(ctx, im.Pool, func(tx pgx.Tx) error {
		n, err := store.New(tx).HandBackIngestJob(ctx, store.HandBackIngestJobParams{ID: job.ID, Attempt: job.Attempts, MaxRescues: int32(im.Rescues)})
		if err != nil {
			return err
		}
		if n == 0 {
			return pgx.ErrNoRows
		}
		return im.requeue(ctx, tx, job.ID)
	})
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		im.Log.Warn("could not hand an interrupted import back to the queue", "job_id", job.ID, "err", err)
	}
	return err == nil
}

// completedBy says whether the run of job (its attempt) completed it.
func (im *Importer) completedBy(ctx context.Context, job store.CatalogIngestJob) bool {
	cur, err := im.Q.GetIngestJob(ctx, job.ID)
	return err == nil && cur.Status == "complete" && cur.Attempts == job.Attempts
}

// heartbeat shows the run is alive until ctx ends; a run whose job was taken from it stops.
func (im *Importer) heartbeat(ctx context.Context, job store.CatalogIngestJob, cancel context.CancelCauseFunc) {
	t := time.NewTicker(im.Stall / 6)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			n, err := im.Q.BeatIngestJob(ctx, store.BeatIngestJobParams{ID: job.ID, Attempt: job.Attempts, StallSeconds: im.Stall.Seconds()})
			if err == nil && n == 0 {
				// A beat that waited on the row lock of this run's own finalize transaction finds
				// the job complete: nothing was lost, and cancelling would fail what follows the
				// commit (the staging clean-up: TestScale/endurance found one left in 941).
				if im.completedBy(ctx, job) {
					return
				}
				cancel(errLostJob)
				return
			}
		}
	}
}

func (im *Importer) drop(table string) {
	if err := dropTable(context.Background(), im.Pool, table); err != nil {
		im.Log.Warn("could not drop the table of a failed import", "table", table, "err", err)
	}
}

var progressMark = regexp.MustCompile(`(\d+)\.\.\.`)

func (im *Importer) load(ctx context.Context, job store.CatalogIngestJob, opts Options, table string, complete func(context.Context, pgx.Tx) error) (result, error) {
	if opts.Analysis != nil {
		return im.loadAnalysis(ctx, job, opts, table, complete)
	}
	path := deref(job.StagingPath)
	if _, err := os.Stat(path); err != nil {
		return result{}, &ImportError{Msg: "the staging file is gone; upload the file again"}
	}
	// The commit unpacked and checked the file already (under the staging quota); a retry
	// finds it unpacked too.
	src, err := Prepare(path, im.Bounds)
	if err != nil {
		return result{}, &ImportError{Msg: err.Error()}
	}
	if src.Raster && job.Reupload {
		return result{}, &ImportError{Msg: src.Name + " is a raster: the data of a vector dataset is replaced by a vector file"}
	}
	if src.Raster {
		return im.loadRaster(ctx, job, opts, src, complete)
	}
	// Leftovers of this run's name cannot exist, but a table must never be appended to.
	im.drop(table)
	_ = im.Q.SetIngestJobStep(ctx, store.SetIngestJobStepParams{ID: job.ID, CurrentStep: ptr("ogr2ogr"), Progress: ptr(0.0)})
	layers, err := Inspect(ctx, im.GDAL, src, false)
	if err != nil {
		return result{}, err
	}
	layer, err := chooseLayer(layers, opts.LayerName)
	if err != nil {
		return result{}, &ImportError{Msg: err.Error()}
	}
	args := append([]string{"-f", "PostgreSQL"}, src.openArgs(opts)...)
	// ogr2ogr copies every field as the file has it (values, repeated names numbered by GDAL;
	// types without DBF widths, so an Integer(9) is an integer, not numeric(9,0)), next to key
	// and geometry columns under names no field can have; finalize then gives
	// every column its planned name. Only a source whose names collide once cut to PostgreSQL's
	// 63 bytes is renamed on the way, through an OGR SQL projection.
	names, renamed, collisions := planColumns(layer.Columns)
	warns := warnings(renamed, collisions)
	var positional []string
	if cutCollision(layer.Columns) {
		args = append(args, "-dialect", "OGRSQL", "-sql", renameSQL(layer.Name, layer.Columns, names))
	} else {
		var sel []string
		if sel, positional, err = selectLayer(layer.Name, len(layers) > 1); err != nil {
			return result{}, err
		}
		args = append(args, sel...)
	}
	key, geom := loadColumns(job)
	args = append(args, "-nln", table, "-lco", "SCHEMA=data", "-lco", "GEOMETRY_NAME="+geom, "-lco", "FID="+key,
		"-lco", "SPATIAL_INDEX=GIST", "-lco", "LAUNDER=NO", "-lco", "PRECISION=NO", "-nlt", "PROMOTE_TO_MULTI", "-t_srs", "EPSG:4326",
		"--config", "PG_USE_COPY", "YES", "-progress", "-gt", "65536",
		// GDAL is told of the one table it writes. GDAL 3.6 still scans every geometry table of the
		// database (pg_get_constraintdef on each) as it creates the layer, which fails with "cache
		// lookup failed" when another import or a delete drops a table meanwhile (1 of about 13,500
		// imports in an hour of mixed load, with or without this option): see catalogRace.
		"-doo", "TABLES=data."+table)
	// The source's CRS: the one the caller or the file names, else WGS 84 for a layer that
	// declares none (CSVs, Shapefiles without .prj); a layer with a CRS of its own keeps it.
	switch {
	case opts.SourceSRID > 0:
		args = append(args, "-s_srs", "EPSG:"+strconv.Itoa(opts.SourceSRID))
	case layer.NoCRS || src.Driver == "CSV":
		args = append(args, "-s_srs", "EPSG:4326")
	}
	// Destination, then the source (a path of ours), then the layer when one must be named.
	args = append(append(args, im.Role.conn, src.Path), positional...)
	// A race of GDAL's look at the database catalog with a table dropped meanwhile (another
	// import's or a deletion's) fails the run with "cache lookup failed"; the file is not at
	// fault, so the run goes again (its partial table dropped first), twice at most.
	var stderr string
	for attempt := 1; ; attempt++ {
		stderr, err = im.ogr2ogr(ctx, job, src, layer, args)
		if err == nil || !catalogRace(stderr) || attempt == 3 || ctx.Err() != nil {
			break
		}
		im.Log.Warn("ogr2ogr met a concurrent catalog change; running it again", "job_id", job.ID, "attempt", attempt)
		im.drop(table)
	}
	if err != nil {
		if ctx.Err() != nil {
			return result{}, ctx.Err()
		}
		im.Log.Warn("ogr2ogr failed", "job_id", job.ID, "source", src.String(), "stderr", lastLines(stderr, 20))
		if limit := im.GDAL.Exceeded(err, stderr); limit != "" {
			return result{}, &ImportError{Msg: fmt.Sprintf("the import of %s was stopped: it reached %s", src.Name, limit)}
		}
		// GDAL cannot tell a broken file from a database that went away: a retry may help.
		return result{}, &ImportError{Msg: ogrMessage(stderr, src.Name), Retry: true}
	}
	if s := stderr; s != "" {
		im.Log.Info("ogr2ogr said", "job_id", job.ID, "stderr", lastLines(s, 20))
	}
	_ = im.Q.SetIngestJobStep(ctx, store.SetIngestJobStepParams{ID: job.ID, CurrentStep: ptr("finalize"), Progress: ptr(0.95)})
	if err := im.nameColumns(ctx, table, key, geom, names); err != nil {
		return result{}, err
	}
	return im.finalize(ctx, job, opts, table, src, names, warns, complete)
}

// ogr2ogr runs one import of layer with args, forwarding its progress to the job, and gives back
// what it printed on stderr.
func (im *Importer) ogr2ogr(ctx context.Context, job store.CatalogIngestJob, src Source, layer Layer, args []string) (string, error) {
	runCtx, cancel := context.WithTimeout(ctx, importTime)
	defer cancel()
	cmd, err := gdalcmd.Command(runCtx, im.GDAL, []string{src.Driver, "PostgreSQL"}, []string{"PGPASSWORD=" + im.Role.password}, "ogr2ogr", args...)
	if err != nil {
		return "", err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	// ogr2ogr prints 0...10...20 where the driver knows the feature count; forward it as progress.
	sc := bufio.NewScanner(stdout)
	sc.Split(scanDots)
	for sc.Scan() {
		if m := progressMark.FindStringSubmatch(sc.Text() + "..."); m != nil {
			pct, _ := strconv.Atoi(m[1])
			step := store.SetIngestJobStepParams{ID: job.ID, CurrentStep: ptr("ogr2ogr"), Progress: ptr(float64(pct) / 100 * 0.9)}
			if layer.FeatureCount >= 0 {
				step.RowsProcessed = ptr(layer.FeatureCount * int64(pct) / 100)
			}
			_ = im.Q.SetIngestJobStep(ctx, step)
		}
	}
	err = cmd.Wait()
	return stderr.String(), err
}

// catalogRace tells a run that failed on a catalog entry dropped while PostgreSQL read it.
func catalogRace(stderr string) bool { return strings.Contains(stderr, "cache lookup failed for") }

// lastLines keeps the end of a tool's output for the log.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// scanDots splits ogr2ogr's progress output at each "..." so progress arrives as it happens.
func scanDots(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.Index(data, []byte("...")); i >= 0 {
		return i + 3, data[:i], nil
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// ogrMessage keeps the first ERROR line of ogr2ogr, or says the file could not be read.
func ogrMessage(stderr, file string) string {
	for _, line := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(line, "ERROR") {
			_, msg, _ := strings.Cut(line, ":")
			msg = strings.TrimSpace(msg)
			if len(msg) > 300 {
				msg = msg[:300]
			}
			return fmt.Sprintf("%s could not be imported: %s", file, msg)
		}
	}
	return fmt.Sprintf("%s could not be read as a vector dataset", file)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func ptr[T any](v T) *T { return &v }
