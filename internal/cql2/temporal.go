package cql2

import "strings"

// A temporal operand is an interval [start, end]; an instant (a Date or Timestamp property,
// DATE(), TIMESTAMP()) is the interval where both are the same. This lets every T_ function
// take instants and intervals on either side, with the standard's interval definitions:
//
//	T_AFTER        a.start > b.end
//	T_BEFORE       a.end < b.start
//	T_CONTAINS     a.start < b.start AND a.end > b.end
//	T_DISJOINT     a.end < b.start OR a.start > b.end
//	T_DURING       a.start > b.start AND a.end < b.end
//	T_EQUALS       a.start = b.start AND a.end = b.end
//	T_FINISHEDBY   a.start < b.start AND a.end = b.end
//	T_FINISHES     a.start > b.start AND a.end = b.end
//	T_INTERSECTS   a.start <= b.end AND a.end >= b.start
//	T_MEETS        a.end = b.start
//	T_METBY        a.start = b.end
//	T_OVERLAPPEDBY a.start > b.start AND a.start < b.end AND a.end > b.end
//	T_OVERLAPS     a.start < b.start AND a.end > b.start AND a.end < b.end
//	T_STARTEDBY    a.start = b.start AND a.end > b.end
//	T_STARTS       a.start = b.start AND a.end < b.end
//
// An open end ('..') is -infinity or infinity, which PostgreSQL orders like any instant.
// When every instant involved is a date the comparison is between dates; otherwise dates
// become their midnight UTC.
type tempOperand struct {
	start, end Expr // nil: open
	instant    bool
}

func (t *translator) tempOperand(e Expr, fname string) tempOperand {
	bound := func(b Expr) {
		switch b := b.(type) {
		case nil, *TimeLit:
			return
		case *PropertyRef:
			if ty := t.prop(b).Type; ty != Date && ty != Timestamp {
				fail(b.Pos, strings.ToUpper(fname)+" needs instants or intervals, but property \""+b.Name+"\" is "+ty.String())
			}
			return
		case *Func:
			t.checkFunc(b)
		}
		fail(b.Position(), "an INTERVAL end must be '..', a date or timestamp, or a Date or Timestamp property, not "+t.desc(b))
	}
	switch e := e.(type) {
	case *PropertyRef, *TimeLit:
		bound(e)
		return tempOperand{start: e, end: e, instant: true}
	case *IntervalLit:
		bound(e.Start)
		bound(e.End)
		if s, ok := e.Start.(*TimeLit); ok {
			if en, ok := e.End.(*TimeLit); ok && s.Val.After(en.Val) {
				fail(e.Pos, "INTERVAL starts after it ends")
			}
		}
		return tempOperand{start: e.Start, end: e.End}
	case *Func:
		t.checkFunc(e)
	}
	fail(e.Position(), strings.ToUpper(fname)+" needs instants or intervals (a Date or Timestamp property, DATE(), TIMESTAMP() or INTERVAL()), not "+t.desc(e))
	return tempOperand{}
}

func (t *translator) isDate(b Expr) bool {
	switch b := b.(type) {
	case nil:
		return true
	case *TimeLit:
		return b.Date
	case *PropertyRef:
		return t.prop(b).Type == Date
	}
	return false
}

func (t *translator) temporal(f *Func) {
	a := t.tempOperand(f.Args[0], f.Name)
	b := t.tempOperand(f.Args[1], f.Name)
	dates := t.isDate(a.start) && t.isDate(a.end) && t.isDate(b.start) && t.isDate(b.end)
	// Bounds are written on first use only: a function like T_METBY reads two of the four, and
	// a placeholder that appears nowhere in the SQL has no type PostgreSQL could infer.
	lazy := func(e Expr, start bool) func() string {
		var s string
		done := false
		return func() string {
			if done {
				return s
			}
			done = true
			if e == nil {
				s = "'infinity'::timestamptz"
				if start {
					s = "'-infinity'::timestamptz"
				}
				if dates {
					s = strings.Replace(s, "timestamptz", "date", 1)
				}
				return s
			}
			s = t.capture(func() { t.operand(e, t.typeOf(e), dates) })
			return s
		}
	}
	as := lazy(a.start, true)
	ae := as
	if !a.instant {
		ae = lazy(a.end, false)
	}
	bs := lazy(b.start, true)
	be := bs
	if !b.instant {
		be = lazy(b.end, false)
	}
	type term struct{ l, op, r string }
	var terms []term
	join := " AND "
	switch f.Name {
	case "t_after":
		terms = []term{{as(), " > ", be()}}
	case "t_before":
		terms = []term{{ae(), " < ", bs()}}
	case "t_contains":
		terms = []term{{as(), " < ", bs()}, {ae(), " > ", be()}}
	case "t_disjoint":
		terms = []term{{ae(), " < ", bs()}, {as(), " > ", be()}}
		join = " OR "
	case "t_during":
		terms = []term{{as(), " > ", bs()}, {ae(), " < ", be()}}
	case "t_equals":
		terms = []term{{as(), " = ", bs()}, {ae(), " = ", be()}}
	case "t_finishedBy":
		terms = []term{{as(), " < ", bs()}, {ae(), " = ", be()}}
	case "t_finishes":
		terms = []term{{as(), " > ", bs()}, {ae(), " = ", be()}}
	case "t_intersects":
		terms = []term{{as(), " <= ", be()}, {ae(), " >= ", bs()}}
	case "t_meets":
		terms = []term{{ae(), " = ", bs()}}
	case "t_metBy":
		terms = []term{{as(), " = ", be()}}
	case "t_overlappedBy":
		terms = []term{{as(), " > ", bs()}, {as(), " < ", be()}, {ae(), " > ", be()}}
	case "t_overlaps":
		terms = []term{{as(), " < ", bs()}, {ae(), " > ", bs()}, {ae(), " < ", be()}}
	case "t_startedBy":
		terms = []term{{as(), " = ", bs()}, {ae(), " > ", be()}}
	case "t_starts":
		terms = []term{{as(), " = ", bs()}, {ae(), " < ", be()}}
	}
	// Instants make some terms repeat (T_EQUALS of two instants is one equality).
	uniq := terms[:0]
	for _, x := range terms {
		dup := false
		for _, y := range uniq {
			if x == y {
				dup = true
			}
		}
		if !dup {
			uniq = append(uniq, x)
		}
	}
	if len(uniq) > 1 {
		t.w("(")
	}
	for i, x := range uniq {
		if i > 0 {
			t.w(join)
		}
		t.w(x.l)
		t.w(x.op)
		t.w(x.r)
	}
	if len(uniq) > 1 {
		t.w(")")
	}
}
