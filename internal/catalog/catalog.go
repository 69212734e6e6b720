// Package catalog keeps the catalog records of datasets: creation of empty datasets, reads under
// the visibility policy, metadata edits, the publication workflow, grants and deletion.
package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"meridian/internal/apperr"
	"meridian/internal/audit"
	"meridian/internal/auth"
	"meridian/internal/blob"
	"meridian/internal/features"
	"meridian/internal/settings"
	"meridian/internal/sqlbuild"
	"meridian/store"
)

// Service is the catalog over a pool.
type Service struct {
	Pool *pgxpool.Pool
	// CountPool counts the numbers matched of filtered pages (db.OpenCounts); nil: Pool.
	CountPool *pgxpool.Pool
	// SearchPool runs the searches, records queries with a text but for the typo branch's
	// (db.OpenSearch: generic plans); nil: Pool.
	SearchPool *pgxpool.Pool
	Q          *store.Queries
	Log        *slog.Logger
	Refs       ColumnRefs // map layers' references to columns (internal/maps)
	// Settings are the runtime settings (the saved search quotas).
	Settings settings.Reader
	// Announced hears every change announced by PostgreSQL (watch.go), for other caches kept
	// in memory: the channel and its payload, or "" with live telling that the listener went up
	// or down.
	Announced func(channel, payload string, live bool)
	// Objects hold raster datasets' COGs (internal/blob): a deleted raster's file goes with it.
	Objects blob.Objects
	// Remote opens the remote files of registered rasters (Download COG).
	Remote RemoteFiles

	reads   records          // records kept for feature reads (reads.go)
	events  events           // views and exports on their way to the history (events.go)
	lookups features.Lookups // single-feature reads sharing statements (reads.go)
	counts  features.Counts  // numbers matched of filtered pages, per data version (reads.go)
	stats   statsCache       // the dashboard's counts (stats.go)
	// collections are the collections' texts, for the searches that match none (collectionnames.go)
	collections collectionTexts
}

// searchPool is where searches run (SearchPool).
func (s *Service) searchPool() *pgxpool.Pool {
	if s.SearchPool != nil {
		return s.SearchPool
	}
	return s.Pool
}

// Dataset is a catalog record as a caller sees it.
type Dataset struct {
	Entry               Entry
	CreatedByDisplay    string
	LastEditedByDisplay *string
	TableColumns        []byte               // [[name, type], ...] of the data table, when read by Get
	Version             int64                // the record row's version (xmin) when read by Get
	grant               string               // the strongest grant the reader holds, for later policy checks
	row                 store.CatalogDataset // the record as stored, for the policy and quality rules
	table               *features.Table      // the data table, parsed once for a kept record (reads.go)
	vouched             bool                 // a kept record known to be current (watch.go)
}

func resource(d store.CatalogDataset, grant string) auth.Resource {
	r := auth.Resource{ID: d.ID, Visibility: d.Visibility, Published: d.RecordStatus == StatusPublished, Grant: grant}
	if d.CreatedBy != nil {
		r.OwnerID = *d.CreatedBy
	}
	return r
}

// errNotFound is the one answer for a dataset that does not exist, in the words auth.Authorize
// answers one the caller may not see: the two must not differ, or the answer tells which ids
// exist (issue 28).
func errNotFound() error { return apperr.NotFound("dataset not found") }

// Get returns the dataset when the caller may read it (write: change it); otherwise 404, or 403
// for a visible dataset the caller may not change.
func (s *Service) Get(ctx context.Context, p auth.Principal, id uuid.UUID, write bool) (Dataset, error) {
	return s.get(ctx, s.Q, p, id, write)
}

func (s *Service) get(ctx context.Context, q *store.Queries, p auth.Principal, id uuid.UUID, write bool) (Dataset, error) {
	d, err := s.read(ctx, q, p, id)
	if err != nil {
		return d, err
	}
	if err := auth.Authorize(p, resource(d.row, d.grant), write, "dataset"); err != nil {
		return Dataset{}, err
	}
	return d, nil
}

