package ingest

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"meridian/internal/auth"
	"meridian/internal/catalog"
	"meridian/internal/features"
	"meridian/store"
)

// result is what a finished import reports on its job.
type result struct {
	DatasetID uuid.UUID
	Rows      int64
	// Temporal lists columns whose values look like dates but stayed text.
	Temporal map[string]string
}

// finalize takes the table over from the import role, reads what ogr2ogr made (geometry
// column, extent, columns, count) and, in one transaction, creates the catalog record and
// completes the job: a crash leaves either both or neither.
// A reupload's table replaces its dataset's instead (replace).
func (im *Importer) finalize(ctx context.Context, job store.CatalogIngestJob, opts Options, table string, src Source,
	names []string, warns []Warning, complete func(context.Context, pgx.Tx) error) (result, error) {
	var id uuid.UUID
	var count int64
	// The import role keeps no hold on what it wrote: from here the server's role owns the table.
	if _, err := im.Pool.Exec(ctx, "ALTER TABLE "+pgx.Identifier{"data", table}.Sanitize()+" OWNER TO CURRENT_USER"); err != nil {
		return result{}, err
	}
	// The geometry column is settled before the transaction: building points from coordinate
	// columns alters the table, and the column profile below reads it on other connections.
	var gtype string
	var dims int32
	err := im.Pool.QueryRow(ctx, `SELECT type, coord_dimension FROM geometry_columns
		WHERE f_table_schema = 'data' AND f_table_name = $1 AND f_geometry_column = 'geom'`, table).Scan(&gtype, &dims)
	geomCol := "geom"
	if err == pgx.ErrNoRows {
		// Spreadsheets, CSVs whose coordinate columns were named by the caller (or that the
		// driver did not recognise) arrive as plain tables: build points from their columns.
		// Without coordinates the layer is a table (record_type table, no geometry).
		gtype, dims, err = addPoints(ctx, im.Pool, table, names, opts)
		if errors.Is(err, errNoCoordinates) {
			geomCol, err = "", nil
		}
	}
	if err != nil {
		return result{}, err
	}
	// The table's check (geometry validity, attribute completeness) scores the new record's
	// quality, as Validate Dataset would: the catalog shows it from the start.
	reader := features.Reader{Pool: im.Pool}
	t, err := reader.Describe(ctx, "data", table, "gid", geomCol)
	if err != nil {
		return result{}, err
	}
	check, err := reader.Validate(ctx, t)
	if err != nil {
		return result{}, err
	}
	lt := loadedTable{name: table, t: t, check: check, geomCol: geomCol, gtype: gtype, dims: dims}
	if job.Reupload {
		return im.replace(ctx, job, opts, lt, src, warns, complete)
	}
	var res result
	var after func(context.Context)
	err = pgx.BeginFunc(ctx, im.Pool, func(tx pgx.Tx) error {
		box, info, temporal, err := im.describe(ctx, tx, lt)
		if err != nil {
			return err
		}
		count = box.Count
		res.Temporal = temporal
		title := fileTitle(opts.Title, deref(job.SourceFilename))
		visibility := opts.Visibility
		if visibility == "" {
			visibility = auth.VisibilityPrivate
		}
		// A commit publishes what it imports unless it asks for another status (draft to curate
		// it first); who sees it is still the visibility's business (private by default).
		status := cmp.Or(opts.RecordStatus, catalog.StatusPublished)
		prm := store.InsertDatasetParams{TableSchema: "data", TableName: table, Title: title, Visibility: visibility, RecordStatus: &status,
			RecordType: "vector_dataset", Origin: ptr("upload"), SourceFormat: ptr(src.Format), SourceFilename: job.SourceFilename,
			Srid: ptr(int32(4326)), GeometryType: ptr(gtype), HasGenericGeometry: gtype == "GEOMETRY", Is3d: ptr(dims >= 3),
			NDims: &dims, FeatureCount: &count, ColumnInfo: info, CreatedBy: job.CreatedBy, GeometryColumn: &geomCol}
		if geomCol == "" {
			prm.RecordType, prm.Srid, prm.GeometryType, prm.Is3d, prm.NDims = "table", nil, nil, nil, nil
		}
		if opts.Summary != "" {
			prm.Summary = &opts.Summary
		}
		if opts.Analysis != nil {
			prm.Origin, prm.SourceFormat, prm.DerivedFrom = ptr("analysis"), nil, opts.DerivedFrom
		}
		if url := sourceURL(job.Source); url != "" { // fetched from a remote service: refreshable
			prm.Origin, prm.SourceUrl, prm.OriginRef = ptr("service"), &url, job.Source
		}
		if opts.SourceSRID > 0 {
			prm.OriginalSrid = ptr(int32(opts.SourceSRID))
		}
		prm.DataVintageStart, prm.DataVintageEnd = dateOf(opts.VintageStart), dateOf(opts.VintageEnd)
		prm.ExtentBbox = box.BBox
		if dims >= 3 {
			prm.ZMin, prm.ZMax = box.ZMin, box.ZMax
		}
		actor := auth.Principal{}
		if job.CreatedBy != nil {
			actor.UserID = *job.CreatedBy
		}
		q := store.New(tx)
		if id, err = catalog.AddRecord(ctx, q, prm, actor); err != nil {
			return err
		}
		if err := im.setQuality(ctx, q, store.CatalogDataset{ID: id, Summary: prm.Summary, GeometryColumn: geomCol}, check); err != nil {
			return err
		}
		res.DatasetID, res.Rows = id, count
		if err := im.completeJob(ctx, tx, job, res, warns, complete); err != nil {
			return err
		}
		// After the job names the new record: a STAC re-import may move its data elsewhere.
		return im.finish(ctx, tx, job.ID, id, &after)
	})
	if err == nil && after != nil {
		after(ctx)
	}
	return res, err
}

