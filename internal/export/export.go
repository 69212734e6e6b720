// Package export writes a dataset table out as a file with ogr2ogr: GeoPackage, GeoJSON, CSV,
// zipped Shapefile or FlatGeobuf. Formats GDAL can write sequentially are streamed while
// ogr2ogr writes them; the others are written to a temporary directory first and then sent
// from disk, so memory stays flat whatever the size. Either way ogr2ogr writes to a file, never
// to the client: it and its database session end at GDAL's speed, and a slow reader holds only
// a file.
package export

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"meridian/internal/apperr"
	"meridian/internal/cql2"
	"meridian/internal/db"
	"meridian/internal/gate"
	"meridian/internal/gdalcmd"
	"meridian/internal/sqlbuild"
)

// Format is one output format.
type Format struct {
	Title                  string // what people call it
	Ext, MediaType, Driver string
	Stream                 bool // GDAL can write it to /vsistdout/
	Zip                    bool // the result is a directory of files to zip (Shapefile)
	Options                []string
}

// Formats by the name the API uses.
var Formats = map[string]Format{
	"geojson": {Title: "GeoJSON", Ext: "geojson", MediaType: "application/geo+json", Driver: "GeoJSON", Stream: true, Options: []string{"-lco", "RFC7946=YES"}},
	"csv":     {Title: "CSV", Ext: "csv", MediaType: "text/csv", Driver: "CSV", Stream: true, Options: []string{"-lco", "GEOMETRY=AS_WKT", "-lco", "GEOMETRY_NAME=geometry"}},
	"gpkg":    {Title: "GeoPackage", Ext: "gpkg", MediaType: "application/geopackage+sqlite3", Driver: "GPKG"},
	"fgb":     {Title: "FlatGeobuf", Ext: "fgb", MediaType: "application/flatgeobuf", Driver: "FlatGeobuf"},
	"shp":     {Title: "Shapefile (zipped)", Ext: "zip", MediaType: "application/zip", Driver: "ESRI Shapefile", Zip: true, Options: []string{"-lco", "ENCODING=UTF-8"}},
}

// FormatNames are the names of Formats in the order catalogs list them (the default first).
var FormatNames = []string{"gpkg", "geojson", "csv", "shp", "fgb"}

// Exporter runs exports from the pool's database; temporary files go under TmpDir. Timeout
// bounds one ogr2ogr run; Log receives GDAL's stderr when a run fails.
type Exporter struct {
	Pool    *pgxpool.Pool
	TmpDir  string
	Timeout time.Duration
	Log     *slog.Logger
	GDAL    gdalcmd.Limits // the kernel limits of ogr2ogr (FileSize bounds the export's file)
	// Running bounds the ogr2ogr exports running at once (each a process and a database session);
	// Clients the exports one client has in flight, from the start to the last byte sent.
	Running, Clients *gate.Gate
	tmpOnce          sync.Once
}

// Request says what to export.
type Request struct {
	DatasetID           string // for the log
	Schema, Table, Name string // Name is the layer and file name
	// The table's columns as the catalog knows them: its key (exported as the features' ids when
	// it is an integer, as GDAL wants), its geometry and the rest. With no columns at all the
	// whole row is exported.
	ID, IDType, Geom string
	// GeometryType is the catalog's (POINT, MULTIPOLYGON ...), Is3D its Z: a -sql source tells
	// GDAL no type, so without them files would declare a generic geometry.
	GeometryType string
	Is3D         bool
	Columns      []string
	Format       string
	SRID         int       // the table's geometry SRID, 0 for 4326
	CRS          int       // EPSG code, 0 for 4326
	BBox         []float64 // WGS84 minx, miny, maxx, maxy, or nil
	// Where keeps only the features matching a CQL2 filter over Props (the table's queryables,
	// written against the alias t).
	Where *cql2.Filter
	Props map[string]cql2.Property
	// Client names the caller for the per-client bound: its user, or its address when anonymous.
	Client string
}