// read reads dataset id with the grant p holds on it, unauthorized, and keeps it.
func (s *Service) read(ctx context.Context, q *store.Queries, p auth.Principal, id uuid.UUID) (Dataset, error) {
	epoch := s.reads.epoch.Load()
	caller, role := who(p)
	r, err := q.GetDatasetRecord(ctx, store.GetDatasetRecordParams{ID: id, CallerID: caller, CallerRole: role})
	if errors.Is(err, pgx.ErrNoRows) {
		return Dataset{}, errNotFound()
	}
	if err != nil {
		return Dataset{}, err
	}
	d := Dataset{row: r.CatalogDataset, Entry: entryOf(r.CatalogDataset), CreatedByDisplay: r.CreatedByDisplay, LastEditedByDisplay: r.LastEditedByDisplay,
		TableColumns: r.TableColumns, Version: r.Version, grant: r.CallerGrant}
	s.reads.keep(d, epoch)
	return d, nil
}

// LatestJob returns the newest ingestion job of a dataset to those auth.CanReadJob allows. Anyone
// else, readers of the dataset included, hears what a dataset without a job answers, so the 404
// does not tell that a job exists.
func (s *Service) LatestJob(ctx context.Context, p auth.Principal, id uuid.UUID) (store.CatalogIngestJob, error) {
	d, err := s.Get(ctx, p, id, false)
	if err != nil {
		return store.CatalogIngestJob{}, err
	}
	job, err := s.Q.LatestJobOfDataset(ctx, &id)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && !auth.CanReadJob(p, job.CreatedBy, resource(d.row, d.grant))) {
		return store.CatalogIngestJob{}, apperr.NotFound("dataset %s has no ingestion job", id)
	}
	return job, err
}

// Filter narrows a listing.
type Filter struct {
	Q, RecordType, Visibility, RecordStatus *string
	Collection                              *uuid.UUID // members of this collection only
	Sort                                    string     // a ListAllDatasets sort key; default -updated_at
	Skip, Limit                             int
}

// List returns one page of the datasets the caller may see and how many there are. Q matches
// titles, summaries, themes and keywords, its own % and _ taken literally.
func (s *Service) List(ctx context.Context, p auth.Principal, f Filter) ([]Dataset, int, error) {
	caller, role := who(p)
	var q *string
	if f.Q != nil {
		pattern := sqlbuild.Contains(*f.Q)
		q = &pattern
	}
	prm := store.ListVisibleDatasetsParams{IsAdmin: p.IsAdmin(), CallerID: caller, CallerRole: role, Q: q, RecordType: f.RecordType,
		Visibility: f.Visibility, RecordStatus: f.RecordStatus, CollectionID: f.Collection, Sort: f.Sort, Off: int32(f.Skip), Lim: int32(f.Limit)}
	rows, err := s.Q.ListVisibleDatasets(ctx, prm)
	if err != nil {
		return nil, 0, err
	}
	out := make([]Dataset, len(rows))
	total := 0
	for i, r := range rows {
		out[i] = Dataset{row: r.CatalogDataset, Entry: entryOf(r.CatalogDataset), CreatedByDisplay: r.CreatedByDisplay, LastEditedByDisplay: r.LastEditedByDisplay}
		total = int(r.Total)
	}
	return out, total, nil
}

// Column is a user-defined column of a created dataset.
type Column struct{ Name, Type string }

// columnTypes maps the five column types of spec 4.3 to PostgreSQL types.
var columnTypes = map[string]string{
	"text": "text", "integer": "bigint", "float": "double precision", "date": "date", "boolean": "boolean",
}

var columnName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// reservedColumns belong to every dataset table.
var reservedColumns = []string{"gid", "geom"}

