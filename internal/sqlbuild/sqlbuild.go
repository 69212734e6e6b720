// Package sqlbuild is the one place where dynamic SQL gets its parameters. Items, records and
// the CQL2 translation write their conditions through one Builder, so placeholders are numbered
// once, in the order the values are added, whoever adds them; and the antimeridian is split by
// one rule (Spans).
//
// Only SQL text fixed in our code or quoted with pgx.Identifier goes into a query; every value
// is a parameter.
package sqlbuild

import "strconv"

// Builder hands out placeholders for values and keeps the values in placeholder order.
type Builder struct{ args []any }

// Arg adds a value and returns its placeholder ($1, $2, ...).
func (b *Builder) Arg(v any) string {
	b.args = append(b.args, v)
	return "$" + strconv.Itoa(len(b.args))
}

// Cast is Arg with an explicit type, for values whose type the context does not fix
// (`$3::float8`).
func (b *Builder) Cast(v any, sqlType string) string { return b.Arg(v) + "::" + sqlType }

// Args are the values, to pass with the query.
func (b *Builder) Args() []any { return b.args }

// Len is the number of values added so far.
func (b *Builder) Len() int { return len(b.args) }
