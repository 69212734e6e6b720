package features

import (
	"encoding/binary"
	"errors"
	"math"
	"strconv"
	"time"
	"unicode/utf8"
)

// GeoJSON is written here from WKB rather than by ST_AsGeoJSON: reading binary geometry and
// appending digits costs the server a fraction of what rendering text in PostgreSQL costs the
// database, and the database is the part that does not scale out (BenchmarkItems measures both).

var errWKB = errors.New("features: malformed WKB")

// wkbReader walks one WKB geometry.
type wkbReader struct {
	b      []byte
	swap   bool // write y before x (EPSG:4326 axis order)
	hasZ   bool // the geometry being read has a Z; a third ordinate without it is a measure
	forceZ bool // write a Z of 0 where the geometry has none
}

// appendGeometry appends the GeoJSON geometry of WKB b (ISO or extended WKB, any byte order);
// no b, or an empty geometry (which has no GeoJSON position), is JSON null.
func appendGeometry(dst, b []byte, swapXY, forceZ bool) ([]byte, error) {
	if len(b) == 0 || emptyWKB(b) {
		return append(dst, "null"...), nil
	}
	r := wkbReader{b: b, swap: swapXY, forceZ: forceZ}
	return r.geometry(dst, 0)
}

// emptyWKB reports whether WKB b is an empty geometry: a point whose ordinates are NaN, or
// anything else with no parts.
func emptyWKB(b []byte) bool {
	r := wkbReader{b: b}
	order, kind, _, err := r.header()
	if err != nil || len(r.b) < 4 {
		return false
	}
	if kind == 1 {
		return len(r.b) >= 16 && math.IsNaN(math.Float64frombits(order.Uint64(r.b))) && math.IsNaN(math.Float64frombits(order.Uint64(r.b[8:])))
	}
	return order.Uint32(r.b) == 0
}

var geoJSONTypes = [...]string{1: "Point", 2: "LineString", 3: "Polygon", 4: "MultiPoint", 5: "MultiLineString", 6: "MultiPolygon", 7: "GeometryCollection"}

func (r *wkbReader) header() (order binary.ByteOrder, kind uint32, dims int, err error) {
	if len(r.b) < 5 {
		return nil, 0, 0, errWKB
	}
	r.hasZ = false
	order = binary.BigEndian
	if r.b[0] == 1 {
		order = binary.LittleEndian
	}
	code := order.Uint32(r.b[1:5])
	r.b = r.b[5:]
	dims = 2
	// Extended WKB flags Z (0x80000000), M (0x40000000) and SRID (0x20000000) in the high bits;
	// ISO WKB adds 1000 (Z), 2000 (M) or 3000 (ZM) to the type.
	if code&0x20000000 != 0 {
		if len(r.b) < 4 {
			return nil, 0, 0, errWKB
		}
		r.b = r.b[4:]
	}
	if code&0x80000000 != 0 {
		dims++
		r.hasZ = true
	}
	if code&0x40000000 != 0 {
		dims++
	}
	code &= 0x0fffffff
	switch code / 1000 {
	case 1:
		dims++
		r.hasZ = true
	case 2:
		dims++
	case 3:
		dims += 2
		r.hasZ = true
	}
	return order, code % 1000, dims, nil
}

// geometry appends one geometry, header included.
func (r *wkbReader) geometry(dst []byte, depth int) ([]byte, error) {
	order, kind, dims, err := r.header()
	if err != nil {
		return dst, err
	}
	if kind == 0 || kind >= uint32(len(geoJSONTypes)) || depth > 32 {
		return dst, errors.New("features: geometry type has no GeoJSON form")
	}
	dst = append(dst, `{"type":"`...)
	dst = append(dst, geoJSONTypes[kind]...)
	if kind == 7 {
		dst = append(dst, `","geometries":[`...)
		n, err := r.count(order)
		if err != nil {
			return dst, err
		}
		for i := 0; i < n; i++ {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = r.geometry(dst, depth+1); err != nil {
				return dst, err
			}
		}
		return append(dst, "]}"...), nil
	}
	dst = append(dst, `","coordinates":`...)
	if dst, err = r.coordinates(dst, order, kind, dims); err != nil {
		return dst, err
	}
	return append(dst, '}'), nil
}

