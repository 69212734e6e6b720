// Package manifest applies declarative manifests (Apply Manifest, issue 33): a list of datasets,
// each keyed by a stable key of its caller, with one remote source and its metadata. A key seen
// for the first time creates its dataset through an ingest job, a changed source reuploads it,
// changed metadata is written in place, and an unchanged entry is skipped.
package manifest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/internal/catalog"
	"meridian/internal/ingest"
	"meridian/internal/remote"
	"meridian/store"
)

// Actions an entry gets.
const (
	ActionCreate = "create"
	ActionUpdate = "update"
	ActionSkip   = "skip"
	ActionError  = "error"
)

// Source types.
const (
	Vector    = "vector"
	RasterCOG = "raster_cog"
)

// Source is where an entry's data is fetched from.
type Source struct {
	Type   string `json:"type"`
	URI    string `json:"uri"`
	Format string `json:"format,omitempty"`
	Layer  string `json:"layer,omitempty"`
	CRS    string `json:"crs,omitempty"` // metadata.crs: how the data is read, so part of the source
}

// Meta is what an entry says of its record.
type Meta struct {
	Title        string    `json:"title"`
	Description  string    `json:"description,omitempty"`
	Tags         []string  `json:"tags,omitempty"`
	Organization string    `json:"organization,omitempty"`
	License      string    `json:"license,omitempty"`
	Attribution  string    `json:"attribution,omitempty"`
	BBox         []float64 `json:"bbox,omitempty"`
	Intent       string    `json:"intent"`
}

// Entry is one dataset of a manifest.
type Entry struct {
	Key    string `json:"key"`
	Source Source `json:"source"`
	Meta   Meta   `json:"meta"`
}

// Manifest is what Apply is given. Title and Description name the collection grouping the
// datasets; Organization is the source organization of entries that name none.
type Manifest struct {
	Title, Description, Organization string
	Entries                          []Entry
	DryRun                           bool
}

// Result is what happened (or, in a dry run, would happen) to one entry.
type Result struct {
	Key       string
	Action    string
	JobID     *uuid.UUID
	DatasetID *uuid.UUID
	Message   string
	Errors    []string
}

// Outcome is the answer of Apply.
type Outcome struct {
	Accepted, DryRun bool
	Results          []Result
}

// Service applies manifests.
type Service struct {
	Pool     *pgxpool.Pool
	Q        *store.Queries
	Catalog  *catalog.Service
	Jobs     *ingest.Jobs
	Remote   *remote.Client
	MaxBytes int64 // the largest source fetched (REMOTE_ASSET_MAX_BYTES)
	Log      *slog.Logger
}

// plan is an entry with what Apply decided for it.
type plan struct {
	e       Entry
	res     Result
	prev    *store.ManifestEntriesRow
	srid    int
	file    string
	srcHash string
	metHash string
	reload  bool // an update that reuploads the source
}