// LayerName is the layer and file name an export gets from a dataset title: letters of every
// script, digits and underscores (every other run of characters one underscore), starting with
// a letter and never with "gpkg" (GeoPackage reserves the prefix), at most 60 bytes cut at a
// character boundary, "dataset" when nothing is left. A title can thus never reach ogr2ogr as an
// option ("--config"), break a path, or be refused by a driver.
func LayerName(title string) string {
	var b strings.Builder
	gap := false
	for _, r := range title {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(r)
			gap = false
		} else if !gap && b.Len() > 0 {
			b.WriteByte('_')
			gap = true
		}
	}
	n := strings.TrimRight(b.String(), "_")
	if n == "" {
		return "dataset"
	}
	if first, _ := utf8.DecodeRuneInString(n); !unicode.IsLetter(first) || strings.HasPrefix(strings.ToLower(n), "gpkg") {
		n = "layer_" + n
	}
	for len(n) > 60 {
		_, size := utf8.DecodeLastRuneInString(n)
		n = n[:len(n)-size]
	}
	return strings.TrimRight(n, "_")
}

// Open starts the export and returns its bytes; Close releases the process and files. size is 0
// when unknown (streamed formats).
//
// A streamed export returns only once ogr2ogr has written its first bytes, so a run that fails
// before that (a missing table, a broken connection) is an error the caller answers with a
// problem instead of a 200 with an empty body. A run that fails later makes the reader's Read
// return an error rather than io.EOF: the response has started, and the caller must cut it.
func (e *Exporter) Open(ctx context.Context, r Request) (io.ReadCloser, int64, error) {
	f, ok := Formats[r.Format]
	switch {
	case r.Format == "parquet":
		// Clients offer GeoParquet; Debian 12's GDAL 3.6 has no Parquet driver, and a Go writer
		// would be a large dependency for one format (revisit with GDAL >= 3.8).
		return nil, 0, apperr.Unprocessable("GeoParquet (parquet) is not offered by this server; export as gpkg, fgb, geojson, csv or shp instead")
	case !ok:
		return nil, 0, apperr.Unprocessable("format %q is not one of gpkg, fgb, geojson, csv, shp", r.Format)
	}
	if r.Geom == "" && (f.Driver == "ESRI Shapefile" || f.Driver == "FlatGeobuf") {
		return nil, 0, apperr.Unprocessable("a table without geometry cannot be written as %s; export it as csv, gpkg or geojson", f.Driver)
	}
	if r.CRS != 0 && r.CRS != 4326 {
		// ogr2ogr's complaint would read as our failure: check first.
		var known bool
		if err := e.Pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM spatial_ref_sys WHERE srid = $1)", r.CRS).Scan(&known); err != nil {
			return nil, 0, err
		}
		if !known {
			return nil, 0, apperr.Unprocessable("crs %d is not an EPSG code PostGIS knows", r.CRS)
		}
	}
	spat, err := e.tableBox(ctx, r)
	if err != nil {
		return nil, 0, err
	}
	sql, settings, err := selectSQL(r)
	if err != nil {
		return nil, 0, err
	}
	// The client's share first (it lasts until the last byte is sent), then a running slot (it
	// lasts as long as ogr2ogr).
	done, err := e.Clients.Enter(ctx, r.Client)
	if err != nil {
		return nil, 0, err
	}
	body, size, err := e.run(ctx, r, f, spat, sql, settings)
	if err != nil {
		done()
		return nil, 0, err
	}
	return &released{ReadCloser: body, release: done}, size, nil
}

// run runs ogr2ogr within a running slot and returns what it writes.
func (e *Exporter) run(ctx context.Context, r Request, f Format, spat []float64, sql, settings string) (io.ReadCloser, int64, error) {
	tmp, err := e.tmp()
	if err != nil {
		return nil, 0, err
	}
	ran, err := e.Running.Enter(ctx, "")
	if err != nil {
		return nil, 0, err
	}
	var dir, out string
	if f.Stream {
		out = "/vsistdout/"
	} else {
		if dir, err = os.MkdirTemp(tmp, "export-"); err != nil {
			ran()
			return nil, 0, err
		}
		out = filepath.Join(dir, r.Name+"."+strings.TrimPrefix(f.Ext, "zip"))
		if f.Zip {
			out = filepath.Join(dir, "shp")
		}
	}
	ctx, cancel := context.WithTimeout(ctx, e.timeout())
	cmd, stderr, err := e.command(ctx, r, f, out, spat, sql, settings)
	if err != nil {
		cancel()
		ran()
		os.RemoveAll(dir)
		return nil, 0, err
	}
	if f.Stream {
		return e.spool(tmp, cmd, stderr, cancel, ran, r)
	}
	err = cmd.Run()
	cancel()
	ran()
	if err != nil {
		os.RemoveAll(dir)
		return nil, 0, e.failed(r, err, stderr)
	}
	file := out
	if f.Zip {
		file = filepath.Join(dir, r.Name+".zip")
		if err := zipDir(filepath.Join(dir, "shp"), file, r.Name); err != nil {
			os.RemoveAll(dir)
			return nil, 0, err
		}
	}
	fh, err := os.Open(file)
	if err != nil {
		os.RemoveAll(dir)
		return nil, 0, err
	}
	st, _ := fh.Stat()
	return &fileReader{File: fh, dir: dir}, st.Size(), nil
}

