// Package rastertest makes COGs for tests and benchmarks the way raster ingest does: a
// synthetic raster written raw (a VRTRawRasterBand describes it to GDAL), then gdal_translate
// -of COG on the GoogleMapsCompatible grid with the ingest's options.
package rastertest

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Spec describes a raster to make.
type Spec struct {
	Width, Height, Bands int
	DType                string  // GDAL's name: Byte, UInt16, Int16, UInt32, Int32, Float32, Float64
	SRS                  string  // EPSG:4326 (default) or EPSG:3857
	West, North, Res     float64 // geotransform in SRS units
	NoData               *float64
	Compress             string // DEFLATE (default), LZW, ZSTD, JPEG, WEBP, NONE
	Predictor            bool
	Resampling           string // default bilinear
	// Value is band b's value (0-based) at pixel x, y.
	Value func(x, y, b int) float64
	// Extra are more gdal_translate options (e.g. -co ALIGNED_LEVELS=3).
	Extra []string
	// Native keeps the COG in SRS on its own grid (a COG as found on the web), rather than on
	// the GoogleMapsCompatible grid the ingest writes.
	Native bool
}

var sizes = map[string]int{"Byte": 1, "Int8": 1, "UInt16": 2, "Int16": 2, "UInt32": 4, "Int32": 4, "Float32": 4, "Float64": 8}

// Make writes the COG of s to path (raw and VRT files beside it, removed after).
func Make(path string, s Spec) error {
	if s.SRS == "" {
		s.SRS = "EPSG:4326"
	}
	if s.Compress == "" {
		s.Compress = "DEFLATE"
	}
	if s.Resampling == "" {
		s.Resampling = "bilinear"
	}
	size, ok := sizes[s.DType]
	if !ok {
		return fmt.Errorf("rastertest: data type %q", s.DType)
	}
	raw := path + ".raw"
	vrt := path + ".vrt"
	defer os.Remove(raw)
	defer os.Remove(vrt)
	if err := writeRaw(raw, s, size); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "<VRTDataset rasterXSize=\"%d\" rasterYSize=\"%d\">\n<SRS>%s</SRS>\n", s.Width, s.Height, s.SRS)
	fmt.Fprintf(&b, "<GeoTransform>%.12g, %.12g, 0, %.12g, 0, %.12g</GeoTransform>\n", s.West, s.Res, s.North, -s.Res)
	for band := 0; band < s.Bands; band++ {
		fmt.Fprintf(&b, "<VRTRasterBand dataType=\"%s\" band=\"%d\" subClass=\"VRTRawRasterBand\">", s.DType, band+1)
		if s.NoData != nil {
			fmt.Fprintf(&b, "<NoDataValue>%.17g</NoDataValue>", *s.NoData)
		}
		fmt.Fprintf(&b, "<SourceFilename relativetoVRT=\"1\">%s</SourceFilename><ByteOrder>LSB</ByteOrder>", filepath.Base(raw))
		fmt.Fprintf(&b, "<ImageOffset>%d</ImageOffset><PixelOffset>%d</PixelOffset><LineOffset>%d</LineOffset></VRTRasterBand>\n",
			band*size, s.Bands*size, s.Width*s.Bands*size)
	}
	b.WriteString("</VRTDataset>\n")
	if err := os.WriteFile(vrt, []byte(b.String()), 0o644); err != nil {
		return err
	}
	args := []string{"-q", "-of", "COG", "-co", "BLOCKSIZE=256",
		"-co", "COMPRESS=" + s.Compress, "-co", "RESAMPLING=" + s.Resampling, "-co", "OVERVIEWS=IGNORE_EXISTING"}
	if !s.Native {
		args = append(args, "-co", "TILING_SCHEME=GoogleMapsCompatible")
	}
	if s.Predictor {
		args = append(args, "-co", "PREDICTOR=YES")
	}
	args = append(args, s.Extra...)
	args = append(args, vrt, path)
	out, err := exec.Command("gdal_translate", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("gdal_translate: %v: %s", err, out)
	}
	return nil
}

func writeRaw(path string, s Spec, size int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	buf := make([]byte, 8)
	for y := 0; y < s.Height; y++ {
		for x := 0; x < s.Width; x++ {
			for b := 0; b < s.Bands; b++ {
				v := s.Value(x, y, b)
				switch s.DType {
				case "Byte", "Int8":
					buf[0] = byte(int(v))
				case "UInt16", "Int16":
					binary.LittleEndian.PutUint16(buf, uint16(int64(v)))
				case "UInt32", "Int32":
					binary.LittleEndian.PutUint32(buf, uint32(int64(v)))
				case "Float32":
					binary.LittleEndian.PutUint32(buf, math.Float32bits(float32(v)))
				case "Float64":
					binary.LittleEndian.PutUint64(buf, math.Float64bits(v))
				}
				if _, err := w.Write(buf[:size]); err != nil {
					f.Close()
					return err
				}
			}
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// RGB is a smooth three-band byte picture with some texture.
func RGB(x, y, b int) float64 {
	switch b {
	case 0:
		return float64((x * 7 / 8) % 256)
	case 1:
		return float64((y * 5 / 8) % 256)
	}
	return 128 + 127*math.Sin(float64(x+y)/37)
}

// DEM is a hilly elevation surface in metres, with a nodata hole (when nodata is given by the
// spec, the caller returns it for the hole).
func DEM(x, y int) float64 {
	fx, fy := float64(x), float64(y)
	return 200 + 150*math.Sin(fx/53)*math.Cos(fy/41) + 0.8*fx - 0.3*fy
}

// ReadENVI reads the band-sequential raw output of gdal_translate -of ENVI (floats as float64).
func ReadENVI(path, dtype string, w, h, bands int) ([][]float64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	size := sizes[dtype]
	if len(data) < w*h*bands*size {
		return nil, fmt.Errorf("rastertest: %s holds %d bytes", path, len(data))
	}
	out := make([][]float64, bands)
	for b := range out {
		out[b] = make([]float64, w*h)
		for i := range out[b] {
			o := (b*w*h + i) * size
			switch dtype {
			case "Byte":
				out[b][i] = float64(data[o])
			case "UInt16":
				out[b][i] = float64(binary.LittleEndian.Uint16(data[o:]))
			case "Int16":
				out[b][i] = float64(int16(binary.LittleEndian.Uint16(data[o:])))
			case "Float32":
				out[b][i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(data[o:])))
			case "Float64":
				out[b][i] = math.Float64frombits(binary.LittleEndian.Uint64(data[o:]))
			default:
				return nil, fmt.Errorf("rastertest: ENVI of %s", dtype)
			}
		}
	}
	return out, nil
}
