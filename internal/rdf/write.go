package rdf

import (
	"bufio"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
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
	names    map[string]string // compact names already made
	layout   layout
}

// NewWriter returns a writer of format to w with the namespace prefixes ps.
func NewWriter(w io.Writer, f Format, ps Prefixes) *Writer {
	return &Writer{w: bufio.NewWriterSize(w, 32<<10), format: f, prefixes: sortedPrefixes(ps), names: map[string]string{}}
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
		w.str(`<?xml version="1.0" encoding="utf-8"?>` + "\n<rdf:RDF")
		for _, p := range w.prefixes {
			fmt.Fprintf(w.w, "\n  xmlns:%s=\"%s\"", p.Name, xmlAttr(p.IRI))
		}
		w.str(">\n")
	}
	return nil
}

// Write writes a group of triples.
func (w *Writer) Write(g *Graph) error {
	w.layout.group(g)
	nodes, bySubject, inline := w.layout.order, w.layout.bySubject, w.layout.inline
	for _, n := range nodes {
		if inline[n.subject.Value] {
			continue
		}
		switch w.format {
		case JSONLD:
			if w.started {
				w.char(',')
			}
			w.jsonNode(n, bySubject, inline, true)
		case Turtle:
			w.char('\n')
			w.turtleNode(n, bySubject, inline, 0)
			w.str(" .\n")
		case RDFXML:
			w.xmlNode(n, bySubject, inline, 1)
		}
		w.started = true
	}
	return nil
}

// str and char write to the buffer: a bufio.Writer keeps its first error and answers it to every
// later write and to Flush, which End and Flush return.
func (w *Writer) str(s string) { _, _ = w.w.WriteString(s) }
func (w *Writer) char(c byte)  { _ = w.w.WriteByte(c) }

// Flush sends what is buffered.
func (w *Writer) Flush() error { return w.w.Flush() }

// End writes the document's tail and flushes.
func (w *Writer) End() error {
	switch w.format {
	case JSONLD:
		w.str("]}\n")
	case RDFXML:
		w.str("</rdf:RDF>\n")
	}
	return w.w.Flush()
}

func (w *Writer) name(iri string) string {
	if c, ok := w.names[iri]; ok {
		return c
	}
	c, ok := w.prefixes.compact(iri)
	if !ok {
		c = iri
	}
	if len(w.names) < 10000 {
		w.names[iri] = c
	}
	return c
}

// jsonString writes s as a JSON string (as encoding/json does, HTML characters included).
func (w *Writer) jsonString(s string) {
	w.char('"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' && c < 0x80 {
			continue
		}
		if c >= 0x80 {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r != utf8.RuneError && r != '\u2028' && r != '\u2029' {
				i += size - 1
				continue
			}
			w.str(s[start:i])
			if r == utf8.RuneError && size == 1 {
				w.str(`\ufffd`)
			} else {
				fmt.Fprintf(w.w, `\u%04x`, r)
			}
			i += size - 1
			start = i + 1
			continue
		}
		w.str(s[start:i])
		switch c {
		case '"', '\\':
			w.char('\\')
			w.char(c)
		case '\n':
			w.str(`\n`)
		case '\r':
			w.str(`\r`)
		case '\t':
			w.str(`\t`)
		default:
			fmt.Fprintf(w.w, `\u%04x`, c)
		}
		start = i + 1
	}
	w.str(s[start:])
	w.char('"')
}

func (w *Writer) jsonNode(n *node, bySubject map[string]*node, inline map[string]bool, withID bool) {
	w.char('{')
	sep := ""
	if withID {
		w.str(`"@id":`)
		w.jsonString(nodeID(n.subject))
		sep = ","
	}
	if len(n.types) > 0 {
		w.str(sep + `"@type":`)
		w.jsonArray(len(n.types), func(i int) { w.jsonString(w.name(n.types[i].Value)) })
		sep = ","
	}
	for i, p := range n.props {
		w.str(sep)
		w.jsonString(w.name(p))
		w.char(':')
		vals := n.values[i]
		w.jsonArray(len(vals), func(i int) { w.jsonValue(vals[i], bySubject, inline) })
		sep = ","
	}
	w.char('}')
}