// Apply checks every entry, decides its action and, unless m.DryRun or an entry is invalid,
// does it. Validation is all or nothing: one invalid entry and nothing is applied. A source that
// cannot be fetched once applying started fails its own entry only; jobs fail on their own.
func (s *Service) Apply(ctx context.Context, p auth.Principal, m Manifest) (Outcome, error) {
	if !p.Can(auth.CapUpload) {
		return Outcome{}, apperr.Forbidden("applying a manifest needs the upload capability")
	}
	keys := make([]string, len(m.Entries))
	for i, e := range m.Entries {
		if slices.Contains(keys[:i], e.Key) {
			return Outcome{}, apperr.Unprocessable("dataset key %q is listed twice: each key stands for one dataset", e.Key)
		}
		keys[i] = e.Key
	}
	collection, err := s.collection(ctx, p, m.Title)
	if err != nil {
		return Outcome{}, err
	}
	rows, err := s.Q.ManifestEntries(ctx, store.ManifestEntriesParams{OwnerID: p.UserID, Keys: keys})
	if err != nil {
		return Outcome{}, err
	}
	prev := map[string]*store.ManifestEntriesRow{}
	for i := range rows {
		prev[rows[i].Key] = &rows[i]
	}
	out := Outcome{Accepted: true, DryRun: m.DryRun}
	plans := make([]*plan, len(m.Entries))
	for i, e := range m.Entries {
		if e.Meta.Organization == "" {
			e.Meta.Organization = m.Organization
		}
		plans[i] = s.decide(ctx, e, prev[e.Key])
		if plans[i].res.Action == ActionError {
			out.Accepted = false
		}
	}
	if !out.Accepted || m.DryRun {
		for _, pl := range plans {
			if !out.Accepted && pl.res.Action != ActionError {
				pl.res.Message += " (not applied: another entry of the manifest is invalid)"
			}
			out.Results = append(out.Results, pl.res)
		}
		return out, nil
	}
	if collection == nil && p.Can(auth.CapManageCollections) && slices.ContainsFunc(plans, func(pl *plan) bool { return pl.res.Action != ActionSkip }) {
		c, err := s.Catalog.CreateCollection(ctx, p, m.Title, nonEmpty(m.Description), "")
		if err != nil {
			return Outcome{}, err
		}
		collection = &c.ID
	}
	for _, pl := range plans {
		s.apply(ctx, p, pl, collection)
		out.Results = append(out.Results, pl.res)
	}
	return out, nil
}

// collection is the caller's collection named title, nil when there is none yet (or the
// caller may not manage collections: the datasets are then grouped nowhere). Another user's
// collection of that name answers 409: names of collections are unique.
func (s *Service) collection(ctx context.Context, p auth.Principal, title string) (*uuid.UUID, error) {
	if !p.Can(auth.CapManageCollections) {
		return nil, nil
	}
	c, err := s.Q.CollectionByName(ctx, title)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if (c.CreatedBy == nil || *c.CreatedBy != p.UserID) && !p.IsAdmin() {
		return nil, apperr.Conflict("the collection %q, which would group the manifest's datasets, belongs to another user: "+
			"give the manifest's catalog another title", title)
	}
	return &c.ID, nil
}

// decide validates an entry and chooses its action against the earlier apply of its key.
func (s *Service) decide(ctx context.Context, e Entry, prev *store.ManifestEntriesRow) *plan {
	pl := &plan{e: e, prev: prev, res: Result{Key: e.Key}}
	pl.res.Errors = s.validate(ctx, pl)
	pl.srcHash, pl.metHash = digest(e.Source), digest(e.Meta)
	if prev != nil && prev.DatasetExists {
		pl.res.DatasetID = prev.DatasetID
	}
	// The last job is still at work once committed; one that failed, was cancelled or was never
	// committed (its commit refused the file) did not do what the entry declared: it is redone.
	status := ""
	if prev != nil {
		status = deref(prev.JobStatus)
	}
	running := status == "running" || status == "pending" && prev.JobCommitted
	failed := status == "failed" || status == "cancelled" || status == "pending" && !prev.JobCommitted
	switch {
	case len(pl.res.Errors) > 0:
		pl.res.Action, pl.res.Message = ActionError, "the entry is invalid: "+strings.Join(pl.res.Errors, "; ")
	case prev != nil && !prev.DatasetExists && running:
		pl.res.Action, pl.res.JobID = ActionSkip, prev.JobID
		pl.res.Message = "the dataset is still being imported by an earlier apply's job"
	case prev == nil || !prev.DatasetExists:
		pl.res.Action, pl.res.Message = ActionCreate, "a new dataset is imported from the source"
	case prev.SourceDigest != pl.srcHash || failed:
		if catalog.IsRaster(deref(prev.RecordType)) || e.Source.Type == RasterCOG {
			pl.res.Action = ActionError
			pl.res.Errors = []string{"the source of a raster dataset cannot be replaced in place by this deployment: " +
				"delete the dataset or give the entry a new key"}
			pl.res.Message = "the entry is invalid: " + pl.res.Errors[0]
			break
		}
		pl.res.Action, pl.reload = ActionUpdate, true
		pl.res.Message = "the source changed (or its last import did not complete): the dataset is reuploaded from it, and its metadata updated"
	case prev.MetaDigest != pl.metHash:
		pl.res.Action, pl.res.Message = ActionUpdate, "the metadata changed: the record is updated in place"
	default:
		pl.res.Action, pl.res.Message = ActionSkip, "unchanged since the last apply"
	}
	return pl
}

