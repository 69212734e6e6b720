package ingest

// Reupload (issue 33): a new version of an existing dataset from a file. The file goes the way of
// an upload (staging, presigned parts, Prepare, Inspect, the River job, ogr2ogr into a table of
// the run's own, the stall sweeper); only the end differs: instead of a new record, the new table
// takes the place of the dataset's table under the same name, in the one transaction that
// rewrites the record and completes the job (Importer.replace).

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/internal/catalog"
	"meridian/internal/features"
	"meridian/store"
)

// ReuploadOptions are a reupload commit's choices, kept with the job's options.
type ReuploadOptions struct {
	// AllowSchemaChange accepts removed columns and changed types; without it they fail the commit
	// (409) and, should the loaded table differ from the preview after all, the run.
	AllowSchemaChange bool `json:"allow_schema_change,omitempty"`
}

// uploadLimits are Limits for an upload; a reupload creates no dataset, so the dataset quota
// does not hold it back (the storage quota does).
func (j *Jobs) uploadLimits(ctx context.Context, p auth.Principal, reuploadOf *uuid.UUID) (Limits, error) {
	l, err := j.Limits(ctx, p)
	if reuploadOf != nil {
		l.RemainingDatasets = nil
	}
	return l, err
}

// notReupload refuses the import operations a reupload job: committed by them it would create a
// dataset instead of replacing one.
func notReupload(job store.CatalogIngestJob) error {
	if job.Reupload {
		return apperr.Conflict("job %s is a reupload of a dataset: preview and commit it with Reupload Preview and Reupload Commit "+
			"(/datasets/{dataset_id}/reupload/{job_id}/...)", job.ID)
	}
	return nil
}

// Reupload stages a replacement file of dataset for a new pending reupload job of p.
func (j *Jobs) Reupload(ctx context.Context, p auth.Principal, dataset uuid.UUID, filename string, r io.Reader) (Job, error) {
	if _, err := j.Catalog.Reuploadable(ctx, p, dataset); err != nil {
		return Job{}, err
	}
	job, err := j.upload(ctx, p, filename, r, &dataset)
	return jobOf(job), err
}

// RequestPresignedReupload creates a pending reupload job of dataset whose file is PUT to the
// URLs answered, as RequestPresigned does for an upload.
func (j *Jobs) RequestPresignedReupload(ctx context.Context, p auth.Principal, dataset uuid.UUID, filename string, size int64) (Presigned, error) {
	if _, err := j.Catalog.Reuploadable(ctx, p, dataset); err != nil {
		return Presigned{}, err
	}
	return j.requestPresigned(ctx, p, filename, size, &dataset)
}

// CompletePresignedReupload assembles the file of a presigned reupload job of dataset.
func (j *Jobs) CompletePresignedReupload(ctx context.Context, p auth.Principal, dataset, id uuid.UUID, parts []PartETag) (Job, error) {
	if _, _, err := j.reuploadJob(ctx, p, dataset, id); err != nil {
		return Job{}, err
	}
	job, err := j.completePresigned(ctx, p, id, parts)
	return jobOf(job), err
}

// reuploadJob is job id, a reupload of dataset, for p who may replace the dataset (404 for a job
// of another dataset, of another user, or no reupload).
func (j *Jobs) reuploadJob(ctx context.Context, p auth.Principal, dataset, id uuid.UUID) (store.CatalogIngestJob, catalog.Dataset, error) {
	d, err := j.Catalog.Reuploadable(ctx, p, dataset)
	if err != nil {
		return store.CatalogIngestJob{}, d, err
	}
	job, err := j.get(ctx, p, id)
	if err == nil && (!job.Reupload || job.DatasetID == nil || *job.DatasetID != dataset) {
		err = apperr.NotFound("job %s is no reupload of dataset %s", id, dataset)
	}
	return job, d, err
}

// ColumnType is a column and its type, as PostgreSQL names it (text for any character type).
type ColumnType struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// TypeChange is a column whose type a reupload changes.
type TypeChange struct {
	Name string `json:"name"`
	Old  string `json:"old_type"`
	New  string `json:"new_type"`
}

