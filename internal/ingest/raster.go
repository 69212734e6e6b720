package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"meridian/internal/apperr"
	"meridian/internal/gdalcmd"
)

// Raster sources: GeoTIFF (BigTIFF and COGs included) and JPEG 2000, each opened by its one GDAL
// driver. PNG and JPEG with world files are not accepted: their georeferencing lives in sidecar
// files (.pgw, .wld, .aux.xml), and this service reads nothing of an upload beyond the file
// itself (see rasterEnv).

// rasterEnv are the GDAL settings of every tool that opens an uploaded raster: no sidecar is
// ever looked for or read. EMPTY_DIR makes GDAL believe the file's directory holds nothing else,
// so external overviews (.ovr), masks (.msk), world files and .aux.xml files beside it are
// never opened, and PAM off means no .aux.xml is read or written (statistics included).
var rasterEnv = []string{"GDAL_DISABLE_READDIR_ON_OPEN=EMPTY_DIR", "GDAL_PAM_ENABLED=NO", "GDAL_GEOREF_SOURCES=INTERNAL"}

// RasterInfo is what gdalinfo reports of a raster source.
type RasterInfo struct {
	Width, Height int
	Bands         []RasterBandInfo
	EPSG          int    // 0 without an EPSG-coded CRS
	WKT           string // "" without a CRS
	Geographic    bool
	Georeferenced bool      // a geotransform or ground control points
	Extent        []float64 // native box (minx, miny, maxx, maxy); nil without a geotransform
	WGS84         []float64 // west, south, east, north (west > east across the antimeridian); nil without a CRS
	ResX, ResY    float64
	Compression   string // of the source, "" when uncompressed
	IsCOG         bool   // GDAL reports the COG layout
	Overviews     int    // internal overviews of the source
	FileSize      int64  // bytes of the file
}

// RasterBandInfo is one band of a raster source.
type RasterBandInfo struct {
	Index       int
	DType       string // uint8, int16, float32 ...
	NoData      *string
	ColorInterp string // gray, red, palette ... (lower case)
}

// gdalTypes maps GDAL's data type names to the document's dtypes.
var gdalTypes = map[string]string{"Byte": "uint8", "Int8": "int8", "UInt16": "uint16", "Int16": "int16", "UInt32": "uint32",
	"Int32": "int32", "UInt64": "uint64", "Int64": "int64", "Float32": "float32", "Float64": "float64"}

var wktEPSG = regexp.MustCompile(`ID\["EPSG",(\d+)\]\]\s*$`)

// gdalinfoJSON is the part of `gdalinfo -json` read here.
type gdalinfoJSON struct {
	Size             []int `json:"size"`
	CoordinateSystem *struct {
		WKT string `json:"wkt"`
	} `json:"coordinateSystem"`
	GeoTransform []float64                    `json:"geoTransform"`
	GCPs         json.RawMessage              `json:"gcps"`
	Metadata     map[string]map[string]string `json:"metadata"`
	WGS84Extent  *struct {
		Coordinates [][][]float64 `json:"coordinates"`
	} `json:"wgs84Extent"`
	Bands []struct {
		Band        int             `json:"band"`
		Type        string          `json:"type"`
		ColorInterp string          `json:"colorInterpretation"`
		Block       []int           `json:"block"`
		NoData      json.RawMessage `json:"noDataValue"`
		Overviews   []struct {
			Size []int `json:"size"`
		} `json:"overviews"`
		Mask *struct {
			Flags []string `json:"flags"`
		} `json:"mask"`
		Minimum   *float64 `json:"minimum"`
		Maximum   *float64 `json:"maximum"`
		Mean      *float64 `json:"mean"`
		StdDev    *float64 `json:"stdDev"`
		Histogram *struct {
			Min     float64 `json:"min"`
			Max     float64 `json:"max"`
			Buckets []int64 `json:"buckets"`
		} `json:"histogram"`
	} `json:"bands"`
}

