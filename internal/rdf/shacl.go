package rdf

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The SHACL Core subset evaluated here is what the official DCAT-AP 3, GeoDCAT-AP 3 and DCAT-US 3
// shapes use: class targets; property shapes with a predicate path and sh:minCount, sh:maxCount,
// sh:class, sh:datatype, sh:nodeKind, sh:or (of shapes using those), sh:minInclusive and
// sh:maxInclusive; sh:severity; sh:deactivated. CompileShapes refuses any other constraint, so a
// shapes file that needs more is never half-evaluated. Results follow SHACL's validation report
// (one per focus node for counts, one per value node otherwise), as rdf-validate-shacl gives them.

// Severity of a result (sh:Violation, sh:Warning, sh:Info).
const (
	Violation = SHNS + "Violation"
	Warning   = SHNS + "Warning"
	Info      = SHNS + "Info"
)

// Result is one result of a validation report.
type Result struct {
	Focus     Term   // the focus node
	Path      string // the property (sh:resultPath)
	Value     *Term  // the value node, for constraints on values
	Component string // the constraint component IRI (sh:MinCountConstraintComponent ...)
	Shape     Term   // the property shape (sh:sourceShape)
	Severity  string
	Name      string // the shape's sh:name, when it has one
	Detail    string // the constraint's parameter: the count, class, datatype or kind asked for
}

// Shapes are compiled shapes, ready to validate data graphs.
type Shapes struct {
	nodes []nodeShape
}

type nodeShape struct {
	id      Term
	targets []string
	props   []*propertyShape
}

type propertyShape struct {
	id       Term
	path     string
	name     string
	severity string
	cons     []constraint
}

type constraint struct {
	component string // local name of the component: MinCount, MaxCount, Class, Datatype, NodeKind, Or, MinInclusive, MaxInclusive
	count     int
	iri       string // class, datatype or node kind
	bound     float64
	or        [][]constraint
}

// Annotations a shape may carry that constrain nothing.
var annotations = []string{"name", "description", "message", "order", "group", "defaultValue"}

// CompileShapes reads the node shapes with class targets of a shapes graph.
func CompileShapes(g *Graph) (*Shapes, error) {
	idx := index(g)
	out := &Shapes{}
	compiled := map[Term]*propertyShape{}
	for _, s := range idx.subjectsOf(SHNS + "targetClass") {
		ns := nodeShape{id: s}
		for p, vals := range idx.props[s] {
			local, ok := strings.CutPrefix(p, SHNS)
			if !ok {
				continue
			}
			switch local {
			case "targetClass":
				for _, v := range vals {
					ns.targets = append(ns.targets, v.Value)
				}
			case "property":
				for _, v := range vals {
					ps, ok := compiled[v]
					if !ok {
						var err error
						if ps, err = compileProperty(idx, v); err != nil {
							return nil, err
						}
						compiled[v] = ps
					}
					if ps != nil {
						ns.props = append(ns.props, ps)
					}
				}
			case "closed":
				if len(vals) != 1 || vals[0].Value != "false" {
					return nil, fmt.Errorf("shape %s: closed shapes are not supported", s)
				}
			default:
				if !slices.Contains(annotations, local) {
					return nil, fmt.Errorf("shape %s: sh:%s is not supported", s, local)
				}
			}
		}
		slices.Sort(ns.targets)
		slices.SortFunc(ns.props, func(a, b *propertyShape) int { return strings.Compare(a.id.Value, b.id.Value) })
		out.nodes = append(out.nodes, ns)
	}
	slices.SortFunc(out.nodes, func(a, b nodeShape) int { return strings.Compare(a.id.Value, b.id.Value) })
	return out, nil
}

