package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"meridian/internal/gdalcmd"
)

// Layer is what GDAL reports about one layer of a source file.
type Layer struct {
	Name         string
	GeometryType string
	FeatureCount int64 // -1 when the driver cannot count cheaply
	SRID         int   // 0 when the layer has no EPSG-coded CRS
	NoCRS        bool  // the layer declares no CRS at all
	// Detected are the columns a CSV's or spreadsheet's geometry is built from (Preview only).
	Detected *GeometryColumns
	Extent   []float64
	Columns  []Field
	Raster   *RasterInfo // a raster source's description: its one layer
}

// GeometryColumns name the coordinate (X, Y) or WKT column of a table-like source, by the
// names the import gives them.
type GeometryColumns struct{ X, Y, WKT string }

// detectGeometryColumns says which columns the import will build a CSV's or spreadsheet's
// geometry from, by the same names the import looks for (openArgs, addPoints).
func detectGeometryColumns(src Source, l Layer, names []string) *GeometryColumns {
	if src.Driver != "CSV" && src.Driver != "XLSX" {
		return nil
	}
	if x, y := usualName(names, lonNames), usualName(names, latNames); x != "" && y != "" {
		return &GeometryColumns{X: x, Y: y}
	}
	if w := usualName(names, wktNames); w != "" && src.Driver == "CSV" && l.GeometryType != "" && l.GeometryType != "None" {
		return &GeometryColumns{WKT: w}
	}
	return nil
}

// Field is a source attribute with its OGR type.
type Field struct{ Name, Type string }

var (
	srsID      = regexp.MustCompile(`^ {4}ID\["EPSG",(\d+)\]\]$`)
	extentLine = regexp.MustCompile(`^Extent: \(([-\d.e+]+), ([-\d.e+]+)\) - \(([-\d.e+]+), ([-\d.e+]+)\)`)
	fieldLine  = regexp.MustCompile(`^([^\s].*): (String|Integer|Integer64|Real|Date|DateTime|Time|Binary|StringList|IntegerList|Integer64List|RealList)(?:\(\w+\))? \(`)
	driverLine = regexp.MustCompile("using driver `([^']+)'")
)

// fastCount are the drivers whose files state their feature count.
var fastCount = map[string]bool{"GPKG": true, "ESRI Shapefile": true, "FlatGeobuf": true}

// previewTime bounds a preview's look at a file (listing and samples): a file that takes longer
// is answered with a problem rather than allowed to hold a request and a GDAL process. A commit,
// which reads no counts, gets commitTime: a large GeoJSON is parsed whole just to be opened.
const (
	previewTime = 60 * time.Second
	commitTime  = 10 * time.Minute
)

// Inspect lists the layers of a prepared source with `ogrinfo -so -al` (GDAL 3.6 has no JSON
// output for vectors). Only the source's own driver is registered, and a file that driver does
// not open is refused.
//
// Counts and extents cost a pass over the whole file for formats without a header that holds
// them (CSV, GeoJSON, KML ...): only a preview asks for them (full); otherwise they are read
// only where they are free.
func Inspect(ctx context.Context, lim gdalcmd.Limits, src Source, full bool) ([]Layer, error) {
	limit := commitTime
	if full {
		limit = previewTime
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	args := []string{"-ro", "-so", "-al"}
	if !full {
		args = append(args, "-noextent")
		if !fastCount[src.Driver] {
			args = append(args, "-nocount")
		}
	}
	args = append(append(args, src.openArgs(Options{})...), src.Path)
	cmd, err := gdalcmd.Command(ctx, lim, []string{src.Driver}, nil, "ogrinfo", args...)
	if err != nil {
		return nil, err
	}
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, &ImportError{Msg: fmt.Sprintf("%s took longer than %s to read and was given up", src.Name, limit)}
		}
		if what := lim.Exceeded(err, stderr.String()+out.String()); what != "" {
			return nil, &ImportError{Msg: fmt.Sprintf("%s could not be read within %s", src.Name, what)}
		}
		return nil, &ImportError{Msg: ogrMessage(stderr.String()+out.String(), src.Name)}
	}
	layers, driver, err := parseOgrinfo(out.String())
	if err == nil && driver != src.Driver {
		// Only the unskippable drivers (gdalcmd) could have done this.
		return nil, &ImportError{Msg: fmt.Sprintf("%s was read as %s, not as %s", src.Name, driver, src.Driver)}
	}
	return layers, err
}

func parseOgrinfo(text string) ([]Layer, string, error) {
	driver := ""
	if m := driverLine.FindStringSubmatch(text); m != nil {
		driver = m[1]
	}
	var layers []Layer
	var cur *Layer
	prev, line := "", ""
	for _, raw := range strings.Split(text, "\n") {
		prev, line = line, strings.TrimRight(raw, "\r")
		if name, ok := strings.CutPrefix(line, "Layer name: "); ok {
			layers = append(layers, Layer{Name: name, FeatureCount: -1})
			cur = &layers[len(layers)-1]
			continue
		}
		if cur == nil {
			continue
		}
		switch {
		case line == "(unknown)" && prev == "Layer SRS WKT:":
			cur.NoCRS = true
		case strings.HasPrefix(line, "Geometry: "):
			cur.GeometryType = strings.TrimPrefix(line, "Geometry: ")
		case strings.HasPrefix(line, "Feature Count: "):
			cur.FeatureCount, _ = strconv.ParseInt(strings.TrimPrefix(line, "Feature Count: "), 10, 64)
		case extentLine.MatchString(line):
			m := extentLine.FindStringSubmatch(line)
			for _, v := range m[1:] {
				f, _ := strconv.ParseFloat(v, 64)
				cur.Extent = append(cur.Extent, f)
			}
		case srsID.MatchString(line):
			cur.SRID, _ = strconv.Atoi(srsID.FindStringSubmatch(line)[1])
		case strings.HasPrefix(line, "Geometry Column") || strings.HasPrefix(line, "FID Column"):
		case fieldLine.MatchString(line):
			m := fieldLine.FindStringSubmatch(line)
			cur.Columns = append(cur.Columns, Field{Name: m[1], Type: m[2]})
		}
	}
	if len(layers) == 0 {
		return nil, driver, &ImportError{Msg: "the file holds no layers"}
	}
	return layers, driver, nil
}

