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
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"meridian/internal/db"
	"meridian/store"
)

// Options are what the caller chose at commit.
type Options struct {
	Title      string `json:"title,omitempty"`
	Summary    string `json:"summary,omitempty"`
	LayerName  string `json:"layer_name,omitempty"`
	Visibility string `json:"visibility,omitempty"`
	SourceSRID int    `json:"source_srid,omitempty"`
}

// Importer loads a staged file into a new table of the data schema with ogr2ogr and creates
// its catalog record.
type Importer struct {
	Pool    *pgxpool.Pool
	Q       *store.Queries
	Log     *slog.Logger
	DataDir string
}

// ImportError is a failure the caller can act on; its message is shown as the job's error.
type ImportError struct{ Msg string }

func (e *ImportError) Error() string { return e.Msg }

// Run performs job id from start to finish. Every failure leaves no table behind and keeps the
// staging file, so the job can be retried.
func (im *Importer) Run(ctx context.Context, id uuid.UUID) error {
	job, err := im.Q.GetIngestJob(ctx, id)
	if err != nil {
		return err
	}
	var opts Options
	_ = json.Unmarshal(job.Options, &opts)
	if err := im.Q.StartIngestJob(ctx, id); err != nil {
		return err
	}
	table := "ds_" + strings.ReplaceAll(uuid.NewString(), "-", "")
	res, warns, err := im.load(ctx, job, opts, table)
	if err != nil {
		im.drop(table)
		msg, retry := "the import failed; see the server log", true
		var ie *ImportError
		if errors.As(err, &ie) {
			msg = ie.Msg
		}
		if ctx.Err() != nil {
			msg, retry = "the import was interrupted; retry it", true
		}
		reason := "the staging file is kept; fix the cause and retry"
		im.Log.Warn("import failed", "job_id", id, "err", err)
		return im.Q.FailIngestJob(context.WithoutCancel(ctx), store.FailIngestJobParams{ID: id, ErrorMessage: &msg, CanRetry: retry, RetryReason: &reason})
	}
	zero := int64(0)
	if warns == nil {
		warns = []Warning{}
	}
	wj, _ := json.Marshal(warns)
	tj, _ := json.Marshal(res.Temporal)
	if err := im.Q.CompleteIngestJob(ctx, store.CompleteIngestJobParams{ID: id, DatasetID: &res.DatasetID, RowsProcessed: &res.Rows,
		RowsFailed: &zero, Warnings: wj, TemporalParseErrors: tj}); err != nil {
		return err
	}
	// The staging file goes once no other job (a fan-out sibling, a failed one awaiting retry) needs it.
	if busy, err := im.Q.OtherJobsNeedStaging(ctx, store.OtherJobsNeedStagingParams{StagingPath: job.StagingPath, ID: id}); err == nil && !busy {
		return os.RemoveAll(filepath.Dir(deref(job.StagingPath)))
	}
	return nil
}

func (im *Importer) drop(table string) {
	_, err := im.Pool.Exec(context.Background(), "DROP TABLE IF EXISTS "+pgx.Identifier{"data", table}.Sanitize())
	if err != nil {
		im.Log.Warn("could not drop the table of a failed import", "table", table, "err", err)
	}
}

var progressMark = regexp.MustCompile(`(\d+)\.\.\.`)

func (im *Importer) load(ctx context.Context, job store.CatalogIngestJob, opts Options, table string) (result, []Warning, error) {
	path := deref(job.StagingPath)
	if _, err := os.Stat(path); err != nil {
		return result{}, nil, &ImportError{Msg: "the staging file is gone; upload the file again"}
	}
	_ = im.Q.SetIngestJobStep(ctx, store.SetIngestJobStepParams{ID: job.ID, CurrentStep: ptr("ogr2ogr"), Progress: ptr(0.0)})
	ext := strings.ToLower(filepath.Ext(path))
	target, password := db.OGRConnection(im.Pool)
	args := append([]string{"-f", "PostgreSQL", target, sourcePath(path)}, openOptions(path)...)
	var warns []Warning
	var expected int64 = -1 // the layer's feature count, when GDAL knows it cheaply
	// Source fields named like the reserved columns, or too long for PostgreSQL, are renamed
	// through an OGR SQL projection; otherwise the layer is copied as it is. (CSV coordinates are
	// consumed by the driver's open options, so CSV fields keep the plain path.)
	if ext != ".csv" {
		if layers, _, err := Inspect(ctx, path); err == nil {
			if layer, err := chooseLayer(layers, opts.LayerName); err == nil {
				expected = layer.FeatureCount
				names, reserved, shortened := planColumns(layer.Columns)
				if warns = warnings(reserved, shortened); len(warns) > 0 {
					args = append(args, "-sql", renameSQL(layer.Name, layer.Columns, names), "-dialect", "OGRSQL")
				}
			}
		}
	}
	if len(warns) == 0 && opts.LayerName != "" {
		args = append(args, opts.LayerName)
	}
	args = append(args, "-nln", table, "-lco", "SCHEMA=data", "-lco", "GEOMETRY_NAME=geom", "-lco", "FID=gid",
		"-lco", "SPATIAL_INDEX=GIST", "-lco", "LAUNDER=YES", "-nlt", "PROMOTE_TO_MULTI", "-t_srs", "EPSG:4326",
		"--config", "PG_USE_COPY", "YES", "-progress", "-gt", "65536")
	if ext == ".csv" {
		srs := "EPSG:4326"
		if opts.SourceSRID > 0 {
			srs = "EPSG:" + strconv.Itoa(opts.SourceSRID)
		}
		args = append(args, "-s_srs", srs, "-oo", "X_POSSIBLE_NAMES=lon,lng,long,longitude,x", "-oo", "Y_POSSIBLE_NAMES=lat,latitude,y",
			"-oo", "GEOM_POSSIBLE_NAMES=wkt,geometry,geom,the_geom", "-oo", "KEEP_GEOM_COLUMNS=NO", "-oo", "AUTODETECT_TYPE=YES",
			// An empty cell is a missing value, not an empty string.
			"-oo", "EMPTY_STRING_AS_NULL=YES")
	}
	cmd := exec.CommandContext(ctx, "ogr2ogr", args...)
	cmd.Env = append(os.Environ(), "PGPASSWORD="+password, "CPL_LOG=/dev/null")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return result{}, nil, err
	}
	if err := cmd.Start(); err != nil {
		return result{}, nil, err
	}
	// ogr2ogr prints 0...10...20 where the driver knows the feature count; forward it as progress.
	sc := bufio.NewScanner(stdout)
	sc.Split(scanDots)
	for sc.Scan() {
		if m := progressMark.FindStringSubmatch(sc.Text() + "..."); m != nil {
			pct, _ := strconv.Atoi(m[1])
			step := store.SetIngestJobStepParams{ID: job.ID, CurrentStep: ptr("ogr2ogr"), Progress: ptr(float64(pct) / 100 * 0.9)}
			if expected >= 0 {
				step.RowsProcessed = ptr(expected * int64(pct) / 100)
			}
			_ = im.Q.SetIngestJobStep(ctx, step)
		}
	}
	if err := cmd.Wait(); err != nil {
		return result{}, nil, &ImportError{Msg: ogrMessage(stderr.String(), filepath.Base(path))}
	}
	_ = im.Q.SetIngestJobStep(ctx, store.SetIngestJobStepParams{ID: job.ID, CurrentStep: ptr("finalize"), Progress: ptr(0.95)})
	res, err := im.finalize(ctx, job, opts, table, ext)
	return res, warns, err
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
