package cql2

import (
	"strconv"
	"strings"

	"meridian/internal/sqlbuild"
)

// Pseudo-types for the values that are not queryable types.
const (
	tInterval Type = 100 + iota
	tArray
)

type translator struct {
	props map[string]Property
	buf   []byte
	b     *sqlbuild.Builder
	fsrid int
	ssrid int
	swap  bool
}

// Render translates an expression into a boolean SQL predicate whose values are parameters of
// b. Every literal becomes a placeholder with an explicit cast, and the only SQL text taken from
// outside this package is Property.SQL. The predicate is self-contained: an OR at its top is
// parenthesised, so callers can AND it with their own conditions.
func Render(b *sqlbuild.Builder, e Expr, o Options) (sql string, err error) {
	defer recoverError(&err)
	if e == nil {
		fail(0, "no filter")
	}
	t := &translator{props: o.Properties, b: b, fsrid: o.FilterSRID, ssrid: o.StorageSRID, swap: o.SwapXY}
	if t.fsrid == 0 {
		t.fsrid = 4326
	}
	if t.ssrid == 0 {
		t.ssrid = t.fsrid
	}
	t.buf = make([]byte, 0, 256)
	t.pred(e)
	return string(t.buf), nil
}

// SQL is Render into a builder of its own: the predicate's placeholders start at $1.
func SQL(e Expr, o Options) (string, []any, error) {
	var b sqlbuild.Builder
	sql, err := Render(&b, e, o)
	return sql, b.Args(), err
}

func (t *translator) w(s string) { t.buf = append(t.buf, s...) }

func (t *translator) param(v any, cast string) {
	t.buf = append(t.buf, t.b.Arg(v)...)
	t.buf = append(t.buf, cast...)
}

// capture runs f and returns what it wrote, removing it from the output, for SQL that has to
// be repeated or reordered (its placeholders stay allocated and may be referenced again).
func (t *translator) capture(f func()) string {
	start := len(t.buf)
	f()
	s := string(t.buf[start:])
	t.buf = t.buf[:start]
	return s
}

func (t *translator) prop(r *PropertyRef) Property {
	p, ok := t.props[r.Name]
	if !ok {
		fail(r.Pos, "unknown property "+strconv.Quote(r.Name))
	}
	if p.Type < String || p.Type > Geometry || p.SQL == "" {
		fail(r.Pos, "property "+strconv.Quote(r.Name)+" cannot be used in filters")
	}
	return p
}

// writeProp writes a property's SQL, in parentheses unless it is a plain (qualified,
// quoted) name, so that an expression like `a || b` keeps its meaning next to operators.
func (t *translator) writeProp(p Property) {
	plain := true
	for i := 0; i < len(p.SQL); i++ {
		c := p.SQL[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '"') {
			plain = false
			break
		}
	}
	if !plain {
		t.w("(")
	}
	t.w(p.SQL)
	if !plain {
		t.w(")")
	}
}

// pred writes e where a boolean is expected.
func (t *translator) pred(e Expr) {
	switch e := e.(type) {
	case *And:
		t.junction(e.Args, " AND ")
	case *Or:
		t.junction(e.Args, " OR ")
	case *Not:
		t.not(e)
	case *Compare:
		t.compare(e)
	case *Like:
		t.like(e, false)
	case *Between:
		t.between(e, false)
	case *In:
		t.in(e, false)
	case *IsNull:
		t.isNull(e, false)
	case *BoolLit:
		t.param(e.Val, "::boolean")
	case *PropertyRef:
		p := t.prop(e)
		if p.Type != Boolean {
			fail(e.Pos, "property "+strconv.Quote(e.Name)+" is "+p.Type.String()+", not Boolean, so it cannot stand alone as a predicate; compare it with something")
		}
		t.writeProp(p)
	case *Func:
		t.funcPred(e)
	default:
		fail(e.Position(), "expected a predicate, found "+t.desc(e))
	}
}

func (t *translator) junction(args []Expr, op string) {
	t.w("(")
	for i, a := range args {
		if i > 0 {
			t.w(op)
		}
		t.pred(a)
	}
	t.w(")")
}

func (t *translator) not(e *Not) {
	switch a := e.Arg.(type) {
	case *Like:
		t.like(a, true)
	case *Between:
		t.between(a, true)
	case *In:
		t.in(a, true)
	case *IsNull:
		t.isNull(a, true)
	case *And, *Or:
		t.w("NOT ")
		t.pred(a)
	default:
		t.w("NOT (")
		t.pred(a)
		t.w(")")
	}
}