// gdalinfo runs `gdalinfo -json` with the raster environment and only driver registered.
func gdalinfo(ctx context.Context, lim gdalcmd.Limits, driver, path string, extra ...string) (gdalinfoJSON, error) {
	return gdalinfoIn(ctx, lim, rasterEnv, driver, path, extra...)
}

// gdalinfoIn is gdalinfo with the environment env.
func gdalinfoIn(ctx context.Context, lim gdalcmd.Limits, env []string, driver, path string, extra ...string) (gdalinfoJSON, error) {
	args := append([]string{"-json", "-norat", "-noct", "-nofl"}, extra...)
	cmd, err := gdalcmd.Command(ctx, lim, []string{driver}, env, "gdalinfo", append(args, path)...)
	if err != nil {
		return gdalinfoJSON{}, err
	}
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return gdalinfoJSON{}, &ImportError{Msg: "the raster took too long to read and was given up"}
		}
		if what := lim.Exceeded(err, stderr.String()); what != "" {
			return gdalinfoJSON{}, &ImportError{Msg: "the raster could not be read within " + what}
		}
		return gdalinfoJSON{}, &ImportError{Msg: gdalMessage(stderr.String(), "it could not be read as a raster")}
	}
	var info gdalinfoJSON
	if err := json.Unmarshal(out.Bytes(), &info); err != nil {
		return info, fmt.Errorf("gdalinfo: %w", err)
	}
	return info, nil
}

// gdalMessage keeps the first ERROR line of a GDAL tool, or says what failed.
func gdalMessage(stderr, otherwise string) string {
	for _, line := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(line, "ERROR") {
			_, msg, _ := strings.Cut(line, ":")
			msg = strings.TrimSpace(msg)
			if len(msg) > 300 {
				msg = msg[:300]
			}
			return msg
		}
	}
	return otherwise
}

// RasterBounds are what a raster upload may declare (RASTER_MAX_PIXELS, RASTER_MAX_BANDS).
type RasterBounds struct {
	MaxPixels int64
	MaxBands  int
}

// InspectRaster describes a prepared raster source, refusing (422, naming the setting) one
// that declares more pixels or bands than the bounds allow, before any pixel is read.
func InspectRaster(ctx context.Context, lim gdalcmd.Limits, src Source, b RasterBounds) (RasterInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, previewTime)
	defer cancel()
	j, err := gdalinfo(ctx, lim, src.Driver, src.Path)
	if err != nil {
		var ie *ImportError
		if errors.As(err, &ie) {
			return RasterInfo{}, &ImportError{Msg: fmt.Sprintf("%s: %s", src.Name, ie.Msg)}
		}
		return RasterInfo{}, err
	}
	info, err := rasterInfoOf(j)
	if err != nil {
		return info, &ImportError{Msg: fmt.Sprintf("%s: %v", src.Name, err)}
	}
	return info, b.check(src.Name, info)
}

func (b RasterBounds) check(name string, info RasterInfo) error {
	pixels := int64(info.Width) * int64(info.Height)
	switch {
	case b.MaxPixels > 0 && pixels > b.MaxPixels:
		return &ImportError{Msg: fmt.Sprintf("%s declares %d x %d pixels (%d); rasters of more than %d pixels are refused (RASTER_MAX_PIXELS)",
			name, info.Width, info.Height, pixels, b.MaxPixels)}
	case b.MaxBands > 0 && len(info.Bands) > b.MaxBands:
		return &ImportError{Msg: fmt.Sprintf("%s declares %d bands; rasters of more than %d bands are refused (RASTER_MAX_BANDS)",
			name, len(info.Bands), b.MaxBands)}
	}
	return nil
}

