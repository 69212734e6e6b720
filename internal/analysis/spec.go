// Package analysis runs spatial operations (buffer, centroid, clip, dissolve, spatial join,
// measure, select by location, intersect) over dataset tables in PostGIS. A Spec names the
// tables and columns the catalog resolved for the caller; Select turns it into one SELECT whose
// identifiers are quoted with pgx.Identifier and whose values are parameters. Preview runs it
// for a page of GeoJSON; the ingest package materializes it into a new dataset table.
package analysis

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"meridian/internal/features"
	"meridian/internal/sqlbuild"
)

// The operations, as the contract names them.
const (
	OpBuffer           = "buffer"
	OpCentroid         = "centroid"
	OpClip             = "clip"
	OpDissolve         = "dissolve"
	OpSpatialJoin      = "spatial_join"
	OpMeasure          = "measure"
	OpSelectByLocation = "select_by_location"
	OpIntersect        = "intersect"
)

// Layer is a dataset table an analysis reads, as the catalog described it when the caller's
// access was checked.
type Layer struct {
	DatasetID uuid.UUID         `json:"dataset_id"`
	Schema    string            `json:"schema"`
	Table     string            `json:"table"`
	ID        string            `json:"id"`
	Geom      string            `json:"geom"`
	SRID      int               `json:"srid"`
	Columns   []features.Column `json:"columns"`
}

// Spec is one analysis, resolved: what the job of a materialization keeps and runs.
type Spec struct {
	Operation      string    `json:"operation"`
	Source         Layer     `json:"source"`
	Overlay        *Layer    `json:"overlay,omitempty"` // the mask or join dataset
	Mask           []byte    `json:"mask,omitempty"`    // a GeoJSON geometry in WGS 84
	DistanceMeters float64   `json:"distance_meters,omitempty"`
	JoinFields     []string  `json:"join_fields,omitempty"`
	ByField        string    `json:"by_field,omitempty"`
	BBox           []float64 `json:"bbox,omitempty"` // restricts the source's features (WGS 84)
}

// Params are the operation's parameters as the provenance of its output records them.
func (s Spec) Params() map[string]any {
	p := map[string]any{}
	if s.DistanceMeters > 0 {
		p["distance_meters"] = s.DistanceMeters
	}
	if len(s.Mask) > 0 {
		p["mask"] = json.RawMessage(s.Mask)
	}
	if s.Overlay != nil {
		key := "mask_dataset_id"
		if s.Operation == OpSpatialJoin {
			key = "join_dataset_id"
		}
		p[key] = s.Overlay.DatasetID.String()
	}
	if len(s.JoinFields) > 0 {
		p["join_fields"] = s.JoinFields
	}
	if s.ByField != "" {
		p["by_field"] = s.ByField
	}
	if len(s.BBox) == 4 {
		p["bbox"] = s.BBox
	}
	return p
}

// DatasetParams are the keys of Params that hold dataset ids (removed for a reader who may not
// read that dataset).
var DatasetParams = []string{"mask_dataset_id", "join_dataset_id"}

// Output column names the analysis itself writes; a source column of the same name is renamed
// with a _src suffix so that nothing is overwritten.
var reserved = []string{"gid", "geom", "source_id", "overlay_id", "area_m2", "length_m", "perimeter_m", "feature_count"}

func ident(s ...string) string { return pgx.Identifier(s).Sanitize() }

// geom4326 is the layer's geometry column of alias a in WGS 84.
func (l Layer) geom4326(a string) string {
	g := ident(a, l.Geom)
	if l.SRID == 4326 || l.SRID == 0 {
		return g
	}
	return "ST_Transform(" + g + ", 4326)"
}

// attrs are the source's attribute columns as the output names them.
func (l Layer) attrs() (sel, out []string) {
	for _, c := range l.Columns {
		name := c.Name
		if slices.Contains(reserved, name) {
			name += "_src"
		}
		sel = append(sel, ident("s", c.Name)+" AS "+ident(name))
		out = append(out, ident(name))
	}
	return sel, out
}

// Select is the analysis as one statement: common table expressions `src` (the source's
// features, in WGS 84, with source_id and attributes) and `mask` (the overlay's geometries or
// the mask), then the result with its attributes and a geom column in WGS 84, last.
func (s Spec) Select() (string, []any, error) {
	ctes, body, args, err := s.build()
	return "WITH " + ctes + " " + body, args, err
}