func (w *Writer) jsonArray(n int, each func(i int)) {
	if n == 1 {
		each(0)
		return
	}
	w.char('[')
	for i := 0; i < n; i++ {
		if i > 0 {
			w.char(',')
		}
		each(i)
	}
	w.char(']')
}

func (w *Writer) jsonValue(v Term, bySubject map[string]*node, inline map[string]bool) {
	switch {
	case v.IsBlank() && inline[v.Value]:
		w.jsonNode(bySubject[v.Value], bySubject, inline, false)
	case !v.IsLiteral():
		w.str(`{"@id":`)
		w.jsonString(nodeID(v))
		w.char('}')
	case v.Lang != "":
		w.str(`{"@value":`)
		w.jsonString(v.Value)
		w.str(`,"@language":`)
		w.jsonString(v.Lang)
		w.char('}')
	case v.Datatype == XSDString:
		w.jsonString(v.Value)
	default:
		w.str(`{"@value":`)
		w.jsonString(v.Value)
		w.str(`,"@type":`)
		w.jsonString(w.name(v.Datatype))
		w.char('}')
	}
}

func nodeID(t Term) string {
	if t.IsBlank() {
		return "_:" + t.Value
	}
	return t.Value
}

func (w *Writer) turtleTerm(t Term) {
	switch t.Kind {
	case KindIRI:
		if c := w.name(t.Value); c != t.Value {
			w.str(c)
			return
		}
		w.char('<')
		w.str(escapeIRI(t.Value))
		w.char('>')
		return
	case KindBlank:
		w.str("_:")
		w.str(t.Value)
		return
	}
	w.char('"')
	w.str(escapeString(t.Value))
	w.char('"')
	switch {
	case t.Lang != "":
		w.char('@')
		w.str(t.Lang)
	case t.Datatype != XSDString:
		w.str("^^")
		w.turtleTerm(IRI(t.Datatype))
	}
}

// turtleNode writes a node's predicate-object list (and its subject at the top level), with the
// blank nodes it alone refers to inside it as [ ... ].
func (w *Writer) turtleNode(n *node, bySubject map[string]*node, inline map[string]bool, depth int) {
	indent := turtleIndent(depth + 1)
	if depth == 0 {
		w.turtleTerm(n.subject)
		w.char('\n')
		w.str(indent)
	}
	sep := ""
	if len(n.types) > 0 {
		w.str("a ")
		for i, t := range n.types {
			if i > 0 {
				w.str(", ")
			}
			w.turtleTerm(t)
		}
		sep = " ;\n"
	}
	for pi, p := range n.props {
		if sep != "" {
			w.str(sep)
			w.str(indent)
		}
		w.turtleTerm(IRI(p))
		w.char(' ')
		for i, v := range n.values[pi] {
			if i > 0 {
				w.str(", ")
			}
			if v.IsBlank() && inline[v.Value] {
				w.str("[\n")
				w.str(turtleIndent(depth + 2))
				w.turtleNode(bySubject[v.Value], bySubject, inline, depth+1)
				w.char('\n')
				w.str(indent)
				w.char(']')
				continue
			}
			w.turtleTerm(v)
		}
		sep = " ;\n"
	}
}

var indents = func() []string {
	out := make([]string, 8)
	for i := range out {
		out[i] = strings.Repeat("    ", i)
	}
	return out
}()

func turtleIndent(depth int) string {
	if depth < len(indents) {
		return indents[depth]
	}
	return strings.Repeat("    ", depth)
}