// rasterInfoOf reads gdalinfo's report of a source.
func rasterInfoOf(j gdalinfoJSON) (RasterInfo, error) {
	if len(j.Size) != 2 || len(j.Bands) == 0 {
		return RasterInfo{}, errors.New("it holds no raster bands")
	}
	info := RasterInfo{Width: j.Size[0], Height: j.Size[1]}
	if cs := j.CoordinateSystem; cs != nil && cs.WKT != "" {
		info.WKT = cs.WKT
		if m := wktEPSG.FindStringSubmatch(cs.WKT); m != nil {
			info.EPSG, _ = strconv.Atoi(m[1])
		}
		info.Geographic = strings.HasPrefix(cs.WKT, "GEOGCRS") || strings.HasPrefix(cs.WKT, "GEOGCS")
	}
	if gt := j.GeoTransform; len(gt) == 6 {
		info.Georeferenced = true
		info.ResX, info.ResY = math.Hypot(gt[1], gt[4]), math.Hypot(gt[2], gt[5])
		xs := []float64{gt[0], gt[0] + float64(info.Width)*gt[1], gt[0] + float64(info.Height)*gt[2], gt[0] + float64(info.Width)*gt[1] + float64(info.Height)*gt[2]}
		ys := []float64{gt[3], gt[3] + float64(info.Width)*gt[4], gt[3] + float64(info.Height)*gt[5], gt[3] + float64(info.Width)*gt[4] + float64(info.Height)*gt[5]}
		info.Extent = []float64{slices.Min(xs), slices.Min(ys), slices.Max(xs), slices.Max(ys)}
	}
	if len(j.GCPs) > 0 && string(j.GCPs) != "null" {
		info.Georeferenced = true
	}
	if w := j.WGS84Extent; w != nil && len(w.Coordinates) == 1 {
		degrees := 0.0
		if info.Geographic && info.Extent != nil {
			degrees = info.Extent[2] - info.Extent[0]
		}
		info.WGS84 = lonLatBox(w.Coordinates[0], degrees)
	}
	is := j.Metadata["IMAGE_STRUCTURE"]
	info.Compression, info.IsCOG = is["COMPRESSION"], is["LAYOUT"] == "COG"
	for _, b := range j.Bands {
		dtype, ok := gdalTypes[b.Type]
		if !ok {
			return info, fmt.Errorf("band %d holds %s values; complex-valued rasters are not supported", b.Band, b.Type)
		}
		info.Bands = append(info.Bands, RasterBandInfo{Index: b.Band, DType: dtype, NoData: nodataOf(b.NoData),
			ColorInterp: strings.ToLower(b.ColorInterp)})
		info.Overviews = max(info.Overviews, len(b.Overviews))
	}
	return info, nil
}

// nodataOf is gdalinfo's noDataValue (a number, or "NaN" and the infinities as strings) as text.
func nodataOf(raw json.RawMessage) *string {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		s = strings.ToLower(s)
		return &s
	}
	var f float64
	if json.Unmarshal(raw, &f) != nil {
		return nil
	}
	s = strconv.FormatFloat(f, 'g', -1, 64)
	return &s
}

// lonLatBox is the box of a ring of longitudes and latitudes (a raster's corners), west greater
// than east when the raster crosses the antimeridian. Corners alone cannot tell a small raster
// across 180 (corners at 179.5 and -179.5) from one spanning the world (-180 and 180), so the
// raster's own width decides: nativeDegrees is its width in degrees in a geographic CRS, 0 when
// unknown (projected), where the corners' spread measured across 180 is taken instead.
func lonLatBox(ring [][]float64, nativeDegrees float64) []float64 {
	var lons, lats []float64
	for _, p := range ring {
		if len(p) >= 2 {
			lon := p[0]
			// A raster in a CRS whose longitudes run past 180 (0..360, or 170..190) is put back
			// into -180..180, where crossing the antimeridian shows as west > east.
			for lon > 180 {
				lon -= 360
			}
			for lon < -180 {
				lon += 360
			}
			lons, lats = append(lons, lon), append(lats, p[1])
		}
	}
	if len(lons) == 0 {
		return nil
	}
	w, e := slices.Min(lons), slices.Max(lons)
	small := nativeDegrees > 0 && nativeDegrees < 180
	if nativeDegrees == 0 {
		shifted := make([]float64, len(lons))
		for i, x := range lons {
			shifted[i] = math.Mod(x+360, 360)
		}
		small = slices.Max(shifted)-slices.Min(shifted) < 180 && e-w < 359.9
	}
	if e-w > 180 && small {
		west, east := 180.0, -180.0
		for _, x := range lons {
			if x >= 0 {
				west = min(west, x)
			} else {
				east = max(east, x)
			}
		}
		w, e = west, east
	}
	return []float64{w, slices.Min(lats), e, slices.Max(lats)}
}