// compileProperty compiles a property shape; nil for a deactivated one.
func compileProperty(idx *graphIndex, s Term) (*propertyShape, error) {
	ps := &propertyShape{id: s, severity: Violation}
	for p, vals := range idx.props[s] {
		local, ok := strings.CutPrefix(p, SHNS)
		if !ok {
			continue
		}
		switch local {
		case "path":
			if len(vals) != 1 || !vals[0].IsIRI() {
				return nil, fmt.Errorf("property shape %s: only predicate paths are supported", s)
			}
			ps.path = vals[0].Value
		case "severity":
			ps.severity = vals[0].Value
		case "deactivated":
			if vals[0].Value == "true" {
				return nil, nil
			}
		case "name":
			ps.name = vals[0].Value
		default:
			if slices.Contains(annotations, local) {
				continue
			}
			for _, v := range vals {
				c, err := compileConstraint(idx, s, local, v)
				if err != nil {
					return nil, err
				}
				ps.cons = append(ps.cons, c)
			}
		}
	}
	if ps.path == "" && len(ps.cons) == 0 {
		return nil, nil // named but never defined (DCAT-AP's ranges.ttl has such): it constrains nothing
	}
	if ps.path == "" {
		return nil, fmt.Errorf("property shape %s has no sh:path", s)
	}
	slices.SortFunc(ps.cons, func(a, b constraint) int { return strings.Compare(a.component+a.iri, b.component+b.iri) })
	return ps, nil
}

func compileConstraint(idx *graphIndex, s Term, local string, v Term) (constraint, error) {
	switch local {
	case "minCount", "maxCount":
		n, err := strconv.Atoi(v.Value)
		return constraint{component: strings.ToUpper(local[:1]) + local[1:], count: n}, err
	case "class", "datatype", "nodeKind":
		return constraint{component: strings.ToUpper(local[:1]) + local[1:], iri: v.Value}, nil
	case "minInclusive", "maxInclusive":
		f, err := strconv.ParseFloat(v.Value, 64)
		return constraint{component: strings.ToUpper(local[:1]) + local[1:], bound: f}, err
	case "or":
		c := constraint{component: "Or"}
		for _, member := range idx.list(v) {
			var alt []constraint
			for p, vals := range idx.props[member] {
				ml, ok := strings.CutPrefix(p, SHNS)
				if !ok || slices.Contains(annotations, ml) {
					continue
				}
				if ml != "class" && ml != "datatype" && ml != "nodeKind" {
					return c, fmt.Errorf("shape %s: sh:or member with sh:%s is not supported", s, ml)
				}
				for _, mv := range vals {
					mc, err := compileConstraint(idx, member, ml, mv)
					if err != nil {
						return c, err
					}
					alt = append(alt, mc)
				}
			}
			c.or = append(c.or, alt)
		}
		if len(c.or) == 0 {
			return c, fmt.Errorf("shape %s: empty sh:or", s)
		}
		return c, nil
	}
	return constraint{}, fmt.Errorf("property shape %s: sh:%s is not supported", s, local)
}

// Validate validates a data graph: the results of every shape, in a stable order.
func (s *Shapes) Validate(data *Graph) []Result {
	idx := index(data)
	var out []Result
	for _, ns := range s.nodes {
		for _, focus := range idx.instances(ns.targets) {
			for _, ps := range ns.props {
				out = append(out, ps.validate(idx, focus)...)
			}
		}
	}
	return out
}

func (ps *propertyShape) validate(idx *graphIndex, focus Term) []Result {
	values := idx.props[focus][ps.path]
	var out []Result
	result := func(c constraint, v *Term, detail string) {
		out = append(out, Result{Focus: focus, Path: ps.path, Value: v, Component: SHNS + c.component + "ConstraintComponent",
			Shape: ps.id, Severity: ps.severity, Name: ps.name, Detail: detail})
	}
	for _, c := range ps.cons {
		switch c.component {
		case "MinCount":
			if len(values) < c.count {
				result(c, nil, strconv.Itoa(c.count))
			}
		case "MaxCount":
			if len(values) > c.count {
				result(c, nil, strconv.Itoa(c.count))
			}
		default:
			for i := range values {
				if !c.holds(idx, values[i]) {
					result(c, &values[i], c.describe())
				}
			}
		}
	}
	return out
}

