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
	raster       bool // read with the raster tools (gdalinfo, gdal_translate), not ogrinfo
}

// formats by extension. Nothing else is ever opened from user input: no VRT, no database or
// network driver, no SQLite outside GeoPackage (section 1 of the security review).
var formats = map[string]format{
	".gpkg":     {"GPKG", "GPKG", prefix("SQLite format 3\x00"), false},
	".geojson":  {"GeoJSON", "GeoJSON", jsonObject, false},
	".json":     {"GeoJSON", "GeoJSON", jsonObject, false},
	".geojsonl": {"GeoJSONSeq", "GeoJSONSeq", jsonSequence, false},
	".geojsons": {"GeoJSONSeq", "GeoJSONSeq", jsonSequence, false},
	".csv":      {"CSV", "CSV", delimitedText, false},
	".fgb":      {"FlatGeobuf", "FlatGeobuf", prefix("fgb\x03"), false},
	".kml":      {"KML", "KML", kmlDocument, false},
	".xlsx":     {"XLSX", "XLSX", prefix("PK\x03\x04"), false},
	".shp":      {"ESRI Shapefile", "ESRI Shapefile", prefix("\x00\x00\x27\x0a"), false},
	".tif":      {"GTiff", "GeoTIFF", tiff, true},
	".tiff":     {"GTiff", "GeoTIFF", tiff, true},
	".jp2":      {"JP2OpenJPEG", "JPEG2000", jpeg2000, true},
}

// formatTitles name the formats in problems people read.
var formatTitles = map[string]string{"GPKG": "GeoPackage", "ESRI Shapefile": "Shapefile", "XLSX": "XLSX spreadsheet",
	"GTiff": "GeoTIFF", "JP2OpenJPEG": "JPEG 2000"}

// Extensions this build ingests.
var Extensions = []string{".zip", ".gpkg", ".geojson", ".json", ".geojsonl", ".geojsons", ".csv", ".fgb", ".kml", ".xlsx", ".tif", ".tiff", ".jp2"}

// sidecars are archive members read alongside a data file; they are unpacked but never opened
// on their own.
var sidecars = []string{".shx", ".dbf", ".prj", ".cpg", ".qix", ".sbn", ".sbx", ".csvt", ".xml"}

// refusedMembers are archive members that make the whole archive suspect: archives inside the
// archive and GDAL's virtual formats, which point at other files, databases or URLs.
var refusedMembers = []string{".zip", ".gz", ".tgz", ".tar", ".7z", ".rar", ".bz2", ".xz", ".kmz", ".vrt", ".ovf"}

// sniffBytes is how much of a file its signature check reads.
const sniffBytes = 4096

// ratioFloor is the size below which a single member's ratio is not judged: a small sidecar of
// padding (a .dbf of empty fields, a .cpg) may compress far better than data, and costs nothing.
const ratioFloor = 1 << 20

// Bounds are what a staged file may expand to before any GDAL tool opens it. Archives are the
// obvious bombs, but formats that are archives or are read whole into memory are too: a
// spreadsheet is a zip of XML that GDAL's XLSX driver inflates and parses whole, and GDAL's KML
// driver builds the whole document in memory (about ten times its size).
type Bounds struct {
	MaxUnpacked     int64        // bytes an archive may unpack to (ARCHIVE_MAX_UNPACKED_BYTES)
	MaxRatio        int64        // times an archive, or one of its members, may expand (ARCHIVE_MAX_RATIO)
	MaxXLSXInflated int64        // bytes the parts of a spreadsheet may inflate to (XLSX_MAX_INFLATED_BYTES)
	MaxKML          int64        // bytes of a KML document (KML_MAX_BYTES)
	Raster          RasterBounds // pixels and bands a raster may declare
	// Reserve, when set, claims n more bytes of the staging quota before an archive is unpacked;
	// its refusal is the answer. done records the claim once the members are written (kept) or
	// gives it back.
	Reserve func(n int64) (done func(kept bool), err error)
}

// Source is a staged upload as GDAL opens it.
type Source struct {
	Path   string // the file (or, for several Shapefiles, the directory) GDAL opens
	Driver string // the one GDAL driver registered while it is opened
	Format string // source_format as the catalog shows it
	Name   string // the file name shown in problems
	Raster bool   // a raster: described by gdalinfo and converted to a COG, not imported by ogr2ogr
}