// describe measures a run's table inside the transaction that records it: count, WGS 84 box
// (antimeridian-aware) and heights, as feature edits recompute them, the column profile, and the
// columns that look temporal but stayed text. A table without rows is refused.
func (im *Importer) describe(ctx context.Context, tx pgx.Tx, lt loadedTable) (features.Extent, []byte, map[string]string, error) {
	box, err := features.TableExtent(ctx, tx, features.Table{Schema: "data", Name: lt.name, ID: "gid", Geom: lt.geomCol}, 4326)
	if err != nil {
		return box, nil, nil, err
	}
	if box.Count == 0 {
		return box, nil, nil, &ImportError{Msg: "the file holds no features"}
	}
	cols, err := features.Reader{Pool: im.Pool}.Profile(ctx, lt.t, box.Count)
	if err != nil {
		return box, nil, nil, err
	}
	info, _ := json.Marshal(cols)
	temporal := map[string]string{}
	for _, c := range cols {
		if c.SemanticRole == "temporal" && (strings.Contains(c.Type, "char") || c.Type == "text") {
			temporal[c.Name] = "looks temporal but stayed text: the values are not ISO 8601 dates or times"
		}
	}
	return box, info, temporal, nil
}

// setQuality scores the record rec (its id, summary and geometry column are read) from the
// table's check, as Validate Dataset would: the catalog shows it from the start.
func (im *Importer) setQuality(ctx context.Context, q *store.Queries, rec store.CatalogDataset, check features.Validation) error {
	quality, _ := json.Marshal(catalog.ComputeQuality(rec, check, time.Now().UTC()))
	return q.SetDatasetQuality(ctx, store.SetDatasetQualityParams{ID: rec.ID, QualityDetail: quality})
}

// completeJob completes the run's job with res, in the transaction that records its data, and
// River's record of it (complete); a run that lost its job commits nothing.
func (im *Importer) completeJob(ctx context.Context, tx pgx.Tx, job store.CatalogIngestJob, res result, warns []Warning,
	complete func(context.Context, pgx.Tx) error) error {
	if warns == nil {
		warns = []Warning{}
	}
	wj, _ := json.Marshal(warns)
	tj, _ := json.Marshal(res.Temporal)
	n, err := store.New(tx).CompleteIngestJob(ctx, store.CompleteIngestJobParams{ID: job.ID, Attempt: job.Attempts, DatasetID: &res.DatasetID,
		RowsProcessed: &res.Rows, RowsFailed: ptr(int64(0)), Warnings: wj, TemporalParseErrors: tj})
	if err == nil && n == 0 {
		err = errLostJob
	}
	if err == nil && complete != nil {
		err = complete(ctx, tx)
	}
	return err
}

// The usual names of longitude, latitude and WKT columns, in order of preference.
var (
	lonNames = []string{"lon", "lng", "long", "longitude", "x"}
	latNames = []string{"lat", "latitude", "y"}
	wktNames = []string{"wkt", "geometry", "geom", "the_geom"}
)

// usualName is the first of names that is one of want (in want's order of preference), or "".
func usualName(names, want []string) string {
	for _, w := range want {
		for _, n := range names {
			if strings.EqualFold(n, w) {
				return n
			}
		}
	}
	return ""
}

