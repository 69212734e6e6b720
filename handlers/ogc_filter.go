package handlers

import "meridian/internal/apperr"

// recordFilter translates a CQL2 filter over the record fields (interim: the parser lands next).
func recordFilter(lang, src string) (func(int) (string, []any, error), error) {
	return nil, apperr.Invalid("filter: CQL2 filtering is not available yet")
}