// Prepare checks a staged file before any GDAL tool sees it: its extension and its own
// signature must agree, an archive is listed and unpacked by this code, member by member,
// within the bounds, and what GDAL will open is checked for what it expands to (a spreadsheet's
// parts, a KML's size). The unpacked copy is kept beside the staging file, so preview, commit
// and import each open exactly what was checked.
func Prepare(staged string, b Bounds) (Source, error) {
	name := filepath.Base(staged)
	ext := strings.ToLower(filepath.Ext(staged))
	if ext == ".zip" {
		src, err := prepareArchive(staged, b)
		if err != nil {
			return src, err
		}
		return src, b.checkContent(src)
	}
	f, ok := formats[ext]
	if !ok || ext == ".shp" {
		return Source{}, apperr.Unprocessable("files of type %q are not supported; use one of %s", ext, strings.Join(Extensions, " "))
	}
	if err := checkSignature(staged, name, f); err != nil {
		return Source{}, err
	}
	src := Source{Path: staged, Driver: f.Driver, Format: f.Name, Name: name, Raster: f.raster}
	return src, b.checkContent(src)
}

// checkContent bounds what GDAL's driver will hold in memory for src.
func (b Bounds) checkContent(src Source) error {
	switch src.Driver {
	case "XLSX":
		return b.checkSpreadsheet(src.Path, src.Name)
	case "KML":
		st, err := os.Stat(src.Path)
		if err != nil {
			return err
		}
		return b.checkKML(src.Name, st.Size())
	}
	return nil
}

func (b Bounds) checkKML(name string, size int64) error {
	if b.MaxKML > 0 && size > b.MaxKML {
		return apperr.TooLarge("%s is a KML document of %d bytes; KML is read whole into memory, so documents of more than %d bytes "+
			"are refused (KML_MAX_BYTES): convert it to GeoPackage or FlatGeobuf and upload that", name, size, b.MaxKML)
	}
	return nil
}

// checkSpreadsheet reads a spreadsheet's parts with the archive checks: the bytes they declare,
// each part's ratio, and then the bytes they really inflate to (a header may lie), before GDAL
// inflates and parses them.
func (b Bounds) checkSpreadsheet(file, name string) error {
	zr, err := zip.OpenReader(file)
	if err != nil {
		return apperr.Unprocessable("%s is not a readable XLSX spreadsheet (a spreadsheet is a zip archive of XML parts)", name)
	}
	defer zr.Close()
	st, err := os.Stat(file)
	if err != nil {
		return err
	}
	limit := expansionLimit{bytes: b.MaxXLSXInflated, setting: "XLSX_MAX_INFLATED_BYTES", what: "the spreadsheet's parts inflate"}
	if _, err := b.checkExpansion(name, zr.File, st.Size(), limit); err != nil {
		return err
	}
	for _, m := range zr.File {
		if err := inflate(m, io.Discard); err != nil {
			var ae *apperr.Error
			if errors.As(err, &ae) {
				return err
			}
			return apperr.Unprocessable("%s: part %s of the spreadsheet does not inflate: %v", name, m.Name, err)
		}
	}
	return nil
}

// expansionLimit is the most bytes a zip's members may declare, and the setting that says so.
type expansionLimit struct {
	bytes         int64
	setting, what string
}

