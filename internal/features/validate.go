package features

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// Issue is one problem found in a dataset.
type Issue struct {
	Gid     *int64
	Kind    string // invalid_geometry, empty_geometry, null_geometry, out_of_range, crs_undefined
	Message string
}

// Validation is the geometry check of a dataset.
type Validation struct {
	FeatureCount, Invalid, Empty, Null, OutOfRange int64
	CRSDefined                                     bool
	Issues                                         []Issue
	Truncated                                      bool
	// AttributeCompleteness is the share of non-null attribute values, 0..1 (1 without attributes).
	AttributeCompleteness float64
}

// MaxIssues bounds the issues listed one by one; the counts always cover every feature.
const MaxIssues = 100

// Validate counts invalid, empty, null and out-of-range geometries (WGS84 bounds, since data
// tables are stored in EPSG:4326) and lists the first problems with ST_IsValidReason.
func (r Reader) Validate(ctx context.Context, t Table) (Validation, error) {
	var v Validation
	id := t.ident()
	var srid int
	err := r.Pool.QueryRow(ctx, `SELECT count(*),
			count(*) FILTER (WHERE geom IS NOT NULL AND NOT ST_IsValid(geom)),
			count(*) FILTER (WHERE geom IS NOT NULL AND ST_IsEmpty(geom)),
			count(*) FILTER (WHERE geom IS NULL),
			count(*) FILTER (WHERE geom IS NOT NULL AND NOT ST_IsEmpty(geom) AND
				(ST_XMin(geom) < -180 OR ST_XMax(geom) > 180 OR ST_YMin(geom) < -90 OR ST_YMax(geom) > 90)),
			coalesce(Find_SRID($1, $2, 'geom'), 0)
		FROM `+id, t.Schema, t.Name).Scan(&v.FeatureCount, &v.Invalid, &v.Empty, &v.Null, &v.OutOfRange, &srid)
	if err != nil {
		return v, err
	}
	v.CRSDefined = srid > 0
	rows, err := r.Pool.Query(ctx, `SELECT gid, kind, message FROM (
			SELECT gid, 'invalid_geometry' AS kind, ST_IsValidReason(geom) AS message FROM `+id+` WHERE geom IS NOT NULL AND NOT ST_IsValid(geom)
			UNION ALL SELECT gid, 'empty_geometry', 'the geometry is empty' FROM `+id+` WHERE geom IS NOT NULL AND ST_IsEmpty(geom)
			UNION ALL SELECT gid, 'null_geometry', 'the feature has no geometry' FROM `+id+` WHERE geom IS NULL
			UNION ALL SELECT gid, 'out_of_range', 'coordinates outside longitude -180..180 or latitude -90..90' FROM `+id+`
				WHERE geom IS NOT NULL AND NOT ST_IsEmpty(geom) AND (ST_XMin(geom) < -180 OR ST_XMax(geom) > 180 OR ST_YMin(geom) < -90 OR ST_YMax(geom) > 90)
		) x ORDER BY gid LIMIT $1`, MaxIssues+1)
	if err != nil {
		return v, err
	}
	v.Issues, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (Issue, error) {
		var i Issue
		return i, row.Scan(&i.Gid, &i.Kind, &i.Message)
	})
	if err != nil {
		return v, err
	}
	if len(v.Issues) > MaxIssues {
		v.Issues, v.Truncated = v.Issues[:MaxIssues], true
	}
	if !v.CRSDefined {
		v.Issues = append(v.Issues, Issue{Kind: "crs_undefined", Message: "the geometry column declares no coordinate reference system"})
	}
	v.AttributeCompleteness, err = r.completeness(ctx, t)
	return v, err
}

// completeness is the share of non-null attribute values over all attribute columns.
func (r Reader) completeness(ctx context.Context, t Table) (float64, error) {
	if len(t.Columns) == 0 {
		return 1, nil
	}
	sum := ""
	for i, c := range t.Columns {
		if i > 0 {
			sum += " + "
		}
		sum += "count(" + pgx.Identifier{c.Name}.Sanitize() + ")"
	}
	var filled, rows int64
	if err := r.Pool.QueryRow(ctx, "SELECT ("+sum+")::bigint, count(*) FROM "+t.ident()).Scan(&filled, &rows); err != nil {
		return 0, err
	}
	if rows == 0 {
		return 1, nil
	}
	return float64(filled) / float64(rows*int64(len(t.Columns))), nil
}