// tmp is the absolute temporary directory (ogr2ogr runs in /: its output path must not depend on
// the server's working directory). The first call removes what a previous process left there:
// spools are unlinked at once, but the directories of file formats outlive a crash.
func (e *Exporter) tmp() (string, error) {
	tmp, err := filepath.Abs(e.TmpDir)
	if err != nil {
		return "", err
	}
	e.tmpOnce.Do(func() {
		entries, _ := os.ReadDir(tmp)
		for _, en := range entries {
			if info, err := en.Info(); err == nil && time.Since(info.ModTime()) > 2*e.timeout() {
				_ = os.RemoveAll(filepath.Join(tmp, en.Name()))
			}
		}
	})
	return tmp, os.MkdirAll(tmp, 0o750)
}

// released gives back the client's share once the export's body is closed.
type released struct {
	io.ReadCloser
	release func()
}

func (r *released) Close() error {
	err := r.ReadCloser.Close()
	r.release()
	return err
}

func (e *Exporter) timeout() time.Duration {
	if e.Timeout > 0 {
		return e.Timeout
	}
	return 15 * time.Minute
}

// command prepares ogr2ogr confined by gdalcmd: only the PostgreSQL driver and the output's
// registered, no network, none of the server's environment. The rows are selected by SQL over
// the quoted identifier, because a layer name "schema.table" is split by GDAL at the first dot
// and cannot carry quotes. The session's statement_timeout matches the time limit, so the
// database stops too when the process is killed.
//
// A filter's values reach the database as session settings in PGOPTIONS (sqlbuild.Settings),
// since ogr2ogr takes SQL text without parameters: no value is ever part of the SQL.
func (e *Exporter) command(ctx context.Context, r Request, f Format, out string, spat []float64, sql, settings string) (*exec.Cmd, *capped, error) {
	conn, password := db.OGRConnection(e.Pool)
	args := []string{"-f", f.Driver, out, conn, "-sql", sql, "-nln", r.Name}
	if t := strings.ToUpper(r.GeometryType); r.Geom != "" && geometryTypes[t] {
		if r.Is3D {
			t += "Z"
		}
		args = append(args, "-nlt", t)
	}
	if r.CRS != 0 && r.CRS != 4326 {
		args = append(args, "-t_srs", "EPSG:"+strconv.Itoa(r.CRS))
		if r.Format == "geojson" {
			f.Options = nil // RFC 7946 demands WGS84
		}
	}
	if len(spat) == 4 {
		args = append(args, "-spat")
		for _, v := range spat {
			args = append(args, strconv.FormatFloat(v, 'g', -1, 64))
		}
	}
	args = append(args, f.Options...)
	extra := []string{"PGPASSWORD=" + password,
		"PGOPTIONS=-c statement_timeout=" + strconv.FormatInt(e.timeout().Milliseconds(), 10) + settings,
		"PGAPPNAME=meridian-export"}
	cmd, err := gdalcmd.Command(ctx, e.GDAL, []string{"PostgreSQL", f.Driver}, extra, "ogr2ogr", args...)
	if err != nil {
		return nil, nil, err
	}
	stderr := &capped{max: 16 << 10}
	cmd.Stderr = stderr
	return cmd, stderr, nil
}

// tableBox is the request's WGS84 bbox in the table's SRID, for -spat: ogr2ogr refuses
// -spat_srs together with -sql. The box's edges are densified before the transformation, so the
// extent of the transformed box covers every point of the original.
func (e *Exporter) tableBox(ctx context.Context, r Request) ([]float64, error) {
	if len(r.BBox) != 4 || r.SRID == 0 || r.SRID == 4326 {
		return r.BBox, nil
	}
	var b []float64
	err := e.Pool.QueryRow(ctx, `SELECT ARRAY[ST_XMin(t), ST_YMin(t), ST_XMax(t), ST_YMax(t)] FROM (SELECT ST_Transform(
		ST_Segmentize(ST_MakeEnvelope($1::float8, $2::float8, $3::float8, $4::float8, 4326), GREATEST(LEAST($3 - $1, $4 - $2) / 16, 1e-6)),
		$5::int) AS t) x`, r.BBox[0], r.BBox[1], r.BBox[2], r.BBox[3], r.SRID).Scan(&b)
	if err != nil {
		return nil, db.QueryValueError(err)
	}
	return b, nil
}

