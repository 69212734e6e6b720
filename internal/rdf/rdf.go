// Package rdf is the small RDF toolkit the open-data feeds need: terms and triples, a Turtle
// reader (for the official SHACL shapes the service embeds), writers of JSON-LD, Turtle and
// RDF/XML that stream a document node group by node group, and a SHACL Core evaluator of the
// constraint components those shapes use. It knows nothing of DCAT or of the catalog.
package rdf

import (
	"sort"
	"strings"
)

// Namespaces of the vocabularies the package itself needs.
const (
	RDFNS  = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
	RDFSNS = "http://www.w3.org/2000/01/rdf-schema#"
	XSDNS  = "http://www.w3.org/2001/XMLSchema#"
	SHNS   = "http://www.w3.org/ns/shacl#"

	Type       = RDFNS + "type"
	LangString = RDFNS + "langString"
	XSDString  = XSDNS + "string"
)

// Kind is what a term is.
type Kind uint8

// The kinds of terms.
const (
	KindIRI Kind = iota + 1
	KindBlank
	KindLiteral
)

// Term is an IRI, a blank node (Value is its label) or a literal (Value is its lexical form;
// Datatype is always set: xsd:string for plain literals, rdf:langString with a Lang).
type Term struct {
	Kind     Kind
	Value    string
	Lang     string
	Datatype string
}

// IRI is the IRI term s.
func IRI(s string) Term { return Term{Kind: KindIRI, Value: s} }

// Blank is the blank node labelled id.
func Blank(id string) Term { return Term{Kind: KindBlank, Value: id} }

// String is the plain literal s (xsd:string).
func String(s string) Term { return Term{Kind: KindLiteral, Value: s, Datatype: XSDString} }

// LangLiteral is s in the language tag lang; a plain literal when lang is empty.
func LangLiteral(s, lang string) Term {
	if lang == "" {
		return String(s)
	}
	return Term{Kind: KindLiteral, Value: s, Lang: lang, Datatype: LangString}
}

// Typed is the literal s of datatype dt.
func Typed(s, dt string) Term { return Term{Kind: KindLiteral, Value: s, Datatype: dt} }

// IsIRI, IsBlank and IsLiteral tell the term's kind.
func (t Term) IsIRI() bool     { return t.Kind == KindIRI }
func (t Term) IsBlank() bool   { return t.Kind == KindBlank }
func (t Term) IsLiteral() bool { return t.Kind == KindLiteral }

// String writes the term as N-Triples does, for messages and tests.
func (t Term) String() string {
	switch t.Kind {
	case KindIRI:
		return "<" + t.Value + ">"
	case KindBlank:
		return "_:" + t.Value
	}
	s := `"` + escapeString(t.Value) + `"`
	switch {
	case t.Lang != "":
		return s + "@" + t.Lang
	case t.Datatype != XSDString:
		return s + "^^<" + t.Datatype + ">"
	}
	return s
}

// Triple is one statement.
type Triple struct{ S, P, O Term }

// Graph is a set of triples in the order they were first added.
type Graph struct {
	triples []Triple
	seen    map[Triple]struct{}
}

// NewGraph returns an empty graph.
func NewGraph() *Graph { return &Graph{} }

// Add adds a triple unless the graph holds it already.
func (g *Graph) Add(s, p, o Term) {
	t := Triple{s, p, o}
	if g.seen == nil {
		g.seen = map[Triple]struct{}{}
	}
	if _, ok := g.seen[t]; ok {
		return
	}
	g.seen[t] = struct{}{}
	g.triples = append(g.triples, t)
}

// Append adds a triple without looking for it: for writers that know they make no duplicate
// (a duplicate is harmless in a document, and validation reads each value once).
func (g *Graph) Append(s, p, o Term) {
	g.triples = append(g.triples, Triple{s, p, o})
}

// Reset empties the graph, keeping its storage for the next one.
func (g *Graph) Reset() {
	g.triples = g.triples[:0]
	if g.seen != nil {
		clear(g.seen)
	}
}

// AddAll adds every triple of h.
func (g *Graph) AddAll(h *Graph) {
	for _, t := range h.triples {
		g.Add(t.S, t.P, t.O)
	}
}

// Triples are the graph's triples in insertion order.
func (g *Graph) Triples() []Triple { return g.triples }

// Len is the number of triples.
func (g *Graph) Len() int { return len(g.triples) }