// Create makes an empty dataset: a table in the data schema with a gid key, a generic geometry
// column with a GIST index and the given columns, plus its catalog record, in one transaction.
func (s *Service) Create(ctx context.Context, p auth.Principal, title string, cols []Column) (Dataset, error) {
	if !p.Can(auth.CapUpload) {
		return Dataset{}, apperr.Forbidden("creating datasets needs the upload capability")
	}
	return s.create(ctx, p, NewDataset{Title: title, GeometryType: "Geometry", Columns: cols})
}

// NewDataset is an empty dataset to create.
type NewDataset struct {
	Title        string
	Summary      *string
	GeometryType string // Point, LineString, Polygon, their Multi forms, or Geometry for any
	Columns      []Column
}

// geometryTypes are the geometry column types an empty dataset may take.
var geometryTypes = []string{"Point", "LineString", "Polygon", "MultiPoint", "MultiLineString", "MultiPolygon", "Geometry"}

// CreateLayer makes an empty dataset to draw into (Create Layer): as Create, with the geometry
// type and summary given; for the create_layers capability.
func (s *Service) CreateLayer(ctx context.Context, p auth.Principal, nd NewDataset) (Dataset, error) {
	if !p.Can(auth.CapCreateLayers) {
		return Dataset{}, apperr.Forbidden("creating layers needs the create_layers capability")
	}
	i := slices.IndexFunc(geometryTypes, func(g string) bool { return strings.EqualFold(g, nd.GeometryType) })
	if i < 0 {
		return Dataset{}, apperr.Unprocessable("geometry_type %q is not one of %s", nd.GeometryType, strings.Join(geometryTypes, ", "))
	}
	nd.GeometryType = geometryTypes[i]
	return s.create(ctx, p, nd)
}

func (s *Service) create(ctx context.Context, p auth.Principal, nd NewDataset) (Dataset, error) {
	title, cols := nd.Title, nd.Columns
	seen := map[string]bool{}
	defs := make([]string, 0, len(cols))
	info := make([]map[string]any, 0, len(cols))
	for i, c := range cols {
		name := strings.ToLower(strings.TrimSpace(c.Name))
		switch {
		case !columnName.MatchString(name):
			return Dataset{}, apperr.Unprocessable("columns[%d].name %q: use 1 to 63 lowercase letters, digits and underscores, not starting with a digit", i, c.Name)
		case slices.Contains(reservedColumns, name):
			return Dataset{}, apperr.Unprocessable("columns[%d].name %q is reserved", i, c.Name)
		case seen[name]:
			return Dataset{}, apperr.Unprocessable("columns[%d].name %q appears twice", i, c.Name)
		}
		pgType, ok := columnTypes[c.Type]
		if !ok {
			return Dataset{}, apperr.Unprocessable("columns[%d].type %q is not one of text, integer, float, date, boolean", i, c.Type)
		}
		seen[name] = true
		defs = append(defs, pgx.Identifier{name}.Sanitize()+" "+pgType)
		info = append(info, map[string]any{"name": name, "type": c.Type})
	}
	table := "ds_" + strings.ReplaceAll(uuid.NewString(), "-", "")
	ident := pgx.Identifier{"data", table}.Sanitize()
	ddl := "CREATE TABLE " + ident + " (gid bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, geom geometry(" + nd.GeometryType + ", 4326)"
	for _, d := range defs {
		ddl += ", " + d
	}
	ddl += ")"
	colInfo, _ := json.Marshal(info)
	var id uuid.UUID
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, ddl); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "CREATE INDEX ON "+ident+" USING gist (geom)"); err != nil {
			return err
		}
		q := s.Q.WithTx(tx)
		origin, format, srid, gtype, dims, zero := "created", "none", int32(4326), nd.GeometryType, int32(2), int64(0)
		var err error
		id, err = AddRecord(ctx, q, store.InsertDatasetParams{TableSchema: "data", TableName: table, Title: title,
			Summary: nd.Summary, Visibility: auth.VisibilityPrivate, RecordType: "vector_dataset", Origin: &origin, SourceFormat: &format,
			Srid: &srid, GeometryType: &gtype, HasGenericGeometry: nd.GeometryType == "Geometry", Is3d: ptr(false), NDims: &dims, FeatureCount: &zero,
			ColumnInfo: colInfo, CreatedBy: &p.UserID}, p)
		return err
	})
	if err != nil {
		return Dataset{}, err
	}
	return s.Get(ctx, p, id, false)
}

