package cog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"io"
	"math"
	"sync"

	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"
	"golang.org/x/image/tiff/lzw"
	"golang.org/x/image/webp"
)

// Tile is one decoded tile: TileWidth x TileHeight pixels of Samples samples each, pixel after
// pixel, row after row, in little-endian byte order whatever the file's (1-bit masks are
// expanded to one byte a pixel, 0 or 255).
type Tile struct {
	Width, Height, Samples int
	DType                  DType
	Data                   []byte
	// Empty is a tile the file does not store (a sparse tile: offset and byte count 0); Data is
	// then nil and every pixel is nodata.
	Empty bool
}

// TileRange is where tile (col, row) lies in the file; n is 0 for a tile not stored.
func (im *Image) TileRange(col, row int) (off, n int64, err error) {
	if col < 0 || row < 0 || col >= im.TilesAcross || row >= im.TilesDown {
		return 0, 0, bad("tile %d,%d outside %dx%d tiles", col, row, im.TilesAcross, im.TilesDown)
	}
	i := int64(row)*int64(im.TilesAcross) + int64(col)
	o, err := im.offsets.get(i)
	if err != nil {
		return 0, 0, err
	}
	c, err := im.counts.get(i)
	if err != nil {
		return 0, 0, err
	}
	if c == 0 {
		return 0, 0, nil
	}
	if c > uint64(im.f.lim.MaxCompressedTile) {
		return 0, 0, bad("tile %d,%d of %d bytes (at most %d)", col, row, c, im.f.lim.MaxCompressedTile)
	}
	if o > uint64(im.f.size) || c > uint64(im.f.size)-o {
		return 0, 0, bad("tile %d,%d at %d+%d beyond the file's %d bytes", col, row, o, c, im.f.size)
	}
	return int64(o), int64(c), nil
}

// ReadTile reads tile (col, row) with one read of its byte range, and decodes it.
func (im *Image) ReadTile(col, row int) (*Tile, error) {
	off, n, err := im.TileRange(col, row)
	if err != nil {
		return nil, err
	}
	t := &Tile{Width: im.TileWidth, Height: im.TileHeight, Samples: im.Samples, DType: im.DType}
	if n == 0 {
		t.Empty = true
		return t, nil
	}
	buf := make([]byte, n)
	if _, err := im.f.r.ReadAt(buf, off); err != nil && !(errors.Is(err, io.EOF)) {
		return nil, fmt.Errorf("cog: reading tile %d,%d: %w", col, row, err)
	}
	if t.Data, err = im.Decode(buf); err != nil {
		return nil, fmt.Errorf("tile %d,%d: %w", col, row, err)
	}
	if im.DType == Bit1 {
		t.DType = Uint8
	}
	return t, nil
}

// decodedSize is the bytes of one tile as stored before compression.
func (im *Image) decodedSize() int {
	if im.DType == Bit1 {
		return (im.TileWidth + 7) / 8 * im.TileHeight
	}
	return im.TileWidth * im.TileHeight * im.Samples * im.DType.Size()
}

// Decode turns one stored tile into its samples (see Tile).
func (im *Image) Decode(stored []byte) ([]byte, error) {
	switch im.Compression {
	case CompressionJPEG:
		return im.decodeJPEG(stored)
	case CompressionWEBP:
		return im.decodeWEBP(stored)
	}
	want := im.decodedSize()
	var data []byte
	switch im.Compression {
	case CompressionNone:
		if len(stored) < want {
			return nil, bad("uncompressed tile of %d bytes, %d expected", len(stored), want)
		}
		data = stored[:want]
	case CompressionDeflate, CompressionDeflateOld:
		zr, err := zlib.NewReader(bytes.NewReader(stored))
		if err != nil {
			return nil, bad("deflate: %v", err)
		}
		data, err = readFull(zr, want)
		if err != nil {
			return nil, err
		}
	case CompressionLZW:
		lr := lzw.NewReader(bytes.NewReader(stored), lzw.MSB, 8)
		defer lr.Close()
		var err error
		if data, err = readFull(lr, want); err != nil {
			return nil, err
		}
	case CompressionZSTD:
		d := zstdDecoders.Get().(*zstd.Decoder)
		defer zstdDecoders.Put(d)
		// DecodeAll grows dst to the frame's declared content size; a cap of the expected size
		// with WithDecoderMaxMemory bounds hostile frames.
		out, err := d.DecodeAll(stored, make([]byte, 0, want))
		if err != nil {
			return nil, bad("zstd: %v", err)
		}
		if len(out) < want {
			return nil, bad("zstd tile of %d bytes, %d expected", len(out), want)
		}
		data = out[:want]
	}
	if im.DType == Bit1 {
		return im.expandBits(data), nil
	}
	out := data
	if im.Compression == CompressionNone {
		out = make([]byte, want) // never change the caller's bytes
		copy(out, data)
	}
	return out, im.unpredict(out)
}

