package cql2

import (
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// A hand-written JSON reader: it keeps the byte offset of every value, so errors can point
// into the client's document, and it bounds nesting before anything recurses far.

type jkind uint8

const (
	jNull jkind = iota
	jBool
	jNum
	jStr
	jArr
	jObj
)

var jkindNames = [...]string{"null", "a boolean", "a number", "a string", "an array", "an object"}

type jval struct {
	kind jkind
	pos  int
	s    string // string value, or the text of a number
	b    bool
	arr  []*jval
	keys []string // object members, in document order
	vals []*jval
}

func (v *jval) get(key string) *jval {
	for i, k := range v.keys {
		if k == key {
			return v.vals[i]
		}
	}
	return nil
}

type jsonReader struct {
	src   string
	i     int
	depth int
}

// ParseJSON parses a cql2-json filter.
func ParseJSON(src []byte) (e Expr, err error) {
	defer recoverError(&err)
	s := string(src)
	checkInput(s)
	r := &jsonReader{src: s}
	r.ws()
	if r.i == len(s) {
		fail(0, "filter is empty")
	}
	v := r.value()
	r.ws()
	if r.i != len(s) {
		fail(r.i, "unexpected data after the JSON value")
	}
	e = (&jsonConv{}).expr(v)
	if !isPredicate(e) {
		fail(v.pos, "filter must be a predicate (a comparison, a function or an and/or/not), not "+describe(e))
	}
	checkDepth(e, 1)
	return e, nil
}

func (r *jsonReader) ws() {
	for r.i < len(r.src) {
		switch r.src[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

func (r *jsonReader) value() *jval {
	r.ws()
	if r.i >= len(r.src) {
		fail(r.i, "unexpected end of JSON")
	}
	pos := r.i
	switch c := r.src[r.i]; {
	case c == '{':
		r.nest()
		r.i++
		v := &jval{kind: jObj, pos: pos}
		r.ws()
		if r.i < len(r.src) && r.src[r.i] == '}' {
			r.i++
			r.depth--
			return v
		}
		for {
			r.ws()
			if r.i >= len(r.src) || r.src[r.i] != '"' {
				fail(r.i, "expected a quoted member name in the JSON object")
			}
			kpos := r.i
			k := r.str()
			if v.get(k) != nil {
				fail(kpos, "duplicate member "+strconv.Quote(k))
			}
			r.ws()
			if r.i >= len(r.src) || r.src[r.i] != ':' {
				fail(r.i, "expected ':' after a JSON member name")
			}
			r.i++
			v.keys = append(v.keys, k)
			v.vals = append(v.vals, r.value())
			r.ws()
			if r.i < len(r.src) && r.src[r.i] == ',' {
				r.i++
				continue
			}
			if r.i < len(r.src) && r.src[r.i] == '}' {
				r.i++
				r.depth--
				return v
			}
			fail(r.i, "expected ',' or '}' in the JSON object")
		}
	case c == '[':
		r.nest()
		r.i++
		v := &jval{kind: jArr, pos: pos}
		r.ws()
		if r.i < len(r.src) && r.src[r.i] == ']' {
			r.i++
			r.depth--
			return v
		}
		for {
			v.arr = append(v.arr, r.value())
			r.ws()
			if r.i < len(r.src) && r.src[r.i] == ',' {
				r.i++
				continue
			}
			if r.i < len(r.src) && r.src[r.i] == ']' {
				r.i++
				r.depth--
				return v
			}
			fail(r.i, "expected ',' or ']' in the JSON array")
		}
	case c == '"':
		return &jval{kind: jStr, pos: pos, s: r.str()}
	case c == '-' || c >= '0' && c <= '9':
		return &jval{kind: jNum, pos: pos, s: r.num()}
	case strings.HasPrefix(r.src[r.i:], "true"):
		r.i += 4
		return &jval{kind: jBool, pos: pos, b: true}
	case strings.HasPrefix(r.src[r.i:], "false"):
		r.i += 5
		return &jval{kind: jBool, pos: pos}
	case strings.HasPrefix(r.src[r.i:], "null"):
		r.i += 4
		return &jval{kind: jNull, pos: pos}
	}
	fail(pos, "invalid JSON value")
	return nil
}

// nest bounds JSON nesting: an expression level takes two (object and args array), a
// MultiPolygon four more.
func (r *jsonReader) nest() {
	r.depth++
	if r.depth > 2*MaxDepth+8 {
		fail(r.i, "filter is nested too deeply (more than "+itoa(MaxDepth)+" levels)")
	}
}

func (r *jsonReader) num() string {
	start := r.i
	s := r.src
	if s[r.i] == '-' {
		r.i++
	}
	digits := func() int {
		n := 0
		for r.i < len(s) && s[r.i] >= '0' && s[r.i] <= '9' {
			r.i++
			n++
		}
		return n
	}
	if r.i < len(s) && s[r.i] == '0' {
		r.i++
	} else if digits() == 0 {
		fail(start, "invalid JSON number")
	}
	if r.i < len(s) && s[r.i] == '.' {
		r.i++
		if digits() == 0 {
			fail(start, "invalid JSON number")
		}
	}
	if r.i < len(s) && (s[r.i] == 'e' || s[r.i] == 'E') {
		r.i++
		if r.i < len(s) && (s[r.i] == '+' || s[r.i] == '-') {
			r.i++
		}
		if digits() == 0 {
			fail(start, "invalid JSON number")
		}
	}
	return s[start:r.i]
}

func (r *jsonReader) str() string {
	start := r.i
	r.i++
	s := r.src
	plain := r.i
	for r.i < len(s) {
		c := s[r.i]
		if c == '"' {
			r.i++
			return s[plain : r.i-1]
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			fail(r.i, "control character in a JSON string")
		}
		r.i++
	}
	// Slow path: escapes.
	b := []byte(s[plain:r.i])
	for r.i < len(s) {
		c := s[r.i]
		switch {
		case c == '"':
			r.i++
			return string(b)
		case c < 0x20:
			fail(r.i, "control character in a JSON string")
		case c != '\\':
			b = append(b, c)
			r.i++
			continue
		}
		epos := r.i
		r.i++
		if r.i >= len(s) {
			break
		}
		e := s[r.i]
		r.i++
		switch e {
		case '"', '\\', '/':
			b = append(b, e)
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			ru := r.hex4(epos)
			if utf16.IsSurrogate(ru) {
				if strings.HasPrefix(s[r.i:], "\\u") {
					r.i += 2
					ru = utf16.DecodeRune(ru, r.hex4(epos))
				} else {
					ru = utf8.RuneError
				}
			}
			if ru == 0 {
				fail(epos, "a string cannot contain the NUL character")
			}
			if ru == utf8.RuneError {
				fail(epos, "invalid \\u escape (unpaired surrogate)")
			}
			b = utf8.AppendRune(b, ru)
		default:
			fail(epos, "invalid escape in a JSON string")
		}
	}
	fail(start, "JSON string is not terminated")
	return ""
}

func (r *jsonReader) hex4(epos int) rune {
	if r.i+4 > len(r.src) {
		fail(epos, "invalid \\u escape")
	}
	n, err := strconv.ParseUint(r.src[r.i:r.i+4], 16, 32)
	if err != nil {
		fail(epos, "invalid \\u escape")
	}
	r.i += 4
	return rune(n)
}

// jsonConv turns JSON values into the syntax tree.
type jsonConv struct{}

func (c *jsonConv) expr(v *jval) Expr {
	switch v.kind {
	case jStr:
		return &StringLit{Pos: v.pos, Val: v.s}
	case jNum:
		return parseNumber(v.s, v.pos)
	case jBool:
		return &BoolLit{Pos: v.pos, Val: v.b}
	case jNull:
		fail(v.pos, "null is not a CQL2 value (test for it with isNull)")
	case jArr:
		a := &ArrayLit{Pos: v.pos}
		for _, it := range v.arr {
			a.Items = append(a.Items, c.expr(it))
		}
		return a
	}
	switch {
	case v.get("op") != nil:
		return c.op(v)
	case v.get("property") != nil:
		c.only(v, "property")
		p := v.get("property")
		if p.kind != jStr || p.s == "" {
			fail(p.pos, "\"property\" must be a non-empty string")
		}
		return &PropertyRef{Pos: v.pos, Name: p.s}
	case v.get("date") != nil:
		c.only(v, "date")
		d := c.str(v.get("date"), "date")
		t := parseInstant(d.s, d.pos, 'd')
		t.Pos = v.pos
		return t
	case v.get("timestamp") != nil:
		c.only(v, "timestamp")
		d := c.str(v.get("timestamp"), "timestamp")
		t := parseInstant(d.s, d.pos, 't')
		t.Pos = v.pos
		return t
	case v.get("interval") != nil:
		c.only(v, "interval")
		a := v.get("interval")
		if a.kind != jArr || len(a.arr) != 2 {
			fail(a.pos, "\"interval\" must be an array of two instants")
		}
		return &IntervalLit{Pos: v.pos, Start: c.bound(a.arr[0]), End: c.bound(a.arr[1])}
	case v.get("type") != nil:
		g := c.geometry(v, new(int))
		g.Pos = v.pos
		return g
	case v.get("bbox") != nil:
		c.only(v, "bbox")
		a := v.get("bbox")
		if a.kind != jArr || len(a.arr) != 4 && len(a.arr) != 6 {
			fail(a.pos, "\"bbox\" must be an array of 4 numbers (minx, miny, maxx, maxy) or 6 (with minz and maxz)")
		}
		b := &BBoxLit{Pos: v.pos, Vals: make([]float64, len(a.arr))}
		for i, n := range a.arr {
			b.Vals[i] = c.number(n)
		}
		return b
	}
	fail(v.pos, "unknown JSON object: expected one with \"op\", \"property\", \"date\", \"timestamp\", \"interval\", \"bbox\" or a GeoJSON \"type\"")
	return nil
}

func (c *jsonConv) only(v *jval, key string) {
	for i, k := range v.keys {
		if k != key {
			fail(v.vals[i].pos, "unexpected member "+strconv.Quote(k)+" beside "+strconv.Quote(key))
		}
	}
}

func (c *jsonConv) str(v *jval, what string) *jval {
	if v.kind != jStr {
		fail(v.pos, strconv.Quote(what)+" must be a string, not "+jkindNames[v.kind])
	}
	return v
}

func (c *jsonConv) number(v *jval) float64 {
	if v.kind != jNum {
		fail(v.pos, "expected a number, found "+jkindNames[v.kind])
	}
	return parseNumber(v.s, v.pos).Val
}

func (c *jsonConv) bound(v *jval) Expr {
	if v.kind == jStr {
		if v.s == ".." {
			return nil
		}
		return parseInstant(v.s, v.pos, 0)
	}
	e := c.expr(v)
	switch e.(type) {
	case *PropertyRef, *Func, *TimeLit:
		return e
	}
	fail(v.pos, "an interval end must be \"..\", a date or timestamp string, a property or a function, not "+describe(e))
	return nil
}

var jsonCmp = map[string]CmpOp{"=": Eq, "<>": Ne, "<": Lt, ">": Gt, "<=": Le, ">=": Ge}
var jsonArith = map[string]ArithOp{"+": Add, "-": Sub, "*": Mul, "/": Div, "%": Mod, "div": IntDiv, "^": Pow}

func (c *jsonConv) op(v *jval) Expr {
	opv := v.get("op")
	if opv.kind != jStr {
		fail(opv.pos, "\"op\" must be a string")
	}
	argsv := v.get("args")
	for i, k := range v.keys {
		if k != "op" && k != "args" {
			fail(v.vals[i].pos, "unexpected member "+strconv.Quote(k)+" in an operation (only \"op\" and \"args\")")
		}
	}
	if argsv == nil {
		fail(v.pos, "operation "+strconv.Quote(opv.s)+" has no \"args\"")
	}
	if argsv.kind != jArr {
		fail(argsv.pos, "\"args\" must be an array")
	}
	op := opv.s
	name := strings.ToLower(op)
	n := len(argsv.arr)
	nargs := func(want int) {
		if n != want {
			fail(argsv.pos, strconv.Quote(op)+" takes "+itoa(want)+" argument(s), not "+itoa(n))
		}
	}
	arg := func(i int) Expr { return c.expr(argsv.arr[i]) }
	pred := func(i int) Expr {
		e := arg(i)
		if !isPredicate(e) {
			fail(argsv.arr[i].pos, strconv.Quote(op)+" needs predicates, not "+describe(e))
		}
		return e
	}
	scalar := func(i int) Expr {
		e := arg(i)
		if !isScalar(e) {
			fail(argsv.arr[i].pos, "the arguments of "+strconv.Quote(op)+" must be values, not a predicate")
		}
		return e
	}
	pos := v.pos
	switch name {
	case "and", "or":
		if n < 2 {
			fail(argsv.pos, strconv.Quote(op)+" takes at least 2 arguments")
		}
		args := make([]Expr, n)
		for i := range args {
			args[i] = pred(i)
		}
		if name == "and" {
			return &And{Pos: pos, Args: args}
		}
		return &Or{Pos: pos, Args: args}
	case "not":
		nargs(1)
		return &Not{Pos: pos, Arg: pred(0)}
	case "like":
		nargs(2)
		return &Like{Pos: pos, Arg: scalar(0), Pattern: scalar(1)}
	case "between":
		nargs(3)
		return &Between{Pos: pos, Arg: scalar(0), Low: scalar(1), High: scalar(2)}
	case "in":
		nargs(2)
		l := argsv.arr[1]
		if l.kind != jArr || len(l.arr) == 0 {
			fail(l.pos, "the second argument of \"in\" must be a non-empty array")
		}
		in := &In{Pos: pos, Arg: scalar(0), List: make([]Expr, len(l.arr))}
		for i, it := range l.arr {
			in.List[i] = c.expr(it)
			if !isScalar(in.List[i]) {
				fail(it.pos, "the items of \"in\" must be values, not predicates")
			}
		}
		return in
	case "isnull":
		nargs(1)
		return &IsNull{Pos: pos, Arg: scalar(0)}
	}
	if cmp, ok := jsonCmp[op]; ok {
		nargs(2)
		return &Compare{Pos: pos, Op: cmp, Left: scalar(0), Right: scalar(1)}
	}
	if ar, ok := jsonArith[name]; ok {
		nargs(2)
		return &Arith{Pos: pos, Op: ar, Left: scalar(0), Right: scalar(1)}
	}
	f := &Func{Pos: pos, Name: op}
	if info, ok := stdFuncs[name]; ok {
		f.Name = info.name
		nargs(info.nargs)
	}
	for i := 0; i < n; i++ {
		f.Args = append(f.Args, arg(i))
	}
	return f
}

var geoJSONKinds = map[string]GeomKind{"Point": Point, "LineString": LineString, "Polygon": Polygon,
	"MultiPoint": MultiPoint, "MultiLineString": MultiLineString, "MultiPolygon": MultiPolygon,
	"GeometryCollection": GeometryCollection}

// geometry reads a GeoJSON geometry object. Members other than type, coordinates and
// geometries (bbox, foreign members) are ignored, as GeoJSON allows them.
func (c *jsonConv) geometry(v *jval, dim *int) *GeomLit {
	t := v.get("type")
	if t == nil || t.kind != jStr || geoJSONKinds[t.s] == 0 {
		pos := v.pos
		if t != nil {
			pos = t.pos
		}
		fail(pos, "\"type\" must be a GeoJSON geometry type (Point, LineString, Polygon, MultiPoint, MultiLineString, MultiPolygon or GeometryCollection)")
	}
	g := &GeomLit{Kind: geoJSONKinds[t.s]}
	if g.Kind == GeometryCollection {
		ms := v.get("geometries")
		if ms == nil || ms.kind != jArr || len(ms.arr) == 0 {
			fail(v.pos, "a GeometryCollection needs a non-empty \"geometries\" array")
		}
		for _, m := range ms.arr {
			if m.kind != jObj {
				fail(m.pos, "a member of \"geometries\" must be a GeoJSON geometry")
			}
			part := c.geometry(m, dim)
			part.Z = false // only the outermost literal carries Z, as in the text parser
			g.Parts = append(g.Parts, *part)
		}
	} else {
		co := v.get("coordinates")
		if co == nil {
			fail(v.pos, "a GeoJSON "+t.s+" needs \"coordinates\"")
		}
		switch g.Kind {
		case Point:
			g.Coords = c.position(nil, co, dim)
		case LineString:
			g.Coords = c.positions(co, dim, 2, false)
		case Polygon:
			g.Parts = c.rings(co, dim)
		case MultiPoint:
			for _, p := range c.list(co, "positions") {
				g.Parts = append(g.Parts, GeomLit{Kind: Point, Coords: c.position(nil, p, dim)})
			}
		case MultiLineString:
			for _, l := range c.list(co, "line strings") {
				g.Parts = append(g.Parts, GeomLit{Kind: LineString, Coords: c.positions(l, dim, 2, false)})
			}
		case MultiPolygon:
			for _, p := range c.list(co, "polygons") {
				g.Parts = append(g.Parts, GeomLit{Kind: Polygon, Parts: c.rings(p, dim)})
			}
		}
	}
	g.Z = *dim == 3
	return g
}

func (c *jsonConv) list(v *jval, what string) []*jval {
	if v.kind != jArr || len(v.arr) == 0 {
		fail(v.pos, "expected a non-empty array of "+what)
	}
	return v.arr
}

func (c *jsonConv) rings(v *jval, dim *int) []GeomLit {
	var rs []GeomLit
	for _, r := range c.list(v, "linear rings") {
		rs = append(rs, GeomLit{Kind: LineString, Coords: c.positions(r, dim, 4, true)})
	}
	return rs
}

func (c *jsonConv) positions(v *jval, dim *int, min int, ring bool) []float64 {
	var out []float64
	for _, p := range c.list(v, "positions") {
		out = c.position(out, p, dim)
	}
	checkPositions(out, *dim, v.pos, min, ring)
	return out
}

func (c *jsonConv) position(out []float64, v *jval, dim *int) []float64 {
	if v.kind != jArr || len(v.arr) < 2 || len(v.arr) > 3 {
		fail(v.pos, "a position must be an array of 2 or 3 numbers")
	}
	if *dim == 0 {
		*dim = len(v.arr)
	} else if *dim != len(v.arr) {
		fail(v.pos, "cannot mix 2D and 3D coordinates in one geometry")
	}
	for _, n := range v.arr {
		out = append(out, c.number(n))
	}
	return out
}
