package cog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// entry is one directory entry of a hand-made TIFF.
type entry struct {
	tag, typ uint16
	vals     []uint32 // SHORT or LONG values; more than fit inline go after the directory
}

// tiff writes a little-endian classic TIFF: header, one directory of entries (values that do
// not fit inline after it), next pointing at next (0: none), then pad bytes of tile data.
func tiff(entries []entry, next uint32, pad int) []byte {
	var b bytes.Buffer
	b.WriteString("II")
	binary.Write(&b, binary.LittleEndian, uint16(42))
	binary.Write(&b, binary.LittleEndian, uint32(8))
	extra := 8 + 2 + 12*len(entries) + 4
	var tail bytes.Buffer
	binary.Write(&b, binary.LittleEndian, uint16(len(entries)))
	for _, e := range entries {
		size := 2
		if e.typ == 4 {
			size = 4
		}
		binary.Write(&b, binary.LittleEndian, e.tag)
		binary.Write(&b, binary.LittleEndian, e.typ)
		binary.Write(&b, binary.LittleEndian, uint32(len(e.vals)))
		var val bytes.Buffer
		for _, v := range e.vals {
			if size == 2 {
				binary.Write(&val, binary.LittleEndian, uint16(v))
			} else {
				binary.Write(&val, binary.LittleEndian, v)
			}
		}
		if val.Len() <= 4 {
			v := make([]byte, 4)
			copy(v, val.Bytes())
			b.Write(v)
		} else {
			binary.Write(&b, binary.LittleEndian, uint32(extra+tail.Len()))
			tail.Write(val.Bytes())
		}
	}
	binary.Write(&b, binary.LittleEndian, next)
	b.Write(tail.Bytes())
	b.Write(make([]byte, pad))
	return b.Bytes()
}

// valid is a 32 x 32 byte image of one 32 x 32 uncompressed tile at offset 200.
func valid(over ...entry) []entry {
	base := []entry{
		{tag: 256, typ: 4, vals: []uint32{32}}, {tag: 257, typ: 4, vals: []uint32{32}},
		{tag: 258, typ: 3, vals: []uint32{8}}, {tag: 259, typ: 3, vals: []uint32{1}},
		{tag: 277, typ: 3, vals: []uint32{1}}, {tag: 322, typ: 3, vals: []uint32{32}},
		{tag: 323, typ: 3, vals: []uint32{32}}, {tag: 324, typ: 4, vals: []uint32{200}},
		{tag: 325, typ: 4, vals: []uint32{1024}},
	}
	for _, o := range over {
		replaced := false
		for i := range base {
			if base[i].tag == o.tag {
				base[i], replaced = o, true
			}
		}
		if !replaced {
			base = append(base, o)
		}
	}
	return base
}

func TestValidHandMadeTIFF(t *testing.T) {
	data := tiff(valid(), 0, 1400)
	f, err := Open(bytes.NewReader(data), int64(len(data)), DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	tile, err := f.Images[0].ReadTile(0, 0)
	if err != nil || len(tile.Data) != 1024 {
		t.Fatal(tile, err)
	}
}

// TestHostileIFDs: declared sizes beyond reason, loops, and offsets past the end are errors of
// the format, found before anything large is allocated or read.
func TestHostileIFDs(t *testing.T) {
	loop := tiff(valid(), 8, 1400) // the directory's next is itself
	cases := map[string][]byte{
		"100000x100000 pixels, one tile offset": tiff(valid(entry{tag: 256, typ: 4, vals: []uint32{100000}}, entry{tag: 257, typ: 4, vals: []uint32{100000}}), 0, 1400),
		"10000 bands":                           tiff(valid(entry{tag: 277, typ: 3, vals: []uint32{10000}}), 0, 1400),
		"directory loop":                        loop,
		"tile beyond the file":                  tiff(valid(entry{tag: 324, typ: 4, vals: []uint32{1 << 30}}), 0, 1400),
		"tile of 4 GB":                          tiff(valid(entry{tag: 325, typ: 4, vals: []uint32{0xffffffff}}), 0, 1400),
		"tile side 65536":                       tiff(valid(entry{tag: 322, typ: 4, vals: []uint32{65536}}), 0, 1400),
		"directory beyond the file":             tiff(valid(), 1<<30, 1400),
		"separate planes":                       tiff(valid(entry{tag: 277, typ: 3, vals: []uint32{3}}, entry{tag: 284, typ: 3, vals: []uint32{2}}), 0, 1400),
		"unknown compression":                   tiff(valid(entry{tag: 259, typ: 3, vals: []uint32{34712}}), 0, 1400),
		"strips":                                tiff([]entry{{tag: 256, typ: 4, vals: []uint32{32}}, {tag: 257, typ: 4, vals: []uint32{32}}, {tag: 273, typ: 4, vals: []uint32{200}}}, 0, 1400),
		"JPEG of 16-bit samples":                tiff(valid(entry{tag: 259, typ: 3, vals: []uint32{7}}, entry{tag: 258, typ: 3, vals: []uint32{16}}), 0, 1400),
		"truncated":                             tiff(valid(), 0, 1400)[:40],
		"not a TIFF":                            []byte("GIF89a........"),
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			f, err := Open(bytes.NewReader(data), int64(len(data)), DefaultLimits)
			if err == nil {
				_, err = f.Images[0].ReadTile(0, 0)
			}
			if !errors.Is(err, ErrFormat) {
				t.Errorf("got %v, want a format error", err)
			}
		})
	}
}