// selectSQL selects the rows to export with every identifier quoted. An integer key is named
// ogc_fid, the name under which GDAL takes a result column for the features' ids, so the key
// leaves as the file's FIDs (not as one more attribute), as it would from the table itself.
func selectSQL(r Request) (sql, settings string, err error) {
	from := " FROM " + pgx.Identifier{r.Schema, r.Table}.Sanitize() + " t"
	where := ""
	if r.Where != nil {
		b := sqlbuild.Settings()
		cond, err := r.Where.Render(b, r.Props, r.SRID)
		if err != nil {
			return "", "", err
		}
		if settings, err = b.Options(); err != nil {
			return "", "", apperr.Invalid("where: %v", err)
		}
		// The server reads its startup options from one packet of at most 10000 bytes.
		if len(settings) > 8000 {
			return "", "", apperr.Invalid("where: the filter's values are too long")
		}
		where = " WHERE " + cond
	}
	if r.Geom == "" && len(r.Columns) == 0 {
		return "SELECT *" + from + where, settings, nil
	}
	var cols []string
	key := r.ID != "" && integerTypes[r.IDType] && !slices.Contains(r.Columns, "ogc_fid")
	switch {
	case key:
		cols = append(cols, "t."+pgx.Identifier{r.ID}.Sanitize()+" AS ogc_fid")
	case r.ID != "":
		cols = append(cols, "t."+pgx.Identifier{r.ID}.Sanitize())
	}
	if r.Geom != "" {
		cols = append(cols, "t."+pgx.Identifier{r.Geom}.Sanitize())
	}
	for _, c := range r.Columns {
		cols = append(cols, "t."+pgx.Identifier{c}.Sanitize())
	}
	return "SELECT " + strings.Join(cols, ", ") + from + where, settings, nil
}

// geometryTypes are the catalog's geometry types GDAL takes as -nlt as they are.
var geometryTypes = map[string]bool{"POINT": true, "MULTIPOINT": true, "LINESTRING": true, "MULTILINESTRING": true,
	"POLYGON": true, "MULTIPOLYGON": true, "GEOMETRYCOLLECTION": true}

var integerTypes = map[string]bool{"integer": true, "bigint": true, "smallint": true}

// spoolPoll is how often a reader that caught up with ogr2ogr looks for more.
const spoolPoll = 10 * time.Millisecond

// spool starts cmd writing its output into an unlinked file under tmp and waits for its first
// bytes (or its end); cancel (which kills the process) and release are called once it has ended.
// The file has no name from the start, so it is removed on every path, a crash included, once
// the last descriptor closes.
func (e *Exporter) spool(tmp string, cmd *exec.Cmd, stderr *capped, cancel context.CancelFunc, release func(), r Request) (io.ReadCloser, int64, error) {
	end := func() { cancel(); release() }
	w, err := os.CreateTemp(tmp, "spool-*")
	if err != nil {
		end()
		return nil, 0, err
	}
	rf, err := os.Open(w.Name())
	_ = os.Remove(w.Name())
	if err != nil {
		w.Close()
		end()
		return nil, 0, err
	}
	cmd.Stdout = w
	err = cmd.Start()
	w.Close() // the process has its own descriptor
	if err != nil {
		rf.Close()
		end()
		return nil, 0, err
	}
	sp := &spoolReader{f: rf, done: make(chan struct{}), kill: cancel, e: e, req: r, stderr: stderr}
	go func() {
		sp.procErr = cmd.Wait()
		end()
		close(sp.done)
	}()
	if err := sp.first(); err != nil {
		_ = sp.Close()
		return nil, 0, err
	}
	return sp, 0, nil
}

// spoolReader reads a spool while ogr2ogr writes it. Its end is io.EOF only when the process
// succeeded: a failed run turns the end into an error, so a cut file is never passed off as
// complete.
type spoolReader struct {
	f       *os.File
	done    chan struct{} // closed when the process has ended (procErr is then set)
	procErr error
	kill    context.CancelFunc
	e       *Exporter
	req     Request
	stderr  *capped
	closed  bool
}

