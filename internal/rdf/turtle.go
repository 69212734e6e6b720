package rdf

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ParseTurtle reads a Turtle document (W3C Turtle 1.1: prefixes and base, IRIs, prefixed names,
// blank nodes and their property lists, collections, every literal form) into a graph. Blank
// node labels are prefixed with scope, so graphs read from several files can be merged.
func ParseTurtle(src, scope string) (*Graph, error) {
	p := &turtle{src: src, g: NewGraph(), prefixes: map[string]string{}, scope: scope, labels: map[string]string{}}
	for {
		p.skip()
		if p.eof() {
			return p.g, nil
		}
		if err := p.statement(); err != nil {
			line := strings.Count(src[:min(p.pos, len(src))], "\n") + 1
			return nil, fmt.Errorf("turtle %s line %d: %w", scope, line, err)
		}
	}
}

type turtle struct {
	src      string
	pos      int
	g        *Graph
	prefixes map[string]string
	base     string
	scope    string
	labels   map[string]string
	blanks   int
}

func (p *turtle) eof() bool { return p.pos >= len(p.src) }

func (p *turtle) peek() byte {
	if p.eof() {
		return 0
	}
	return p.src[p.pos]
}

// skip passes white space and comments.
func (p *turtle) skip() {
	for !p.eof() {
		switch c := p.src[p.pos]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			p.pos++
		case c == '#':
			for !p.eof() && p.src[p.pos] != '\n' {
				p.pos++
			}
		default:
			return
		}
	}
}

func (p *turtle) expect(c byte) error {
	p.skip()
	if p.peek() != c {
		return fmt.Errorf("expected %q, found %q", c, p.rest(20))
	}
	p.pos++
	return nil
}

func (p *turtle) rest(n int) string { return p.src[p.pos:min(len(p.src), p.pos+n)] }

// keyword consumes a case-insensitive word followed by a separator.
func (p *turtle) keyword(w string) bool {
	end := p.pos + len(w)
	if end > len(p.src) || !strings.EqualFold(p.src[p.pos:end], w) {
		return false
	}
	if end < len(p.src) && (isAlnum(p.src[end]) || strings.ContainsRune("_-:.", rune(p.src[end])) && end+1 < len(p.src) && isAlnum(p.src[end+1])) {
		return false
	}
	p.pos = end
	return true
}

func (p *turtle) statement() error {
	turtleForm := p.peek() == '@' // "@prefix ... ." rather than SPARQL's "PREFIX ..."
	switch {
	case p.keyword("@prefix"), p.keyword("PREFIX"):
		p.skip()
		i := strings.IndexByte(p.src[p.pos:], ':')
		if i < 0 {
			return fmt.Errorf("prefix without ':'")
		}
		name := strings.TrimSpace(p.src[p.pos : p.pos+i])
		p.pos += i + 1
		p.skip()
		iri, err := p.iriRef()
		if err != nil {
			return err
		}
		p.prefixes[name] = iri
		if turtleForm {
			return p.expect('.')
		}
		return nil
	case p.keyword("@base"), p.keyword("BASE"):
		p.skip()
		iri, err := p.iriRef()
		if err != nil {
			return err
		}
		p.base = iri
		if turtleForm {
			return p.expect('.')
		}
		return nil
	}
	subject, err := p.subject()
	if err != nil {
		return err
	}
	p.skip()
	// A blank node property list alone is a statement ("[ ... ] .").
	if p.peek() != '.' {
		if err := p.predicateObjects(subject); err != nil {
			return err
		}
	}
	return p.expect('.')
}

func (p *turtle) subject() (Term, error) {
	p.skip()
	switch p.peek() {
	case '[':
		return p.blankList()
	case '(':
		return p.collection()
	}
	return p.resource()
}

