package features

import (
	"context"
	"encoding/json"
	"math"

	"github.com/jackc/pgx/v5"
)

// Stats are the statistics of one column.
type Stats struct {
	Column, Type                    string
	Count, NullCount, DistinctCount int64
	Min, Max                        any
	Mean, Stddev, P25, Median, P75  *float64
	TopValues                       []ValueCount
}

var numericTypes = map[string]bool{"smallint": true, "integer": true, "bigint": true, "real": true,
	"double precision": true, "numeric": true}

// ColumnStats computes counts, range and, for numbers, mean, spread and quartiles in one scan;
// text-like columns also get their ten most frequent values.
func (r Reader) ColumnStats(ctx context.Context, t Table, column string) (Stats, error) {
	c, err := t.Column(column)
	if err != nil {
		return Stats{}, err
	}
	col := "t." + pgx.Identifier{c.Name}.Sanitize()
	st := Stats{Column: c.Name, Type: c.Type}
	var minRaw, maxRaw []byte
	var q []*float64
	if numericTypes[c.Type] {
		err = r.Pool.QueryRow(ctx, "SELECT count(*), count(*) - count("+col+"), count(DISTINCT "+col+"), to_jsonb(min("+col+")), to_jsonb(max("+col+")), "+
			"avg("+col+")::float8, stddev_samp("+col+")::float8, percentile_cont(ARRAY[0.25, 0.5, 0.75]) WITHIN GROUP (ORDER BY "+col+")::float8[] FROM "+t.ident()+" t").
			Scan(&st.Count, &st.NullCount, &st.DistinctCount, &minRaw, &maxRaw, &st.Mean, &st.Stddev, &q)
		if len(q) == 3 {
			st.P25, st.Median, st.P75 = q[0], q[1], q[2]
		}
	} else {
		minmax := "NULL::jsonb, NULL::jsonb"
		if orderable(c.Type) {
			minmax = "to_jsonb(min(" + col + ")), to_jsonb(max(" + col + "))"
		}
		err = r.Pool.QueryRow(ctx, "SELECT count(*), count(*) - count("+col+"), count(DISTINCT "+col+"), "+minmax+" FROM "+t.ident()+" t").
			Scan(&st.Count, &st.NullCount, &st.DistinctCount, &minRaw, &maxRaw)
		if err == nil {
			st.TopValues, _, err = r.Values(ctx, t, column, "", false, 0, 10)
		}
	}
	if err != nil {
		return Stats{}, err
	}
	_ = json.Unmarshal(minRaw, &st.Min)
	_ = json.Unmarshal(maxRaw, &st.Max)
	for _, p := range []**float64{&st.Mean, &st.Stddev} {
		if *p != nil && (math.IsNaN(**p) || math.IsInf(**p, 0)) {
			*p = nil
		}
	}
	return st, nil
}
