package features

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
)

// ColumnProfile is the column_info entry of a dataset (spec 2.5 ColumnInfo).
type ColumnProfile struct {
	Name         string         `json:"name"`
	Type         string         `json:"type"`
	SemanticRole string         `json:"semantic_role,omitempty"`
	SampleValues []any          `json:"sample_values"`
	Stats        map[string]any `json:"stats"`
}

// profileSampleRows bounds the rows a profile reads: larger tables are sampled, so profiling a
// million-row import costs seconds, not minutes.
const profileSampleRows = 100000

var (
	temporalName   = regexp.MustCompile(`(?i)(^|_)(date|time|timestamp|year|datetime|day|month|created|updated|modified)(_|$)|_at$|_on$`)
	identifierName = regexp.MustCompile(`(?i)^(id|fid|uuid|code|key)$|(_id|_code|_key|_uuid)$`)
)

// Profile describes every attribute column: type, up to five sample values, basic statistics and
// a semantic role (temporal, identifier, category, measure, text).
func (r Reader) Profile(ctx context.Context, t Table, rows int64) ([]ColumnProfile, error) {
	from := t.ident() + " t"
	sampled := rows > profileSampleRows
	if sampled {
		pct := 100 * float64(profileSampleRows) / float64(rows)
		from += fmt.Sprintf(" TABLESAMPLE SYSTEM (%.4f)", pct)
	}
	out := make([]ColumnProfile, 0, len(t.Columns))
	for _, c := range t.Columns {
		col := "t." + pgx.Identifier{c.Name}.Sanitize()
		numeric := numericTypes[c.Type]
		minmax := "NULL::jsonb, NULL::jsonb"
		if orderable(c.Type) {
			minmax = "to_jsonb(min(" + col + ")), to_jsonb(max(" + col + "))"
		}
		agg := "count(*), count(" + col + "), count(DISTINCT " + col + "), " + minmax + ", " +
			"to_jsonb((array_agg(DISTINCT " + col + ") FILTER (WHERE " + col + " IS NOT NULL))[1:5])"
		if numeric {
			agg += ", avg(" + col + ")::float8"
		} else {
			agg += ", NULL::float8"
		}
		var n, nonNull, distinct int64
		var minRaw, maxRaw, samplesRaw []byte
		var mean *float64
		if err := r.Pool.QueryRow(ctx, "SELECT "+agg+" FROM "+from).Scan(&n, &nonNull, &distinct, &minRaw, &maxRaw, &samplesRaw, &mean); err != nil {
			return nil, err
		}
		p := ColumnProfile{Name: c.Name, Type: c.Type, SampleValues: []any{}, Stats: map[string]any{
			"count": n, "null_count": n - nonNull, "distinct_count": distinct, "sampled": sampled}}
		var v any
		if json.Unmarshal(minRaw, &v) == nil && v != nil {
			p.Stats["min"] = v
		}
		v = nil
		if json.Unmarshal(maxRaw, &v) == nil && v != nil {
			p.Stats["max"] = v
		}
		if mean != nil {
			p.Stats["mean"] = *mean
		}
		_ = json.Unmarshal(samplesRaw, &p.SampleValues)
		if p.SampleValues == nil {
			p.SampleValues = []any{}
		}
		p.SemanticRole = semanticRole(c, nonNull, distinct)
		out = append(out, p)
	}
	return out, nil
}

// orderable types have min and max (booleans, JSON and arrays do not).
func orderable(typ string) bool {
	typ = strings.ToLower(typ)
	return numericTypes[typ] || strings.HasPrefix(typ, "character") || typ == "text" || strings.HasPrefix(typ, "date") ||
		strings.HasPrefix(typ, "timestamp") || strings.HasPrefix(typ, "time")
}

func semanticRole(c Column, nonNull, distinct int64) string {
	typ := strings.ToLower(c.Type)
	switch {
	case strings.HasPrefix(typ, "date") || strings.HasPrefix(typ, "timestamp") || strings.HasPrefix(typ, "time") ||
		(typ != "boolean" && temporalName.MatchString(c.Name)):
		return "temporal"
	case identifierName.MatchString(c.Name) || (nonNull > 1 && distinct == nonNull && !numericTypes[c.Type] && typ != "boolean"):
		return "identifier"
	case typ == "boolean" || (nonNull > 0 && distinct <= 20 && distinct*2 <= nonNull):
		return "category"
	case numericTypes[c.Type]:
		return "measure"
	default:
		return "text"
	}
}
