package features

import "meridian/internal/apperr"

// CQL2Filter translates a CQL2 filter over the table's queryables (interim: the parser lands
// next).
func CQL2Filter(t Table, lang, src string, filterSRID int, latFirst bool, storageSRID int) (func(int) (string, []any, error), error) {
	return nil, apperr.Invalid("filter: CQL2 filtering is not available yet")
}