// typeOf is the CQL2 type of a value, checked but not written.
func (t *translator) typeOf(e Expr) Type {
	switch e := e.(type) {
	case *PropertyRef:
		return t.prop(e).Type
	case *StringLit:
		return String
	case *NumberLit:
		if e.Int {
			return Integer
		}
		return Number
	case *BoolLit:
		return Boolean
	case *TimeLit:
		if e.Date {
			return Date
		}
		return Timestamp
	case *Arith:
		lt, rt := t.numeric(e.Left), t.numeric(e.Right)
		switch e.Op {
		case Add, Sub, Mul, Mod:
			if lt == Integer && rt == Integer {
				return Integer
			}
			return Number
		case IntDiv:
			return Integer
		}
		return Number
	case *Neg:
		return t.numeric(e.Arg)
	case *Func:
		switch e.Name {
		case "casei", "accenti":
			if at := t.typeOf(e.Args[0]); at != String {
				fail(e.Args[0].Position(), strings.ToUpper(e.Name)+" needs a string, not "+t.desc(e.Args[0]))
			}
			return String
		}
		t.checkFunc(e)
		return Boolean
	case *GeomLit, *BBoxLit:
		return Geometry
	case *IntervalLit:
		return tInterval
	case *ArrayLit:
		return tArray
	}
	return Boolean // a predicate
}

func (t *translator) numeric(e Expr) Type {
	ty := t.typeOf(e)
	if ty != Integer && ty != Number {
		fail(e.Position(), "arithmetic needs numbers, not "+t.desc(e))
	}
	return ty
}

// checkFunc rejects the functions that are parsed but not implemented.
func (t *translator) checkFunc(f *Func) {
	info, std := lookupFunc(f.Name)
	switch {
	case !std:
		fail(f.Pos, "function "+strconv.Quote(f.Name)+" is not supported (this server offers no custom functions)")
	case info.name[0] == 'a':
		fail(f.Pos, "array functions ("+strings.ToUpper(f.Name)+") are not supported")
	}
}

// class groups the types that compare with each other.
func class(ty Type) Type {
	switch ty {
	case Integer:
		return Number
	case Date:
		return Timestamp
	}
	return ty
}

// desc describes a value for an error message, with a property's type.
func (t *translator) desc(e Expr) string {
	if r, ok := e.(*PropertyRef); ok {
		if p, ok := t.props[r.Name]; ok {
			return "property " + strconv.Quote(r.Name) + " (" + p.Type.String() + ")"
		}
	}
	return describe(e)
}

// describe names a piece of syntax for an error message.
func describe(e Expr) string {
	switch e := e.(type) {
	case *PropertyRef:
		return "property " + strconv.Quote(e.Name)
	case *StringLit:
		return "string " + quoteForMsg(e.Val)
	case *NumberLit:
		return "number " + strconv.FormatFloat(e.Val, 'g', -1, 64)
	case *BoolLit:
		if e.Val {
			return "TRUE"
		}
		return "FALSE"
	case *TimeLit:
		if e.Date {
			return "DATE('" + e.Val.Format("2006-01-02") + "')"
		}
		return "TIMESTAMP('" + e.Val.Format("2006-01-02T15:04:05.999999999Z07:00") + "')"
	case *IntervalLit:
		return "an INTERVAL"
	case *GeomLit:
		return "a " + geomWKT[e.Kind] + " geometry"
	case *BBoxLit:
		return "a BBOX"
	case *ArrayLit:
		return "an array"
	case *Arith, *Neg:
		return "an arithmetic expression"
	case *Func:
		return strings.ToUpper(e.Name) + "(...)"
	case *And:
		return "an AND"
	case *Or:
		return "an OR"
	case *Not:
		return "a NOT"
	}
	return "a predicate"
}