var zstdDecoders = sync.Pool{New: func() any {
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(DefaultLimits.MaxDecodedBytes)),
		zstd.WithDecoderMaxWindow(uint64(DefaultLimits.MaxDecodedBytes)))
	if err != nil {
		panic(err) // only for invalid options
	}
	return d
}}

// readFull reads exactly n bytes from a decompressor and no more: a stream that would inflate
// further is cut there, so a compressed bomb costs n bytes at most.
func readFull(r io.Reader, n int) ([]byte, error) {
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, bad("tile decompresses to less than %d bytes: %v", n, err)
	}
	return b, nil
}

func (im *Image) expandBits(data []byte) []byte {
	stride := (im.TileWidth + 7) / 8
	out := make([]byte, im.TileWidth*im.TileHeight)
	for y := 0; y < im.TileHeight; y++ {
		row := data[y*stride:]
		for x := 0; x < im.TileWidth; x++ {
			if row[x>>3]&(0x80>>(x&7)) != 0 {
				out[y*im.TileWidth+x] = 255
			}
		}
	}
	return out
}

// unpredict puts the samples in little-endian order and undoes the predictor.
func (im *Image) unpredict(b []byte) error {
	size := im.DType.Size()
	if im.Predictor == 3 {
		return im.unpredictFloat(b)
	}
	if im.f.bo == binary.BigEndian && size > 1 {
		swap(b, size)
	}
	if im.Predictor != 2 {
		return nil
	}
	spp, w := im.Samples, im.TileWidth
	rowLen := w * spp
	for y := 0; y < im.TileHeight; y++ {
		switch size {
		case 1:
			accumulate(b[y*rowLen:(y+1)*rowLen], spp)
		case 2:
			row := b[y*rowLen*2 : (y+1)*rowLen*2]
			for i := spp; i < rowLen; i++ {
				v := binary.LittleEndian.Uint16(row[2*i:]) + binary.LittleEndian.Uint16(row[2*(i-spp):])
				binary.LittleEndian.PutUint16(row[2*i:], v)
			}
		case 4:
			row := b[y*rowLen*4 : (y+1)*rowLen*4]
			for i := spp; i < rowLen; i++ {
				v := binary.LittleEndian.Uint32(row[4*i:]) + binary.LittleEndian.Uint32(row[4*(i-spp):])
				binary.LittleEndian.PutUint32(row[4*i:], v)
			}
		case 8:
			row := b[y*rowLen*8 : (y+1)*rowLen*8]
			for i := spp; i < rowLen; i++ {
				v := binary.LittleEndian.Uint64(row[8*i:]) + binary.LittleEndian.Uint64(row[8*(i-spp):])
				binary.LittleEndian.PutUint64(row[8*i:], v)
			}
		}
	}
	return nil
}