// SchemaDiff is how a reupload's data differs from the dataset's.
type SchemaDiff struct {
	Added, Removed   []ColumnType
	Changed          []TypeChange
	RowsOld, RowsNew *int64
	// GeometryOld and GeometryNew are the stored geometry types (MULTIPOINT ...; "" for none),
	// CRSOld and CRSNew the EPSG codes the data came in (0: unknown).
	GeometryOld, GeometryNew string
	CRSOld, CRSNew           int
}

// schemaChange says what a commit without allow_schema_change refuses, or "".
func (d SchemaDiff) schemaChange() string {
	var parts []string
	if len(d.Removed) > 0 {
		names := make([]string, len(d.Removed))
		for i, c := range d.Removed {
			names[i] = c.Name
		}
		parts = append(parts, "removes the column(s) "+strings.Join(names, ", "))
	}
	if len(d.Changed) > 0 {
		ch := make([]string, len(d.Changed))
		for i, c := range d.Changed {
			ch[i] = fmt.Sprintf("%s (%s to %s)", c.Name, c.Old, c.New)
		}
		parts = append(parts, "changes the type of "+strings.Join(ch, ", "))
	}
	return strings.Join(parts, " and ")
}

// DiffColumns compares column lists by name: added, removed, and retyped columns, in the order
// of the list they are in (a reupload's preview, a refresh's schema drift).
func DiffColumns(old, new []ColumnType) (added, removed []ColumnType, changed []TypeChange) {
	added, removed, changed = []ColumnType{}, []ColumnType{}, []TypeChange{}
	find := func(cols []ColumnType, name string) int {
		return slices.IndexFunc(cols, func(c ColumnType) bool { return c.Name == name })
	}
	for _, c := range new {
		switch i := find(old, c.Name); {
		case i < 0:
			added = append(added, c)
		case old[i].Type != c.Type:
			changed = append(changed, TypeChange{Name: c.Name, Old: old[i].Type, New: c.Type})
		}
	}
	for _, c := range old {
		if find(new, c.Name) < 0 {
			removed = append(removed, c)
		}
	}
	return added, removed, changed
}

// pgType is the one name of a column type both sides of a diff use: PostgreSQL's format_type,
// with every character type as text (a created dataset's columns are text, an imported one's
// character varying, and the two hold the same values).
func pgType(t string) string {
	switch t {
	case "character varying", "character", "text":
		return "text"
	case "character varying[]", "character[]", "text[]":
		return "text[]"
	}
	return t
}

// ogrTypes are the column types ogr2ogr creates for OGR field types (PRECISION=NO), as pgType
// names them.
var ogrTypes = map[string]string{
	"String": "text", "Integer": "integer", "Integer64": "bigint", "Real": "double precision", "Date": "date",
	"DateTime": "timestamp with time zone", "Time": "time without time zone", "Binary": "bytea",
	"StringList": "text[]", "IntegerList": "integer[]", "Integer64List": "bigint[]", "RealList": "double precision[]",
}

// storedGeometry is the geometry type an import stores a layer's as (-nlt PROMOTE_TO_MULTI):
// "Point" and "3D Multi Point" are MULTIPOINT; mixed layers are GEOMETRY; "" for none.
func storedGeometry(ogr string) string {
	t := strings.ToUpper(strings.NewReplacer("3D ", "", "Measured ", "", " ", "").Replace(ogr))
	switch {
	case t == "" || t == "NONE":
		return ""
	case strings.HasPrefix(t, "UNKNOWN") || t == "GEOMETRY" || t == "GEOMETRYCOLLECTION":
		return "GEOMETRY"
	case strings.HasPrefix(t, "MULTI"):
		return t
	}
	return "MULTI" + t
}

// currentColumns are the attribute columns of a dataset's table (not its key or geometry).
func currentColumns(d catalog.Dataset) ([]ColumnType, error) {
	t, err := features.TableOf(d.Entry.TableSchema, d.Entry.TableName, d.Entry.IDColumn, d.Entry.GeometryColumn, d.TableColumns)
	if err != nil {
		return nil, err
	}
	var out []ColumnType
	for _, c := range t.Columns {
		out = append(out, ColumnType{Name: c.Name, Type: pgType(c.Type)})
	}
	return out, nil
}