// validate lists what is wrong with an entry. Only http(s) sources are fetched, through the
// remote policy; a local path is never read (the manifest's author is no local user).
func (s *Service) validate(ctx context.Context, pl *plan) []string {
	e := pl.e
	var errs []string
	u, err := url.Parse(e.Source.URI)
	switch {
	case err != nil:
		errs = append(errs, fmt.Sprintf("source uri %q cannot be read as a URL", e.Source.URI))
	case u.Scheme == "http" || u.Scheme == "https":
		if err := s.Remote.CheckResolved(ctx, e.Source.URI); err != nil {
			errs = append(errs, detail(err))
		}
	case slices.Contains([]string{"s3", "gs", "az", "abfs"}, u.Scheme):
		errs = append(errs, fmt.Sprintf("%s:// sources are not supported by this deployment: give an http(s) URL of the file", u.Scheme))
	default:
		errs = append(errs, fmt.Sprintf("source uri %q is a local path: files of the server are never read from a manifest; "+
			"give an http(s) URL of the file", e.Source.URI))
	}
	if err == nil {
		name, msg := fileName(e, u)
		if msg != "" {
			errs = append(errs, msg)
		}
		pl.file = name
	}
	if err := catalog.KnownStatus(e.Meta.Intent); err != nil {
		errs = append(errs, "publication.intent: "+detail(err))
	}
	if e.Source.CRS != "" {
		srid, _ := strconv.Atoi(strings.TrimPrefix(e.Source.CRS, "EPSG:"))
		var known bool
		// spatial_ref_sys is PostGIS's, outside the sqlc schema.
		if err := s.Pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM spatial_ref_sys WHERE srid = $1)", srid).Scan(&known); err != nil || !known {
			errs = append(errs, fmt.Sprintf("metadata.crs %s is no CRS this server knows", e.Source.CRS))
		}
		pl.srid = srid
	}
	if b := e.Meta.BBox; len(b) == 4 && (b[1] < -90 || b[3] > 90 || b[1] > b[3]) {
		errs = append(errs, "metadata.bbox is [west, south, east, north] in degrees, south not above north, within -90..90")
	}
	return errs
}

// formats maps a source's format to the extension of the file it is staged as.
var formats = map[string]string{"geojson": ".geojson", "json": ".geojson", "gpkg": ".gpkg", "geopackage": ".gpkg",
	"shapefile": ".zip", "zip": ".zip", "csv": ".csv", "kml": ".kml", "kmz": ".kmz", "fgb": ".fgb", "flatgeobuf": ".fgb",
	"gml": ".gml", "xlsx": ".xlsx", "gtiff": ".tif", "geotiff": ".tif", "cog": ".tif", "tif": ".tif", "tiff": ".tif"}

// fileName is the name a source is staged under (the key, with the extension of its format or,
// without one, of the URL's file); a raster_cog source is always a GeoTIFF.
func fileName(e Entry, u *url.URL) (string, string) {
	if e.Source.Type == RasterCOG {
		return e.Key + ".tif", ""
	}
	if f := strings.ToLower(e.Source.Format); f != "" {
		if ext, ok := formats[f]; ok {
			return e.Key + ext, ""
		}
		return e.Key + "." + f, "" // the upload's own extension list judges it
	}
	ext := strings.ToLower(path.Ext(u.Path))
	if ext == "" || ext == "." {
		return "", "the source URL's name has no extension: give the source's format (geojson, gpkg, zip, csv ...)"
	}
	if ext == ".json" {
		ext = ".geojson"
	}
	return e.Key + ext, ""
}