// comparable checks that two values of types a and b may be compared; bad is the operand to
// blame.
func (t *translator) comparable(l, r Expr, lt, rt Type, what string) {
	bad := r
	if _, ok := r.(*PropertyRef); ok {
		if _, ok := l.(*PropertyRef); !ok {
			bad = l
		}
	}
	for _, x := range [...]struct {
		e  Expr
		ty Type
	}{{l, lt}, {r, rt}} {
		switch x.ty {
		case Geometry:
			fail(x.e.Position(), "geometries cannot be used with "+what+"; use a spatial function such as S_EQUALS or S_INTERSECTS ("+t.desc(x.e)+")")
		case tInterval:
			fail(x.e.Position(), "an INTERVAL can only be used in a temporal function such as T_INTERSECTS")
		case tArray:
			fail(x.e.Position(), "arrays are only used by the array functions, which are not supported")
		}
	}
	if class(lt) != class(rt) {
		hint := ""
		if class(lt) == Timestamp || class(rt) == Timestamp {
			hint = " (write instants as DATE('2021-04-08') or TIMESTAMP('2021-04-08T04:39:23Z'))"
		}
		fail(bad.Position(), "cannot compare "+t.desc(l)+" with "+t.desc(r)+hint)
	}
}

func (t *translator) compare(e *Compare) {
	lt, rt := t.typeOf(e.Left), t.typeOf(e.Right)
	t.comparable(e.Left, e.Right, lt, rt, "comparison operators")
	if class(lt) == Boolean && e.Op != Eq && e.Op != Ne {
		fail(e.Pos, "booleans can only be compared with = and <>")
	}
	dates := lt == Date && rt == Date
	t.operand(e.Left, lt, dates)
	t.w(cmpSQL[e.Op])
	t.operand(e.Right, rt, dates)
}

// operand writes a value; when dates meet timestamps, dates become the timestamp of their
// midnight UTC, which keeps the result independent of the session's time zone.
func (t *translator) operand(e Expr, ty Type, dates bool) {
	if ty == Date && !dates {
		switch e := e.(type) {
		case *TimeLit:
			t.param(e.Val, "::timestamptz")
			return
		case *PropertyRef:
			t.w("(")
			t.writeProp(t.prop(e))
			t.w("::timestamp AT TIME ZONE 'UTC')")
			return
		}
	}
	t.value(e)
}

// value writes e where a value is expected and returns its type.
func (t *translator) value(e Expr) Type {
	switch e := e.(type) {
	case *PropertyRef:
		p := t.prop(e)
		t.writeProp(p)
		return p.Type
	case *StringLit:
		t.param(e.Val, "::text")
		return String
	case *NumberLit:
		if e.Int {
			t.param(e.I, "::bigint")
			return Integer
		}
		t.param(e.Val, "::double precision")
		return Number
	case *BoolLit:
		t.param(e.Val, "::boolean")
		return Boolean
	case *TimeLit:
		if e.Date {
			t.param(e.Val, "::date")
			return Date
		}
		t.param(e.Val, "::timestamptz")
		return Timestamp
	case *Arith:
		return t.arith(e)
	case *Neg:
		ty := t.numeric(e.Arg)
		t.w("(-")
		t.value(e.Arg)
		t.w(")")
		return ty
	case *Func:
		switch e.Name {
		case "casei":
			t.typeOf(e)
			t.w("lower(")
			t.value(e.Args[0])
			t.w(")")
			return String
		case "accenti":
			t.typeOf(e)
			t.accenti(func() { t.value(e.Args[0]) })
			return String
		}
		t.funcPred(e)
		return Boolean
	case *GeomLit, *BBoxLit:
		fail(e.Position(), "geometry literals can only be used in spatial functions such as S_INTERSECTS")
	case *IntervalLit:
		fail(e.Position(), "an INTERVAL can only be used in a temporal function such as T_INTERSECTS")
	case *ArrayLit:
		fail(e.Position(), "arrays are only used by the array functions, which are not supported")
	}
	fail(e.Position(), "expected a value, found "+describe(e))
	return 0
}

// accenti strips diacritics with built-in functions only (no unaccent extension): decompose
// to NFD, then drop the combining marks. It needs a UTF8 database.
func (t *translator) accenti(arg func()) {
	t.w("regexp_replace(normalize(")
	arg()
	t.w(", NFD), '[\\u0300-\\u036f]', '', 'g')")
}