// describe is what a value constraint asks for, in words of the shapes.
func (c constraint) describe() string {
	switch c.component {
	case "Or":
		var alts []string
		for _, alt := range c.or {
			var parts []string
			for _, m := range alt {
				parts = append(parts, m.describe())
			}
			alts = append(alts, strings.Join(parts, " and "))
		}
		return strings.Join(alts, " or ")
	case "MinInclusive":
		return ">= " + strconv.FormatFloat(c.bound, 'f', -1, 64)
	case "MaxInclusive":
		return "<= " + strconv.FormatFloat(c.bound, 'f', -1, 64)
	}
	return c.iri
}

func (c constraint) holds(idx *graphIndex, v Term) bool {
	switch c.component {
	case "Class":
		return !v.IsLiteral() && idx.isA(v, c.iri)
	case "Datatype":
		return v.IsLiteral() && v.Datatype == c.iri && validLexical(v)
	case "NodeKind":
		return nodeKindHolds(c.iri, v)
	case "MinInclusive", "MaxInclusive":
		f, ok := numeric(v)
		if !ok {
			return false
		}
		if c.component == "MinInclusive" {
			return f >= c.bound
		}
		return f <= c.bound
	case "Or":
		for _, alt := range c.or {
			if !slices.ContainsFunc(alt, func(m constraint) bool { return !m.holds(idx, v) }) {
				return true
			}
		}
	}
	return false
}

func nodeKindHolds(kind string, v Term) bool {
	switch strings.TrimPrefix(kind, SHNS) {
	case "IRI":
		return v.IsIRI()
	case "BlankNode":
		return v.IsBlank()
	case "Literal":
		return v.IsLiteral()
	case "BlankNodeOrIRI":
		return !v.IsLiteral()
	case "BlankNodeOrLiteral":
		return !v.IsIRI()
	case "IRIOrLiteral":
		return !v.IsBlank()
	}
	return false
}

func numeric(v Term) (float64, bool) {
	if !v.IsLiteral() {
		return 0, false
	}
	switch strings.TrimPrefix(v.Datatype, XSDNS) {
	case "decimal", "integer", "double", "float", "int", "long", "nonNegativeInteger", "positiveInteger":
		f, err := strconv.ParseFloat(v.Value, 64)
		return f, err == nil && validLexical(v)
	}
	return 0, false
}

var (
	decimalForm  = regexp.MustCompile(`^[+-]?(\d+(\.\d*)?|\.\d+)$`)
	integerForm  = regexp.MustCompile(`^[+-]?\d+$`)
	doubleForm   = regexp.MustCompile(`^([+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?|[+-]?INF|NaN)$`)
	durationForm = regexp.MustCompile(`^-?P(\d+Y)?(\d+M)?(\d+D)?(T(\d+H)?(\d+M)?(\d+(\.\d+)?S)?)?$`)
	zone         = `(Z|[+-]\d{2}:\d{2})?`
	dateForm     = regexp.MustCompile(`^-?\d{4,}-\d{2}-\d{2}` + zone + `$`)
	dateTimeForm = regexp.MustCompile(`^-?\d{4,}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?` + zone + `$`)
	gYearForm    = regexp.MustCompile(`^-?\d{4,}` + zone + `$`)
	gYMForm      = regexp.MustCompile(`^-?\d{4,}-\d{2}` + zone + `$`)
)