// Change is a partial metadata update; nil fields stay, fields named in Clear are emptied.
type Change struct {
	Title, Summary, Visibility, License, Attribution, SourceOrganization, SourceURL, QualityStatement,
	LineageSummary, UpdateFrequency, UsageConstraints, AccessConstraints, SensitivityClassification,
	OwnerOrg, Language *string
	ThemeCategory, TileColumns       []string
	DataVintageStart, DataVintageEnd *time.Time
	RecordStatus                     *string // walked to along the workflow after the metadata change, in the same transaction
	// SetDEM: the PATCH sent is_dem, IsDEM its value (nil: back to the detected value). Rasters only.
	IsDEM  *bool
	SetDEM bool
	// Clear names the members a PATCH sent as null. The nullable fields among them are cleared;
	// a null status or is_dem asks for nothing, and title and visibility cannot be emptied.
	Clear map[string]bool
}

// clearable are the fields an explicit null empties (DatasetUpdateRequest's nullable members).
var clearable = []string{"summary", "license", "attribution", "source_organization", "source_url", "quality_statement",
	"lineage_summary", "update_frequency", "usage_constraints", "access_constraints", "sensitivity_classification",
	"owner_org", "language", "theme_category", "tile_columns", "data_vintage_start", "data_vintage_end"}

