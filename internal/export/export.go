// Package export writes a dataset table out as a file with ogr2ogr: GeoPackage, GeoJSON, CSV,
// zipped Shapefile or FlatGeobuf. Formats GDAL can write to a pipe stream straight through; the
// others are written to a temporary directory first and then streamed from disk, so memory
// stays flat whatever the size.
package export

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"meridian/internal/apperr"
	"meridian/internal/db"
)

// Format is one output format.
type Format struct {
	Ext, MediaType, Driver string
	Stream                 bool // GDAL can write it to /vsistdout/
	Zip                    bool // the result is a directory of files to zip (Shapefile)
	Options                []string
}

// Formats by the name the API uses.
var Formats = map[string]Format{
	"geojson": {Ext: "geojson", MediaType: "application/geo+json", Driver: "GeoJSON", Stream: true, Options: []string{"-lco", "RFC7946=YES"}},
	"csv":     {Ext: "csv", MediaType: "text/csv", Driver: "CSV", Stream: true, Options: []string{"-lco", "GEOMETRY=AS_WKT", "-lco", "GEOMETRY_NAME=geometry"}},
	"gpkg":    {Ext: "gpkg", MediaType: "application/geopackage+sqlite3", Driver: "GPKG"},
	"fgb":     {Ext: "fgb", MediaType: "application/flatgeobuf", Driver: "FlatGeobuf"},
	"shp":     {Ext: "zip", MediaType: "application/zip", Driver: "ESRI Shapefile", Zip: true, Options: []string{"-lco", "ENCODING=UTF-8"}},
}

// Exporter runs exports from the pool's database; temporary files go under TmpDir.
type Exporter struct {
	Pool   *pgxpool.Pool
	TmpDir string
}

// Request says what to export.
type Request struct {
	Schema, Table, Name string // Name is the layer and file name
	Format              string
	CRS                 int       // EPSG code, 0 for 4326
	BBox                []float64 // WGS84 minx, miny, maxx, maxy, or nil
}

// Open starts the export and returns its bytes; Close releases the process and files. size is 0
// when unknown (streamed formats).
func (e *Exporter) Open(ctx context.Context, r Request) (io.ReadCloser, int64, error) {
	f, ok := Formats[r.Format]
	if !ok {
		return nil, 0, apperr.Unprocessable("format %q is not one of gpkg, geojson, csv, shp, fgb", r.Format)
	}
	if r.CRS != 0 && r.CRS != 4326 {
		// A streamed export has sent its headers before ogr2ogr could complain: check first.
		var known bool
		if err := e.Pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM spatial_ref_sys WHERE srid = $1)", r.CRS).Scan(&known); err != nil {
			return nil, 0, err
		}
		if !known {
			return nil, 0, apperr.Unprocessable("crs %d is not an EPSG code PostGIS knows", r.CRS)
		}
	}
	conn, password := db.OGRConnection(e.Pool)
	args := []string{"-f", f.Driver}
	var dir, out string
	if f.Stream {
		out = "/vsistdout/"
	} else {
		var err error
		if err = os.MkdirAll(e.TmpDir, 0o750); err != nil {
			return nil, 0, err
		}
		if dir, err = os.MkdirTemp(e.TmpDir, "export-"); err != nil {
			return nil, 0, err
		}
		out = filepath.Join(dir, r.Name+"."+strings.TrimPrefix(f.Ext, "zip"))
		if f.Zip {
			out = filepath.Join(dir, "shp")
		}
	}
	args = append(args, out, conn, r.Schema+"."+r.Table, "-nln", r.Name)
	if r.CRS != 0 && r.CRS != 4326 {
		args = append(args, "-t_srs", "EPSG:"+strconv.Itoa(r.CRS))
		if r.Format == "geojson" {
			f.Options = nil // RFC 7946 demands WGS84
		}
	}
	if len(r.BBox) == 4 {
		args = append(args, "-spat")
		for _, v := range r.BBox {
			args = append(args, strconv.FormatFloat(v, 'g', -1, 64))
		}
		args = append(args, "-spat_srs", "EPSG:4326")
	}
	args = append(args, f.Options...)
	cmd := exec.CommandContext(ctx, "ogr2ogr", args...)
	cmd.Env = append(os.Environ(), "PGPASSWORD="+password, "CPL_LOG=/dev/null")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if f.Stream {
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return nil, 0, err
		}
		if err := cmd.Start(); err != nil {
			return nil, 0, err
		}
		return &procReader{ReadCloser: stdout, cmd: cmd}, 0, nil
	}
	if err := cmd.Run(); err != nil {
		os.RemoveAll(dir)
		return nil, 0, fmt.Errorf("ogr2ogr export: %v: %s", err, firstLine(stderr.String()))
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

// procReader ends the ogr2ogr process with the stream.
type procReader struct {
	io.ReadCloser
	cmd *exec.Cmd
}

func (p *procReader) Close() error {
	_ = p.ReadCloser.Close()
	err := p.cmd.Wait()
	var exit *exec.ExitError
	if errors.As(err, &exit) && p.cmd.ProcessState != nil && !p.cmd.ProcessState.Success() {
		return fmt.Errorf("ogr2ogr export ended with %v", err)
	}
	return nil
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