// checkExpansion is the one check of what a zip (an archive, a spreadsheet) expands to, from
// its members' headers: the bytes they declare in all, the ratio of each member above
// ratioFloor, and the ratio of the whole. It answers the bytes declared.
func (b Bounds) checkExpansion(name string, members []*zip.File, size int64, limit expansionLimit) (uint64, error) {
	var total uint64
	for _, m := range members {
		total += m.UncompressedSize64
		if limit.bytes > 0 && total > uint64(limit.bytes) {
			return total, apperr.TooLarge("%s: %s to more than %d bytes (at member %s; %s)", name, limit.what, limit.bytes, m.Name, limit.setting)
		}
		if b.MaxRatio > 0 && m.UncompressedSize64 >= ratioFloor && m.UncompressedSize64/max(m.CompressedSize64, 1) > uint64(b.MaxRatio) {
			return total, apperr.Unprocessable("%s: member %s would expand %d times; members that compress more than %d to 1 are refused (ARCHIVE_MAX_RATIO)",
				name, m.Name, m.UncompressedSize64/max(m.CompressedSize64, 1), b.MaxRatio)
		}
	}
	if b.MaxRatio > 0 && size > 0 && total/uint64(size) > uint64(b.MaxRatio) {
		return total, apperr.Unprocessable("%s: the archive would expand %d times; archives that compress more than %d to 1 are refused (ARCHIVE_MAX_RATIO)",
			name, total/uint64(size), b.MaxRatio)
	}
	return total, nil
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

func prepareArchive(staged string, b Bounds) (Source, error) {
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
	var keep []*zip.File
	var kept int64
	seen := map[string]string{}
	for _, m := range zr.File {
		if err := checkMember(m); err != nil {
			return Source{}, err
		}
		base := path.Base(strings.ReplaceAll(m.Name, `\`, "/"))
		ext := strings.ToLower(filepath.Ext(base))
		_, data := formats[ext]
		// A raster's .aux.xml (like its .ovr, .msk and world files, which are no sidecars here) is
		// never unpacked: GDAL reads nothing of an upload beyond the file itself (rasterEnv).
		if m.FileInfo().IsDir() || strings.HasPrefix(m.Name, "__MACOSX/") || strings.HasPrefix(base, "._") ||
			!data && !slices.Contains(sidecars, ext) || ext == ".zip" || strings.HasSuffix(strings.ToLower(base), ".aux.xml") {
			continue // not something GDAL will be given
		}
		if prev, dup := seen[strings.ToLower(base)]; dup {
			return Source{}, apperr.Unprocessable("%s: members %s and %s have the same file name", name, prev, m.Name)
		}
		seen[strings.ToLower(base)] = m.Name
		if ext == ".kml" {
			// Refused before it is unpacked, not after.
			if err := b.checkKML(m.Name, int64(min(m.UncompressedSize64, 1<<62))); err != nil {
				return Source{}, err
			}
		}
		keep = append(keep, m)
		kept += int64(min(m.UncompressedSize64, 1<<40))
	}
	limit := expansionLimit{bytes: b.MaxUnpacked, setting: "ARCHIVE_MAX_UNPACKED_BYTES", what: "the archive unpacks"}
	if _, err := b.checkExpansion(name, zr.File, st.Size(), limit); err != nil {
		return Source{}, err
	}
	dir := unpackedDir(staged)
	if _, err := os.Stat(dir); err != nil {
		done := func(bool) {}
		if b.Reserve != nil {
			if done, err = b.Reserve(kept); err != nil {
				return Source{}, err
			}
		}
		err := unpack(keep, dir, name)
		done(err == nil)
		if err != nil {
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
	w, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return err
	}
	err = inflate(m, w)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	return err
}

// inflate writes member m to w, never more than its header declares, and refuses a member whose
// content is not what its header declares: the declared sizes are what the checks judged.
func inflate(m *zip.File, w io.Writer) error {
	r, err := m.Open()
	if err != nil {
		return err
	}
	defer r.Close()
	n, err := io.Copy(w, io.LimitReader(r, int64(min(m.UncompressedSize64, 1<<62))+1))
	switch {
	case errors.Is(err, zip.ErrFormat) || errors.Is(err, zip.ErrChecksum):
		// Go's reader stops a member at the size its header declares and checks its CRC.
		return apperr.Unprocessable("archive member %s does not hold what its header declares (%d bytes)", m.Name, m.UncompressedSize64)
	case err == nil && uint64(n) != m.UncompressedSize64:
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
		return Source{Path: p, Driver: f.Driver, Format: f.Name, Name: others[0], Raster: f.raster}, nil
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

// tiff accepts classic TIFF and BigTIFF, either byte order.
func tiff(h []byte) bool {
	for _, p := range []string{"II*\x00", "MM\x00*", "II+\x00", "MM\x00+"} {
		if bytes.HasPrefix(h, []byte(p)) {
			return true
		}
	}
	return false
}

// jpeg2000 accepts the JP2 file format (its signature box) and a raw J2K codestream.
func jpeg2000(h []byte) bool {
	return bytes.HasPrefix(h, []byte("\x00\x00\x00\x0cjP  \r\n\x87\n")) || bytes.HasPrefix(h, []byte("\xff\x4f\xff\x51"))
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