// apply does what was decided for one entry; a failure makes it an error entry.
func (s *Service) apply(ctx context.Context, p auth.Principal, pl *plan, collection *uuid.UUID) {
	var err error
	switch {
	case pl.res.Action == ActionCreate:
		err = s.create(ctx, p, pl, collection)
	case pl.res.Action == ActionUpdate && pl.reload:
		err = s.reupload(ctx, p, pl, collection)
	case pl.res.Action == ActionUpdate:
		err = s.describe(ctx, p, pl, collection, nil)
	}
	if err != nil {
		pl.res.Action, pl.res.Errors = ActionError, []string{detail(err)}
		pl.res.Message = "the entry could not be applied: " + detail(err)
	}
}

// fetch stages the entry's source for a new job: a plain import, or with dataset a reupload.
func (s *Service) fetch(ctx context.Context, p auth.Principal, pl *plan, dataset *uuid.UUID) (ingest.Job, error) {
	d, err := s.Remote.Open(ctx, pl.e.Source.URI, nil, s.MaxBytes)
	if err != nil {
		return ingest.Job{}, err
	}
	defer d.Body.Close()
	if d.Status != 200 {
		return ingest.Job{}, apperr.Unprocessable("the source %s answered HTTP %d", pl.e.Source.URI, d.Status)
	}
	if dataset != nil {
		return s.Jobs.Reupload(ctx, p, *dataset, pl.file, d.Body)
	}
	return s.Jobs.Upload(ctx, p, pl.file, d.Body)
}

// create stages the source and commits its import. The entry is saved before the commit, so
// the job's completion (Finish) finds it whenever it runs.
func (s *Service) create(ctx context.Context, p auth.Principal, pl *plan, collection *uuid.UUID) error {
	job, err := s.fetch(ctx, p, pl, nil)
	if err != nil {
		return err
	}
	if err := s.save(ctx, p, pl, nil, &job.ID, collection); err != nil {
		return err
	}
	m := pl.e.Meta
	opts := ingest.Options{Title: m.Title, Summary: m.Description, LayerName: pl.e.Source.Layer, RecordStatus: m.Intent, SourceSRID: pl.srid}
	opts.Raster.ForceSRID = pl.srid > 0
	if _, err := s.Jobs.Commit(ctx, p, job.ID, opts); err != nil {
		return err
	}
	pl.res.JobID = &job.ID
	return nil
}

// reupload stages the changed source as a reupload of the entry's dataset (a manifest declares
// the data as it is now: a schema change is accepted) and updates the metadata in place.
func (s *Service) reupload(ctx context.Context, p auth.Principal, pl *plan, collection *uuid.UUID) error {
	job, err := s.fetch(ctx, p, pl, pl.prev.DatasetID)
	if err != nil {
		return err
	}
	if _, err := s.Jobs.CommitReupload(ctx, p, *pl.prev.DatasetID, job.ID, ingest.ReuploadChoice{LayerName: pl.e.Source.Layer,
		SourceSRID: pl.srid, AllowSchemaChange: true}); err != nil {
		return err
	}
	pl.res.JobID = &job.ID
	return s.describe(ctx, p, pl, collection, &job.ID)
}

