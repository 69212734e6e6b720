package cql2

import "time"

// Expr is a node of the syntax tree both encodings parse into. Pos is the byte offset of the
// construct in the filter: an operator, a function name, a literal, or a JSON value.
type Expr interface {
	Position() int
	node()
}

// And and Or hold two or more operands; text `a AND b AND c` is one node, like its JSON.
type And struct {
	Pos  int
	Args []Expr
}

type Or struct {
	Pos  int
	Args []Expr
}

// Not negates a predicate. `x NOT LIKE p`, `x NOT IN (...)`, `x NOT BETWEEN ...` and
// `x IS NOT NULL` parse to Not around the positive form, as cql2-json writes them.
type Not struct {
	Pos int
	Arg Expr
}

// CmpOp is a binary comparison operator.
type CmpOp uint8

const (
	Eq CmpOp = iota + 1
	Ne
	Lt
	Gt
	Le
	Ge
)

var cmpSQL = [...]string{"", " = ", " <> ", " < ", " > ", " <= ", " >= "}

type Compare struct {
	Pos         int
	Op          CmpOp
	Left, Right Expr
}

type Like struct {
	Pos          int
	Arg, Pattern Expr
}

type Between struct {
	Pos            int
	Arg, Low, High Expr
}

type In struct {
	Pos  int
	Arg  Expr
	List []Expr
}

type IsNull struct {
	Pos int
	Arg Expr
}

// ArithOp is a binary arithmetic operator.
type ArithOp uint8

const (
	Add ArithOp = iota + 1
	Sub
	Mul
	Div    // "/": real division
	Mod    // "%"
	IntDiv // "div"
	Pow    // "^"
)

type Arith struct {
	Pos         int
	Op          ArithOp
	Left, Right Expr
}

// Neg is unary minus on something other than a number literal (which is folded into the
// literal, so `-1` means the same in both encodings).
type Neg struct {
	Pos int
	Arg Expr
}

// Func is a function call: the standard ones (casei, accenti, s_*, t_*, a_*) under their
// cql2-json spelling (e.g. "t_finishedBy"), any other under the name the client wrote.
type Func struct {
	Pos  int
	Name string
	Args []Expr
}

// PropertyRef names a queryable.
type PropertyRef struct {
	Pos  int
	Name string
}

type StringLit struct {
	Pos int
	Val string
}

// NumberLit is a number. Int says it was written without fraction or exponent and fits
// int64; I then holds it exactly (Val loses precision past 2^53, which matters for ids).
type NumberLit struct {
	Pos int
	Val float64
	Int bool
	I   int64
}

type BoolLit struct {
	Pos int
	Val bool
}

// TimeLit is DATE('...') (Date true, Val at midnight UTC) or TIMESTAMP('...') (Val in UTC).
type TimeLit struct {
	Pos  int
	Date bool
	Val  time.Time
}

// IntervalLit is INTERVAL(start, end); a nil bound is an open end ('..'). Bounds are TimeLit,
// PropertyRef or Func.
type IntervalLit struct {
	Pos        int
	Start, End Expr
}

// GeomKind is a geometry type of WKT / GeoJSON.
type GeomKind uint8

const (
	Point GeomKind = iota + 1
	LineString
	Polygon
	MultiPoint
	MultiLineString
	MultiPolygon
	GeometryCollection
)

var geomWKT = [...]string{"", "POINT", "LINESTRING", "POLYGON", "MULTIPOINT", "MULTILINESTRING", "MULTIPOLYGON", "GEOMETRYCOLLECTION"}
var geomJSON = [...]string{"", "Point", "LineString", "Polygon", "MultiPoint", "MultiLineString", "MultiPolygon", "GeometryCollection"}

// GeomLit is a geometry literal, from WKT or GeoJSON alike. Coords holds the flattened
// positions of a Point or LineString (also of a polygon ring); Parts the rings of a Polygon, the
// members of a Multi* or of a GeometryCollection. Z (3 values a position) is set on the
// outermost literal only, and Pos too.
type GeomLit struct {
	Pos    int
	Kind   GeomKind
	Z      bool
	Coords []float64
	Parts  []GeomLit
}

// BBoxLit is BBOX(...) / {"bbox": [...]}: 4 or 6 numbers, as written (axis order of the filter CRS).
type BBoxLit struct {
	Pos  int
	Vals []float64
}

