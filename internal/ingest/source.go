package ingest

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"meridian/internal/apperr"
)

// format is one source format the product accepts: the GDAL driver that alone may open it, the
// name the catalog shows, and how its first bytes look.
type format struct {
	Driver, Name string
	sniff        func(head []byte) bool
}

// formats by extension. Nothing else is ever opened from user input: no VRT, no database or
// network driver, no SQLite outside GeoPackage (section 1 of the security review).
var formats = map[string]format{
	".gpkg":     {"GPKG", "GPKG", prefix("SQLite format 3\x00")},
	".geojson":  {"GeoJSON", "GeoJSON", jsonObject},
	".json":     {"GeoJSON", "GeoJSON", jsonObject},
	".geojsonl": {"GeoJSONSeq", "GeoJSONSeq", jsonSequence},
	".geojsons": {"GeoJSONSeq", "GeoJSONSeq", jsonSequence},
	".csv":      {"CSV", "CSV", delimitedText},
	".fgb":      {"FlatGeobuf", "FlatGeobuf", prefix("fgb\x03")},
	".kml":      {"KML", "KML", kmlDocument},
	".xlsx":     {"XLSX", "XLSX", prefix("PK\x03\x04")},
	".shp":      {"ESRI Shapefile", "ESRI Shapefile", prefix("\x00\x00\x27\x0a")},
}

// formatTitles name the formats in problems people read.
var formatTitles = map[string]string{"GPKG": "GeoPackage", "ESRI Shapefile": "Shapefile", "XLSX": "XLSX spreadsheet"}

// Extensions this build ingests.
var Extensions = []string{".zip", ".gpkg", ".geojson", ".json", ".geojsonl", ".geojsons", ".csv", ".fgb", ".kml", ".xlsx"}

// sidecars are archive members read alongside a data file; they are unpacked but never opened
// on their own.
var sidecars = []string{".shx", ".dbf", ".prj", ".cpg", ".qix", ".sbn", ".sbx", ".csvt", ".xml"}

// refusedMembers are archive members that make the whole archive suspect: archives inside the
// archive and GDAL's virtual formats, which point at other files, databases or URLs.
var refusedMembers = []string{".zip", ".gz", ".tgz", ".tar", ".7z", ".rar", ".bz2", ".xz", ".kmz", ".vrt", ".ovf"}

const (
	// maxRatio bounds how much an archive may expand: real vector archives compress about 3-10
	// to 1; a bomb compresses thousands to one.
	maxRatio = 100
	// sniffBytes is how much of a file its signature check reads.
	sniffBytes = 4096
)

// Source is a staged upload as GDAL opens it.
type Source struct {
	Path   string // the file (or, for several Shapefiles, the directory) GDAL opens
	Driver string // the one GDAL driver registered while it is opened
	Format string // source_format as the catalog shows it
	Name   string // the file name shown in problems
}

// Prepare checks a staged file before any GDAL tool sees it: its extension and its own
// signature must agree, and an archive is listed and unpacked by this code, member by member,
// within MaxUnpacked bytes. The unpacked copy is kept beside the staging file, so preview,
// commit and import each open exactly what was checked.
func Prepare(staged string, maxUnpacked int64) (Source, error) {
	name := filepath.Base(staged)
	ext := strings.ToLower(filepath.Ext(staged))
	if ext == ".zip" {
		return prepareArchive(staged, maxUnpacked)
	}
	f, ok := formats[ext]
	if !ok || ext == ".shp" {
		return Source{}, apperr.Unprocessable("files of type %q are not supported; use one of %s", ext, strings.Join(Extensions, " "))
	}
	if err := checkSignature(staged, name, f); err != nil {
		return Source{}, err
	}
	return Source{Path: staged, Driver: f.Driver, Format: f.Name, Name: name}, nil
}

