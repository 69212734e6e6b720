// Package cog reads Cloud Optimized GeoTIFFs over an io.ReaderAt: the TIFF or BigTIFF header,
// the image file directories (full resolution, overviews, masks), and single tiles by byte range,
// decompressed and un-predicted. It is built for the COGs Meridian's raster ingest writes
// (gdal_translate -of COG -co TILING_SCHEME=GoogleMapsCompatible -co BLOCKSIZE=256), where one
// XYZ tile is one internal tile, but it reads any tiled, pixel-interleaved GeoTIFF.
//
// The file is untrusted: every offset, count and size is checked against the file's size and the
// Limits before anything is read or allocated, so a corrupt or hostile file yields an error, never
// a panic or an allocation larger than the limits allow.
package cog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
)

// ErrFormat is wrapped by every error about the file's content (as opposed to failing reads).
var ErrFormat = errors.New("cog: malformed or unsupported file")

func bad(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrFormat, fmt.Sprintf(format, args...))
}

// Limits bound what a file may make the reader do.
type Limits struct {
	MaxIFDs           int   // directories followed (a loop or a long chain ends here)
	MaxEntries        int   // entries of one directory
	MaxTagBytes       int64 // bytes of one tag read eagerly (JPEGTables, GDAL_METADATA, GeoKeys ...)
	MaxTileSide       int   // TileWidth and TileLength
	MaxSamples        int   // SamplesPerPixel
	MaxTiles          int64 // tiles of one directory
	MaxDecodedBytes   int64 // one decompressed tile
	MaxCompressedTile int64 // one stored tile
}

// DefaultLimits fit the COGs of raster ingest with a wide margin: 256-pixel tiles of up to a few
// bands.
var DefaultLimits = Limits{
	MaxIFDs:           64,
	MaxEntries:        256,
	MaxTagBytes:       1 << 20,
	MaxTileSide:       4096,
	MaxSamples:        64,
	MaxTiles:          1 << 26,
	MaxDecodedBytes:   64 << 20,
	MaxCompressedTile: 64 << 20,
}

// Compression schemes read (TIFF tag 259).
const (
	CompressionNone       = 1
	CompressionLZW        = 5
	CompressionJPEG       = 7
	CompressionDeflate    = 8
	CompressionDeflateOld = 32946
	CompressionZSTD       = 50000
	CompressionWEBP       = 50001
)

// DType is a sample's data type.
type DType int

// The data types read.
const (
	Uint8 DType = iota + 1
	Int8
	Uint16
	Int16
	Uint32
	Int32
	Float32
	Float64
	// Bit1 is a 1-bit sample: masks only.
	Bit1
)

// Size is the bytes of one sample (0 for Bit1).
func (d DType) Size() int {
	switch d {
	case Uint8, Int8:
		return 1
	case Uint16, Int16:
		return 2
	case Uint32, Int32, Float32:
		return 4
	case Float64:
		return 8
	}
	return 0
}

func (d DType) String() string {
	switch d {
	case Uint8:
		return "uint8"
	case Int8:
		return "int8"
	case Uint16:
		return "uint16"
	case Int16:
		return "int16"
	case Uint32:
		return "uint32"
	case Int32:
		return "int32"
	case Float32:
		return "float32"
	case Float64:
		return "float64"
	case Bit1:
		return "bit"
	}
	return "unknown"
}

// File is an opened COG.
type File struct {
	r    io.ReaderAt
	size int64
	bo   binary.ByteOrder
	big  bool
	lim  Limits

	// Images are the directories that hold image data, in file order: the full resolution first,
	// then the overviews. Masks hang off the image they belong to.
	Images []*Image
	// NoData is GDAL_NODATA, nil when the file declares none.
	NoData *float64
	// TilingScheme and ZoomLevel are GDAL_METADATA's TILING_SCHEME NAME and ZOOM_LEVEL (the
	// full resolution's zoom), "" and -1 when absent.
	TilingScheme string
	ZoomLevel    int
	// Geo is the full resolution's georeferencing; zero when the file has none.
	Geo Geo
}

