package handlers

import (
	"errors"

	"meridian/internal/apperr"
	"meridian/internal/catalog"
	"meridian/internal/cql2"
)

// cql2Filter parses a filter and returns its translation to SQL, deferred until the query knows
// where its placeholders start. Parse and translation errors are 400 problems that say where.
func cql2Filter(lang, src string, o cql2.Options) (func(next int) (string, []any, error), error) {
	e, err := cql2.Parse(lang, src)
	if err != nil {
		return nil, filterProblem(err)
	}
	return func(next int) (string, []any, error) {
		o.NextArg = next
		sql, args, err := cql2.SQL(e, o)
		if err != nil {
			return "", nil, filterProblem(err)
		}
		return sql, args, nil
	}, nil
}

func filterProblem(err error) error {
	var ce *cql2.Error
	if errors.As(err, &ce) {
		return apperr.Invalid("filter: %s", ce.Error())
	}
	return err
}

// recordTypes maps the record fields' types to CQL2 types.
var recordTypes = map[string]cql2.Type{"string": cql2.String, "integer": cql2.Integer, "timestamp": cql2.Timestamp, "geometry": cql2.Geometry}

// recordFilter translates a CQL2 filter over the record fields (CRS84 literals).
func recordFilter(lang, src string) (func(int) (string, []any, error), error) {
	props := make(map[string]cql2.Property, len(catalog.RecordFields))
	for _, f := range catalog.RecordFields {
		props[f.Name] = cql2.Property{Name: f.Name, SQL: f.SQL, Type: recordTypes[f.Type]}
	}
	return cql2Filter(lang, src, cql2.Options{Properties: props, FilterSRID: 4326, StorageSRID: 4326})
}