func checkSignature(file, name string, f format) error {
	fh, err := os.Open(file)
	if err != nil {
		return err
	}
	defer fh.Close()
	head := make([]byte, sniffBytes)
	n, err := io.ReadFull(fh, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return err
	}
	if !f.sniff(head[:n]) {
		title := formatTitles[f.Driver]
		if title == "" {
			title = f.Driver
		}
		return apperr.Unprocessable("%s is not a %s file: its content does not start like one", name, title)
	}
	return nil
}

// unpackedDir holds the checked members of a staged archive.
func unpackedDir(staged string) string { return filepath.Join(filepath.Dir(staged), "unpacked") }

func prepareArchive(staged string, maxUnpacked int64) (Source, error) {
	name := filepath.Base(staged)
	zr, err := zip.OpenReader(staged)
	if err != nil {
		return Source{}, apperr.Unprocessable("%s is not a readable zip archive", name)
	}
	defer zr.Close()
	st, err := os.Stat(staged)
	if err != nil {
		return Source{}, err
	}
	var total uint64
	var keep []*zip.File
	seen := map[string]string{}
	for _, m := range zr.File {
		if err := checkMember(m); err != nil {
			return Source{}, err
		}
		total += m.UncompressedSize64
		if total > uint64(maxUnpacked) {
			return Source{}, apperr.TooLarge("%s: the archive unpacks to more than %d bytes (at member %s)", name, maxUnpacked, m.Name)
		}
		base := path.Base(strings.ReplaceAll(m.Name, `\`, "/"))
		ext := strings.ToLower(filepath.Ext(base))
		_, data := formats[ext]
		if m.FileInfo().IsDir() || strings.HasPrefix(m.Name, "__MACOSX/") || strings.HasPrefix(base, "._") ||
			!data && !slices.Contains(sidecars, ext) || ext == ".zip" {
			continue // not something GDAL will be given
		}
		if prev, dup := seen[strings.ToLower(base)]; dup {
			return Source{}, apperr.Unprocessable("%s: members %s and %s have the same file name", name, prev, m.Name)
		}
		seen[strings.ToLower(base)] = m.Name
		keep = append(keep, m)
	}
	if st.Size() > 0 && total/uint64(st.Size()) > maxRatio {
		return Source{}, apperr.Unprocessable("%s: the archive would expand %d times; archives that compress more than %d to 1 are refused",
			name, total/uint64(st.Size()), maxRatio)
	}
	dir := unpackedDir(staged)
	if _, err := os.Stat(dir); err != nil {
		if err := unpack(keep, dir, name); err != nil {
			return Source{}, err
		}
	}
	return archiveSource(dir, name)
}

// checkMember refuses members that could escape the unpacked directory, that are not plain
// files, or whose kind is refused outright; the problem names the member.
func checkMember(m *zip.File) error {
	n := strings.ReplaceAll(m.Name, `\`, "/")
	ext := strings.ToLower(filepath.Ext(n))
	mode := m.Mode()
	switch {
	case strings.HasPrefix(n, "/") || len(n) > 1 && n[1] == ':':
		return apperr.Unprocessable("archive member %s has an absolute path", m.Name)
	case slices.Contains(strings.Split(n, "/"), ".."):
		return apperr.Unprocessable("archive member %s points outside the archive", m.Name)
	case mode&os.ModeSymlink != 0:
		return apperr.Unprocessable("archive member %s is a symbolic link", m.Name)
	case !mode.IsDir() && !mode.IsRegular():
		return apperr.Unprocessable("archive member %s is not a regular file", m.Name)
	case slices.Contains(refusedMembers, ext) && !mode.IsDir():
		if ext == ".vrt" || ext == ".ovf" {
			return apperr.Unprocessable("archive member %s: virtual formats (%s) are not accepted", m.Name, ext)
		}
		return apperr.Unprocessable("archive member %s: archives inside archives are not accepted", m.Name)
	}
	return nil
}

// unpack writes the kept members flat into dir, each no larger than its header says; it is
// written to a temporary directory and renamed, so a half-unpacked archive is never used.
func unpack(members []*zip.File, dir, archive string) error {
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".unpacking-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	for _, m := range members {
		if err := unpackOne(m, filepath.Join(tmp, path.Base(strings.ReplaceAll(m.Name, `\`, "/")))); err != nil {
			var ae *apperr.Error
			if errors.As(err, &ae) {
				return err
			}
			return apperr.Unprocessable("%s: member %s could not be unpacked: %v", archive, m.Name, err)
		}
	}
	return os.Rename(tmp, dir)
}

func unpackOne(m *zip.File, dst string) error {
	r, err := m.Open()
	if err != nil {
		return err
	}
	defer r.Close()
	w, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return err
	}
	n, err := io.Copy(w, io.LimitReader(r, int64(m.UncompressedSize64)+1))
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err == nil && uint64(n) != m.UncompressedSize64 {
		return apperr.Unprocessable("archive member %s holds %d bytes where its header declares %d", m.Name, n, m.UncompressedSize64)
	}
	return err
}

// archiveSource decides what GDAL opens in an unpacked archive: its Shapefiles (one file, or
// the directory when there are several), or its one data file of another format.
func archiveSource(dir, archive string) (Source, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return Source{}, err
	}
	var shps, others []string
	for _, e := range entries {
		ext := strings.ToLower(filepath.Ext(e.Name()))
		switch _, data := formats[ext]; {
		case ext == ".shp":
			shps = append(shps, e.Name())
		case data:
			others = append(others, e.Name())
		}
	}
	switch {
	case len(shps)+len(others) == 0:
		return Source{}, apperr.Unprocessable("%s holds no file of an accepted format (%s, or a Shapefile)", archive, strings.Join(Extensions[1:], " "))
	case len(others) > 1 || len(others) == 1 && len(shps) > 0:
		return Source{}, apperr.Unprocessable("%s holds several datasets (%s); upload them one at a time", archive, strings.Join(append(shps, others...), ", "))
	case len(others) == 1:
		f := formats[strings.ToLower(filepath.Ext(others[0]))]
		p := filepath.Join(dir, others[0])
		if err := checkSignature(p, others[0], f); err != nil {
			return Source{}, err
		}
		return Source{Path: p, Driver: f.Driver, Format: f.Name, Name: others[0]}, nil
	}
	shp := formats[".shp"]
	for _, s := range shps {
		if err := checkSignature(filepath.Join(dir, s), s, shp); err != nil {
			return Source{}, err
		}
	}
	src := Source{Path: dir, Driver: shp.Driver, Format: shp.Name, Name: archive}
	if len(shps) == 1 {
		src.Path = filepath.Join(dir, shps[0])
	}
	return src, nil
}

// Signatures.

func prefix(p string) func([]byte) bool {
	return func(h []byte) bool { return bytes.HasPrefix(h, []byte(p)) }
}

// textStart skips a UTF-8 byte order mark and white space.
func textStart(h []byte) []byte {
	h = bytes.TrimPrefix(h, []byte("\xef\xbb\xbf"))
	return bytes.TrimLeft(h, " \t\r\n")
}

func jsonObject(h []byte) bool { t := textStart(h); return len(t) > 0 && t[0] == '{' }

func jsonSequence(h []byte) bool {
	t := textStart(h)
	return len(t) > 0 && (t[0] == '{' || t[0] == 0x1e)
}

func kmlDocument(h []byte) bool {
	t := textStart(h)
	return len(t) > 0 && t[0] == '<' && bytes.Contains(bytes.ToLower(h), []byte("<kml")) &&
		!bytes.Contains(h, []byte("<OGRVRTDataSource"))
}

// delimitedText accepts text that does not look like markup or JSON (GDAL would otherwise be
// tempted by what it recognises in it) and holds no NUL byte.
func delimitedText(h []byte) bool {
	t := textStart(h)
	return len(t) > 0 && t[0] != '<' && t[0] != '{' && bytes.IndexByte(h, 0) < 0
}

// String is the source as logs show it.
func (s Source) String() string { return fmt.Sprintf("%s (%s)", s.Name, s.Driver) }