// ArrayLit is an array, only meaningful to the (unsupported) array functions.
type ArrayLit struct {
	Pos   int
	Items []Expr
}

func (e *And) Position() int         { return e.Pos }
func (e *Or) Position() int          { return e.Pos }
func (e *Not) Position() int         { return e.Pos }
func (e *Compare) Position() int     { return e.Pos }
func (e *Like) Position() int        { return e.Pos }
func (e *Between) Position() int     { return e.Pos }
func (e *In) Position() int          { return e.Pos }
func (e *IsNull) Position() int      { return e.Pos }
func (e *Arith) Position() int       { return e.Pos }
func (e *Neg) Position() int         { return e.Pos }
func (e *Func) Position() int        { return e.Pos }
func (e *PropertyRef) Position() int { return e.Pos }
func (e *StringLit) Position() int   { return e.Pos }
func (e *NumberLit) Position() int   { return e.Pos }
func (e *BoolLit) Position() int     { return e.Pos }
func (e *TimeLit) Position() int     { return e.Pos }
func (e *IntervalLit) Position() int { return e.Pos }
func (e *GeomLit) Position() int     { return e.Pos }
func (e *BBoxLit) Position() int     { return e.Pos }
func (e *ArrayLit) Position() int    { return e.Pos }

func (*And) node()         {}
func (*Or) node()          {}
func (*Not) node()         {}
func (*Compare) node()     {}
func (*Like) node()        {}
func (*Between) node()     {}
func (*In) node()          {}
func (*IsNull) node()      {}
func (*Arith) node()       {}
func (*Neg) node()         {}
func (*Func) node()        {}
func (*PropertyRef) node() {}
func (*StringLit) node()   {}
func (*NumberLit) node()   {}
func (*BoolLit) node()     {}
func (*TimeLit) node()     {}
func (*IntervalLit) node() {}
func (*GeomLit) node()     {}
func (*BBoxLit) node()     {}
func (*ArrayLit) node()    {}

// isPredicate reports whether e can stand where a boolean is expected. Properties and
// functions qualify syntactically; SQL checks that they are really Boolean.
func isPredicate(e Expr) bool {
	switch e.(type) {
	case *And, *Or, *Not, *Compare, *Like, *Between, *In, *IsNull, *BoolLit, *Func, *PropertyRef:
		return true
	}
	return false
}

// isScalar reports whether e is a value rather than a predicate.
func isScalar(e Expr) bool {
	switch e.(type) {
	case *And, *Or, *Not, *Compare, *Like, *Between, *In, *IsNull:
		return false
	}
	return true
}

// checkDepth bounds the depth of a finished tree. The parsers only recurse on nesting, not on
// operator chains like 1+1+1..., so the tree can be deeper than the parser went; this walk
// stops descending at the limit, so it cannot itself run away.
func checkDepth(e Expr, d int) {
	if e == nil {
		return
	}
	if d > MaxDepth {
		fail(e.Position(), "filter is nested too deeply (more than "+itoa(MaxDepth)+" levels)")
	}
	d++
	switch e := e.(type) {
	case *And:
		for _, a := range e.Args {
			checkDepth(a, d)
		}
	case *Or:
		for _, a := range e.Args {
			checkDepth(a, d)
		}
	case *Not:
		checkDepth(e.Arg, d)
	case *Compare:
		checkDepth(e.Left, d)
		checkDepth(e.Right, d)
	case *Like:
		checkDepth(e.Arg, d)
		checkDepth(e.Pattern, d)
	case *Between:
		checkDepth(e.Arg, d)
		checkDepth(e.Low, d)
		checkDepth(e.High, d)
	case *In:
		checkDepth(e.Arg, d)
		for _, a := range e.List {
			checkDepth(a, d)
		}
	case *IsNull:
		checkDepth(e.Arg, d)
	case *Arith:
		checkDepth(e.Left, d)
		checkDepth(e.Right, d)
	case *Neg:
		checkDepth(e.Arg, d)
	case *Func:
		for _, a := range e.Args {
			checkDepth(a, d)
		}
	case *IntervalLit:
		checkDepth(e.Start, d)
		checkDepth(e.End, d)
	case *ArrayLit:
		for _, a := range e.Items {
			checkDepth(a, d)
		}
	}
}
