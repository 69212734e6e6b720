package features

import (
	"context"
	"encoding/json"
	"math"
	"strings"

	"github.com/jackc/pgx/v5"

	"meridian/internal/apperr"
)

// Stats are the statistics of one column.
type Stats struct {
	Column, Type string
	// DataType is the kind a styling client classifies by: numeric, categorical (text),
	// temporal, boolean, or the column's type for anything else.
	DataType                        string
	Count, NullCount, DistinctCount int64
	Min, Max                        any
	Mean, Stddev, P25, Median, P75  *float64
	// Quantiles are the class breaks of a numeric column: classes-1 values cutting its values
	// into classes of equal counts (empty for other columns).
	Quantiles []float64
	Histogram []Bin // 10 equal-width bins of a numeric column
	TopValues []ValueCount
}

// Bin is one histogram bin: values from Lower to Upper (the last bin includes Upper).
type Bin struct {
	Lower, Upper float64
	Count        int64
}

// The class counts a client may ask quantile breaks for; DefaultClasses gives the quartiles.
const (
	MinClasses     = 2
	MaxClasses     = 20
	DefaultClasses = 4
	histogramBins  = 10
)

var numericTypes = map[string]bool{"smallint": true, "integer": true, "bigint": true, "real": true,
	"double precision": true, "numeric": true}

// dataType is the kind of a column for styling clients.
func dataType(typ string) string {
	switch t := strings.ToLower(typ); {
	case numericTypes[t]:
		return "numeric"
	case t == "text" || strings.HasPrefix(t, "character"):
		return "categorical"
	case t == "date" || strings.HasPrefix(t, "timestamp"):
		return "temporal"
	case t == "boolean":
		return "boolean"
	}
	return typ
}

// ColumnStats computes counts, range and, for numbers, mean, spread, quartiles, the breaks of
// classes classes of equal counts and a histogram; text-like columns also get their ten most
// frequent values.
func (r Reader) ColumnStats(ctx context.Context, t Table, column string, classes int) (Stats, error) {
	if classes < MinClasses || classes > MaxClasses {
		return Stats{}, apperr.Unprocessable("class_count must be %d to %d", MinClasses, MaxClasses)
	}
	c, err := t.Column(column)
	if err != nil {
		return Stats{}, err
	}
	col := "t." + pgx.Identifier{c.Name}.Sanitize()
	st := Stats{Column: c.Name, Type: c.Type, DataType: dataType(c.Type), Quantiles: []float64{}}
	var minRaw, maxRaw []byte
	if numericTypes[c.Type] {
		// One scan: the quartiles and the class breaks are one ordered-set aggregate.
		fractions := []float64{0.25, 0.5, 0.75}
		for i := 1; i < classes; i++ {
			fractions = append(fractions, float64(i)/float64(classes))
		}
		var q []*float64
		err = r.Pool.QueryRow(ctx, "SELECT count(*), count(*) - count("+col+"), count(DISTINCT "+col+"), to_jsonb(min("+col+")), to_jsonb(max("+col+")), "+
			"avg("+col+")::float8, stddev_samp("+col+")::float8, percentile_cont($1::float8[]) WITHIN GROUP (ORDER BY "+col+")::float8[] FROM "+t.ident()+" t",
			fractions).Scan(&st.Count, &st.NullCount, &st.DistinctCount, &minRaw, &maxRaw, &st.Mean, &st.Stddev, &q)
		if err == nil && len(q) == len(fractions) && q[0] != nil {
			st.P25, st.Median, st.P75 = q[0], q[1], q[2]
			for _, v := range q[3:] {
				st.Quantiles = append(st.Quantiles, *v)
			}
		}
		if err == nil {
			st.Histogram, err = r.histogram(ctx, t, col, minRaw, maxRaw)
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

// histogram counts a numeric column's values in histogramBins equal-width bins between its
// minimum and maximum (one bin when they are equal); nil without values.
func (r Reader) histogram(ctx context.Context, t Table, col string, minRaw, maxRaw []byte) ([]Bin, error) {
	var lo, hi float64
	if json.Unmarshal(minRaw, &lo) != nil || json.Unmarshal(maxRaw, &hi) != nil || math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		return nil, nil
	}
	n := histogramBins
	if hi <= lo {
		n = 1
	}
	bins := make([]Bin, n)
	width := (hi - lo) / float64(n)
	for i := range bins {
		bins[i].Lower, bins[i].Upper = lo+float64(i)*width, lo+float64(i+1)*width
	}
	bins[n-1].Upper = hi
	// width_bucket puts the maximum in bin n+1: it belongs to the last bin.
	rows, err := r.Pool.Query(ctx, "SELECT least(greatest(width_bucket("+col+"::float8, $1::float8, $2::float8, $3::int), 1), $3::int), count(*) FROM "+
		t.ident()+" t WHERE "+col+" IS NOT NULL GROUP BY 1", lo, math.Max(hi, lo+1), n)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var b int
		var count int64
		if err := rows.Scan(&b, &count); err != nil {
			return nil, err
		}
		bins[b-1].Count = count
	}
	return bins, rows.Err()
}