// ReuploadPreview is a reupload's staged file against its dataset.
type ReuploadPreview struct {
	Job           Job
	Layer         Layer            // the layer described, its columns under the names the import gives them
	Samples       []map[string]any // its first rows, so named
	Layers        []Layer          // every layer of the file
	PreviousLayer *string          // the layer the dataset's last completed job read
	Diff          SchemaDiff
}

// reuploadLayer is the layer a reupload reads: the one named, else the one the dataset's last
// completed job read when the file has it, else the first.
func (j *Jobs) reuploadLayer(ctx context.Context, dataset uuid.UUID, layers []Layer, name string) (Layer, *string, error) {
	prev, err := j.Q.PreviousSourceLayer(ctx, &dataset)
	var previous *string
	switch {
	case err == nil && prev != "":
		previous = &prev
	case err != nil && !errors.Is(err, pgx.ErrNoRows):
		return Layer{}, nil, err
	}
	if name == "" && previous != nil && slices.ContainsFunc(layers, func(l Layer) bool { return l.Name == *previous }) {
		name = *previous
	}
	l, err := chooseLayer(layers, name)
	return l, previous, err
}

// diffOf compares the dataset with the layer of src as the import will store it (names: the
// layer's column names as stored).
func diffOf(d catalog.Dataset, src Source, l Layer, names []string, srid int) (SchemaDiff, error) {
	old, err := currentColumns(d)
	if err != nil {
		return SchemaDiff{}, err
	}
	cols := make([]ColumnType, len(l.Columns))
	for i, f := range l.Columns {
		cols[i] = ColumnType{Name: names[i], Type: cmp.Or(ogrTypes[f.Type], "text")}
	}
	diff := SchemaDiff{RowsOld: d.Entry.FeatureCount, GeometryOld: deref(d.Entry.GeometryType), GeometryNew: storedGeometry(l.GeometryType),
		CRSOld: int(cmp.Or(deref32(d.Entry.OriginalSrid), deref32(d.Entry.Srid))), CRSNew: cmp.Or(srid, l.SRID)}
	diff.Added, diff.Removed, diff.Changed = DiffColumns(old, cols)
	if diff.GeometryNew == "" && detectGeometryColumns(src, l, names) != nil {
		diff.GeometryNew = "MULTIPOINT"
	}
	if diff.GeometryNew != "" && diff.CRSNew == 0 && (l.NoCRS || src.Driver == "CSV") {
		diff.CRSNew = 4326 // what the import takes such a layer to be in
	}
	if l.FeatureCount >= 0 {
		diff.RowsNew = &l.FeatureCount
	}
	return diff, nil
}