// cleared lists the fields ch empties, or refuses a null the record cannot take.
func (ch Change) cleared() ([]string, error) {
	out := []string{}
	for name := range ch.Clear {
		switch {
		case slices.Contains(clearable, name):
			out = append(out, name)
		case name == "title" || name == "visibility":
			return nil, apperr.Unprocessable("%s cannot be cleared: send a value or leave it out", name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// UpdateMetadata applies ch for a caller with write access and the edit_metadata capability.
// A metadata edit is no data version: the history entry carries the current one.
func (s *Service) UpdateMetadata(ctx context.Context, p auth.Principal, id uuid.UUID, ch Change) (Dataset, error) {
	cleared, err := ch.cleared()
	if err != nil {
		return Dataset{}, err
	}
	if ch.SetDEM {
		if err := s.SetDEM(ctx, p, id, ch.IsDEM); err != nil {
			return Dataset{}, err
		}
	}
	defer s.Forget(id) // this server's next read (a tile, a map) sees the change
	err = pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := s.Q.WithTx(tx)
		before, err := s.writable(ctx, q, p, id)
		if err != nil {
			return err
		}
		changes := ch.diff(before.row, cleared)
		if len(changes) == 0 {
			return walkTo(ctx, q, p, before, ch.RecordStatus) // no metadata change: no history entry of its own
		}
		// Sending the current visibility back (a client saving a whole form) changes nothing and
		// stays allowed; moving it is the owner's decision.
		if _, moves := changes["visibility"]; moves {
			if err := auth.AuthorizeManage(p, resource(before.row, before.grant), "dataset", "change its visibility"); err != nil {
				return err
			}
		}
		row, err := q.UpdateDatasetMetadata(ctx, store.UpdateDatasetMetadataParams{ID: id, UpdatedBy: &p.UserID, Cleared: cleared,
			Title: ch.Title, Summary: ch.Summary, Visibility: ch.Visibility, License: ch.License, Attribution: ch.Attribution,
			SourceOrganization: ch.SourceOrganization, SourceUrl: ch.SourceURL, QualityStatement: ch.QualityStatement,
			LineageSummary: ch.LineageSummary, UpdateFrequency: ch.UpdateFrequency, UsageConstraints: ch.UsageConstraints,
			AccessConstraints: ch.AccessConstraints, SensitivityClassification: ch.SensitivityClassification,
			OwnerOrg: ch.OwnerOrg, Language: ch.Language, ThemeCategory: ch.ThemeCategory, TileColumns: ch.TileColumns,
			DataVintageStart: date(ch.DataVintageStart), DataVintageEnd: date(ch.DataVintageEnd)})
		if err != nil {
			return ruleOfDatabase(err)
		}
		if err := rescore(ctx, q, row); err != nil {
			return err
		}
		if err := history(ctx, q, id, row.CurrentVersion, ActionMetadataEdit, p, changes); err != nil {
			return err
		}
		return walkTo(ctx, q, p, before, ch.RecordStatus)
	})
	if err != nil {
		return Dataset{}, err
	}
	return s.Get(ctx, p, id, false)
}

// writable loads the dataset for a change and checks write access and edit_metadata.
func (s *Service) writable(ctx context.Context, q *store.Queries, p auth.Principal, id uuid.UUID) (Dataset, error) {
	d, err := s.get(ctx, q, p, id, true)
	if err != nil {
		return d, err
	}
	if !p.Can(auth.CapEditMetadata) {
		return d, apperr.Forbidden("changing datasets needs the edit_metadata capability")
	}
	return d, nil
}

// Delete removes the record; an ingested or created dataset's table goes with it, a registered
// table is only detached (it belongs to the operator). Owner or admin only. confirmTitle, when
// given, must equal the dataset's title exactly: the one safeguard of Delete Dataset and of each
// item of Bulk Delete Datasets. It reports whether the dataset was detached rather than dropped.
// The deletion goes to the audit trail (dataset.delete): the dataset's history goes with it.
func (s *Service) Delete(ctx context.Context, p auth.Principal, id uuid.UUID, confirmTitle *string) (bool, error) {
	detached := false
	var gone store.CatalogDataset
	defer s.Forget(id) // no tile of it from this server's memory either
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := s.Q.WithTx(tx)
		d, err := s.get(ctx, q, p, id, true)
		if err != nil {
			return err
		}
		if err := auth.AuthorizeManage(p, resource(d.row, d.grant), "dataset", "delete it"); err != nil {
			return err
		}
		if confirmTitle != nil && *confirmTitle != d.row.Title {
			return ErrTitleMismatch
		}
		if err := q.DeleteDatasetRecord(ctx, id); err != nil {
			return err
		}
		gone = d.row
		if d.row.Registered {
			detached = true
			return nil
		}
		if IsRaster(d.row.RecordType) {
			return nil // no table: its COG goes once the record is gone for good (below)
		}
		_, err = tx.Exec(ctx, "DROP TABLE IF EXISTS "+pgx.Identifier{d.row.TableSchema, d.row.TableName}.Sanitize())
		return err
	})
	if err == nil && IsRaster(gone.RecordType) {
		s.removeCOG(ctx, gone)
	}
	if err == nil {
		// After the commit: a failed audit write inside would abort the deletion's transaction.
		audit.Record(ctx, s.Q, s.Log, audit.Entry{ActorID: p.UserID, ActorDisplay: p.Username, Action: ActionDatasetDelete,
			ResourceType: "dataset", ResourceID: id.String(), Detail: map[string]any{"title": gone.Title, "registered": gone.Registered}})
	}
	return detached, err
}

// ErrTitleMismatch: the confirmation title does not match the dataset's (400 for a single
// delete, title_mismatch for an item of a bulk delete).
var ErrTitleMismatch = apperr.Invalid("confirm_title does not match the dataset's title")

