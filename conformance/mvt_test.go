package conformance

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"
)

// A reader of Mapbox vector tiles (protocol buffers, vector-tile-spec 2.1) for the tile tests:
// layers, features with their ids, properties and first position.

type mvtLayer struct {
	Name     string
	Extent   int
	Features []mvtFeature
}

type mvtFeature struct {
	ID    *uint64
	Type  int // 1 point, 2 line, 3 polygon
	Props map[string]any
	X, Y  int // the first position, in tile units
}

// pbField is one field of a protocol buffer message.
type pbField struct {
	num   int
	wire  int
	value uint64 // varint and fixed
	bytes []byte // length-delimited
}

func pbFields(t *testing.T, b []byte) []pbField {
	t.Helper()
	var out []pbField
	for len(b) > 0 {
		key, n := binary.Uvarint(b)
		if n <= 0 {
			t.Fatalf("mvt: bad field key")
		}
		b = b[n:]
		f := pbField{num: int(key >> 3), wire: int(key & 7)}
		switch f.wire {
		case 0:
			f.value, n = binary.Uvarint(b)
			if n <= 0 {
				t.Fatalf("mvt: bad varint")
			}
			b = b[n:]
		case 1:
			f.value, b = binary.LittleEndian.Uint64(b), b[8:]
		case 5:
			f.value, b = uint64(binary.LittleEndian.Uint32(b)), b[4:]
		case 2:
			size, n := binary.Uvarint(b)
			if n <= 0 || int(size) > len(b)-n {
				t.Fatalf("mvt: bad length")
			}
			f.bytes, b = b[n:n+int(size)], b[n+int(size):]
		default:
			t.Fatalf("mvt: wire type %d", f.wire)
		}
		out = append(out, f)
	}
	return out
}

func pbPacked(t *testing.T, b []byte) []uint32 {
	t.Helper()
	var out []uint32
	for len(b) > 0 {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			t.Fatalf("mvt: bad packed varint")
		}
		out, b = append(out, uint32(v)), b[n:]
	}
	return out
}

func zigzag(v uint32) int { return int(int32(v>>1) ^ -int32(v&1)) }

// decodeMVT reads a tile.
func decodeMVT(t *testing.T, tile []byte) []mvtLayer {
	t.Helper()
	var layers []mvtLayer
	for _, f := range pbFields(t, tile) {
		if f.num == 3 {
			layers = append(layers, decodeLayer(t, f.bytes))
		}
	}
	return layers
}

func decodeLayer(t *testing.T, b []byte) mvtLayer {
	t.Helper()
	l := mvtLayer{Extent: 4096}
	var keys []string
	var values []any
	var raw [][]byte
	for _, f := range pbFields(t, b) {
		switch f.num {
		case 1:
			l.Name = string(f.bytes)
		case 2:
			raw = append(raw, f.bytes)
		case 3:
			keys = append(keys, string(f.bytes))
		case 4:
			values = append(values, decodeValue(t, f.bytes))
		case 5:
			l.Extent = int(f.value)
		}
	}
	for _, r := range raw {
		feat := mvtFeature{Props: map[string]any{}}
		for _, f := range pbFields(t, r) {
			switch f.num {
			case 1:
				id := f.value
				feat.ID = &id
			case 2:
				tags := pbPacked(t, f.bytes)
				for i := 0; i+1 < len(tags); i += 2 {
					feat.Props[keys[tags[i]]] = values[tags[i+1]]
				}
			case 3:
				feat.Type = int(f.value)
			case 4:
				g := pbPacked(t, f.bytes)
				if len(g) >= 3 && g[0]&7 == 1 { // MoveTo
					feat.X, feat.Y = zigzag(g[1]), zigzag(g[2])
				}
			}
		}
		l.Features = append(l.Features, feat)
	}
	return l
}

func decodeValue(t *testing.T, b []byte) any {
	t.Helper()
	for _, f := range pbFields(t, b) {
		switch f.num {
		case 1:
			return string(f.bytes)
		case 2:
			return float64(math.Float32frombits(uint32(f.value)))
		case 3:
			return math.Float64frombits(f.value)
		case 4:
			return int64(f.value)
		case 5:
			return int64(f.value)
		case 6:
			return int64(f.value>>1) ^ -int64(f.value&1)
		case 7:
			return f.value != 0
		}
	}
	return fmt.Errorf("empty value")
}
