package rdf

import (
	"bufio"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Format is a serialization of RDF.
type Format int

// The serializations written.
const (
	JSONLD Format = iota
	Turtle
	RDFXML
)

// MediaType is the format's media type.
func (f Format) MediaType() string {
	switch f {
	case Turtle:
		return "text/turtle"
	case RDFXML:
		return "application/rdf+xml"
	}
	return "application/ld+json"
}

// Writer writes one document group by group, so a document of any size streams: Begin writes
// the head (the JSON-LD context, the Turtle prefixes, the RDF/XML root), each Write one group of
// nodes, End the tail. A group's blank nodes referenced once are written inside their referrer;
// the labels of others must be unique in the document (the caller's counter).
type Writer struct {
	w        *bufio.Writer
	format   Format
	prefixes Prefixes
	started  bool
}

// NewWriter returns a writer of format to w with the namespace prefixes ps.
func NewWriter(w io.Writer, f Format, ps Prefixes) *Writer {
	return &Writer{w: bufio.NewWriterSize(w, 32<<10), format: f, prefixes: sortedPrefixes(ps)}
}

// Begin writes the document's head.
func (w *Writer) Begin() error {
	switch w.format {
	case JSONLD:
		ctx := map[string]string{}
		for _, p := range w.prefixes {
			ctx[p.Name] = p.IRI
		}
		raw, err := json.Marshal(ctx)
		if err != nil {
			return err
		}
		// The context is the document's own: a reader needs nothing from the network.
		fmt.Fprintf(w.w, `{"@context":%s,"@graph":[`, raw)
	case Turtle:
		for _, p := range w.prefixes {
			fmt.Fprintf(w.w, "@prefix %s: <%s> .\n", p.Name, escapeIRI(p.IRI))
		}
	case RDFXML:
		w.w.WriteString(`<?xml version="1.0" encoding="utf-8"?>` + "\n<rdf:RDF")
		for _, p := range w.prefixes {
			fmt.Fprintf(w.w, "\n  xmlns:%s=\"%s\"", p.Name, xmlAttr(p.IRI))
		}
		w.w.WriteString(">\n")
	}
	return nil
}

// Write writes a group of triples.
func (w *Writer) Write(g *Graph) error {
	nodes, bySubject := group(g)
	inline := inlined(g, bySubject)
	for _, n := range nodes {
		if inline[n.subject] {
			continue
		}
		switch w.format {
		case JSONLD:
			if w.started {
				w.w.WriteByte(',')
			}
			w.jsonNode(n, bySubject, inline, true)
		case Turtle:
			w.w.WriteByte('\n')
			w.turtleNode(n, bySubject, inline, 0)
			w.w.WriteString(" .\n")
		case RDFXML:
			w.xmlNode(n, bySubject, inline, 1)
		}
		w.started = true
	}
	return nil
}

// Flush sends what is buffered.
func (w *Writer) Flush() error { return w.w.Flush() }

// End writes the document's tail and flushes.
func (w *Writer) End() error {
	switch w.format {
	case JSONLD:
		w.w.WriteString("]}\n")
	case RDFXML:
		w.w.WriteString("</rdf:RDF>\n")
	}
	return w.w.Flush()
}

func (w *Writer) name(iri string) string {
	if c, ok := w.prefixes.compact(iri); ok {
		return c
	}
	return iri
}

func (w *Writer) jsonString(s string) {
	raw, _ := json.Marshal(s)
	w.w.Write(raw)
}

func (w *Writer) jsonNode(n *node, bySubject map[Term]*node, inline map[Term]bool, withID bool) {
	w.w.WriteByte('{')
	sep := ""
	if withID {
		w.w.WriteString(`"@id":`)
		w.jsonString(nodeID(n.subject))
		sep = ","
	}
	if len(n.types) > 0 {
		w.w.WriteString(sep + `"@type":`)
		w.jsonArray(len(n.types), func(i int) { w.jsonString(w.name(n.types[i].Value)) })
		sep = ","
	}
	for _, p := range n.props {
		w.w.WriteString(sep)
		w.jsonString(w.name(p))
		w.w.WriteByte(':')
		vals := n.values[p]
		w.jsonArray(len(vals), func(i int) { w.jsonValue(vals[i], bySubject, inline) })
		sep = ","
	}
	w.w.WriteByte('}')
}

func (w *Writer) jsonArray(n int, each func(i int)) {
	if n == 1 {
		each(0)
		return
	}
	w.w.WriteByte('[')
	for i := 0; i < n; i++ {
		if i > 0 {
			w.w.WriteByte(',')
		}
		each(i)
	}
	w.w.WriteByte(']')
}

func (w *Writer) jsonValue(v Term, bySubject map[Term]*node, inline map[Term]bool) {
	switch {
	case v.IsBlank() && inline[v]:
		w.jsonNode(bySubject[v], bySubject, inline, false)
	case !v.IsLiteral():
		w.w.WriteString(`{"@id":`)
		w.jsonString(nodeID(v))
		w.w.WriteByte('}')
	case v.Lang != "":
		w.w.WriteString(`{"@value":`)
		w.jsonString(v.Value)
		w.w.WriteString(`,"@language":`)
		w.jsonString(v.Lang)
		w.w.WriteByte('}')
	case v.Datatype == XSDString:
		w.jsonString(v.Value)
	default:
		w.w.WriteString(`{"@value":`)
		w.jsonString(v.Value)
		w.w.WriteString(`,"@type":`)
		w.jsonString(w.name(v.Datatype))
		w.w.WriteByte('}')
	}
}

func nodeID(t Term) string {
	if t.IsBlank() {
		return "_:" + t.Value
	}
	return t.Value
}

func (w *Writer) turtleTerm(t Term) string {
	switch t.Kind {
	case KindIRI:
		if c, ok := w.prefixes.compact(t.Value); ok {
			return c
		}
		return "<" + escapeIRI(t.Value) + ">"
	case KindBlank:
		return "_:" + t.Value
	}
	s := `"` + escapeString(t.Value) + `"`
	switch {
	case t.Lang != "":
		return s + "@" + t.Lang
	case t.Datatype != XSDString:
		return s + "^^" + w.turtleTerm(IRI(t.Datatype))
	}
	return s
}

func (w *Writer) turtleNode(n *node, bySubject map[Term]*node, inline map[Term]bool, depth int) {
	indent := strings.Repeat("    ", depth+1)
	var parts []string
	if len(n.types) > 0 {
		types := make([]string, len(n.types))
		for i, t := range n.types {
			types[i] = w.turtleTerm(t)
		}
		parts = append(parts, "a "+strings.Join(types, ", "))
	}
	for _, p := range n.props {
		vals := make([]string, len(n.values[p]))
		for i, v := range n.values[p] {
			if v.IsBlank() && inline[v] {
				var b strings.Builder
				sub := &Writer{w: bufio.NewWriter(&b), prefixes: w.prefixes}
				sub.w.WriteString("[\n" + indent + "    ")
				sub.turtleNode(bySubject[v], bySubject, inline, depth+1)
				sub.w.WriteString("\n" + indent + "]")
				sub.w.Flush()
				vals[i] = b.String()
				continue
			}
			vals[i] = w.turtleTerm(v)
		}
		parts = append(parts, w.turtleTerm(IRI(p))+" "+strings.Join(vals, ", "))
	}
	if depth == 0 {
		w.w.WriteString(w.turtleTerm(n.subject) + "\n" + indent)
	}
	w.w.WriteString(strings.Join(parts, " ;\n"+indent))
}

func (w *Writer) xmlNode(n *node, bySubject map[Term]*node, inline map[Term]bool, depth int) {
	indent := strings.Repeat("  ", depth)
	switch {
	case n.subject.IsIRI():
		fmt.Fprintf(w.w, "%s<rdf:Description rdf:about=\"%s\">\n", indent, xmlAttr(n.subject.Value))
	case inline[n.subject]:
		w.w.WriteString(indent + "<rdf:Description>\n")
	default:
		fmt.Fprintf(w.w, "%s<rdf:Description rdf:nodeID=\"%s\">\n", indent, xmlAttr(n.subject.Value))
	}
	for _, t := range n.types {
		fmt.Fprintf(w.w, "%s  <rdf:type rdf:resource=\"%s\"/>\n", indent, xmlAttr(t.Value))
	}
	for _, p := range n.props {
		for _, v := range n.values[p] {
			w.xmlProperty(p, v, bySubject, inline, depth+1)
		}
	}
	w.w.WriteString(indent + "</rdf:Description>\n")
}

// xmlProperty writes one property element; a predicate no prefix names gets a namespace
// declaration of its own.
func (w *Writer) xmlProperty(p string, v Term, bySubject map[Term]*node, inline map[Term]bool, depth int) {
	indent := strings.Repeat("  ", depth)
	name, decl := w.name(p), ""
	if name == p {
		ns, local := splitIRI(p)
		name, decl = "ns0:"+local, ` xmlns:ns0="`+xmlAttr(ns)+`"`
	}
	switch {
	case v.IsBlank() && inline[v]:
		fmt.Fprintf(w.w, "%s<%s%s>\n", indent, name, decl)
		w.xmlNode(bySubject[v], bySubject, inline, depth+1)
		fmt.Fprintf(w.w, "%s</%s>\n", indent, name)
	case v.IsIRI():
		fmt.Fprintf(w.w, "%s<%s%s rdf:resource=\"%s\"/>\n", indent, name, decl, xmlAttr(v.Value))
	case v.IsBlank():
		fmt.Fprintf(w.w, "%s<%s%s rdf:nodeID=\"%s\"/>\n", indent, name, decl, xmlAttr(v.Value))
	default:
		attr := ""
		switch {
		case v.Lang != "":
			attr = ` xml:lang="` + xmlAttr(v.Lang) + `"`
		case v.Datatype != XSDString:
			attr = ` rdf:datatype="` + xmlAttr(v.Datatype) + `"`
		}
		fmt.Fprintf(w.w, "%s<%s%s%s>%s</%s>\n", indent, name, decl, attr, xmlText(v.Value), name)
	}
}

// splitIRI cuts an IRI after its last '#' or '/', where an XML local name can start.
func splitIRI(iri string) (string, string) {
	i := strings.LastIndexAny(iri, "#/")
	return iri[:i+1], iri[i+1:]
}

func xmlText(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

func xmlAttr(s string) string { return strings.ReplaceAll(xmlText(s), `"`, "&quot;") }

// escapeString escapes a literal's lexical form for Turtle and N-Triples (ECHAR and UCHAR).
func escapeString(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '\\':
			b.WriteString(`\\`)
		case '"':
			b.WriteString(`\"`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 || r == 0x7f {
				b.WriteString(`\u` + fmt.Sprintf("%04X", r))
				continue
			}
			b.WriteRune(r)
		}
	}
	return b.String()
}

// escapeIRI escapes what an IRIREF may not hold as UCHARs.
func escapeIRI(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r <= 0x20 || strings.ContainsRune("<>\"{}|^`\\", r) {
			b.WriteString(`\u` + fmt.Sprintf("%04X", r))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Decimal writes f as an xsd:decimal lexical form (no exponent).
func Decimal(f float64) string {
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}