// AddRecord inserts the catalog record of a dataset whose table exists (created, ingested) and
// writes version 1 of its history, inside the caller's transaction.
func AddRecord(ctx context.Context, q *store.Queries, prm store.InsertDatasetParams, p auth.Principal) (uuid.UUID, error) {
	id, err := q.InsertDataset(ctx, prm)
	if err != nil {
		return id, err
	}
	var cols any
	_ = json.Unmarshal(prm.ColumnInfo, &cols)
	return id, history(ctx, q, id, 1, ActionDatasetCreate, p, map[string]any{
		"title": change(nil, prm.Title), "origin": change(nil, prm.Origin), "columns": change(nil, cols),
		"feature_count": change(nil, prm.FeatureCount), "source_filename": change(nil, prm.SourceFilename),
		"source_format": change(nil, prm.SourceFormat), "srid": change(nil, prm.Srid), "geometry_type": change(nil, prm.GeometryType)})
}

func history(ctx context.Context, q *store.Queries, id uuid.UUID, version int32, action string, p auth.Principal, changes map[string]any) error {
	b, err := json.Marshal(changes)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	var actor *uuid.UUID
	if !p.Anonymous() {
		actor = &p.UserID
	}
	return q.RecordDatasetHistory(ctx, store.RecordDatasetHistoryParams{DatasetID: id, Version: version, Action: action,
		ActorID: actor, ActorDisplay: p.Username, Changes: b})
}

func ptr[T any](v T) *T { return &v }

// change is one field's entry in the history: {old, new}.
func change(old, new any) map[string]any { return map[string]any{"old": old, "new": new} }

// diff lists the fields ch actually changes, with their values before and after; a cleared
// field that held a value changes to null.
func (ch Change) diff(d store.CatalogDataset, cleared []string) map[string]any {
	out := map[string]any{}
	str := func(name string, before *string, after *string) {
		switch {
		case slices.Contains(cleared, name):
			if before != nil {
				out[name] = change(*before, nil)
			}
		case after != nil && (before == nil || *before != *after):
			out[name] = change(before, *after)
		}
	}
	str("title", &d.Title, ch.Title)
	str("summary", d.Summary, ch.Summary)
	str("visibility", &d.Visibility, ch.Visibility)
	str("license", d.License, ch.License)
	str("attribution", d.Attribution, ch.Attribution)
	str("source_organization", d.SourceOrganization, ch.SourceOrganization)
	str("source_url", d.SourceUrl, ch.SourceURL)
	str("quality_statement", d.QualityStatement, ch.QualityStatement)
	str("lineage_summary", d.LineageSummary, ch.LineageSummary)
	str("update_frequency", d.UpdateFrequency, ch.UpdateFrequency)
	str("usage_constraints", d.UsageConstraints, ch.UsageConstraints)
	str("access_constraints", d.AccessConstraints, ch.AccessConstraints)
	str("sensitivity_classification", d.SensitivityClassification, ch.SensitivityClassification)
	str("owner_org", d.OwnerOrg, ch.OwnerOrg)
	str("language", d.Language, ch.Language)
	list := func(name string, before, after []string) {
		switch {
		case slices.Contains(cleared, name):
			if len(before) > 0 {
				out[name] = change(before, nil)
			}
		case after != nil && !slices.Equal(after, before):
			out[name] = change(before, after)
		}
	}
	list("theme_category", d.ThemeCategory, ch.ThemeCategory)
	list("tile_columns", d.TileColumns, ch.TileColumns)
	dates := func(name string, before pgtype.Date, after *time.Time) {
		var old any
		if before.Valid {
			old = before.Time.Format(time.DateOnly)
		}
		switch {
		case slices.Contains(cleared, name):
			if before.Valid {
				out[name] = change(old, nil)
			}
		case after != nil && (!before.Valid || !before.Time.Equal(*after)):
			out[name] = change(old, after.Format(time.DateOnly))
		}
	}
	dates("data_vintage_start", d.DataVintageStart, ch.DataVintageStart)
	dates("data_vintage_end", d.DataVintageEnd, ch.DataVintageEnd)
	return out
}