func (p *turtle) predicateObjects(s Term) error {
	for {
		p.skip()
		var pred Term
		if p.peek() == 'a' && p.pos+1 < len(p.src) && strings.ContainsRune(" \t\r\n<[\"'(_", rune(p.src[p.pos+1])) {
			p.pos++
			pred = IRI(Type)
		} else {
			var err error
			if pred, err = p.resource(); err != nil {
				return err
			}
		}
		for {
			o, err := p.object()
			if err != nil {
				return err
			}
			p.g.Add(s, pred, o)
			p.skip()
			if p.peek() != ',' {
				break
			}
			p.pos++
		}
		p.skip()
		if p.peek() != ';' {
			return nil
		}
		for p.peek() == ';' {
			p.pos++
			p.skip()
		}
		if c := p.peek(); c == '.' || c == ']' || c == 0 {
			return nil
		}
	}
}

func (p *turtle) object() (Term, error) {
	p.skip()
	switch c := p.peek(); {
	case c == '[':
		return p.blankList()
	case c == '(':
		return p.collection()
	case c == '"' || c == '\'':
		return p.literal()
	case c == '+' || c == '-' || c == '.' || (c >= '0' && c <= '9'):
		return p.number()
	case p.keyword("true"):
		return Typed("true", XSDNS+"boolean"), nil
	case p.keyword("false"):
		return Typed("false", XSDNS+"boolean"), nil
	}
	return p.resource()
}

func (p *turtle) newBlank() Term {
	p.blanks++
	return Blank(p.scope + "b" + strconv.Itoa(p.blanks))
}

func (p *turtle) blankList() (Term, error) {
	p.pos++ // [
	b := p.newBlank()
	p.skip()
	if p.peek() != ']' {
		if err := p.predicateObjects(b); err != nil {
			return b, err
		}
	}
	return b, p.expect(']')
}

func (p *turtle) collection() (Term, error) {
	p.pos++ // (
	var items []Term
	for {
		p.skip()
		if p.peek() == ')' {
			p.pos++
			break
		}
		if p.eof() {
			return Term{}, fmt.Errorf("unterminated collection")
		}
		o, err := p.object()
		if err != nil {
			return Term{}, err
		}
		items = append(items, o)
	}
	head := IRI(RDFNS + "nil")
	for i := len(items) - 1; i >= 0; i-- {
		cell := p.newBlank()
		p.g.Add(cell, IRI(RDFNS+"first"), items[i])
		p.g.Add(cell, IRI(RDFNS+"rest"), head)
		head = cell
	}
	return head, nil
}