// errNoCoordinates: the table has no columns to build points from.
var errNoCoordinates = errors.New("no coordinate columns")

// addPoints adds a point geometry built from the x and y columns the caller named, or else from
// the first columns with the usual longitude and latitude names, in the source CRS (transformed
// to WGS 84). Rows whose values are not numbers get no geometry.
func addPoints(ctx context.Context, pool *pgxpool.Pool, table string, names []string, opts Options) (string, int32, error) {
	x, y := opts.XColumn, opts.YColumn
	if x == "" {
		x, y = usualName(names, lonNames), usualName(names, latNames)
	}
	if x == "" || y == "" {
		return "", 0, errNoCoordinates
	}
	ident := pgx.Identifier{"data", table}.Sanitize()
	num := func(c string) string {
		col := pgx.Identifier{c}.Sanitize()
		return "CASE WHEN " + col + "::text ~ '^\\s*[-+]?[0-9]*\\.?[0-9]+([eE][-+]?[0-9]+)?\\s*$' THEN " + col + "::text::float8 END"
	}
	srid := 4326
	if opts.SourceSRID > 0 {
		srid = opts.SourceSRID
	}
	// srid is an integer of ours, safe as a literal.
	point := "ST_SetSRID(ST_MakePoint(" + num(x) + ", " + num(y) + "), " + strconv.Itoa(srid) + ")"
	if srid != 4326 {
		point = "ST_Transform(" + point + ", 4326)"
	}
	stmts := []string{
		"ALTER TABLE " + ident + " ADD COLUMN geom geometry(Point, 4326)",
		"UPDATE " + ident + " SET geom = " + point,
		"CREATE INDEX ON " + ident + " USING gist (geom)",
	}
	for _, s := range stmts {
		if _, err := pool.Exec(ctx, s); err != nil {
			return "", 0, err
		}
	}
	return "POINT", 2, nil
}

// loadColumns are the key and geometry column names ogr2ogr creates: no source field can
// plausibly be named so, so nothing the file holds collides with them.
func loadColumns(job store.CatalogIngestJob) (key, geom string) {
	tag := strings.ReplaceAll(job.ID.String(), "-", "")[:12]
	return "meridian_gid_" + tag, "meridian_geom_" + tag
}

// nameColumns gives every column of a loaded table its planned name: the fields, matched to the
// source's fields by position, then gid and geom. Renames go through temporary names, so a
// planned name may be one another field holds until its own rename.
func (im *Importer) nameColumns(ctx context.Context, table, key, geom string, names []string) error {
	ident := pgx.Identifier{"data", table}.Sanitize()
	rows, err := im.Pool.Query(ctx, `SELECT attname FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0
		AND NOT attisdropped ORDER BY attnum`, "data."+pgx.Identifier{table}.Sanitize())
	if err != nil {
		return err
	}
	cols, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	var fields []string
	hasGeom := false
	for _, c := range cols {
		switch c {
		case key:
		case geom:
			hasGeom = true
		default:
			fields = append(fields, c)
		}
	}
	if len(fields) != len(names) {
		return fmt.Errorf("the table of %s has %d columns where the file has %d fields", table, len(fields), len(names))
	}
	rename := func(tx pgx.Tx, from, to string) error {
		_, err := tx.Exec(ctx, "ALTER TABLE "+ident+" RENAME COLUMN "+pgx.Identifier{from}.Sanitize()+" TO "+pgx.Identifier{to}.Sanitize())
		return err
	}
	return pgx.BeginFunc(ctx, im.Pool, func(tx pgx.Tx) error {
		for i, f := range fields {
			if f != names[i] {
				if err := rename(tx, f, fmt.Sprintf("meridian_tmp_%d", i)); err != nil {
					return err
				}
			}
		}
		for i, f := range fields {
			if f != names[i] {
				if err := rename(tx, fmt.Sprintf("meridian_tmp_%d", i), names[i]); err != nil {
					return err
				}
			}
		}
		if err := rename(tx, key, "gid"); err != nil {
			return err
		}
		if hasGeom {
			return rename(tx, geom, "geom")
		}
		return nil
	})
}

func dateOf(t *time.Time) pgtype.Date {
	if t == nil {
		return pgtype.Date{}
	}
	return pgtype.Date{Time: *t, Valid: true}
}

// sourceURL is the url of a job's remote source (catalog.ingest_jobs.source), or "".
func sourceURL(source []byte) string {
	var src struct {
		URL string `json:"url"`
	}
	_ = json.Unmarshal(source, &src)
	return src.URL
}