// describe writes the entry's metadata to its existing record, as Update Dataset Metadata
// does (edit rights, history, the status walked along the workflow), and its tags in place of
// those the previous apply gave.
func (s *Service) describe(ctx context.Context, p auth.Principal, pl *plan, collection, job *uuid.UUID) error {
	id, m := *pl.prev.DatasetID, pl.e.Meta
	ch := catalog.Change{Title: &m.Title, Summary: nonEmpty(m.Description), License: nonEmpty(m.License),
		Attribution: nonEmpty(m.Attribution), SourceOrganization: nonEmpty(m.Organization), RecordStatus: &m.Intent, Clear: map[string]bool{}}
	for name, v := range map[string]string{"summary": m.Description, "license": m.License, "attribution": m.Attribution, "source_organization": m.Organization} {
		if v == "" {
			ch.Clear[name] = true
		}
	}
	if _, err := s.Catalog.UpdateMetadata(ctx, p, id, ch); err != nil {
		return err
	}
	var before Entry
	_ = json.Unmarshal(pl.prev.Declared, &before)
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		return tag(ctx, store.New(tx), id, before.Meta.Tags, m.Tags, collection)
	})
	if err != nil {
		return err
	}
	if job == nil {
		job = pl.prev.JobID
	}
	return s.save(ctx, p, pl, &id, job, collection)
}

// tag replaces a record's manifest keywords and puts it in the manifest's collection.
func tag(ctx context.Context, q *store.Queries, id uuid.UUID, old, tags []string, collection *uuid.UUID) error {
	lower := make([]string, len(old))
	for i, t := range old {
		lower[i] = strings.ToLower(t)
	}
	if err := q.DeleteManifestKeywords(ctx, store.DeleteManifestKeywordsParams{DatasetID: id, Keywords: lower}); err != nil {
		return err
	}
	if len(tags) > 0 {
		if err := q.AddManifestKeywords(ctx, store.AddManifestKeywordsParams{DatasetID: id, Keywords: tags}); err != nil {
			return err
		}
	}
	if collection != nil {
		_, err := q.AddCollectionDatasets(ctx, store.AddCollectionDatasetsParams{CollectionID: *collection, DatasetIds: []uuid.UUID{id}})
		return err
	}
	return nil
}

func (s *Service) save(ctx context.Context, p auth.Principal, pl *plan, dataset, job, collection *uuid.UUID) error {
	declared, _ := json.Marshal(pl.e)
	return s.Q.SaveManifestEntry(ctx, store.SaveManifestEntryParams{OwnerID: p.UserID, Key: pl.e.Key, DatasetID: dataset, JobID: job,
		CollectionID: collection, SourceDigest: pl.srcHash, MetaDigest: pl.metHash, Declared: declared})
}

// Finish runs in the transaction that writes the record of an upload job's new dataset
// (ingest.Importer.Finish). For the job of a manifest entry it names the entry's dataset and
// gives the record the entry's licence, attribution, source organization and tags, and its
// collection (title, description and status came with the commit).
func (s *Service) Finish(ctx context.Context, tx pgx.Tx, job, dataset uuid.UUID) (func(context.Context), error) {
	q := store.New(tx)
	row, err := q.ManifestEntryOfJob(ctx, &job)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var e Entry
	if err := json.Unmarshal(row.Declared, &e); err != nil {
		return nil, err
	}
	if err := q.SetManifestEntryDataset(ctx, store.SetManifestEntryDatasetParams{DatasetID: &dataset, OwnerID: row.OwnerID, Key: row.Key}); err != nil {
		return nil, err
	}
	m := e.Meta
	if err := q.SetManifestRecord(ctx, store.SetManifestRecordParams{ID: dataset, License: nonEmpty(m.License),
		Attribution: nonEmpty(m.Attribution), SourceOrganization: nonEmpty(m.Organization)}); err != nil {
		return nil, err
	}
	return nil, tag(ctx, q, dataset, nil, m.Tags, row.CollectionID)
}

// digest is a stable fingerprint of what an entry declares.
func digest(v any) string {
	b, _ := json.Marshal(v)
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// detail is the caller-safe message of an error.
func detail(err error) string {
	var e *apperr.Error
	if errors.As(err, &e) && e.Kind != apperr.KindInternal {
		return e.Detail
	}
	var ie *ingest.ImportError
	if errors.As(err, &ie) {
		return ie.Msg
	}
	return "the server could not apply this entry; the request id identifies it in the logs"
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