// build returns Select's parts: the common table expressions and the result's query.
func (s Spec) build() (string, string, []any, error) {
	var q sqlbuild.Builder
	sel, out := s.Source.attrs()
	where := "true"
	if len(s.BBox) == 4 {
		env := fmt.Sprintf("ST_MakeEnvelope(%s, %s, %s, %s, 4326)", q.Arg(s.BBox[0]), q.Arg(s.BBox[1]), q.Arg(s.BBox[2]), q.Arg(s.BBox[3]))
		if s.Source.SRID != 4326 && s.Source.SRID != 0 {
			env = "ST_Transform(" + env + ", " + strconv.Itoa(s.Source.SRID) + ")"
		}
		where = ident("s", s.Source.Geom) + " && " + env
	}
	ctes := []string{"src AS NOT MATERIALIZED (SELECT " + strings.Join(append([]string{ident("s", s.Source.ID) + " AS source_id"}, sel...), ", ") +
		", " + s.Source.geom4326("s") + " AS geom FROM " + ident(s.Source.Schema, s.Source.Table) + " s WHERE " + where +
		" AND " + ident("s", s.Source.Geom) + " IS NOT NULL)"}
	switch {
	case len(s.Mask) > 0:
		ctes = append(ctes, "mask AS (SELECT NULL::text AS mid, ST_MakeValid(ST_SetSRID(ST_GeomFromGeoJSON("+q.Arg(string(s.Mask))+"::text), 4326)) AS geom)")
	case s.Overlay != nil:
		ctes = append(ctes, "mask AS NOT MATERIALIZED (SELECT "+ident("o", s.Overlay.ID)+"::text AS mid, "+s.Overlay.geom4326("o")+" AS geom FROM "+
			ident(s.Overlay.Schema, s.Overlay.Table)+" o WHERE "+ident("o", s.Overlay.Geom)+" IS NOT NULL)")
	}
	cols := strings.Join(append([]string{"src.source_id"}, prefixed("src", out)...), ", ")
	var body string
	switch s.Operation {
	case OpBuffer:
		body = "SELECT " + cols + ", ST_Buffer(src.geom::geography, " + q.Arg(s.DistanceMeters) + ")::geometry AS geom FROM src"
	case OpCentroid:
		body = "SELECT " + cols + ", ST_Centroid(src.geom) AS geom FROM src"
	case OpMeasure:
		body = "SELECT " + cols + ", ST_Area(src.geom::geography) AS area_m2, ST_Length(src.geom::geography) AS length_m," +
			" ST_Perimeter(src.geom::geography) AS perimeter_m, src.geom FROM src"
	case OpClip:
		ctes = append(ctes, "cut AS (SELECT ST_Union(geom) AS geom FROM mask)")
		body = "SELECT " + cols + ", ST_Intersection(src.geom, cut.geom) AS geom FROM src, cut" +
			" WHERE ST_Intersects(src.geom, cut.geom) AND NOT ST_IsEmpty(ST_Intersection(src.geom, cut.geom))"
	case OpSelectByLocation:
		near := "ST_Intersects(src.geom, mask.geom)"
		if s.DistanceMeters > 0 {
			near = "ST_DWithin(src.geom::geography, mask.geom::geography, " + q.Arg(s.DistanceMeters) + ")"
		}
		body = "SELECT " + cols + ", src.geom FROM src WHERE EXISTS (SELECT 1 FROM mask WHERE " + near + ")"
	case OpIntersect:
		body = "SELECT " + cols + ", mask.mid AS overlay_id, ST_Intersection(src.geom, mask.geom) AS geom FROM src JOIN mask" +
			" ON ST_Intersects(src.geom, mask.geom) WHERE NOT ST_IsEmpty(ST_Intersection(src.geom, mask.geom))"
	case OpSpatialJoin:
		var js, jo []string
		for _, f := range s.JoinFields {
			js = append(js, ident("o", f)+" AS "+ident("join_"+f))
			jo = append(jo, ident("j", "join_"+f))
		}
		body = "SELECT " + strings.Join(append([]string{cols}, jo...), ", ") + ", src.geom FROM src LEFT JOIN LATERAL (SELECT " +
			strings.Join(append([]string{"true AS matched"}, js...), ", ") + " FROM " + ident(s.Overlay.Schema, s.Overlay.Table) + " o WHERE " +
			"ST_Intersects(" + s.Overlay.geom4326("o") + ", src.geom) ORDER BY " + ident("o", s.Overlay.ID) + " LIMIT 1) j ON true"
	case OpDissolve:
		if s.ByField == "" {
			body = "SELECT count(*)::bigint AS feature_count, ST_Multi(ST_Union(src.geom)) AS geom FROM src"
		} else {
			by := ident(outName(s.ByField))
			body = "SELECT src." + by + ", count(*)::bigint AS feature_count, ST_Multi(ST_Union(src.geom)) AS geom FROM src GROUP BY src." + by
		}
	default:
		return "", "", nil, fmt.Errorf("unknown operation %q", s.Operation)
	}
	return strings.Join(ctes, ", "), body, q.Args(), nil
}

// matched is a scalar subquery (over the CTEs of Select and its result r) counting what the
// operation matched: source features with a join partner, or result features of an overlay;
// NULL for operations that match nothing.
func (s Spec) matched() string {
	switch s.Operation {
	case OpSpatialJoin:
		return "(SELECT count(*) FROM src WHERE EXISTS (SELECT 1 FROM mask WHERE ST_Intersects(src.geom, mask.geom)))"
	case OpClip, OpSelectByLocation, OpIntersect:
		return "(SELECT count(*) FROM r)"
	}
	return "NULL::bigint"
}

func outName(col string) string {
	if slices.Contains(reserved, col) {
		return col + "_src"
	}
	return col
}

func prefixed(alias string, cols []string) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = alias + "." + c
	}
	return out
}