func deref32(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

// Preview describes a reupload job's staged file (the layer named, or as reuploadLayer chooses)
// and its difference from the dataset. Nothing changes.
func (j *Jobs) PreviewReupload(ctx context.Context, p auth.Principal, dataset, id uuid.UUID, layerName string, samples int) (ReuploadPreview, error) {
	job, d, err := j.reuploadJob(ctx, p, dataset, id)
	if err != nil {
		return ReuploadPreview{}, err
	}
	if job.Status != "pending" || job.Committed {
		return ReuploadPreview{}, apperr.Conflict("job %s was already processed: it was committed before or is no longer pending", id)
	}
	src, layers, err := j.open(ctx, p, job, true)
	if err != nil {
		return ReuploadPreview{}, err
	}
	if src.Raster {
		return ReuploadPreview{}, apperr.Unprocessable("%s is a raster: the data of a %s is replaced by a vector file", src.Name, d.Entry.RecordType)
	}
	l, previous, err := j.reuploadLayer(ctx, dataset, layers, layerName)
	if err != nil {
		return ReuploadPreview{}, err
	}
	names, _, _ := planColumns(l.Columns)
	diff, err := diffOf(d, src, l, names, 0)
	if err != nil {
		return ReuploadPreview{}, err
	}
	// A layer GDAL cannot sample still previews its schema.
	sample, _ := Samples(ctx, j.GDAL, src, l.Name, len(layers) > 1, samples)
	pv := ReuploadPreview{Job: jobOf(job), Samples: renameSamples(sample, l.Columns, names), Layers: layers, PreviousLayer: previous, Diff: diff}
	l.Columns = slices.Clone(l.Columns)
	for k := range l.Columns {
		l.Columns[k] = Field{Name: names[k], Type: cmp.Or(ogrTypes[l.Columns[k].Type], "text")}
	}
	pv.Layer = l
	return pv, nil
}

// ReuploadChoice is what a reupload commit asks for.
type ReuploadChoice struct {
	LayerName         string
	SourceSRID        int // srid_override: the CRS the coordinates are in
	AllowSchemaChange bool
}

// CommitReupload checks the staged file against the dataset and queues the reupload, once. A
// file that cannot be read ends the job (422, as Commit Import); a layer without geometry for a
// dataset with one (or the reverse) answers 422; removed columns or changed types answer 409
// unless c.AllowSchemaChange. The job then holds the dataset's edits until it ends.
func (j *Jobs) CommitReupload(ctx context.Context, p auth.Principal, dataset, id uuid.UUID, c ReuploadChoice) (Job, error) {
	cur, d, err := j.reuploadJob(ctx, p, dataset, id)
	if err != nil {
		return jobOf(cur), err
	}
	if cur.Status != "pending" || cur.Committed {
		return jobOf(cur), apperr.Conflict("job %s was already processed: it was committed before or is no longer pending", id)
	}
	src, layers, err := j.open(ctx, p, cur, false)
	if err == nil && src.Raster {
		err = apperr.Unprocessable("%s is a raster: the data of a %s is replaced by a vector file", src.Name, d.Entry.RecordType)
	}
	if err != nil {
		return jobOf(cur), j.refuse(ctx, id, err)
	}
	l, _, err := j.reuploadLayer(ctx, dataset, layers, c.LayerName)
	if err != nil {
		return jobOf(cur), err
	}
	names, _, _ := planColumns(l.Columns)
	diff, err := diffOf(d, src, l, names, c.SourceSRID)
	if err != nil {
		return jobOf(cur), err
	}
	if (diff.GeometryOld == "") != (diff.GeometryNew == "") {
		return jobOf(cur), apperr.Unprocessable("%s", geometryMismatch(diff.GeometryOld != ""))
	}
	if s := diff.schemaChange(); s != "" && !c.AllowSchemaChange {
		return jobOf(cur), apperr.Conflict("the new data %s; commit with allow_schema_change true to accept it "+
			"(map layers then forget the removed columns)", s)
	}
	opts := Options{LayerName: l.Name, SourceSRID: cmp.Or(c.SourceSRID, l.SRID), Reupload: &ReuploadOptions{AllowSchemaChange: c.AllowSchemaChange}}
	job, err := j.enqueue(ctx, id, opts)
	return jobOf(job), err
}

func geometryMismatch(datasetHasGeometry bool) string {
	if datasetHasGeometry {
		return "the new data has no geometry, and the dataset's features have one: a reupload keeps the kind of dataset"
	}
	return "the new data has geometry, and the dataset is a table without: a reupload keeps the kind of dataset"
}

// swapAttempts bound how often a swap that waited too long for the old table's readers is tried
// again, each after swapLockWait, before the run fails (retryably).
const (
	swapAttempts = 5
	swapLockWait = "5s"
)

// loadedTable is what finalize settled about a run's table before its transaction.
type loadedTable struct {
	name    string
	t       features.Table
	check   features.Validation
	geomCol string
	gtype   string
	dims    int32
}

// replace puts a reupload's table in the place of its dataset's: in one transaction the record
// is locked, the schema checked against the commit's choice (on the tables themselves: the
// preview only predicted them), the record rewritten (catalog.ReplaceRecord: version, history,
// map layers, relationships), the job completed, the old table dropped and the new one renamed
// to its name. Readers see the old table until the commit and the new one after (a reader
// queued behind the swap's lock finds the new table by name); nobody sees half a table.
func (im *Importer) replace(ctx context.Context, job store.CatalogIngestJob, opts Options, lt loadedTable, src Source,
	warns []Warning, complete func(context.Context, pgx.Tx) error) (result, error) {
	if job.DatasetID == nil {
		return result{}, &ImportError{Msg: "the dataset was deleted before its reupload finished"}
	}
	var res result
	var err error
	for attempt := 1; attempt <= swapAttempts; attempt++ {
		err = pgx.BeginFunc(ctx, im.Pool, func(tx pgx.Tx) error {
			var err error
			res, err = im.swap(ctx, tx, job, opts, lt, src, warns, complete)
			return err
		})
		var pg *pgconn.PgError
		if !errors.As(err, &pg) || pg.Code != "55P03" {
			break
		}
		im.Log.Info("a reupload waited too long for readers of the old table; trying again", "job_id", job.ID, "attempt", attempt)
	}
	return res, err
}

func (im *Importer) swap(ctx context.Context, tx pgx.Tx, job store.CatalogIngestJob, opts Options, lt loadedTable, src Source,
	warns []Warning, complete func(context.Context, pgx.Tx) error) (result, error) {
	q := store.New(tx)
	old, err := q.LockDatasetForReplace(ctx, *job.DatasetID)
	if errors.Is(err, pgx.ErrNoRows) {
		return result{}, &ImportError{Msg: "the dataset was deleted before its reupload finished"}
	}
	if err != nil {
		return result{}, err
	}
	if old.Registered || old.TableSchema != "data" || (old.RecordType != "vector_dataset" && old.RecordType != "table") {
		return result{}, &ImportError{Msg: "the dataset can no longer be reuploaded: it is no ingested vector dataset or table"}
	}
	before, err := tableColumns(ctx, tx, old.TableSchema, old.TableName, old.IDColumn, old.GeometryColumn)
	if err != nil {
		return result{}, err
	}
	after, err := tableColumns(ctx, tx, "data", lt.name, "gid", lt.geomCol)
	if err != nil {
		return result{}, err
	}
	var diff SchemaDiff
	diff.Added, diff.Removed, diff.Changed = DiffColumns(before, after)
	if (old.GeometryColumn == "") != (lt.geomCol == "") {
		return result{}, &ImportError{Msg: geometryMismatch(old.GeometryColumn != "")}
	}
	if s := diff.schemaChange(); s != "" && (opts.Reupload == nil || !opts.Reupload.AllowSchemaChange) {
		return result{}, &ImportError{Msg: "the new data " + s + ", which the commit did not allow (allow_schema_change); commit a new reupload to accept it"}
	}
	box, info, temporal, err := im.describe(ctx, tx, lt)
	if err != nil {
		return result{}, err
	}
	prm := store.ReplaceDatasetDataParams{SourceFormat: &src.Format, SourceFilename: job.SourceFilename, Srid: ptr(int32(4326)),
		GeometryType: &lt.gtype, HasGenericGeometry: lt.gtype == "GEOMETRY", Is3d: ptr(lt.dims >= 3), NDims: &lt.dims,
		FeatureCount: &box.Count, ExtentBbox: box.BBox, ColumnInfo: info, GeometryColumn: lt.geomCol, EditedBy: job.CreatedBy}
	if lt.geomCol == "" {
		prm.Srid, prm.GeometryType, prm.Is3d, prm.NDims = nil, nil, nil, nil
	}
	if opts.SourceSRID > 0 {
		prm.OriginalSrid = ptr(int32(opts.SourceSRID))
	}
	if lt.dims >= 3 {
		prm.ZMin, prm.ZMax = box.ZMin, box.ZMax
	}
	removed := make([]string, len(diff.Removed))
	for i, c := range diff.Removed {
		removed[i] = c.Name
	}
	actor := auth.Principal{}
	if job.CreatedBy != nil {
		actor.UserID = *job.CreatedBy
	}
	// A refresh's job completes its run here, with the version it makes: the run's outcome and
	// the data cannot disagree after a crash.
	run, err := q.RunningRefreshOfJob(ctx, &job.ID)
	refresh := err == nil
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return result{}, err
	}
	version, err := catalog.ReplaceRecord(ctx, tx, im.Refs, old, catalog.Replacement{Data: prm, Removed: removed, Refresh: refresh,
		Changes: map[string]any{"job_id": job.ID, "columns_added": diff.Added, "columns_removed": diff.Removed, "type_changes": diff.Changed}}, actor)
	if err != nil {
		return result{}, err
	}
	if url := sourceURL(job.Source); url != "" { // fetched from a service layer: the dataset now comes from it
		if err := q.SetDatasetServiceSource(ctx, store.SetDatasetServiceSourceParams{ID: old.ID, SourceUrl: &url, OriginRef: job.Source}); err != nil {
			return result{}, err
		}
	}
	if refresh {
		if err := finishRefresh(ctx, q, run, old, diff, box.Count, version); err != nil {
			return result{}, err
		}
	}
	rec := old
	rec.GeometryColumn = lt.geomCol
	if err := im.setQuality(ctx, q, rec, lt.check); err != nil {
		return result{}, err
	}
	// Last, as they wait for the old table's readers: each statement still reading it ends first,
	// and statements arriving meanwhile queue behind the swap (lock_timeout bounds the wait).
	if _, err := tx.Exec(ctx, "SET LOCAL lock_timeout = '"+swapLockWait+"'"); err != nil {
		return result{}, err
	}
	if err := dropTable(ctx, tx, old.TableName); err != nil {
		return result{}, err
	}
	if _, err := tx.Exec(ctx, "ALTER TABLE "+pgx.Identifier{"data", lt.name}.Sanitize()+" RENAME TO "+pgx.Identifier{old.TableName}.Sanitize()); err != nil {
		return result{}, err
	}
	res := result{DatasetID: old.ID, Rows: box.Count, Temporal: temporal}
	return res, im.completeJob(ctx, tx, job, res, warns, complete)
}

