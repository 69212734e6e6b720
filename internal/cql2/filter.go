package cql2

import (
	"errors"

	"meridian/internal/apperr"
	"meridian/internal/sqlbuild"
)

// Filter is a parsed filter request: the expression, the CRS of its geometry literals
// (filter-crs) and their axis order. Handlers parse it; the data layer, which knows the
// queryables and the storage CRS, renders it into its own query.
type Filter struct {
	Expr   Expr
	SRID   int  // SRID of geometry literals; 0 is 4326
	SwapXY bool // literals are written latitude first
}

// ParseFilter parses a filter in lang ("cql2-text", "cql2-json"). A filter that does not parse
// is a 400 problem that says where.
func ParseFilter(lang, src string, srid int, swapXY bool) (*Filter, error) {
	e, err := Parse(lang, src)
	if err != nil {
		return nil, problem(err)
	}
	return &Filter{Expr: e, SRID: srid, SwapXY: swapXY}, nil
}

// Limits bound what a client may ask a database to evaluate per row: the bytes of a filter and
// its terms (every property, literal, operator and function of its syntax tree except AND, OR
// and NOT, which only join terms). A filter's cost on a table grows with its terms times the
// rows it is tested on, and a few thousand-term OR chains on an unindexed table held every
// connection of a server for its whole statement timeout. Zero means no bound beyond
// MaxLength and MaxDepth.
type Limits struct {
	Bytes, Terms int
}

// ParseFilterWithin is ParseFilter for a filter a client sent: one over limits is a 400 problem
// naming the limit, refused before (bytes) or right after (terms) parsing.
func ParseFilterWithin(lang, src string, srid int, swapXY bool, limits Limits) (*Filter, error) {
	if limits.Bytes > 0 && len(src) > limits.Bytes {
		return nil, apperr.Invalid("filter: %d bytes; this server takes filters of at most %d bytes", len(src), limits.Bytes)
	}
	f, err := ParseFilter(lang, src, srid, swapXY)
	if err != nil {
		return nil, err
	}
	if n := f.Terms(); limits.Terms > 0 && n > limits.Terms {
		return nil, apperr.Invalid("filter: %d terms; this server takes filters of at most %d terms (properties, values, operators "+
			"and functions): use IN lists, ranges or a smaller area instead of long OR chains", n, limits.Terms)
	}
	return f, nil
}

// Terms counts the filter's terms: every node of its syntax tree but AND, OR and NOT.
func (f *Filter) Terms() int {
	n := 0
	walk(f.Expr, func(e Expr) {
		switch e.(type) {
		case *And, *Or, *Not:
		default:
			n++
		}
	})
	return n
}

// Names are the properties the filter names, each once, in the order they first appear: the
// queryables it needs.
func (f *Filter) Names() []string {
	var names []string
	seen := map[string]bool{}
	walk(f.Expr, func(e Expr) {
		if r, ok := e.(*PropertyRef); ok && !seen[r.Name] {
			seen[r.Name] = true
			names = append(names, r.Name)
		}
	})
	return names
}

// Render writes the filter as a predicate over props (the queryables, SQL for each) into the
// caller's builder, transforming literals to storageSRID. A filter naming something the
// collection cannot filter on is a 400 problem.
func (f *Filter) Render(b *sqlbuild.Builder, props map[string]Property, storageSRID int) (string, error) {
	sql, err := Render(b, f.Expr, Options{Properties: props, FilterSRID: f.SRID, StorageSRID: storageSRID, SwapXY: f.SwapXY})
	if err != nil {
		return "", problem(err)
	}
	return sql, nil
}

func problem(err error) error {
	var ce *Error
	if errors.As(err, &ce) {
		return apperr.Invalid("filter: %s", ce.Error())
	}
	return err
}

// walk calls visit for every property reference in e.
// walk visits e and every expression below it.
func walk(e Expr, visit func(Expr)) {
	visit(e)
	var kids []Expr
	switch e := e.(type) {
	case *And:
		kids = e.Args
	case *Or:
		kids = e.Args
	case *Not:
		kids = []Expr{e.Arg}
	case *Compare:
		kids = []Expr{e.Left, e.Right}
	case *Like:
		kids = []Expr{e.Arg, e.Pattern}
	case *Between:
		kids = []Expr{e.Arg, e.Low, e.High}
	case *In:
		kids = append([]Expr{e.Arg}, e.List...)
	case *IsNull:
		kids = []Expr{e.Arg}
	case *Arith:
		kids = []Expr{e.Left, e.Right}
	case *Neg:
		kids = []Expr{e.Arg}
	case *Func:
		kids = e.Args
	case *IntervalLit:
		kids = []Expr{e.Start, e.End}
	case *ArrayLit:
		kids = e.Items
	}
	for _, k := range kids {
		if k != nil {
			walk(k, visit)
		}
	}
}