// resource reads an IRI, a prefixed name or a labelled blank node.
func (p *turtle) resource() (Term, error) {
	p.skip()
	if p.peek() == '<' {
		iri, err := p.iriRef()
		return IRI(iri), err
	}
	start := p.pos
	for !p.eof() {
		r, size := utf8.DecodeRuneInString(p.src[p.pos:])
		if r == '\\' && p.pos+1 < len(p.src) {
			p.pos += 2
			continue
		}
		if strings.ContainsRune(" \t\r\n,;()[]<>\"'#", r) {
			break
		}
		p.pos += size
	}
	// A trailing '.' ends the statement, not the name.
	for p.pos > start && p.src[p.pos-1] == '.' {
		p.pos--
	}
	name := p.src[start:p.pos]
	if name == "" {
		return Term{}, fmt.Errorf("expected a term, found %q", p.rest(20))
	}
	if strings.HasPrefix(name, "_:") {
		label, ok := p.labels[name]
		if !ok {
			label = p.scope + "l" + strconv.Itoa(len(p.labels)) + "_" + name[2:]
			p.labels[name] = label
		}
		return Blank(label), nil
	}
	prefix, local, ok := strings.Cut(name, ":")
	ns, known := p.prefixes[prefix]
	if !ok || !known {
		return Term{}, fmt.Errorf("unknown prefix in %q", name)
	}
	// PN_LOCAL_ESC drops its backslash; percent escapes stay as written (they are part of the IRI).
	return IRI(ns + strings.ReplaceAll(local, `\`, "")), nil
}

func (p *turtle) iriRef() (string, error) {
	if p.peek() != '<' {
		return "", fmt.Errorf("expected an IRI, found %q", p.rest(20))
	}
	end := strings.IndexByte(p.src[p.pos:], '>')
	if end < 0 {
		return "", fmt.Errorf("unterminated IRI")
	}
	raw, err := unescape(p.src[p.pos+1 : p.pos+end])
	p.pos += end + 1
	if err != nil {
		return "", err
	}
	if p.base != "" {
		if b, err := url.Parse(p.base); err == nil {
			if r, err := url.Parse(raw); err == nil && !r.IsAbs() {
				return b.ResolveReference(r).String(), nil
			}
		}
	}
	return raw, nil
}

func (p *turtle) literal() (Term, error) {
	q := p.src[p.pos]
	delim := string(q)
	if strings.HasPrefix(p.src[p.pos:], strings.Repeat(delim, 3)) {
		delim = strings.Repeat(delim, 3)
	}
	p.pos += len(delim)
	var b strings.Builder
	for {
		if p.eof() {
			return Term{}, fmt.Errorf("unterminated string")
		}
		if strings.HasPrefix(p.src[p.pos:], delim) {
			p.pos += len(delim)
			break
		}
		c := p.src[p.pos]
		if c == '\\' {
			n, s, err := escape(p.src[p.pos:])
			if err != nil {
				return Term{}, err
			}
			b.WriteString(s)
			p.pos += n
			continue
		}
		if len(delim) == 1 && (c == '\n' || c == '\r') {
			return Term{}, fmt.Errorf("line break in a short string")
		}
		b.WriteByte(c)
		p.pos++
	}
	value := b.String()
	switch {
	case p.peek() == '@':
		p.pos++
		start := p.pos
		for !p.eof() && (isAlnum(p.src[p.pos]) || p.src[p.pos] == '-') {
			p.pos++
		}
		return LangLiteral(value, strings.ToLower(p.src[start:p.pos])), nil
	case strings.HasPrefix(p.src[p.pos:], "^^"):
		p.pos += 2
		dt, err := p.resource()
		if err != nil {
			return Term{}, err
		}
		return Typed(value, dt.Value), nil
	}
	return String(value), nil
}

func (p *turtle) number() (Term, error) {
	start := p.pos
	for !p.eof() && strings.ContainsRune("+-.0123456789eE", rune(p.src[p.pos])) {
		p.pos++
	}
	for p.pos > start && p.src[p.pos-1] == '.' {
		p.pos--
	}
	s := p.src[start:p.pos]
	switch {
	case strings.ContainsAny(s, "eE"):
		return Typed(s, XSDNS+"double"), nil
	case strings.Contains(s, "."):
		return Typed(s, XSDNS+"decimal"), nil
	case s == "" || s == "+" || s == "-":
		return Term{}, fmt.Errorf("bad number %q", p.rest(20))
	}
	return Typed(s, XSDNS+"integer"), nil
}

func isAlnum(c byte) bool {
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

// escape reads one ECHAR or UCHAR at the start of s: its length and what it stands for.
func escape(s string) (int, string, error) {
	if len(s) < 2 {
		return 0, "", fmt.Errorf("bad escape")
	}
	switch s[1] {
	case 't':
		return 2, "\t", nil
	case 'b':
		return 2, "\b", nil
	case 'n':
		return 2, "\n", nil
	case 'r':
		return 2, "\r", nil
	case 'f':
		return 2, "\f", nil
	case '"', '\'', '\\':
		return 2, s[1:2], nil
	case 'u', 'U':
		n := 4
		if s[1] == 'U' {
			n = 8
		}
		if len(s) < 2+n {
			return 0, "", fmt.Errorf("bad unicode escape")
		}
		v, err := strconv.ParseUint(s[2:2+n], 16, 32)
		if err != nil {
			return 0, "", fmt.Errorf("bad unicode escape %q", s[:2+n])
		}
		return 2 + n, string(rune(v)), nil
	}
	return 0, "", fmt.Errorf("bad escape %q", s[:2])
}

// unescape resolves the UCHARs of an IRI.
func unescape(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] == '\\' {
			n, r, err := escape(s[i:])
			if err != nil {
				return "", err
			}
			b.WriteString(r)
			i += n
			continue
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String(), nil
}
