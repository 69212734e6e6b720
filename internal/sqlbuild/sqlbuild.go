// Package sqlbuild is the one place where dynamic SQL gets its parameters. Items, records and
// the CQL2 translation write their conditions through one Builder, so placeholders are numbered
// once, in the order the values are added, whoever adds them; and the antimeridian is split by
// one rule (Spans).
//
// Only SQL text fixed in our code or quoted with pgx.Identifier goes into a query; every value
// is a parameter.
package sqlbuild

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Builder hands out placeholders for values and keeps the values in placeholder order.
type Builder struct {
	args    []any
	setting string // when set, values are session settings of this prefix (see Settings)
}

// Settings is a Builder for SQL run by a program that takes SQL text but no bind parameters
// (ogr2ogr): each value travels as a session setting in the connection's startup options, out
// of the SQL text, and the SQL reads it back with current_setting. Every value must be typed by
// an explicit cast after its placeholder, since a setting is text.
func Settings() *Builder { return &Builder{setting: "meridian.arg"} }

// Arg adds a value and returns its placeholder ($1, $2, ...).
func (b *Builder) Arg(v any) string {
	b.args = append(b.args, v)
	if b.setting != "" {
		return "current_setting('" + b.setting + strconv.Itoa(len(b.args)) + "')"
	}
	return "$" + strconv.Itoa(len(b.args))
}

// Options are the values of a Settings builder as libpq options (PGOPTIONS): `-c name=value`
// each, with every space and backslash in a value escaped, so a value stays one setting and
// can never add options of its own (the server splits options at unescaped white space).
func (b *Builder) Options() (string, error) {
	var sb strings.Builder
	for i, v := range b.args {
		var s string
		switch v := v.(type) {
		case string:
			s = v
		case bool:
			s = strconv.FormatBool(v)
		case int:
			s = strconv.Itoa(v)
		case int64:
			s = strconv.FormatInt(v, 10)
		case float64:
			s = strconv.FormatFloat(v, 'g', -1, 64)
		case time.Time:
			s = v.Format(time.RFC3339Nano)
		default:
			return "", fmt.Errorf("sqlbuild: a %T cannot travel as a setting", v)
		}
		if strings.IndexByte(s, 0) >= 0 {
			return "", fmt.Errorf("sqlbuild: a value with a NUL byte cannot travel as a setting")
		}
		fmt.Fprintf(&sb, " -c %s%d=", b.setting, i+1)
		for _, r := range s {
			switch r {
			case ' ', '\t', '\n', '\v', '\f', '\r', '\\':
				sb.WriteByte('\\')
			}
			sb.WriteRune(r)
		}
	}
	return sb.String(), nil
}

// Cast is Arg with an explicit type, for values whose type the context does not fix
// (`$3::float8`).
func (b *Builder) Cast(v any, sqlType string) string { return b.Arg(v) + "::" + sqlType }

// Args are the values, to pass with the query.
func (b *Builder) Args() []any { return b.args }

// Len is the number of values added so far.
func (b *Builder) Len() int { return len(b.args) }

// likeEscapes makes LIKE's wildcards and its escape character (backslash, the default ESCAPE)
// match themselves.
var likeEscapes = strings.NewReplacer(`\`, `\\`, "%", `\%`, "_", `\_`)

// Contains is the LIKE pattern of text found anywhere, the text's own %, _ and \ taken literally;
// it is a value (a parameter), for a condition `x ILIKE $n`.
func Contains(text string) string { return "%" + likeEscapes.Replace(text) + "%" }