// FuzzOpen: no input makes the reader panic or allocate beyond its limits; the seeds are small
// COGs of every compression (testdata/fuzz/FuzzOpen) and the hostile directories above.
func FuzzOpen(f *testing.F) {
	f.Add(tiff(valid(), 0, 1400))
	f.Add(tiff(valid(entry{tag: 277, typ: 3, vals: []uint32{10000}}), 0, 1400))
	f.Add(tiff(valid(), 8, 1400))
	seeds, _ := filepath.Glob("testdata/*.tif")
	for _, s := range seeds {
		if b, err := os.ReadFile(s); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Open(bytes.NewReader(data), int64(len(data)), DefaultLimits)
		if err != nil {
			return
		}
		_, _ = file.Pyramid()
		for _, im := range file.Images {
			for i := int64(0); i < min(im.Tiles(), 4); i++ {
				_, _ = im.ReadTile(int(i%int64(im.TilesAcross)), int(i/int64(im.TilesAcross)))
			}
			if im.Mask != nil {
				_, _ = im.Mask.ReadTile(0, 0)
			}
		}
	})
}

// TestUnpredict: the predictors' undoing, for each sample count and width, is the rule written
// out byte by byte (TIFF 6.0 section 14 for the horizontal one, Technical Note 3 for floats).
func TestUnpredict(t *testing.T) {
	for _, c := range []struct {
		dtype     DType
		predictor int
	}{{Uint8, 2}, {Uint16, 2}, {Float32, 3}, {Float64, 3}} {
		for _, spp := range []int{1, 2, 3, 4, 5} {
			im := &Image{f: &File{bo: binary.LittleEndian}, TileWidth: 7, TileHeight: 3, Samples: spp, DType: c.dtype, Predictor: c.predictor}
			data := make([]byte, im.decodedSize())
			for i := range data {
				data[i] = byte(i*131 + spp*7 + i*i)
			}
			want := append([]byte(nil), data...)
			size, rowLen := c.dtype.Size(), im.TileWidth*spp*c.dtype.Size()
			for y := 0; y < im.TileHeight; y++ {
				row := want[y*rowLen : (y+1)*rowLen]
				if c.predictor == 2 {
					// Each sample adds the same sample of the pixel before, as integers of its size.
					for i := spp; i < rowLen/size; i++ {
						for k, carry := 0, 0; k < size; k++ {
							sum := int(row[i*size+k]) + int(row[(i-spp)*size+k]) + carry
							row[i*size+k], carry = byte(sum), sum>>8
						}
					}
					continue
				}
				for i := spp; i < rowLen; i++ {
					row[i] += row[i-spp]
				}
				planes := append([]byte(nil), row...)
				words := rowLen / size
				for w := 0; w < words; w++ {
					for k := 0; k < size; k++ {
						row[w*size+k] = planes[(size-1-k)*words+w]
					}
				}
			}
			if err := im.unpredict(data); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(data, want) {
				t.Errorf("%s predictor %d, %d samples: %v, want %v", c.dtype, c.predictor, spp, data[:16], want[:16])
			}
		}
	}
}