// unpredictFloat undoes the floating-point predictor (TIFF Technical Note 3, as libtiff's fpAcc):
// each row's bytes were split into planes, most significant first, then byte-differenced with a
// stride of the samples per pixel.
func (im *Image) unpredictFloat(b []byte) error {
	size, spp := im.DType.Size(), im.Samples
	words := im.TileWidth * spp
	rowLen := words * size
	tmp := make([]byte, rowLen)
	for y := 0; y < im.TileHeight; y++ {
		row := b[y*rowLen : (y+1)*rowLen]
		copy(tmp, row)
		accumulate(tmp, spp)
		if size == 4 {
			// The common case (float32) without a loop per byte: the four planes' bytes of a
			// word make it, least significant from the last plane.
			p3 := tmp[3*words : 4*words]
			p0, p1, p2 := tmp[:len(p3)], tmp[words:words+len(p3)], tmp[2*words:2*words+len(p3)]
			out := row[:4*len(p3)]
			for w := range p3 {
				binary.LittleEndian.PutUint32(out[4*w:], uint32(p3[w])|uint32(p2[w])<<8|uint32(p1[w])<<16|uint32(p0[w])<<24)
			}
			continue
		}
		for w := 0; w < words; w++ {
			for k := 0; k < size; k++ {
				row[size*w+k] = tmp[(size-k-1)*words+w]
			}
		}
	}
	return nil
}

// accumulate undoes a byte-wise horizontal difference of stride samples in place. Each byte
// depends on the one stride bytes before it: kept in registers rather than read back from the
// byte just written (a store-to-load round trip per byte, which made the loop a third of a DEM
// tile's CPU), a word of four samples at a time for stride 4 (RGBA).
func accumulate(row []byte, stride int) {
	switch stride {
	case 1:
		var acc byte
		for i, v := range row {
			acc += v
			row[i] = acc
		}
		return
	case 4:
		var acc uint32
		n := len(row) &^ 3
		for i := 0; i < n; i += 4 {
			v := binary.LittleEndian.Uint32(row[i:])
			// Four byte additions at once, each without carrying into the next (SWAR).
			acc = ((acc & 0x7f7f7f7f) + (v & 0x7f7f7f7f)) ^ ((acc ^ v) & 0x80808080)
			binary.LittleEndian.PutUint32(row[i:], acc)
		}
		return
	}
	for i := stride; i < len(row); i++ {
		row[i] += row[i-stride]
	}
}

func swap(b []byte, size int) {
	switch size {
	case 2:
		for i := 0; i+1 < len(b); i += 2 {
			b[i], b[i+1] = b[i+1], b[i]
		}
	case 4:
		for i := 0; i+3 < len(b); i += 4 {
			b[i], b[i+1], b[i+2], b[i+3] = b[i+3], b[i+2], b[i+1], b[i]
		}
	case 8:
		for i := 0; i+7 < len(b); i += 8 {
			binary.LittleEndian.PutUint64(b[i:], binary.BigEndian.Uint64(b[i:]))
		}
	}
}

// decodeJPEG decodes a JPEG tile: the directory's JPEGTables (quantization and Huffman tables)
// and the tile's own stream make one JPEG. Its size is checked from the header first, so a
// hostile frame size allocates nothing.
func (im *Image) decodeJPEG(stored []byte) ([]byte, error) {
	stream := stored
	if len(im.JPEGTables) >= 4 && len(stored) >= 2 {
		stream = make([]byte, 0, len(im.JPEGTables)+len(stored))
		stream = append(stream, im.JPEGTables[:len(im.JPEGTables)-2]...) // without its EOI
		stream = append(stream, stored[2:]...)                           // without its SOI
	}
	cfg, err := jpeg.DecodeConfig(bytes.NewReader(stream))
	if err != nil {
		return nil, bad("jpeg: %v", err)
	}
	if cfg.Width != im.TileWidth || cfg.Height != im.TileHeight {
		return nil, bad("jpeg tile of %dx%d in %dx%d tiles", cfg.Width, cfg.Height, im.TileWidth, im.TileHeight)
	}
	img, err := jpeg.Decode(bytes.NewReader(stream))
	if err != nil {
		return nil, bad("jpeg: %v", err)
	}
	return im.samplesOf(img)
}

