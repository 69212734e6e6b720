package cql2

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

type tokKind uint8

const (
	tEOF tokKind = iota
	tIdent
	tQIdent // "quoted identifier"
	tString
	tNumber
	tLParen
	tRParen
	tComma
	tEq
	tNe
	tLt
	tGt
	tLe
	tGe
	tPlus
	tMinus
	tStar
	tSlash
	tPercent
	tCaret
)

var tokNames = [...]string{"end of filter", "identifier", "quoted identifier", "string", "number",
	"'('", "')'", "','", "'='", "'<>'", "'<'", "'>'", "'<='", "'>='", "'+'", "'-'", "'*'", "'/'", "'%'", "'^'"}

// token is a span of the source; its text is only materialised when the parser needs it.
type token struct {
	kind     tokKind
	pos, end int
	esc      bool // a string or quoted identifier holding doubled quotes or \' to undo
}

type lexer struct {
	src string
	pos int
}

func isIdentStart(r rune) bool {
	return r == '_' || unicode.IsLetter(r)
}

// isIdentPart follows the CQL2 identifier grammar loosely: letters, digits, '_', the ':' and
// '.' that STAC-style names use, and combining marks.
func isIdentPart(r rune) bool {
	return r == '_' || r == ':' || r == '.' || unicode.IsLetter(r) || unicode.IsDigit(r) ||
		unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Mc, r)
}

func (l *lexer) next() token {
	src := l.src
	i := l.pos
	for i < len(src) {
		c := src[i]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(src[i:])
			if unicode.IsSpace(r) {
				i += n
				continue
			}
		}
		break
	}
	if i >= len(src) {
		l.pos = i
		return token{kind: tEOF, pos: i, end: i}
	}
	start := i
	c := src[i]
	var k tokKind
	switch {
	case c == '(':
		k, i = tLParen, i+1
	case c == ')':
		k, i = tRParen, i+1
	case c == ',':
		k, i = tComma, i+1
	case c == '=':
		k, i = tEq, i+1
	case c == '<':
		k, i = tLt, i+1
		if i < len(src) && src[i] == '>' {
			k, i = tNe, i+1
		} else if i < len(src) && src[i] == '=' {
			k, i = tLe, i+1
		}
	case c == '>':
		k, i = tGt, i+1
		if i < len(src) && src[i] == '=' {
			k, i = tGe, i+1
		}
	case c == '+':
		k, i = tPlus, i+1
	case c == '-':
		k, i = tMinus, i+1
	case c == '*':
		k, i = tStar, i+1
	case c == '/':
		k, i = tSlash, i+1
	case c == '%':
		k, i = tPercent, i+1
	case c == '^':
		k, i = tCaret, i+1
	case c == '!' && i+1 < len(src) && src[i+1] == '=':
		fail(i, "unexpected '!=': CQL2 writes not-equal as '<>'")
	case c == '\'':
		return l.quoted(start, '\'', tString)
	case c == '"':
		return l.quoted(start, '"', tQIdent)
	case c >= '0' && c <= '9' || c == '.' && i+1 < len(src) && src[i+1] >= '0' && src[i+1] <= '9':
		return l.number(start)
	case c < utf8.RuneSelf && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'):
		return l.ident(start)
	case c >= utf8.RuneSelf:
		r, _ := utf8.DecodeRuneInString(src[i:])
		if isIdentStart(r) {
			return l.ident(start)
		}
		fail(i, "unexpected character "+strconv.QuoteRune(r))
	default:
		fail(i, "unexpected character "+strconv.QuoteRune(rune(c)))
	}
	l.pos = i
	return token{kind: k, pos: start, end: i}
}

func (l *lexer) ident(start int) token {
	src := l.src
	i := start
	for i < len(src) {
		c := src[i]
		if c < utf8.RuneSelf {
			if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == ':' || c == '.' {
				i++
				continue
			}
			break
		}
		r, n := utf8.DecodeRuneInString(src[i:])
		if !isIdentPart(r) {
			break
		}
		i += n
	}
	l.pos = i
	return token{kind: tIdent, pos: start, end: i}
}