// coordinates appends the coordinate array of a non-collection geometry whose header is read.
func (r *wkbReader) coordinates(dst []byte, order binary.ByteOrder, kind uint32, dims int) ([]byte, error) {
	var err error
	switch kind {
	case 1:
		return r.point(dst, order, dims)
	case 2:
		return r.points(dst, order, dims)
	case 3:
		n, err := r.count(order)
		if err != nil {
			return dst, err
		}
		dst = append(dst, '[')
		for i := 0; i < n; i++ {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = r.points(dst, order, dims); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	}
	// Multi*: each member is a whole geometry with its own header and byte order.
	n, err := r.count(order)
	if err != nil {
		return dst, err
	}
	dst = append(dst, '[')
	for i := 0; i < n; i++ {
		if i > 0 {
			dst = append(dst, ',')
		}
		o, k, d, err := r.header()
		if err != nil {
			return dst, err
		}
		if k != kind-3 {
			return dst, errWKB
		}
		if dst, err = r.coordinates(dst, o, k, d); err != nil {
			return dst, err
		}
	}
	return append(dst, ']'), err
}

func (r *wkbReader) count(order binary.ByteOrder) (int, error) {
	if len(r.b) < 4 {
		return 0, errWKB
	}
	n := int(order.Uint32(r.b))
	r.b = r.b[4:]
	if n > len(r.b) {
		return 0, errWKB
	}
	return n, nil
}

func (r *wkbReader) points(dst []byte, order binary.ByteOrder, dims int) ([]byte, error) {
	n, err := r.count(order)
	if err != nil {
		return dst, err
	}
	dst = append(dst, '[')
	for i := 0; i < n; i++ {
		if i > 0 {
			dst = append(dst, ',')
		}
		if dst, err = r.point(dst, order, dims); err != nil {
			return dst, err
		}
	}
	return append(dst, ']'), nil
}

// point appends one position: x, y and z (a measure is dropped: GeoJSON has no place for it).
func (r *wkbReader) point(dst []byte, order binary.ByteOrder, dims int) ([]byte, error) {
	if len(r.b) < 8*dims {
		return dst, errWKB
	}
	x := math.Float64frombits(order.Uint64(r.b))
	y := math.Float64frombits(order.Uint64(r.b[8:]))
	if r.swap {
		x, y = y, x
	}
	dst = append(dst, '[')
	dst = appendCoord(dst, x)
	dst = append(dst, ',')
	dst = appendCoord(dst, y)
	switch {
	case r.hasZ:
		z := math.Float64frombits(order.Uint64(r.b[16:]))
		if !math.IsNaN(z) {
			dst = append(dst, ',')
			dst = appendCoord(dst, z)
		} else if r.forceZ {
			dst = append(dst, ",0"...)
		}
	case r.forceZ:
		dst = append(dst, ",0"...)
	}
	r.b = r.b[8*dims:]
	return append(dst, ']'), nil
}

func appendCoord(dst []byte, v float64) []byte {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return append(dst, "null"...)
	}
	return strconv.AppendFloat(dst, v, 'f', -1, 64)
}

// appendString appends s as a JSON string.
func appendString(dst []byte, s []byte) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, `\u00`...)
				dst = append(dst, hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			if r == utf8.RuneError {
				dst = append(dst, `\ufffd`...)
			} else {
				dst = append(dst, `\u202`...)
				dst = append(dst, hex[r&0xf])
			}
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

const hex = "0123456789abcdef"

// postgresEpoch is where PostgreSQL's binary dates and timestamps count from.
var postgresEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// appendValue appends one column value received in PostgreSQL's binary format as JSON; a value in
// text format (simple protocol) is handled too.
func appendValue(dst []byte, k kind, binaryFormat bool, v []byte) []byte {
	if v == nil {
		return append(dst, "null"...)
	}
	if !binaryFormat {
		switch k {
		case kindInt, kindNumeric, kindFloat:
			if _, err := strconv.ParseFloat(string(v), 64); err != nil {
				return append(dst, "null"...) // NaN and infinities have no JSON number
			}
			return append(dst, v...)
		case kindBool:
			return strconv.AppendBool(dst, len(v) > 0 && v[0] == 't')
		case kindJSON:
			return append(dst, v...)
		}
		return appendString(dst, v)
	}
	switch k {
	case kindInt:
		switch len(v) {
		case 2:
			return strconv.AppendInt(dst, int64(int16(binary.BigEndian.Uint16(v))), 10)
		case 4:
			return strconv.AppendInt(dst, int64(int32(binary.BigEndian.Uint32(v))), 10)
		case 8:
			return strconv.AppendInt(dst, int64(binary.BigEndian.Uint64(v)), 10)
		}
	case kindFloat:
		switch len(v) {
		case 4:
			return appendCoord(dst, float64(math.Float32frombits(binary.BigEndian.Uint32(v))))
		case 8:
			return appendCoord(dst, math.Float64frombits(binary.BigEndian.Uint64(v)))
		}
	case kindBool:
		return strconv.AppendBool(dst, len(v) == 1 && v[0] == 1)
	case kindDate:
		if len(v) == 4 {
			days := int32(binary.BigEndian.Uint32(v))
			if days == math.MaxInt32 || days == math.MinInt32 {
				return appendString(dst, []byte(map[bool]string{true: "infinity", false: "-infinity"}[days > 0]))
			}
			dst = append(dst, '"')
			dst = postgresEpoch.AddDate(0, 0, int(days)).AppendFormat(dst, time.DateOnly)
			return append(dst, '"')
		}
	case kindTimestamp, kindTimestampTZ:
		if len(v) == 8 {
			us := int64(binary.BigEndian.Uint64(v))
			if us == math.MaxInt64 || us == math.MinInt64 {
				return appendString(dst, []byte(map[bool]string{true: "infinity", false: "-infinity"}[us > 0]))
			}
			layout := "2006-01-02T15:04:05.999999Z07:00"
			if k == kindTimestamp {
				layout = "2006-01-02T15:04:05.999999"
			}
			dst = append(dst, '"')
			dst = postgresEpoch.Add(time.Duration(us)*time.Microsecond).AppendFormat(dst, layout)
			return append(dst, '"')
		}
	case kindNumeric: // selected as text; NaN has no JSON number
		if _, err := strconv.ParseFloat(string(v), 64); err != nil {
			return append(dst, "null"...)
		}
		return append(dst, v...)
	case kindJSON:
		return append(dst, v...) // selected as text, already valid JSON
	default:
		return appendString(dst, v)
	}
	return append(dst, "null"...)
}

// AppendJSONText appends as JSON a value PostgreSQL sent in text format, by the type name of its
// column (format_type's words: "integer", "numeric", "boolean", "json" ...): numbers keep every
// digit, other scalars are strings.
func AppendJSONText(dst []byte, typeName string, v []byte) []byte {
	return appendValue(dst, kindOf(typeName), false, v)
}

// AppendGeoJSON appends the GeoJSON geometry of (extended) WKB.
func AppendGeoJSON(dst, wkb []byte) ([]byte, error) { return appendGeometry(dst, wkb, false, false) }