// decodeWEBP decodes a WEBP tile, its size checked from the header first.
func (im *Image) decodeWEBP(stored []byte) ([]byte, error) {
	cfg, err := webp.DecodeConfig(bytes.NewReader(stored))
	if err != nil {
		return nil, bad("webp: %v", err)
	}
	if cfg.Width != im.TileWidth || cfg.Height != im.TileHeight {
		return nil, bad("webp tile of %dx%d in %dx%d tiles", cfg.Width, cfg.Height, im.TileWidth, im.TileHeight)
	}
	img, err := webp.Decode(bytes.NewReader(stored))
	if err != nil {
		return nil, bad("webp: %v", err)
	}
	return im.samplesOf(img)
}

// samplesOf lays a decoded image out as the directory's samples (1, 3 or 4 bytes a pixel).
func (im *Image) samplesOf(img image.Image) ([]byte, error) {
	w, h, spp := im.TileWidth, im.TileHeight, im.Samples
	b := img.Bounds()
	if b.Dx() != w || b.Dy() != h {
		return nil, bad("decoded tile of %dx%d", b.Dx(), b.Dy())
	}
	out := make([]byte, w*h*spp)
	switch m := img.(type) {
	case *image.Gray:
		if spp != 1 {
			return nil, bad("grey tile in a %d-sample image", spp)
		}
		for y := 0; y < h; y++ {
			copy(out[y*w:(y+1)*w], m.Pix[y*m.Stride:])
		}
		return out, nil
	case *image.YCbCr:
		if spp == 1 {
			for y := 0; y < h; y++ {
				copy(out[y*w:(y+1)*w], m.Y[y*m.YStride:])
			}
			return out, nil
		}
		ycbcrPixels(m, nil, out, spp, im.Compression == CompressionWEBP)
		return out, nil
	case *image.NYCbCrA:
		ycbcrPixels(&m.YCbCr, m, out, spp, true)
		return out, nil
	case *image.NRGBA:
		for y := 0; y < h; y++ {
			row := m.Pix[y*m.Stride:]
			for x := 0; x < w; x++ {
				o := (y*w + x) * spp
				copy(out[o:o+min(spp, 4)], row[4*x:4*x+min(spp, 4)])
			}
		}
		return out, nil
	case *image.RGBA:
		for y := 0; y < h; y++ {
			row := m.Pix[y*m.Stride:]
			for x := 0; x < w; x++ {
				o := (y*w + x) * spp
				copy(out[o:o+min(spp, 4)], row[4*x:4*x+min(spp, 4)])
			}
		}
		return out, nil
	}
	// Anything else (CMYK JPEG) goes through the generic colour model.
	if spp < 3 {
		return nil, bad("%T tile in a %d-sample image", img, spp)
	}
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			r, g, bl, a := img.At(x+b.Min.X, y+b.Min.Y).RGBA()
			o := (y*w + x) * spp
			out[o], out[o+1], out[o+2] = byte(r>>8), byte(g>>8), byte(bl>>8)
			if spp == 4 {
				out[o+3] = byte(a >> 8)
			}
		}
	}
	return out, nil
}

// Float reads sample s of pixel i of a decoded tile as float64.
func (t *Tile) Float(i, s int) float64 {
	k := i*t.Samples + s
	d := t.Data
	switch t.DType {
	case Uint8:
		return float64(d[k])
	case Int8:
		return float64(int8(d[k]))
	case Uint16:
		return float64(binary.LittleEndian.Uint16(d[2*k:]))
	case Int16:
		return float64(int16(binary.LittleEndian.Uint16(d[2*k:])))
	case Uint32:
		return float64(binary.LittleEndian.Uint32(d[4*k:]))
	case Int32:
		return float64(int32(binary.LittleEndian.Uint32(d[4*k:])))
	case Float32:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(d[4*k:])))
	case Float64:
		return math.Float64frombits(binary.LittleEndian.Uint64(d[8*k:]))
	}
	return math.NaN()
}