// RasterOptions are a raster commit's choices, checked against the source.
type RasterOptions struct {
	Compression string `json:"compression,omitempty"` // ZSTD (DefaultCompression), DEFLATE, LZW, JPEG, WEBP, NONE
	Resampling  string `json:"resampling,omitempty"`  // "" chooses by the data (defaultResampling)
	NoData      string `json:"nodata,omitempty"`      // -a_nodata: a number, nan, inf, -inf or none
	ForceSRID   bool   `json:"force_srid,omitempty"`  // the CRS was given by srid_override: it replaces the file's
}

// DefaultCompression is the stored COG's compression when the commit names none. ZSTD (with a
// predictor) stores about what DEFLATE does, and a tile reads several times faster: inflating a
// 256-pixel RGBA tile of an orthophoto takes Go about 2 ms, and it was half of a raster tile's
// CPU. GDAL (since 2.3), QGIS, rasterio and geotiff.js read it; DEFLATE remains for older readers.
const DefaultCompression = "ZSTD"

var (
	compressions = []string{"ZSTD", "DEFLATE", "LZW", "JPEG", "WEBP", "NONE"}
	resamplings  = []string{"nearest", "bilinear", "cubic", "cubicspline", "lanczos", "average", "mode"}
)

// CheckRasterOptions normalizes and checks the raster choices of a commit against what Preview
// found; an impossible one answers 422 saying why.
func CheckRasterOptions(o RasterOptions, info RasterInfo) (RasterOptions, error) {
	o.Compression = strings.ToUpper(strings.TrimSpace(o.Compression))
	if o.Compression == "" {
		o.Compression = DefaultCompression
	}
	if !slices.Contains(compressions, o.Compression) {
		return o, apperr.Unprocessable("compression %q is not one of %s", o.Compression, strings.Join(compressions, ", "))
	}
	byteBands := true
	for _, b := range info.Bands {
		byteBands = byteBands && b.DType == "uint8"
	}
	n := len(info.Bands)
	switch {
	case o.Compression == "JPEG" && (!byteBands || n != 1 && n != 3):
		return o, apperr.Unprocessable("compression JPEG takes 8-bit rasters of 1 or 3 bands; this one has %d %s bands: use ZSTD, DEFLATE or LZW", n, info.Bands[0].DType)
	case o.Compression == "WEBP" && (!byteBands || n != 3 && n != 4):
		return o, apperr.Unprocessable("compression WEBP takes 8-bit rasters of 3 or 4 bands; this one has %d %s bands: use ZSTD, DEFLATE or LZW", n, info.Bands[0].DType)
	}
	o.Resampling = strings.ToLower(strings.TrimSpace(o.Resampling))
	if o.Resampling != "" && !slices.Contains(resamplings, o.Resampling) {
		return o, apperr.Unprocessable("resampling %q is not one of %s", o.Resampling, strings.Join(resamplings, ", "))
	}
	if o.Resampling == "" {
		o.Resampling = defaultResampling(info)
	}
	if o.NoData != "" {
		v, err := checkNoData(o.NoData, info.Bands[0].DType)
		if err != nil {
			return o, err
		}
		o.NoData = v
	}
	return o, nil
}