// tableColumns are the attribute columns of a table (not key or geometry), types as pgType names
// them.
func tableColumns(ctx context.Context, tx pgx.Tx, schema, table, key, geom string) ([]ColumnType, error) {
	rows, err := tx.Query(ctx, `SELECT attname, format_type(atttypid, NULL) FROM pg_attribute
		WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped ORDER BY attnum`,
		pgx.Identifier{schema, table}.Sanitize())
	if err != nil {
		return nil, err
	}
	cols, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ColumnType, error) {
		var c ColumnType
		err := r.Scan(&c.Name, &c.Type)
		c.Type = pgType(c.Type)
		return c, err
	})
	return slices.DeleteFunc(cols, func(c ColumnType) bool { return c.Name == key || (geom != "" && c.Name == geom) }), err
}

// finishRefresh completes refresh run id of dataset d with the data its job committed, and
// marks the dataset refreshed: schema_drift_status says whether the columns changed (spec 3.3).
func finishRefresh(ctx context.Context, q *store.Queries, id uuid.UUID, d store.CatalogDataset, diff SchemaDiff, rows int64, version int32) error {
	drift := "none"
	if len(diff.Added)+len(diff.Removed)+len(diff.Changed) > 0 {
		drift = "drifted"
	}
	sd := map[string]any{"columns_added": diff.Added, "columns_removed": diff.Removed, "type_changes": diff.Changed,
		"row_count_old": d.FeatureCount, "row_count_new": rows, "row_count_delta": rows - deref64(d.FeatureCount)}
	js, _ := json.Marshal(sd)
	if err := q.CompleteRefreshRun(ctx, store.CompleteRefreshRunParams{ID: id, FeatureCountAfter: &rows, SchemaDiff: js, DatasetVersion: &version}); err != nil {
		return err
	}
	return q.MarkDatasetRefreshed(ctx, store.MarkDatasetRefreshedParams{ID: d.ID, SchemaDriftStatus: drift})
}

func deref64(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}