// quoted scans '...' (a string: ” or \' stand for a quote) or "..." (an identifier: "" stands
// for a double quote).
func (l *lexer) quoted(start int, q byte, k tokKind) token {
	src := l.src
	esc := false
	for i := start + 1; i < len(src); i++ {
		c := src[i]
		if c == '\\' && q == '\'' && i+1 < len(src) && src[i+1] == '\'' {
			esc = true
			i++
			continue
		}
		if c == q {
			if i+1 < len(src) && src[i+1] == q {
				esc = true
				i++
				continue
			}
			l.pos = i + 1
			return token{kind: k, pos: start, end: i + 1, esc: esc}
		}
	}
	if k == tString {
		fail(start, "string is not terminated (a closing ' is missing)")
	}
	fail(start, "quoted identifier is not terminated (a closing \" is missing)")
	return token{}
}

func (l *lexer) number(start int) token {
	src := l.src
	i := start
	digits := func() int {
		n := 0
		for i < len(src) && src[i] >= '0' && src[i] <= '9' {
			i++
			n++
		}
		return n
	}
	digits()
	if i < len(src) && src[i] == '.' {
		i++
		digits()
	}
	if i < len(src) && (src[i] == 'e' || src[i] == 'E') {
		j := i
		i++
		if i < len(src) && (src[i] == '+' || src[i] == '-') {
			i++
		}
		if digits() == 0 {
			fail(j, "malformed number: exponent without digits")
		}
	}
	l.pos = i
	return token{kind: tNumber, pos: start, end: i}
}

// unquote returns the content of a string or quoted identifier token.
func unquote(src string, t token) string {
	s := src[t.pos+1 : t.end-1]
	if !t.esc {
		return s
	}
	q := src[t.pos]
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c == q || c == '\\' && q == '\'') && i+1 < len(s) && s[i+1] == q {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// parseNumber converts a number token, keeping whether it is an integer.
func parseNumber(s string, pos int) *NumberLit {
	if strings.IndexAny(s, ".eE") < 0 {
		n, err := strconv.ParseInt(s, 10, 64)
		if err == nil {
			return &NumberLit{Pos: pos, Val: float64(n), Int: true, I: n}
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		fail(pos, "number "+shorten(s)+" is out of range")
	}
	return &NumberLit{Pos: pos, Val: v}
}

func shorten(s string) string {
	if len(s) > 40 {
		return s[:37] + "..."
	}
	return s
}

type keyword uint8

const (
	kwNone keyword = iota
	kwAnd
	kwOr
	kwNot
	kwLike
	kwBetween
	kwIn
	kwIs
	kwNull
	kwTrue
	kwFalse
	kwDiv
)

// keywordOf classifies an identifier, case-insensitively, without allocating.
func keywordOf(s string) keyword {
	switch len(s) {
	case 2:
		switch {
		case strings.EqualFold(s, "or"):
			return kwOr
		case strings.EqualFold(s, "in"):
			return kwIn
		case strings.EqualFold(s, "is"):
			return kwIs
		}
	case 3:
		switch {
		case strings.EqualFold(s, "and"):
			return kwAnd
		case strings.EqualFold(s, "not"):
			return kwNot
		case strings.EqualFold(s, "div"):
			return kwDiv
		}
	case 4:
		switch {
		case strings.EqualFold(s, "like"):
			return kwLike
		case strings.EqualFold(s, "null"):
			return kwNull
		case strings.EqualFold(s, "true"):
			return kwTrue
		}
	case 5:
		if strings.EqualFold(s, "false") {
			return kwFalse
		}
	case 7:
		if strings.EqualFold(s, "between") {
			return kwBetween
		}
	}
	return kwNone
}

func itoa(n int) string { return strconv.Itoa(n) }