func (t *translator) arith(e *Arith) Type {
	ty := t.typeOf(e)
	ints := t.typeOf(e.Left) == Integer && t.typeOf(e.Right) == Integer
	l := func() { t.value(e.Left) }
	r := func() { t.value(e.Right) }
	switch e.Op {
	case Add, Sub, Mul:
		t.w("(")
		l()
		t.w([...]string{Add: " + ", Sub: " - ", Mul: " * "}[e.Op])
		r()
		t.w(")")
	case Div: // real division even between integers; x/0 is NULL rather than a query error
		t.w("(CAST(")
		l()
		t.w(" AS double precision) / NULLIF(")
		r()
		t.w(", 0))")
	case Mod, IntDiv:
		if ints {
			if e.Op == Mod {
				t.w("mod(")
				l()
				t.w(", NULLIF(")
				r()
				t.w(", 0))")
			} else {
				t.w("(")
				l()
				t.w(" / NULLIF(")
				r()
				t.w(", 0))")
			}
			break
		}
		// PostgreSQL has neither % nor div for double precision.
		t.w([...]string{Mod: "mod(CAST(", IntDiv: "div(CAST("}[e.Op])
		l()
		t.w(" AS numeric), NULLIF(CAST(")
		r()
		t.w(" AS numeric), 0))")
	case Pow:
		t.w("power(CAST(")
		l()
		t.w(" AS double precision), CAST(")
		r()
		t.w(" AS double precision))")
	}
	return ty
}

func (t *translator) like(e *Like, neg bool) {
	if ty := t.typeOf(e.Arg); ty != String {
		fail(e.Arg.Position(), "LIKE needs a string on its left, not "+t.desc(e.Arg))
	}
	t.value(e.Arg)
	if neg {
		t.w(" NOT LIKE ")
	} else {
		t.w(" LIKE ")
	}
	t.pattern(e.Pattern)
}

// pattern writes a LIKE pattern. CQL2 and PostgreSQL share the wildcards (% and _) and the
// escape character (\), so the pattern passes as it is, except that a trailing lone backslash,
// an error in PostgreSQL, is taken literally.
func (t *translator) pattern(p Expr) {
	switch p := p.(type) {
	case *StringLit:
		s := p.Val
		n := 0
		for i := len(s) - 1; i >= 0 && s[i] == '\\'; i-- {
			n++
		}
		if n%2 == 1 {
			s += "\\"
		}
		t.param(s, "::text")
		return
	case *Func:
		if len(p.Args) == 1 {
			switch p.Name {
			case "casei":
				t.w("lower(")
				t.pattern(p.Args[0])
				t.w(")")
				return
			case "accenti":
				t.accenti(func() { t.pattern(p.Args[0]) })
				return
			}
		}
	}
	fail(p.Position(), "the pattern of LIKE must be a string literal (optionally inside CASEI or ACCENTI), not "+t.desc(p))
}

func (t *translator) between(e *Between, neg bool) {
	at, lt, ht := t.typeOf(e.Arg), t.typeOf(e.Low), t.typeOf(e.High)
	if c := class(at); c != Number && c != Timestamp {
		fail(e.Arg.Position(), "BETWEEN needs numbers (or instants), not "+t.desc(e.Arg))
	}
	t.comparable(e.Arg, e.Low, at, lt, "BETWEEN")
	t.comparable(e.Arg, e.High, at, ht, "BETWEEN")
	dates := at == Date && lt == Date && ht == Date
	t.operand(e.Arg, at, dates)
	if neg {
		t.w(" NOT BETWEEN ")
	} else {
		t.w(" BETWEEN ")
	}
	t.operand(e.Low, lt, dates)
	t.w(" AND ")
	t.operand(e.High, ht, dates)
}

func (t *translator) in(e *In, neg bool) {
	at := t.typeOf(e.Arg)
	dates := at == Date
	types := make([]Type, len(e.List))
	for i, it := range e.List {
		types[i] = t.typeOf(it)
		t.comparable(e.Arg, it, at, types[i], "IN")
		dates = dates && types[i] == Date
	}
	t.operand(e.Arg, at, dates)
	if neg {
		t.w(" NOT IN (")
	} else {
		t.w(" IN (")
	}
	for i, it := range e.List {
		if i > 0 {
			t.w(", ")
		}
		t.operand(it, types[i], dates)
	}
	t.w(")")
}

func (t *translator) isNull(e *IsNull, neg bool) {
	t.value(e.Arg)
	if neg {
		t.w(" IS NOT NULL")
	} else {
		t.w(" IS NULL")
	}
}

func (t *translator) funcPred(f *Func) {
	switch f.Name {
	case "casei", "accenti":
		fail(f.Pos, strings.ToUpper(f.Name)+"(...) is a string, not a predicate; compare it, e.g. CASEI(name) = CASEI('value')")
	}
	t.checkFunc(f)
	if f.Name[0] == 's' {
		t.spatial(f)
	} else {
		t.temporal(f)
	}
}