// Objects are the objects of s p in insertion order.
func (g *Graph) Objects(s Term, p string) []Term {
	var out []Term
	for _, t := range g.triples {
		if t.S == s && t.P.Value == p {
			out = append(out, t.O)
		}
	}
	return out
}

// Prefix is a namespace abbreviation of the documents written.
type Prefix struct{ Name, IRI string }

// Prefixes abbreviate IRIs; the longest namespace wins.
type Prefixes []Prefix

// compact is iri as prefix:local when a namespace of ps holds it with a local name that needs
// no escaping in any of the three syntaxes; ok false otherwise.
func (ps Prefixes) compact(iri string) (string, bool) {
	best := -1
	for i, p := range ps {
		if strings.HasPrefix(iri, p.IRI) && (best < 0 || len(p.IRI) > len(ps[best].IRI)) {
			best = i
		}
	}
	if best < 0 {
		return "", false
	}
	local := iri[len(ps[best].IRI):]
	if !simpleLocal(local) {
		return "", false
	}
	return ps[best].Name + ":" + local, true
}

// simpleLocal: a local name that is an XML NCName and a Turtle PN_LOCAL alike (letters, digits,
// '-', '_', not starting with a digit or '-', not ending with '.').
func simpleLocal(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '_':
		case (r >= '0' && r <= '9') || r == '-':
			if i == 0 {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// node is one subject's triples grouped for writing: its types, then its properties in the
// order they first appear, each with its values.
type node struct {
	subject Term
	types   []Term
	props   []string
	values  [][]Term // values[i] are the values of props[i]
}

// add adds a value of p. The node's slices are reused from group to group (values beyond
// len(props) are spare storage).
func (n *node) add(p string, v Term) {
	for i, q := range n.props {
		if q == p {
			n.values[i] = append(n.values[i], v)
			return
		}
	}
	n.props = append(n.props, p)
	if len(n.values) >= len(n.props) {
		n.values[len(n.props)-1] = append(n.values[len(n.props)-1][:0], v)
		return
	}
	n.values = append(n.values, []Term{v})
}

// reset empties the node for another subject, keeping its storage.
func (n *node) reset(s Term) {
	n.subject, n.types, n.props = s, n.types[:0], n.props[:0]
}

// layout is a group's triples arranged for writing, its storage reused group after group.
type layout struct {
	order     []*node
	spare     []*node
	bySubject map[string]*node
	refs      map[string]int
	referrer  map[string]Term
	inline    map[string]bool
}

// group gathers a graph's triples by subject, in the order subjects first appear (subjects are
// keyed by value: a blank node's label never looks like an IRI, which has a ':'), and finds the
// blank nodes that are the object of exactly one triple and the subject of some: written inside
// their one referrer rather than as nodes of their own.
func (l *layout) group(g *Graph) {
	if l.bySubject == nil {
		l.bySubject, l.refs, l.referrer, l.inline = map[string]*node{}, map[string]int{}, map[string]Term{}, map[string]bool{}
	}
	l.spare = append(l.spare, l.order...)
	l.order = l.order[:0]
	clear(l.bySubject)
	clear(l.refs)
	clear(l.referrer)
	clear(l.inline)
	for _, t := range g.triples {
		n := l.bySubject[t.S.Value]
		if n == nil {
			if k := len(l.spare); k > 0 {
				n, l.spare = l.spare[k-1], l.spare[:k-1]
			} else {
				n = &node{}
			}
			n.reset(t.S)
			l.bySubject[t.S.Value] = n
			l.order = append(l.order, n)
		}
		if t.O.IsBlank() {
			l.refs[t.O.Value]++
			l.referrer[t.O.Value] = t.S
		}
		if t.P.Value == Type && !t.O.IsLiteral() {
			n.types = append(n.types, t.O)
			continue
		}
		n.add(t.P.Value, t.O)
	}
	for b, n := range l.refs {
		if n == 1 && l.bySubject[b] != nil {
			l.inline[b] = true
		}
	}
	// A cycle of blank nodes would never be written: keep one of each cycle out.
	for b := range l.inline {
		seen := map[string]bool{b: true}
		for cur := b; ; {
			next, ok := l.referrer[cur]
			if !ok || !next.IsBlank() || !l.inline[next.Value] {
				break
			}
			if seen[next.Value] {
				delete(l.inline, b)
				break
			}
			seen[next.Value] = true
			cur = next.Value
		}
	}
}

// sortedPrefixes are ps by name, for stable headers.
func sortedPrefixes(ps Prefixes) Prefixes {
	out := append(Prefixes(nil), ps...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