// validLexical tells whether a literal's lexical form is one of its datatype's (the XSD types a
// catalog writes; others pass, as they do in rdf-validate-shacl).
func validLexical(v Term) bool {
	switch v.Datatype {
	case LangString:
		return v.Lang != ""
	case XSDString:
		return v.Lang == ""
	}
	s := v.Value
	switch strings.TrimPrefix(v.Datatype, XSDNS) {
	case "decimal":
		return decimalForm.MatchString(s)
	case "integer":
		return integerForm.MatchString(s)
	case "nonNegativeInteger":
		return integerForm.MatchString(s) && !strings.HasPrefix(s, "-") || s == "-0"
	case "double", "float":
		return doubleForm.MatchString(s)
	case "boolean":
		return s == "true" || s == "false" || s == "1" || s == "0"
	case "duration":
		return durationForm.MatchString(s) && s != "P" && !strings.HasSuffix(s, "T")
	case "date":
		_, err := time.Parse("2006-01-02", s[:min(len(s), 10)])
		return dateForm.MatchString(s) && err == nil
	case "dateTime":
		return dateTimeForm.MatchString(s)
	case "gYear":
		return gYearForm.MatchString(s)
	case "gYearMonth":
		return gYMForm.MatchString(s)
	}
	return true
}

// graphIndex answers the lookups validation makes.
type graphIndex struct {
	props    map[Term]map[string][]Term
	subjects []Term // in first-seen order
	types    map[string][]Term
	subClass map[string][]string
}

func index(g *Graph) *graphIndex {
	idx := &graphIndex{props: map[Term]map[string][]Term{}, types: map[string][]Term{}, subClass: map[string][]string{}}
	for _, t := range g.triples {
		m := idx.props[t.S]
		if m == nil {
			m = map[string][]Term{}
			idx.props[t.S] = m
			idx.subjects = append(idx.subjects, t.S)
		}
		if slices.Contains(m[t.P.Value], t.O) {
			continue // a graph is a set: a triple written twice is one value
		}
		m[t.P.Value] = append(m[t.P.Value], t.O)
		switch t.P.Value {
		case Type:
			idx.types[t.O.Value] = append(idx.types[t.O.Value], t.S)
		case RDFSNS + "subClassOf":
			idx.subClass[t.O.Value] = append(idx.subClass[t.O.Value], t.S.Value)
		}
	}
	return idx
}

func (idx *graphIndex) subjectsOf(p string) []Term {
	var out []Term
	for _, s := range idx.subjects {
		if len(idx.props[s][p]) > 0 {
			out = append(out, s)
		}
	}
	return out
}

// classes are c and its subclasses in the graph.
func (idx *graphIndex) classes(c string) []string {
	out, todo := []string{c}, []string{c}
	for len(todo) > 0 {
		cur := todo[0]
		todo = todo[1:]
		for _, sub := range idx.subClass[cur] {
			if !slices.Contains(out, sub) {
				out = append(out, sub)
				todo = append(todo, sub)
			}
		}
	}
	return out
}

// instances are the nodes typed with any of classes (or a subclass), each once, in graph order.
func (idx *graphIndex) instances(classes []string) []Term {
	seen := map[Term]bool{}
	for _, c := range classes {
		for _, k := range idx.classes(c) {
			for _, s := range idx.types[k] {
				seen[s] = true
			}
		}
	}
	var out []Term
	for _, s := range idx.subjects {
		if seen[s] {
			out = append(out, s)
		}
	}
	return out
}

func (idx *graphIndex) isA(v Term, class string) bool {
	for _, t := range idx.props[v][Type] {
		if slices.Contains(idx.classes(class), t.Value) {
			return true
		}
	}
	return false
}

// list reads an RDF collection.
func (idx *graphIndex) list(head Term) []Term {
	var out []Term
	for cur := head; cur.Value != RDFNS+"nil" && len(out) < 1000; {
		first := idx.props[cur][RDFNS+"first"]
		rest := idx.props[cur][RDFNS+"rest"]
		if len(first) != 1 || len(rest) != 1 {
			break
		}
		out = append(out, first[0])
		cur = rest[0]
	}
	return out
}
