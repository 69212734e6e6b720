package features

import (
	"context"
	"strings"

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
//
// A table without geometry has nothing to check but its attributes (and no CRS that could be
// missing).
func (r Reader) Validate(ctx context.Context, t Table) (Validation, error) {
	var v Validation
	id := t.ident() + " t"
	if t.Geom == "" {
		v.CRSDefined = true
		if err := r.Pool.QueryRow(ctx, "SELECT count(*) FROM "+id).Scan(&v.FeatureCount); err != nil {
			return v, err
		}
		var err error
		v.AttributeCompleteness, err = r.completeness(ctx, t)
		return v, err
	}
	g, gid := t.geom(), t.id()
	// Range checks happen in WGS84 whatever the table's CRS (registered tables keep theirs).
	w := "ST_Transform(" + g + ", 4326)"
	outside := "(ST_XMin(" + w + ") < -180 OR ST_XMax(" + w + ") > 180 OR ST_YMin(" + w + ") < -90 OR ST_YMax(" + w + ") > 90)"
	var srid int
	err := r.Pool.QueryRow(ctx, `SELECT coalesce(Find_SRID($1, $2, $3), 0)`, t.Schema, t.Name, t.Geom).Scan(&srid)
	if err != nil {
		return v, err
	}
	if srid == 0 {
		outside = "(ST_XMin(" + g + ") < -180 OR ST_XMax(" + g + ") > 180 OR ST_YMin(" + g + ") < -90 OR ST_YMax(" + g + ") > 90)"
	}
	err = r.Pool.QueryRow(ctx, `SELECT count(*),
			count(*) FILTER (WHERE `+g+` IS NOT NULL AND NOT ST_IsValid(`+g+`)),
			count(*) FILTER (WHERE `+g+` IS NOT NULL AND ST_IsEmpty(`+g+`)),
			count(*) FILTER (WHERE `+g+` IS NULL),
			count(*) FILTER (WHERE `+g+` IS NOT NULL AND NOT ST_IsEmpty(`+g+`) AND `+outside+`)
		FROM `+id).Scan(&v.FeatureCount, &v.Invalid, &v.Empty, &v.Null, &v.OutOfRange)
	if err != nil {
		return v, err
	}
	v.CRSDefined = srid > 0
	rows, err := r.Pool.Query(ctx, `SELECT gid, kind, message FROM (
			SELECT `+gid+`::bigint AS gid, 'invalid_geometry' AS kind, ST_IsValidReason(`+g+`) AS message FROM `+id+` WHERE `+g+` IS NOT NULL AND NOT ST_IsValid(`+g+`)
			UNION ALL SELECT `+gid+`::bigint, 'empty_geometry', 'the geometry is empty' FROM `+id+` WHERE `+g+` IS NOT NULL AND ST_IsEmpty(`+g+`)
			UNION ALL SELECT `+gid+`::bigint, 'null_geometry', 'the feature has no geometry' FROM `+id+` WHERE `+g+` IS NULL
			UNION ALL SELECT `+gid+`::bigint, 'out_of_range', 'coordinates outside longitude -180..180 or latitude -90..90' FROM `+id+`
				WHERE `+g+` IS NOT NULL AND NOT ST_IsEmpty(`+g+`) AND `+outside+`
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

// completeness is the share of filled attribute values over all attribute columns: neither
// null nor, in a text column, blank (an empty cell of a CSV or a form is as empty as a null).
func (r Reader) completeness(ctx context.Context, t Table) (float64, error) {
	if len(t.Columns) == 0 {
		return 1, nil
	}
	sum := ""
	for i, c := range t.Columns {
		if i > 0 {
			sum += " + "
		}
		col := pgx.Identifier{c.Name}.Sanitize()
		if textual(c.Type) {
			col = "nullif(btrim(" + col + "), '')"
		}
		sum += "count(" + col + ")"
	}
	var filled, rows int64
	if err := r.Pool.QueryRow(ctx, "SELECT ("+sum+")::bigint, count(*) FROM "+t.ident()+" t").Scan(&filled, &rows); err != nil {
		return 0, err
	}
	if rows == 0 {
		return 1, nil
	}
	return float64(filled) / float64(rows*int64(len(t.Columns))), nil
}

// textual tells the character types, whose blank values count as missing.
func textual(typ string) bool {
	return typ == "text" || strings.HasPrefix(typ, "character")
}