// Geo is georeferencing read from the GeoTIFF tags.
type Geo struct {
	EPSG       int     // ProjectedCSTypeGeoKey, or GeographicTypeGeoKey; 0 when unknown
	OriginX    float64 // model X of the top-left corner of the top-left pixel
	OriginY    float64 // model Y of that corner
	ResX, ResY float64 // pixel size (ResY positive: rows go down)
	Valid      bool    // tiepoint and pixel scale were present and sane
}

// Image is one directory holding image data.
type Image struct {
	f            *File
	Width        int
	Height       int
	TileWidth    int
	TileHeight   int
	Samples      int
	DType        DType
	Compression  int
	Predictor    int
	Photometric  int
	ExtraSamples []int
	JPEGTables   []byte
	SubfileType  uint32
	// Mask is the transparency mask of this image (NewSubfileType bit 2), nil when none.
	Mask *Image

	TilesAcross, TilesDown int
	offsets, counts        *lazyArray
}

// Tiles is the number of tiles of the image.
func (im *Image) Tiles() int64 { return int64(im.TilesAcross) * int64(im.TilesDown) }

// IsMask tells a transparency mask.
func (im *Image) IsMask() bool { return im.SubfileType&4 != 0 }

// Open reads the header and every directory of the file r of size bytes. The tile offset and
// byte count arrays are read later, a chunk at a time, when tiles are asked for.
func Open(r io.ReaderAt, size int64, lim Limits) (*File, error) {
	if lim.MaxIFDs == 0 {
		lim = DefaultLimits
	}
	f := &File{r: r, size: size, lim: lim, ZoomLevel: -1}
	hdr := make([]byte, 16)
	if size < 8 {
		return nil, bad("file of %d bytes is no TIFF", size)
	}
	n := min(int64(16), size)
	if _, err := r.ReadAt(hdr[:n], 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	switch string(hdr[:2]) {
	case "II":
		f.bo = binary.LittleEndian
	case "MM":
		f.bo = binary.BigEndian
	default:
		return nil, bad("no TIFF byte order mark")
	}
	var next uint64
	switch f.bo.Uint16(hdr[2:]) {
	case 42:
		next = uint64(f.bo.Uint32(hdr[4:]))
	case 43:
		if n < 16 || f.bo.Uint16(hdr[4:]) != 8 || f.bo.Uint16(hdr[6:]) != 0 {
			return nil, bad("malformed BigTIFF header")
		}
		f.big = true
		next = f.bo.Uint64(hdr[8:])
	default:
		return nil, bad("not a TIFF (version %d)", f.bo.Uint16(hdr[2:]))
	}
	seen := map[uint64]bool{}
	var all []*Image
	for next != 0 {
		if len(seen) >= lim.MaxIFDs {
			return nil, bad("more than %d directories", lim.MaxIFDs)
		}
		if seen[next] {
			return nil, bad("directories loop at offset %d", next)
		}
		seen[next] = true
		im, nxt, err := f.readIFD(next, len(all) == 0)
		if err != nil {
			return nil, err
		}
		next = nxt
		all = append(all, im)
	}
	if len(all) == 0 {
		return nil, bad("no image directory")
	}
	// Masks follow the image they mask in GDAL's layouts; a mask is matched by size.
	for _, im := range all {
		if !im.IsMask() {
			f.Images = append(f.Images, im)
		}
	}
	if len(f.Images) == 0 {
		return nil, bad("only mask directories")
	}
	for _, m := range all {
		if !m.IsMask() {
			continue
		}
		for _, im := range f.Images {
			if im.Mask == nil && im.Width == m.Width && im.Height == m.Height &&
				im.TileWidth == m.TileWidth && im.TileHeight == m.TileHeight {
				im.Mask = m
				break
			}
		}
	}
	return f, nil
}

// TIFF tags read.
const (
	tagNewSubfileType  = 254
	tagImageWidth      = 256
	tagImageLength     = 257
	tagBitsPerSample   = 258
	tagCompression     = 259
	tagPhotometric     = 262
	tagStripOffsets    = 273
	tagSamplesPerPixel = 277
	tagPlanarConfig    = 284
	tagPredictor       = 317
	tagTileWidth       = 322
	tagTileLength      = 323
	tagTileOffsets     = 324
	tagTileByteCounts  = 325
	tagExtraSamples    = 338
	tagSampleFormat    = 339
	tagJPEGTables      = 347
	tagPixelScale      = 33550
	tagTiepoint        = 33922
	tagTransformation  = 34264
	tagGeoKeys         = 34735
	tagGDALMetadata    = 42112
	tagGDALNoData      = 42113
)

// TIFF field types and their sizes.
var typeSize = map[uint16]int{1: 1, 2: 1, 3: 2, 4: 4, 5: 8, 6: 1, 7: 1, 8: 2, 9: 4, 10: 8, 11: 4, 12: 8, 13: 4, 16: 8, 17: 8, 18: 8}

// field is one directory entry: its values inline or where they lie.
type field struct {
	typ    uint16
	count  uint64
	inline []byte // the value bytes when they fit the entry
	off    uint64 // else their offset
}

func (f *File) fieldBytes(fd field) (uint64, error) {
	sz, ok := typeSize[fd.typ]
	if !ok {
		return 0, bad("unknown field type %d", fd.typ)
	}
	if fd.count > math.MaxInt64/8 {
		return 0, bad("field count %d", fd.count)
	}
	return fd.count * uint64(sz), nil
}

// raw reads a field's bytes, at most max.
func (f *File) raw(fd field, max int64) ([]byte, error) {
	n, err := f.fieldBytes(fd)
	if err != nil {
		return nil, err
	}
	if fd.inline != nil {
		return fd.inline[:n], nil
	}
	if n > uint64(max) {
		return nil, bad("field of %d bytes exceeds %d", n, max)
	}
	if fd.off > uint64(f.size) || n > uint64(f.size)-fd.off {
		return nil, bad("field at %d+%d beyond the file's %d bytes", fd.off, n, f.size)
	}
	b := make([]byte, n)
	if _, err := f.r.ReadAt(b, int64(fd.off)); err != nil && !(errors.Is(err, io.EOF) && n == 0) {
		return nil, err
	}
	return b, nil
}

// uints reads an integer field (BYTE, SHORT, LONG, LONG8 and their signed kin) of at most max
// values.
func (f *File) uints(fd field, max int) ([]uint64, error) {
	if fd.count > uint64(max) {
		return nil, bad("field of %d values exceeds %d", fd.count, max)
	}
	b, err := f.raw(fd, int64(max)*8)
	if err != nil {
		return nil, err
	}
	out := make([]uint64, fd.count)
	for i := range out {
		switch fd.typ {
		case 1, 6, 7:
			out[i] = uint64(b[i])
		case 3, 8:
			out[i] = uint64(f.bo.Uint16(b[2*i:]))
		case 4, 9, 13:
			out[i] = uint64(f.bo.Uint32(b[4*i:]))
		case 16, 17, 18:
			out[i] = f.bo.Uint64(b[8*i:])
		default:
			return nil, bad("field type %d is not an integer", fd.typ)
		}
	}
	return out, nil
}

func (f *File) uint1(fd field) (uint64, error) {
	if fd.count != 1 {
		v, err := f.uints(fd, 1<<16)
		if err != nil {
			return 0, err
		}
		if len(v) == 0 {
			return 0, bad("empty field")
		}
		for _, x := range v[1:] {
			if x != v[0] {
				return 0, bad("per-sample values differ (%d, %d)", v[0], x)
			}
		}
		return v[0], nil
	}
	v, err := f.uints(fd, 1)
	if err != nil {
		return 0, err
	}
	return v[0], nil
}

func (f *File) doubles(fd field, max int) ([]float64, error) {
	if fd.typ != 12 {
		return nil, bad("field type %d is not DOUBLE", fd.typ)
	}
	if fd.count > uint64(max) {
		return nil, bad("field of %d values exceeds %d", fd.count, max)
	}
	b, err := f.raw(fd, int64(max)*8)
	if err != nil {
		return nil, err
	}
	out := make([]float64, fd.count)
	for i := range out {
		out[i] = math.Float64frombits(f.bo.Uint64(b[8*i:]))
	}
	return out, nil
}

func (f *File) ascii(fd field) (string, error) {
	if fd.typ != 2 && fd.typ != 7 && fd.typ != 1 {
		return "", bad("field type %d is not ASCII", fd.typ)
	}
	b, err := f.raw(fd, f.lim.MaxTagBytes)
	if err != nil {
		return "", err
	}
	return strings.TrimRight(string(b), "\x00"), nil
}

// readIFD reads the directory at off; first tells the full resolution's, the one whose
// georeferencing and GDAL metadata count.
func (f *File) readIFD(off uint64, first bool) (*Image, uint64, error) {
	countSize, entrySize, valueSize := 2, 12, 4
	if f.big {
		countSize, entrySize, valueSize = 8, 20, 8
	}
	if off > uint64(f.size) || uint64(countSize) > uint64(f.size)-off {
		return nil, 0, bad("directory offset %d beyond the file's %d bytes", off, f.size)
	}
	cb := make([]byte, countSize)
	if _, err := f.r.ReadAt(cb, int64(off)); err != nil {
		return nil, 0, err
	}
	var n uint64
	if f.big {
		n = f.bo.Uint64(cb)
	} else {
		n = uint64(f.bo.Uint16(cb))
	}
	if n == 0 || n > uint64(f.lim.MaxEntries) {
		return nil, 0, bad("directory of %d entries", n)
	}
	body := uint64(countSize) + n*uint64(entrySize) + uint64(valueSize)
	if body > uint64(f.size)-off {
		return nil, 0, bad("directory at %d runs past the end of the file", off)
	}
	b := make([]byte, n*uint64(entrySize)+uint64(valueSize))
	if _, err := f.r.ReadAt(b, int64(off)+int64(countSize)); err != nil && !errors.Is(err, io.EOF) {
		return nil, 0, err
	}
	fields := make(map[uint16]field, n)
	for i := uint64(0); i < n; i++ {
		e := b[i*uint64(entrySize):]
		tag, typ := f.bo.Uint16(e), f.bo.Uint16(e[2:])
		var fd field
		var val []byte
		if f.big {
			fd = field{typ: typ, count: f.bo.Uint64(e[4:])}
			val = e[12:20]
		} else {
			fd = field{typ: typ, count: uint64(f.bo.Uint32(e[4:]))}
			val = e[8:12]
		}
		sz, ok := typeSize[typ]
		if !ok {
			continue // unknown types are skipped, as readers must
		}
		if fd.count <= uint64(valueSize/sz) {
			fd.inline = val
		} else if f.big {
			fd.off = f.bo.Uint64(val)
		} else {
			fd.off = uint64(f.bo.Uint32(val))
		}
		fields[tag] = fd
	}
	var next uint64
	nb := b[n*uint64(entrySize):]
	if f.big {
		next = f.bo.Uint64(nb)
	} else {
		next = uint64(f.bo.Uint32(nb))
	}
	im, err := f.image(fields, first)
	return im, next, err
}

// image checks a directory's tags and builds its Image.
func (f *File) image(fields map[uint16]field, first bool) (*Image, error) {
	im := &Image{f: f, Compression: CompressionNone, Predictor: 1, Samples: 1}
	get := func(tag uint16, def uint64) (uint64, error) {
		fd, ok := fields[tag]
		if !ok {
			return def, nil
		}
		return f.uint1(fd)
	}
	var err error
	var v uint64
	if v, err = get(tagNewSubfileType, 0); err != nil {
		return nil, err
	}
	im.SubfileType = uint32(v)
	for _, t := range []uint16{tagImageWidth, tagImageLength, tagTileWidth, tagTileLength, tagTileOffsets, tagTileByteCounts} {
		if _, ok := fields[t]; !ok {
			if _, strips := fields[tagStripOffsets]; strips && (t == tagTileWidth || t == tagTileOffsets) {
				return nil, bad("striped image: only tiled TIFFs are read")
			}
			return nil, bad("required tag %d missing", t)
		}
	}
	dims := []*int{&im.Width, &im.Height, &im.TileWidth, &im.TileHeight}
	for i, t := range []uint16{tagImageWidth, tagImageLength, tagTileWidth, tagTileLength} {
		if v, err = get(t, 0); err != nil {
			return nil, err
		}
		if v == 0 || v > math.MaxInt32 {
			return nil, bad("tag %d = %d", t, v)
		}
		*dims[i] = int(v)
	}
	if im.TileWidth > f.lim.MaxTileSide || im.TileHeight > f.lim.MaxTileSide || im.TileWidth%16 != 0 || im.TileHeight%16 != 0 {
		return nil, bad("tiles of %dx%d (multiples of 16 up to %d)", im.TileWidth, im.TileHeight, f.lim.MaxTileSide)
	}
	if v, err = get(tagSamplesPerPixel, 1); err != nil {
		return nil, err
	}
	if v == 0 || v > uint64(f.lim.MaxSamples) {
		return nil, bad("%d samples per pixel (at most %d)", v, f.lim.MaxSamples)
	}
	im.Samples = int(v)
	if v, err = get(tagPlanarConfig, 1); err != nil {
		return nil, err
	}
	if v != 1 && im.Samples > 1 {
		return nil, bad("planar configuration %d: only pixel-interleaved data is read", v)
	}
	bits, err := get(tagBitsPerSample, 1)
	if err != nil {
		return nil, err
	}
	format, err := get(tagSampleFormat, 1)
	if err != nil {
		return nil, err
	}
	if im.DType, err = dtype(bits, format); err != nil {
		return nil, err
	}
	if im.DType == Bit1 && (!im.IsMask() || im.Samples != 1) {
		return nil, bad("1-bit samples outside a mask")
	}
	if v, err = get(tagCompression, CompressionNone); err != nil {
		return nil, err
	}
	im.Compression = int(v)
	switch im.Compression {
	case CompressionNone, CompressionLZW, CompressionDeflate, CompressionDeflateOld, CompressionZSTD:
	case CompressionJPEG:
		if im.DType != Uint8 || (im.Samples != 1 && im.Samples != 3) {
			return nil, bad("JPEG compression of %d %s samples", im.Samples, im.DType)
		}
		if fd, ok := fields[tagJPEGTables]; ok {
			if im.JPEGTables, err = f.raw(fd, f.lim.MaxTagBytes); err != nil {
				return nil, err
			}
		}
	case CompressionWEBP:
		if im.DType != Uint8 || (im.Samples != 3 && im.Samples != 4) {
			return nil, bad("WEBP compression of %d %s samples", im.Samples, im.DType)
		}
	default:
		return nil, bad("compression %d not supported", im.Compression)
	}
	if v, err = get(tagPredictor, 1); err != nil {
		return nil, err
	}
	im.Predictor = int(v)
	switch {
	case im.Predictor == 1:
	case im.Predictor == 2 && im.DType != Bit1:
	case im.Predictor == 3 && (im.DType == Float32 || im.DType == Float64):
	default:
		return nil, bad("predictor %d for %s samples", im.Predictor, im.DType)
	}
	if v, err = get(tagPhotometric, 1); err != nil {
		return nil, err
	}
	im.Photometric = int(v)
	if fd, ok := fields[tagExtraSamples]; ok {
		es, err := f.uints(fd, f.lim.MaxSamples)
		if err != nil {
			return nil, err
		}
		for _, e := range es {
			im.ExtraSamples = append(im.ExtraSamples, int(e))
		}
	}

	im.TilesAcross = (im.Width + im.TileWidth - 1) / im.TileWidth
	im.TilesDown = (im.Height + im.TileHeight - 1) / im.TileHeight
	tiles := im.Tiles()
	if tiles > f.lim.MaxTiles {
		return nil, bad("%d tiles (at most %d)", tiles, f.lim.MaxTiles)
	}
	decoded := int64(im.TileWidth) * int64(im.TileHeight) * int64(im.Samples) * int64(max(1, im.DType.Size()))
	if decoded > f.lim.MaxDecodedBytes {
		return nil, bad("tiles of %d bytes decoded (at most %d)", decoded, f.lim.MaxDecodedBytes)
	}
	if im.offsets, err = f.lazy(fields[tagTileOffsets], tiles); err != nil {
		return nil, fmt.Errorf("tile offsets: %w", err)
	}
	if im.counts, err = f.lazy(fields[tagTileByteCounts], tiles); err != nil {
		return nil, fmt.Errorf("tile byte counts: %w", err)
	}
	if first {
		if err := f.readGeo(fields); err != nil {
			return nil, err
		}
	}
	return im, nil
}

func dtype(bits, format uint64) (DType, error) {
	switch {
	case bits == 1 && format == 1:
		return Bit1, nil
	case bits == 8 && format == 1:
		return Uint8, nil
	case bits == 8 && format == 2:
		return Int8, nil
	case bits == 16 && format == 1:
		return Uint16, nil
	case bits == 16 && format == 2:
		return Int16, nil
	case bits == 32 && format == 1:
		return Uint32, nil
	case bits == 32 && format == 2:
		return Int32, nil
	case bits == 32 && format == 3:
		return Float32, nil
	case bits == 64 && format == 3:
		return Float64, nil
	}
	return 0, bad("%d-bit samples of format %d not supported", bits, format)
}

// readGeo reads the full resolution's georeferencing and GDAL's tags.
func (f *File) readGeo(fields map[uint16]field) error {
	if fd, ok := fields[tagGDALNoData]; ok {
		s, err := f.ascii(fd)
		if err != nil {
			return err
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil {
			f.NoData = &v
		}
	}
	if fd, ok := fields[tagGDALMetadata]; ok {
		s, err := f.ascii(fd)
		if err != nil {
			return err
		}
		f.TilingScheme, f.ZoomLevel = tilingScheme(s)
	}
	scale, okS := fields[tagPixelScale]
	tie, okT := fields[tagTiepoint]
	if okS && okT {
		sc, err := f.doubles(scale, 3)
		if err != nil {
			return err
		}
		tp, err := f.doubles(tie, 6)
		if err != nil {
			return err
		}
		if len(sc) >= 2 && len(tp) == 6 {
			g := Geo{ResX: sc[0], ResY: sc[1], OriginX: tp[3] - tp[0]*sc[0], OriginY: tp[4] + tp[1]*sc[1]}
			g.Valid = g.ResX > 0 && g.ResY > 0 && !math.IsInf(g.ResX, 0) && !math.IsInf(g.ResY, 0) &&
				!math.IsNaN(g.OriginX) && !math.IsNaN(g.OriginY) && !math.IsInf(g.OriginX, 0) && !math.IsInf(g.OriginY, 0)
			f.Geo = g
		}
	}
	if fd, ok := fields[tagGeoKeys]; ok {
		keys, err := f.uints(fd, 4*256)
		if err != nil {
			return err
		}
		f.Geo.EPSG = epsg(keys)
	}
	return nil
}

// epsg finds the CRS code in a GeoKeyDirectory: the projected CRS, else the geographic one.
func epsg(keys []uint64) int {
	if len(keys) < 4 {
		return 0
	}
	n := int(keys[3])
	var projected, geographic int
	for i := 0; i < n && 4+4*i+3 < len(keys); i++ {
		k := keys[4+4*i:]
		if k[1] != 0 || k[2] != 1 { // only values held in the directory itself
			continue
		}
		switch k[0] {
		case 3072:
			projected = int(k[3])
		case 2048:
			geographic = int(k[3])
		}
	}
	if projected != 0 && projected != 32767 {
		return projected
	}
	if geographic != 32767 {
		return geographic
	}
	return 0
}

// tilingScheme reads TILING_SCHEME's NAME and ZOOM_LEVEL from GDAL_METADATA's XML. The items are
// simple enough that a scan for them is safer than a general XML parse of untrusted text.
func tilingScheme(xml string) (string, int) {
	name, zoom := "", -1
	for rest := xml; ; {
		i := strings.Index(rest, "<Item ")
		if i < 0 {
			break
		}
		rest = rest[i:]
		end := strings.Index(rest, "</Item>")
		if end < 0 {
			break
		}
		item := rest[:end]
		rest = rest[end:]
		gt := strings.IndexByte(item, '>')
		if gt < 0 {
			continue
		}
		attrs, value := item[:gt], strings.TrimSpace(item[gt+1:])
		if !strings.Contains(attrs, `domain="TILING_SCHEME"`) {
			continue
		}
		switch {
		case strings.Contains(attrs, `name="NAME"`):
			name = value
		case strings.Contains(attrs, `name="ZOOM_LEVEL"`):
			if z, err := strconv.Atoi(value); err == nil && z >= 0 && z <= 30 {
				zoom = z
			}
		}
	}
	return name, zoom
}

// lazyArray is a tile offset or byte count array, read a chunk at a time: a large COG's arrays
// run to megabytes, while a tile request needs one entry.
type lazyArray struct {
	f      *File
	typ    uint16
	count  int64
	inline []uint64
	off    int64
	mu     sync.Mutex
	chunks map[int64][]uint64
}

const chunkLen = 512

func (f *File) lazy(fd field, count int64) (*lazyArray, error) {
	if int64(fd.count) != count {
		return nil, bad("%d entries for %d tiles", fd.count, count)
	}
	if fd.typ != 3 && fd.typ != 4 && fd.typ != 16 {
		return nil, bad("field type %d", fd.typ)
	}
	a := &lazyArray{f: f, typ: fd.typ, count: count, chunks: map[int64][]uint64{}}
	if fd.inline != nil {
		v, err := f.uints(fd, int(count))
		if err != nil {
			return nil, err
		}
		a.inline = v
		return a, nil
	}
	n, err := f.fieldBytes(fd)
	if err != nil {
		return nil, err
	}
	if fd.off > uint64(f.size) || n > uint64(f.size)-fd.off {
		return nil, bad("array at %d+%d beyond the file's %d bytes", fd.off, n, f.size)
	}
	a.off = int64(fd.off)
	return a, nil
}

func (a *lazyArray) get(i int64) (uint64, error) {
	if i < 0 || i >= a.count {
		return 0, bad("tile index %d of %d", i, a.count)
	}
	if a.inline != nil {
		return a.inline[i], nil
	}
	c := i / chunkLen
	a.mu.Lock()
	vals, ok := a.chunks[c]
	a.mu.Unlock()
	if !ok {
		sz := int64(typeSize[a.typ])
		first := c * chunkLen
		n := min(chunkLen, a.count-first)
		b := make([]byte, n*sz)
		if _, err := a.f.r.ReadAt(b, a.off+first*sz); err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		vals = make([]uint64, n)
		for j := range vals {
			switch a.typ {
			case 3:
				vals[j] = uint64(a.f.bo.Uint16(b[2*j:]))
			case 4:
				vals[j] = uint64(a.f.bo.Uint32(b[4*j:]))
			default:
				vals[j] = a.f.bo.Uint64(b[8*j:])
			}
		}
		a.mu.Lock()
		a.chunks[c] = vals
		a.mu.Unlock()
	}
	return vals[i-c*chunkLen], nil
}

// Size is the file's size in bytes.
func (f *File) Size() int64 { return f.size }
