// Package ingest turns uploaded files into datasets: staging on disk, the import job on River,
// ogr2ogr into the data schema, and the finishing of the catalog record.
package ingest

import (
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode"

	"github.com/google/uuid"

	"meridian/internal/apperr"
)

// CheckFilename refuses names that are not a plain file name with a supported extension.
func CheckFilename(name string) error {
	switch {
	case name == "" || len(name) > 255:
		return apperr.Unprocessable("filename must be 1 to 255 characters")
	case strings.ContainsAny(name, `/\`) || strings.Contains(name, "..") || strings.HasPrefix(name, "."):
		return apperr.Unprocessable("filename %q must be a plain file name, without directories", name)
	case strings.IndexFunc(name, func(r rune) bool { return unicode.IsControl(r) }) >= 0:
		return apperr.Unprocessable("filename contains control characters")
	}
	ext := strings.ToLower(filepath.Ext(name))
	if ext == ".parquet" {
		// Listed as accepted by the interface's decisions, but Debian's GDAL 3.6 has no Parquet
		// driver: say so, and what to send instead, rather than fail at import.
		return apperr.Unprocessable("GeoParquet files cannot be imported by this server (its GDAL has no Parquet driver); " +
			"convert the file to GeoPackage or FlatGeobuf, e.g. with ogr2ogr or QGIS, and upload that")
	}
	if !slices.Contains(Extensions, ext) {
		return apperr.Unprocessable("files of type %q are not supported; use one of %s", filepath.Ext(name), strings.Join(Extensions, " "))
	}
	return nil
}

// StageDir is where a job's files live until the job is done with them.
func StageDir(dataDir string, job uuid.UUID) string {
	return filepath.Join(dataDir, "staging", job.String())
}

// Stage streams r into the job's staging directory, never holding the file in memory. More than
// max bytes answers 413 and an empty file 422; either way nothing is left on disk. claim, when
// set, is asked for every chunk before it is written (the staging quota) and its refusal is the
// answer.
func Stage(dataDir string, job uuid.UUID, name string, r io.Reader, max int64, claim func(n int64) error) (string, int64, error) {
	if err := CheckFilename(name); err != nil {
		return "", 0, err
	}
	dir := StageDir(dataDir, job)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", 0, err
	}
	path := filepath.Join(dir, name)
	f, err := os.CreateTemp(dir, ".upload-*")
	if err != nil {
		return "", 0, err
	}
	var w io.Writer = f
	if claim != nil {
		w = claimFunc{w: f, claim: claim}
	}
	n, err := io.Copy(w, io.LimitReader(r, max+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	switch {
	case err != nil:
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			err = apperr.TooLarge("the upload exceeds the limit of %d bytes", max)
		}
	case n > max:
		err = apperr.TooLarge("the upload exceeds the limit of %d bytes", max)
	case n == 0:
		err = apperr.Unprocessable("the uploaded file is empty")
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		_ = os.RemoveAll(dir)
		return "", 0, err
	}
	return path, n, nil
}

// claimFunc asks claim for every chunk before writing it.
type claimFunc struct {
	w     io.Writer
	claim func(n int64) error
}

func (c claimFunc) Write(p []byte) (int, error) {
	if err := c.claim(int64(len(p))); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}

// Discard removes a job's staging directory.
func Discard(dataDir string, job uuid.UUID) error { return os.RemoveAll(StageDir(dataDir, job)) }