// xmlNode writes a node element: typed by its first class when a prefix names it (the rest as
// rdf:type), identified by rdf:about, rdf:nodeID, or nothing when written inside its referrer.
func (w *Writer) xmlNode(n *node, bySubject map[string]*node, inline map[string]bool, depth int) {
	indent := xmlIndent(depth)
	element, types := "rdf:Description", n.types
	if len(types) > 0 {
		if c := w.name(types[0].Value); c != types[0].Value {
			element, types = c, types[1:]
		}
	}
	w.str(indent)
	w.char('<')
	w.str(element)
	switch {
	case n.subject.IsIRI():
		w.xmlAttribute("rdf:about", n.subject.Value)
	case !inline[n.subject.Value]:
		w.xmlAttribute("rdf:nodeID", n.subject.Value)
	}
	w.str(">\n")
	for _, t := range types {
		w.str(indent)
		w.str("  <rdf:type")
		w.xmlAttribute("rdf:resource", t.Value)
		w.str("/>\n")
	}
	for i, p := range n.props {
		for _, v := range n.values[i] {
			w.xmlProperty(p, v, bySubject, inline, depth+1)
		}
	}
	w.str(indent)
	w.str("</")
	w.str(element)
	w.str(">\n")
}

// xmlAttribute writes ` name="value"`.
func (w *Writer) xmlAttribute(name, value string) {
	w.char(' ')
	w.str(name)
	w.str(`="`)
	w.str(xmlAttr(value))
	w.char('"')
}

// xmlProperty writes one property element; a predicate no prefix names gets a namespace
// declaration of its own.
func (w *Writer) xmlProperty(p string, v Term, bySubject map[string]*node, inline map[string]bool, depth int) {
	indent := xmlIndent(depth)
	name, decl := w.name(p), ""
	if name == p {
		ns, local := splitIRI(p)
		name, decl = "ns0:"+local, ` xmlns:ns0="`+xmlAttr(ns)+`"`
	}
	w.str(indent)
	w.char('<')
	w.str(name)
	w.str(decl)
	switch {
	case v.IsBlank() && inline[v.Value]:
		w.str(">\n")
		w.xmlNode(bySubject[v.Value], bySubject, inline, depth+1)
		w.str(indent)
	case v.IsIRI():
		w.xmlAttribute("rdf:resource", v.Value)
		w.str("/>\n")
		return
	case v.IsBlank():
		w.xmlAttribute("rdf:nodeID", v.Value)
		w.str("/>\n")
		return
	default:
		switch {
		case v.Lang != "":
			w.xmlAttribute("xml:lang", v.Lang)
		case v.Datatype != XSDString:
			w.xmlAttribute("rdf:datatype", v.Datatype)
		}
		w.char('>')
		w.str(xmlText(v.Value))
	}
	w.str("</")
	w.str(name)
	w.str(">\n")
}

func xmlIndent(depth int) string {
	const spaces = "                                "
	if 2*depth <= len(spaces) {
		return spaces[:2*depth]
	}
	return strings.Repeat("  ", depth)
}

// splitIRI cuts an IRI after its last '#' or '/', where an XML local name can start.
func splitIRI(iri string) (string, string) {
	i := strings.LastIndexAny(iri, "#/")
	return iri[:i+1], iri[i+1:]
}

func xmlText(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool {
		return r < 0x20 || r == '<' || r == '>' || r == '&' || r == '"' || r == '\'' || r >= 0x7f
	}) {
		return s
	}
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

func xmlAttr(s string) string { return strings.ReplaceAll(xmlText(s), `"`, "&quot;") }

// escapeString escapes a literal's lexical form for Turtle and N-Triples (ECHAR and UCHAR).
func escapeString(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '"' || r == '\\' }) {
		return s
	}
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
	if !strings.ContainsFunc(s, func(r rune) bool { return r <= 0x20 || strings.ContainsRune("<>\"{}|^`\\", r) }) {
		return s
	}
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