// defaultResampling is nearest for single-band 8-bit data (a classification or a palette, whose
// values must not be averaged into values no pixel has) and bilinear for everything else:
// imagery, measurements and elevation.
func defaultResampling(info RasterInfo) string {
	if len(info.Bands) == 1 && (info.Bands[0].DType == "uint8" || info.Bands[0].ColorInterp == "palette") {
		return "nearest"
	}
	return "bilinear"
}

// dtypeRanges are the values integer bands can hold.
var dtypeRanges = map[string][2]float64{"uint8": {0, 255}, "int8": {-128, 127}, "uint16": {0, 65535}, "int16": {-32768, 32767},
	"uint32": {0, 4294967295}, "int32": {-2147483648, 2147483647}, "uint64": {0, 18446744073709551615}, "int64": {-9223372036854775808, 9223372036854775807}}

// checkNoData reads a nodata_override for bands of dtype: none removes the nodata value, nan and
// the infinities are for float bands, a number must be one the bands can hold.
func checkNoData(s, dtype string) (string, error) {
	v := strings.ToLower(strings.TrimSpace(s))
	switch v {
	case "none":
		return v, nil
	case "nan", "inf", "-inf":
		if !strings.HasPrefix(dtype, "float") {
			return "", apperr.Unprocessable("nodata_override %s applies to float bands; these are %s", v, dtype)
		}
		return v, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return "", apperr.Unprocessable("nodata_override %q is not a number (nor nan, inf, -inf or none)", s)
	}
	if r, ok := dtypeRanges[dtype]; ok && (f != math.Trunc(f) || f < r[0] || f > r[1]) {
		return "", apperr.Unprocessable("nodata_override %s is not a value %s bands can hold (integers %g..%g)", v, dtype, r[0], r[1])
	}
	return strconv.FormatFloat(f, 'g', -1, 64), nil
}

// demTypes are the data types of elevation models.
var demTypes = []string{"float32", "float64", "int16", "uint16", "int32", "uint32"}

// detectDEM is the is_dem heuristic: one band of float or 16/32-bit integer data, with no
// palette or colour meaning (gray or undefined), whose valid values lie between -500 and 9000
// (metres below the Dead Sea shore to above Everest). Update Dataset Metadata overrides it.
func detectDEM(bands []RasterBandInfo, stats []bandStats) bool {
	if len(bands) != 1 || !slices.Contains(demTypes, bands[0].DType) {
		return false
	}
	if ci := bands[0].ColorInterp; ci != "gray" && ci != "undefined" && ci != "" {
		return false
	}
	if len(stats) != 1 || stats[0].Min == nil || stats[0].Max == nil {
		return false
	}
	return *stats[0].Min >= -500 && *stats[0].Max <= 9000
}

// rasterLayer describes a raster source as the one layer previews and commits know: named after
// the file, without geometry type or features, its CRS and native extent.
func rasterLayer(ctx context.Context, lim gdalcmd.Limits, src Source, b RasterBounds) ([]Layer, error) {
	info, err := InspectRaster(ctx, lim, src, b)
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(src.Path); err == nil {
		info.FileSize = st.Size()
	}
	name := strings.TrimSuffix(src.Name, filepath.Ext(src.Name))
	return []Layer{{Name: name, FeatureCount: -1, SRID: info.EPSG, NoCRS: info.WKT == "", Extent: info.Extent, Raster: &info}}, nil
}

// checkRasterCommit checks a raster commit's options against the source: the raster choices,
// and a CRS and geotransform it can be placed on the map with. layer_name and the CSV columns
// have no meaning for a raster.
func checkRasterCommit(o Options, info RasterInfo) (Options, error) {
	if o.XColumn != "" || o.YColumn != "" || o.GeomColumn != "" {
		return o, apperr.Unprocessable("x_column, y_column and geom_column apply to CSV files and spreadsheets, not to rasters")
	}
	o.LayerName = ""
	if _, err := rasterSRID(o, info); err != nil {
		return o, apperr.Unprocessable("%v", err)
	}
	var err error
	o.Raster, err = CheckRasterOptions(o.Raster, info)
	return o, err
}