// Samples returns the properties of the first n features of a layer.
func Samples(ctx context.Context, lim gdalcmd.Limits, src Source, layer string, several bool, n int) ([]Sample, error) {
	ctx, cancel := context.WithTimeout(ctx, previewTime)
	defer cancel()
	opts, positional, err := selectLayer(layer, several)
	if err != nil {
		return nil, err
	}
	args := append([]string{"-f", "GeoJSON", "-limit", strconv.Itoa(n)}, opts...)
	args = append(append(append(args, src.openArgs(Options{})...), "/vsistdout/", src.Path), positional...)
	cmd, err := gdalcmd.Command(ctx, lim, []string{src.Driver, "GeoJSON"}, nil, "ogr2ogr", args...)
	if err != nil {
		return nil, err
	}
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("sample rows: %w", err)
	}
	var fc struct {
		Features []struct {
			Properties json.RawMessage `json:"properties"`
		} `json:"features"`
	}
	if err := json.Unmarshal(out, &fc); err != nil {
		return nil, fmt.Errorf("sample rows: %w", err)
	}
	rows := make([]Sample, 0, len(fc.Features))
	for _, f := range fc.Features {
		row, err := orderedObject(f.Properties)
		if err != nil {
			return nil, fmt.Errorf("sample rows: %w", err)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// Sample is one feature's properties in the order GDAL wrote them.
type Sample []Property

// Property is one key and value of a Sample.
type Property struct {
	Key   string
	Value any
}

// orderedObject decodes a JSON object keeping its keys' order (GDAL numbers repeated names, so
// only the order tells which source field a value belongs to).
func orderedObject(raw json.RawMessage) (Sample, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return Sample{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("properties are not an object")
	}
	var row Sample
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		row = append(row, Property{Key: t.(string), Value: v})
	}
	return row, nil
}

// renameSamples keys sample rows by the planned column names: a property named like a field
// the source holds once is that field's; the others (GDAL's numbered copies of a repeated name)
// belong, in order, to the fields whose names repeat.
func renameSamples(rows []Sample, fields []Field, names []string) []map[string]any {
	count := map[string]int{}
	for _, f := range fields {
		count[f.Name]++
	}
	unique := map[string]string{}
	var repeated []string
	for i, f := range fields {
		if count[f.Name] == 1 {
			unique[f.Name] = names[i]
		} else {
			repeated = append(repeated, names[i])
		}
	}
	out := make([]map[string]any, len(rows))
	for r, row := range rows {
		m := make(map[string]any, len(row))
		next := 0
		for _, p := range row {
			switch n, ok := unique[p.Key]; {
			case ok:
				m[n] = p.Value
			case next < len(repeated):
				m[repeated[next]] = p.Value
				next++
			}
		}
		out[r] = m
	}
	return out
}

// selectLayer names the layer ogr2ogr copies. A single-layer source needs no name. Otherwise the
// name goes after the source, unless it starts with "-": GDAL reads every argument that starts
// so as an option (and "--config", "--optfile" even before parsing the tool's own options), so
// such a layer is chosen by an OGR SQL statement, where the name is a quoted identifier inside
// an option's value.
func selectLayer(layer string, several bool) (opts, positional []string, err error) {
	switch {
	case !several || layer == "":
		return nil, nil, nil
	case !strings.HasPrefix(layer, "-"):
		return nil, []string{layer}, nil
	}
	return []string{"-dialect", "OGRSQL", "-sql", "SELECT * FROM " + ogrIdent(layer)}, nil, nil
}

// ogrIdent quotes a name for OGR SQL, whose quoted identifiers escape a quote with a backslash.
func ogrIdent(s string) string {
	return `"` + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), `"`, `\"`) + `"`
}

// openArgs are the GDAL options a source is opened with, the same for preview and import so a
// preview shows what the import makes: spreadsheets always have a header row in the files people
// upload (GDAL's XLSX driver otherwise only guesses); CSV columns get their types detected,
// coordinates or WKT are found by their usual names (or the WKT column the caller named; named
// x/y columns become points in finalize) and stay columns too, and an empty cell is a missing
// value, not an empty string.
func (s Source) openArgs(o Options) []string {
	switch s.Driver {
	case "XLSX":
		return []string{"--config", "OGR_XLSX_HEADERS", "FORCE", "--config", "OGR_XLSX_FIELD_TYPES", "AUTO"}
	case "CSV":
		args := []string{"-oo", "KEEP_GEOM_COLUMNS=YES", "-oo", "AUTODETECT_TYPE=YES", "-oo", "EMPTY_STRING_AS_NULL=YES"}
		switch {
		case o.GeomColumn != "":
			return append(args, "-oo", "GEOM_POSSIBLE_NAMES="+o.GeomColumn)
		case o.XColumn != "":
			return args
		}
		return append(args, "-oo", "X_POSSIBLE_NAMES="+strings.Join(lonNames, ","), "-oo", "Y_POSSIBLE_NAMES="+strings.Join(latNames, ","),
			"-oo", "GEOM_POSSIBLE_NAMES="+strings.Join(wktNames, ","))
	}
	return nil
}
