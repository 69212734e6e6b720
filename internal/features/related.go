package features

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"meridian/internal/apperr"
	"meridian/internal/sqlbuild"
)

// Comparable reports whether the values of two columns can be matched by equality: the same kind
// of value, numbers of any kind counting as one.
func Comparable(a, b Column) bool {
	number := func(k kind) bool { return k == kindInt || k == kindFloat || k == kindNumeric }
	ka, kb := kindOf(a.Type), kindOf(b.Type)
	return ka == kb || number(ka) && number(kb)
}

// KeyColumn finds a column a relationship may name: an attribute, or the table's key.
func (t Table) KeyColumn(name string) (Column, error) {
	if name == t.ID {
		return Column{Name: t.ID, Type: t.IDType}, nil
	}
	return t.Column(name)
}

// ValueOf reads one column of the feature with key id; no such feature is a 404.
func (r Reader) ValueOf(ctx context.Context, t Table, id, column string) (any, error) {
	c, err := t.KeyColumn(column)
	if err != nil {
		return nil, err
	}
	var b sqlbuild.Builder
	sql := "SELECT t." + pgx.Identifier{c.Name}.Sanitize() + " FROM " + t.ident() + " t WHERE " + idSQL(&b, t, id)
	var v any
	err = r.Pool.QueryRow(ctx, sql, b.Args()...).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, apperr.NotFound("feature %s not found", id)
	}
	return v, err
}
