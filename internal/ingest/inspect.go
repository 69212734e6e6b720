package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Layer is what GDAL reports about one layer of a source file.
type Layer struct {
	Name         string
	GeometryType string
	FeatureCount int64 // -1 when the driver cannot count cheaply
	SRID         int   // 0 when the layer has no EPSG-coded CRS
	Extent       []float64
	Columns      []Field
}

// Field is a source attribute with its OGR type.
type Field struct{ Name, Type string }

var (
	srsID      = regexp.MustCompile(`^ {4}ID\["EPSG",(\d+)\]\]$`)
	extentLine = regexp.MustCompile(`^Extent: \(([-\d.e+]+), ([-\d.e+]+)\) - \(([-\d.e+]+), ([-\d.e+]+)\)`)
	fieldLine  = regexp.MustCompile(`^([^\s].*): (String|Integer|Integer64|Real|Date|DateTime|Time|Binary|StringList|IntegerList|Integer64List|RealList)(?:\(\w+\))? \(`)
	driverLine = regexp.MustCompile("using driver `([^']+)'")
)

// Inspect lists the layers of a staged file with `ogrinfo -so -al` (GDAL 3.6 has no JSON
// output for vectors), and the driver that opened it.
func Inspect(ctx context.Context, path string) ([]Layer, string, error) {
	cmd := exec.CommandContext(ctx, "ogrinfo", append(append([]string{"-ro", "-so", "-al"}, openOptions(path)...), sourcePath(path))...)
	cmd.Env = append(cmd.Environ(), "CPL_LOG=/dev/null")
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return nil, "", &ImportError{Msg: ogrMessage(stderr.String()+out.String(), filepath.Base(path))}
	}
	return parseOgrinfo(out.String())
}

func parseOgrinfo(text string) ([]Layer, string, error) {
	driver := ""
	if m := driverLine.FindStringSubmatch(text); m != nil {
		driver = m[1]
	}
	var layers []Layer
	var cur *Layer
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimRight(line, "\r")
		if name, ok := strings.CutPrefix(line, "Layer name: "); ok {
			layers = append(layers, Layer{Name: name, FeatureCount: -1})
			cur = &layers[len(layers)-1]
			continue
		}
		if cur == nil {
			continue
		}
		switch {
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
func Samples(ctx context.Context, path, layer string, n int) ([]map[string]any, error) {
	args := append([]string{"-f", "GeoJSON", "/vsistdout/", sourcePath(path), layer, "-limit", strconv.Itoa(n)}, openOptions(path)...)
	cmd := exec.CommandContext(ctx, "ogr2ogr", args...)
	cmd.Env = append(cmd.Environ(), "CPL_LOG=/dev/null")
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("sample rows: %w", err)
	}
	var fc struct {
		Features []struct {
			Properties map[string]any `json:"properties"`
		} `json:"features"`
	}
	if err := json.Unmarshal(out, &fc); err != nil {
		return nil, fmt.Errorf("sample rows: %w", err)
	}
	rows := make([]map[string]any, 0, len(fc.Features))
	for _, f := range fc.Features {
		rows = append(rows, f.Properties)
	}
	return rows, nil
}