// first waits until the spool holds a byte or the process has ended; a process that ended
// without output is an error, answered before any response is sent.
func (s *spoolReader) first() error {
	for {
		st, err := s.f.Stat()
		if err != nil {
			return err
		}
		if st.Size() > 0 {
			return nil
		}
		select {
		case <-s.done:
			if st, err := s.f.Stat(); err == nil && st.Size() > 0 && s.procErr == nil {
				return nil
			}
			err := s.procErr
			if err == nil {
				err = errors.New("no output")
			}
			return s.e.failed(s.req, err, s.stderr)
		case <-time.After(spoolPoll):
		}
	}
}

func (s *spoolReader) Read(b []byte) (int, error) {
	for {
		n, err := s.f.Read(b)
		if n > 0 || err != nil && err != io.EOF {
			return n, err
		}
		select {
		case <-s.done:
			// Everything the process wrote is in the file now.
			if n, err := s.f.Read(b); n > 0 || err != io.EOF {
				return n, err
			}
			if s.procErr != nil {
				return 0, s.e.failed(s.req, s.procErr, s.stderr)
			}
			return 0, io.EOF
		case <-time.After(spoolPoll):
		}
	}
}

// Close ends the process when the reader stopped early (the client went away) and drops the
// spool.
func (s *spoolReader) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	s.kill()
	<-s.done
	return s.f.Close()
}

// failed logs GDAL's stderr with the dataset and returns the error to answer: 422 when the
// caller's choice cannot be honoured (features that do not fit the asked CRS), else ours.
func (e *Exporter) failed(r Request, err error, stderr *capped) error {
	msg := strings.TrimSpace(stderr.String())
	if e.Log != nil {
		e.Log.Error("export failed", "dataset_id", r.DatasetID, "format", r.Format, "crs", r.CRS,
			"err", err, "gdal_stderr", msg)
	}
	if r.CRS != 0 && r.CRS != 4326 && strings.Contains(msg, "Failed to reproject") {
		return apperr.Unprocessable("the features cannot be transformed to EPSG:%d", r.CRS)
	}
	if limit := e.GDAL.Exceeded(err, msg); limit != "" {
		return apperr.Unprocessable("the export was stopped: it reached %s; export fewer features (bbox, where) or another format", limit)
	}
	return fmt.Errorf("ogr2ogr export of dataset %s: %v: %s", r.DatasetID, err, firstLine(msg))
}

// procReader streams ogr2ogr's output. At the end of the output it waits for the process: a
// failed run turns the end into an error, so a cut file is never passed off as complete.
type procReader struct {
	r      io.Reader
	pipe   io.Closer
	cmd    *exec.Cmd
	cancel context.CancelFunc
	stderr *capped
	e      *Exporter
	req    Request
	waited bool
	err    error
}

func (p *procReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if err == io.EOF {
		if werr := p.wait(); werr != nil {
			return n, werr
		}
	}
	return n, err
}

func (p *procReader) wait() error {
	if !p.waited {
		p.waited = true
		if err := p.cmd.Wait(); err != nil {
			p.err = p.e.failed(p.req, err, p.stderr)
		}
		p.cancel()
	}
	return p.err
}

// Close ends the process when the stream stopped early (the client went away) and reaps it.
func (p *procReader) Close() error {
	if !p.waited {
		p.cancel()
		_ = p.pipe.Close()
		p.waited = true
		_ = p.cmd.Wait()
	}
	return nil
}

// capped keeps the first max bytes written to it: GDAL may repeat a warning per feature.
type capped struct {
	max int
	mu  sync.Mutex
	buf bytes.Buffer
}

func (c *capped) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.max - c.buf.Len(); room > 0 {
		c.buf.Write(b[:min(room, len(b))])
	}
	return len(b), nil
}

func (c *capped) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

// fileReader removes the export's directory once the file has been sent.
type fileReader struct {
	*os.File
	dir string
}

func (f *fileReader) Close() error {
	err := f.File.Close()
	_ = os.RemoveAll(f.dir)
	return err
}

// zipDir zips every file of dir (a Shapefile's .shp, .shx, .dbf, .prj, .cpg) into dst, named
// after the layer.
func zipDir(dir, dst, name string) error {
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	zw := zip.NewWriter(out)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		in, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		w, err := zw.Create(e.Name())
		if err == nil {
			_, err = io.Copy(w, in)
		}
		in.Close()
		if err != nil {
			return err
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return out.Close()
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
