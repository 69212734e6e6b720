package cql2

import (
	"strings"
	"unicode/utf8"
)

// Binding powers of the text grammar, loosest first. NOT sits between AND and the
// comparisons, so `NOT a = 1 AND b = 2` is `(NOT (a = 1)) AND (b = 2)` as in the standard.
const (
	bpOr = iota + 1
	bpAnd
	bpNot
	bpCmp
	bpAdd
	bpMul
	bpPow
	bpUnary
)

type textParser struct {
	src   string
	lx    lexer
	tok   token
	depth int
}

// ParseText parses a cql2-text filter.
func ParseText(src string) (e Expr, err error) {
	defer recoverError(&err)
	checkInput(src)
	p := &textParser{src: src, lx: lexer{src: src}}
	p.advance()
	if p.tok.kind == tEOF {
		fail(0, "filter is empty")
	}
	e = p.expr(0)
	if p.tok.kind != tEOF {
		p.unexpected("AND, OR or the end of the filter")
	}
	if !isPredicate(e) {
		fail(e.Position(), "filter must be a predicate (a comparison, a function or a combination with AND/OR/NOT), not "+describe(e))
	}
	checkDepth(e, 1)
	return e, nil
}

// checkInput applies the checks both encodings share before parsing: size, valid UTF-8 (so
// PostgreSQL never sees a bad text parameter) and no NUL, which PostgreSQL text cannot hold.
func checkInput(src string) {
	if len(src) > MaxLength {
		fail(0, "filter is longer than "+itoa(MaxLength)+" bytes")
	}
	for i := 0; i < len(src); {
		c := src[i]
		if c < utf8.RuneSelf {
			if c == 0 {
				fail(i, "filter contains a NUL character")
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(src[i:])
		if r == utf8.RuneError && n == 1 {
			fail(i, "filter is not valid UTF-8")
		}
		i += n
	}
}

func (p *textParser) advance() { p.tok = p.lx.next() }

func (p *textParser) peek() token {
	save := p.lx.pos
	t := p.lx.next()
	p.lx.pos = save
	return t
}

func (p *textParser) text(t token) string { return p.src[t.pos:t.end] }

func (p *textParser) expect(k tokKind, what string) int {
	if p.tok.kind != k {
		p.unexpected(what)
	}
	pos := p.tok.pos
	p.advance()
	return pos
}

func (p *textParser) unexpected(want string) {
	t := p.tok
	var found string
	switch t.kind {
	case tEOF:
		found = "end of filter"
	case tIdent, tNumber:
		found = quoteForMsg(p.text(t))
		found = "\"" + found[1:len(found)-1] + "\""
	case tString:
		found = "string " + quoteForMsg(unquote(p.src, t))
	case tQIdent:
		found = p.text(t)
	default:
		found = tokNames[t.kind]
	}
	fail(t.pos, "expected "+want+", found "+found)
}

func (p *textParser) enter() {
	p.depth++
	if p.depth > MaxDepth {
		fail(p.tok.pos, "filter is nested too deeply (more than "+itoa(MaxDepth)+" levels)")
	}
}

// expr parses operators binding at least as tightly as minbp (Pratt parsing).
func (p *textParser) expr(minbp int) Expr {
	p.enter()
	left := p.prefix(minbp)
	var lastAnd *And
	var lastOr *Or
	for {
		t := p.tok
		var kw keyword
		if t.kind == tIdent {
			kw = keywordOf(p.text(t))
		}
		switch {
		case kw == kwOr:
			if minbp > bpOr {
				p.depth--
				return left
			}
			p.advance()
			right := p.expr(bpOr + 1)
			p.needPredicate(left, "OR")
			p.needPredicate(right, "OR")
			if o, ok := left.(*Or); ok && o == lastOr {
				o.Args = append(o.Args, right)
			} else {
				lastOr = &Or{Pos: t.pos, Args: []Expr{left, right}}
				left = lastOr
			}
		case kw == kwAnd:
			if minbp > bpAnd {
				p.depth--
				return left
			}
			p.advance()
			right := p.expr(bpAnd + 1)
			p.needPredicate(left, "AND")
			p.needPredicate(right, "AND")
			if a, ok := left.(*And); ok && a == lastAnd {
				a.Args = append(a.Args, right)
			} else {
				lastAnd = &And{Pos: t.pos, Args: []Expr{left, right}}
				left = lastAnd
			}
		case kw == kwNot || kw == kwLike || kw == kwBetween || kw == kwIn || kw == kwIs ||
			t.kind >= tEq && t.kind <= tGe:
			if minbp > bpCmp {
				p.depth--
				return left
			}
			left = p.comparison(left)
		case t.kind == tPlus || t.kind == tMinus:
			if minbp > bpAdd {
				p.depth--
				return left
			}
			p.advance()
			op := Add
			if t.kind == tMinus {
				op = Sub
			}
			left = p.arith(t.pos, op, left, p.expr(bpAdd+1))
		case t.kind == tStar || t.kind == tSlash || t.kind == tPercent || kw == kwDiv:
			if minbp > bpMul {
				p.depth--
				return left
			}
			p.advance()
			op := Mul
			switch {
			case t.kind == tSlash:
				op = Div
			case t.kind == tPercent:
				op = Mod
			case kw == kwDiv:
				op = IntDiv
			}
			left = p.arith(t.pos, op, left, p.expr(bpMul+1))
		case t.kind == tCaret:
			if minbp > bpPow {
				p.depth--
				return left
			}
			p.advance()
			left = p.arith(t.pos, Pow, left, p.expr(bpPow)) // right-associative
		default:
			p.depth--
			return left
		}
	}
}

func (p *textParser) needPredicate(e Expr, op string) {
	if !isPredicate(e) {
		fail(e.Position(), op+" needs predicates on both sides, not "+describe(e))
	}
}

func (p *textParser) needScalar(e Expr, op string) {
	if !isScalar(e) {
		fail(e.Position(), "the operands of "+op+" must be values, not a predicate (combine predicates with AND/OR)")
	}
}

func (p *textParser) arith(pos int, op ArithOp, l, r Expr) Expr {
	p.needScalar(l, "arithmetic")
	p.needScalar(r, "arithmetic")
	return &Arith{Pos: pos, Op: op, Left: l, Right: r}
}

// comparison parses what follows a value: = <> < > <= >=, [NOT] LIKE, [NOT] BETWEEN,
// [NOT] IN, IS [NOT] NULL.
func (p *textParser) comparison(left Expr) Expr {
	t := p.tok
	if t.kind >= tEq && t.kind <= tGe {
		p.needScalar(left, tokNames[t.kind])
		p.advance()
		right := p.expr(bpCmp + 1)
		p.needScalar(right, tokNames[t.kind])
		return &Compare{Pos: t.pos, Op: CmpOp(t.kind-tEq) + Eq, Left: left, Right: right}
	}
	kw := keywordOf(p.text(t))
	negate := false
	if kw == kwNot {
		p.advance()
		negate = true
		if p.tok.kind == tIdent {
			kw = keywordOf(p.text(p.tok))
		}
		if p.tok.kind != tIdent || kw != kwLike && kw != kwBetween && kw != kwIn {
			p.unexpected("LIKE, BETWEEN or IN after NOT")
		}
	}
	op := p.tok
	opName := strings.ToUpper(p.text(op))
	p.needScalar(left, opName)
	p.advance()
	var e Expr
	switch kw {
	case kwLike:
		pat := p.expr(bpCmp + 1)
		p.needScalar(pat, "LIKE")
		e = &Like{Pos: op.pos, Arg: left, Pattern: pat}
	case kwBetween:
		lo := p.expr(bpCmp + 1)
		if p.tok.kind != tIdent || keywordOf(p.text(p.tok)) != kwAnd {
			p.unexpected("AND of BETWEEN")
		}
		p.advance()
		hi := p.expr(bpCmp + 1)
		p.needScalar(lo, "BETWEEN")
		p.needScalar(hi, "BETWEEN")
		e = &Between{Pos: op.pos, Arg: left, Low: lo, High: hi}
	case kwIn:
		p.expect(tLParen, "'(' opening the IN list")
		in := &In{Pos: op.pos, Arg: left}
		for {
			item := p.expr(bpCmp + 1)
			p.needScalar(item, "IN")
			in.List = append(in.List, item)
			if p.tok.kind == tComma {
				p.advance()
				continue
			}
			p.expect(tRParen, "',' or ')' in the IN list")
			break
		}
		e = in
	case kwIs:
		if p.tok.kind == tIdent && keywordOf(p.text(p.tok)) == kwNot {
			negate = true
			p.advance()
		}
		if p.tok.kind != tIdent || keywordOf(p.text(p.tok)) != kwNull {
			p.unexpected("NULL or NOT NULL after IS")
		}
		p.advance()
		e = &IsNull{Pos: op.pos, Arg: left}
	}
	if negate {
		e = &Not{Pos: t.pos, Arg: e}
	}
	return e
}

// prefix parses an operand: a literal, a property, a function, a parenthesised expression,
// NOT or unary minus.
func (p *textParser) prefix(minbp int) Expr {
	t := p.tok
	switch t.kind {
	case tLParen:
		p.advance()
		e := p.expr(0)
		p.expect(tRParen, "')'")
		return e
	case tNumber:
		p.advance()
		return parseNumber(p.text(t), t.pos)
	case tString:
		p.advance()
		return &StringLit{Pos: t.pos, Val: unquote(p.src, t)}
	case tMinus, tPlus:
		p.advance()
		arg := p.expr(bpUnary)
		if n, ok := arg.(*NumberLit); ok {
			if t.kind == tMinus {
				n.Val, n.I = -n.Val, -n.I
			}
			n.Pos = t.pos
			return n
		}
		p.needScalar(arg, "unary minus")
		if t.kind == tPlus {
			return arg
		}
		return &Neg{Pos: t.pos, Arg: arg}
	case tQIdent:
		p.advance()
		name := unquote(p.src, t)
		if name == "" {
			fail(t.pos, "empty property name")
		}
		return &PropertyRef{Pos: t.pos, Name: name}
	case tIdent:
		name := p.text(t)
		switch keywordOf(name) {
		case kwTrue, kwFalse:
			p.advance()
			return &BoolLit{Pos: t.pos, Val: keywordOf(name) == kwTrue}
		case kwNot:
			if minbp > bpNot {
				fail(t.pos, "NOT can only negate a predicate; put the predicate in parentheses")
			}
			p.advance()
			arg := p.expr(bpNot)
			p.needPredicate(arg, "NOT")
			return &Not{Pos: t.pos, Arg: arg}
		case kwNone:
		case kwNull:
			fail(t.pos, "NULL can only be tested with IS NULL / IS NOT NULL")
		default:
			p.unexpected("a value, a property or a function")
		}
		next := p.peek()
		if next.kind == tLParen {
			return p.call(t)
		}
		if k := geomKindOf(name); k != 0 && next.kind == tIdent {
			if s := p.text(next); s == "Z" || s == "z" || strings.EqualFold(s, "EMPTY") {
				return p.geometry()
			}
		}
		p.advance()
		return &PropertyRef{Pos: t.pos, Name: name}
	}
	p.unexpected("a value, a property or a function")
	return nil
}

// call parses name(...), the current token being the name and the next one '('.
func (p *textParser) call(name token) Expr {
	s := p.text(name)
	switch {
	case strings.EqualFold(s, "DATE") || strings.EqualFold(s, "TIMESTAMP"):
		p.advance()
		p.advance()
		if p.tok.kind != tString {
			p.unexpected("a quoted " + strings.ToLower(s) + " inside " + strings.ToUpper(s) + "(...)")
		}
		str := p.tok
		p.advance()
		p.expect(tRParen, "')'")
		want := byte('t')
		if len(s) == 4 {
			want = 'd'
		}
		lit := parseInstant(unquote(p.src, str), str.pos, want)
		lit.Pos = name.pos
		return lit
	case strings.EqualFold(s, "INTERVAL"):
		p.advance()
		p.advance()
		iv := &IntervalLit{Pos: name.pos}
		iv.Start = p.intervalBound()
		p.expect(tComma, "',' between the two ends of INTERVAL")
		iv.End = p.intervalBound()
		p.expect(tRParen, "')' closing INTERVAL")
		return iv
	case strings.EqualFold(s, "BBOX"):
		p.advance()
		p.advance()
		b := &BBoxLit{Pos: name.pos, Vals: make([]float64, 0, 4)}
		for {
			b.Vals = append(b.Vals, p.signedNumber())
			if p.tok.kind != tComma {
				break
			}
			p.advance()
		}
		p.expect(tRParen, "',' or ')' in BBOX")
		if len(b.Vals) != 4 && len(b.Vals) != 6 {
			fail(name.pos, "BBOX takes 4 numbers (minx, miny, maxx, maxy) or 6 (with minz and maxz), not "+itoa(len(b.Vals)))
		}
		return b
	}
	if geomKindOf(s) != 0 {
		return p.geometry()
	}
	f := &Func{Pos: name.pos, Name: s}
	info, std := lookupFunc(s)
	if std {
		f.Name = info.name
	}
	p.advance()
	p.advance()
	array := std && f.Name[0] == 'a' // a_* take arrays written as (x, y)
	if p.tok.kind != tRParen {
		for {
			var a Expr
			if array && p.tok.kind == tLParen {
				a = p.array()
			} else {
				a = p.expr(0)
			}
			f.Args = append(f.Args, a)
			if p.tok.kind != tComma {
				break
			}
			p.advance()
		}
	}
	p.expect(tRParen, "',' or ')' in the arguments of "+s)
	if std && len(f.Args) != info.nargs {
		fail(name.pos, strings.ToUpper(s)+" takes "+itoa(info.nargs)+" argument(s), not "+itoa(len(f.Args)))
	}
	return f
}

func (p *textParser) array() Expr {
	p.enter()
	a := &ArrayLit{Pos: p.tok.pos}
	p.advance()
	for p.tok.kind != tRParen {
		if p.tok.kind == tLParen {
			a.Items = append(a.Items, p.array())
		} else {
			a.Items = append(a.Items, p.expr(bpCmp+1))
		}
		if p.tok.kind != tComma {
			break
		}
		p.advance()
	}
	p.expect(tRParen, "',' or ')' in the array")
	p.depth--
	return a
}

// intervalBound parses one end of INTERVAL: '..', a date or timestamp string, a property or
// a function.
func (p *textParser) intervalBound() Expr {
	if p.tok.kind == tString {
		t := p.tok
		p.advance()
		s := unquote(p.src, t)
		if s == ".." {
			return nil
		}
		return parseInstant(s, t.pos, 0)
	}
	e := p.expr(bpCmp + 1)
	switch e.(type) {
	case *PropertyRef, *Func, *TimeLit:
		return e
	}
	fail(e.Position(), "an INTERVAL end must be '..', a date or timestamp string, a property or a function, not "+describe(e))
	return nil
}

func (p *textParser) signedNumber() float64 {
	neg := false
	if p.tok.kind == tMinus || p.tok.kind == tPlus {
		neg = p.tok.kind == tMinus
		p.advance()
	}
	if p.tok.kind != tNumber {
		p.unexpected("a number")
	}
	v := parseNumber(p.text(p.tok), p.tok.pos).Val
	p.advance()
	if neg {
		v = -v
	}
	return v
}

// geometry parses a WKT literal starting at its type keyword.
func (p *textParser) geometry() *GeomLit {
	dim := 0
	g := p.geomTagged(&dim)
	g.Z = dim == 3
	return g
}

func (p *textParser) geomTagged(dim *int) *GeomLit {
	p.enter()
	t := p.tok
	kind := geomKindOf(p.text(t))
	if kind == 0 {
		p.unexpected("a WKT geometry (POINT, LINESTRING, POLYGON, MULTIPOINT, MULTILINESTRING, MULTIPOLYGON or GEOMETRYCOLLECTION)")
	}
	p.advance()
	if p.tok.kind == tIdent {
		s := p.text(p.tok)
		switch {
		case s == "Z" || s == "z":
			if *dim == 2 {
				fail(p.tok.pos, "cannot mix 2D and 3D coordinates in one geometry")
			}
			*dim = 3
			p.advance()
		case strings.EqualFold(s, "EMPTY"):
			fail(p.tok.pos, "empty geometries are not supported")
		}
	}
	g := &GeomLit{Pos: t.pos, Kind: kind}
	p.geomBody(g, dim)
	p.depth--
	return g
}

func (p *textParser) geomBody(g *GeomLit, dim *int) {
	start := p.expect(tLParen, "'(' after "+geomWKT[g.Kind])
	switch g.Kind {
	case Point:
		g.Coords = p.position(nil, dim)
		p.expect(tRParen, "')' closing POINT (a point has one position)")
		return
	case LineString:
		g.Coords = p.positions(dim, start, 2, false)
		p.expect(tRParen, "',' or ')'")
		return
	case Polygon:
		g.Parts = p.rings(dim)
	case MultiPoint:
		for {
			var pt GeomLit
			pt.Kind = Point
			if p.tok.kind == tLParen {
				p.advance()
				pt.Coords = p.position(nil, dim)
				p.expect(tRParen, "')'")
			} else {
				pt.Coords = p.position(nil, dim)
			}
			g.Parts = append(g.Parts, pt)
			if p.tok.kind != tComma {
				break
			}
			p.advance()
		}
	case MultiLineString:
		for {
			s := p.expect(tLParen, "'(' opening a line string")
			g.Parts = append(g.Parts, GeomLit{Kind: LineString, Coords: p.positions(dim, s, 2, false)})
			p.expect(tRParen, "',' or ')'")
			if p.tok.kind != tComma {
				break
			}
			p.advance()
		}
	case MultiPolygon:
		for {
			p.expect(tLParen, "'(' opening a polygon")
			g.Parts = append(g.Parts, GeomLit{Kind: Polygon, Parts: p.rings(dim)})
			p.expect(tRParen, "',' or ')'")
			if p.tok.kind != tComma {
				break
			}
			p.advance()
		}
	case GeometryCollection:
		for {
			if p.tok.kind != tIdent {
				p.unexpected("a WKT geometry")
			}
			m := p.geomTagged(dim)
			m.Pos = 0
			g.Parts = append(g.Parts, *m)
			if p.tok.kind != tComma {
				break
			}
			p.advance()
		}
	}
	p.expect(tRParen, "',' or ')' in "+geomWKT[g.Kind])
}

// rings parses the rings of a polygon, after its '('.
func (p *textParser) rings(dim *int) []GeomLit {
	var rs []GeomLit
	for {
		s := p.expect(tLParen, "'(' opening a polygon ring")
		rs = append(rs, GeomLit{Kind: LineString, Coords: p.positions(dim, s, 4, true)})
		p.expect(tRParen, "',' or ')' in a polygon ring")
		if p.tok.kind != tComma {
			return rs
		}
		p.advance()
	}
}

// positions parses a comma-separated list of positions, checking the count and (for rings)
// closure here, where the position is known, rather than letting PostGIS fail later.
func (p *textParser) positions(dim *int, start, min int, ring bool) []float64 {
	var c []float64
	for {
		c = p.position(c, dim)
		if p.tok.kind != tComma {
			break
		}
		p.advance()
	}
	checkPositions(c, *dim, start, min, ring)
	return c
}

func (p *textParser) position(c []float64, dim *int) []float64 {
	pos := p.tok.pos
	n := 0
	for n < 3 && (p.tok.kind == tNumber || p.tok.kind == tMinus || p.tok.kind == tPlus) {
		c = append(c, p.signedNumber())
		n++
	}
	if n < 2 {
		p.unexpected("a coordinate (x y or x y z)")
	}
	if *dim == 0 {
		*dim = n
	} else if *dim != n {
		fail(pos, "cannot mix 2D and 3D coordinates in one geometry")
	}
	return c
}

func checkPositions(c []float64, dim, pos, min int, ring bool) {
	if dim == 0 || len(c)/dim < min {
		if ring {
			fail(pos, "a polygon ring needs at least 4 positions")
		}
		fail(pos, "a line string needs at least 2 positions")
	}
	if ring {
		n := len(c)
		for i := 0; i < dim; i++ {
			if c[i] != c[n-dim+i] {
				fail(pos, "a polygon ring must be closed (end where it starts)")
			}
		}
	}
}
