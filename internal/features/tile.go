package features

import (
	"context"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"meridian/internal/apperr"
	"meridian/internal/cql2"
	"meridian/internal/db"
	"meridian/internal/sqlbuild"
)

// Tiles are Mapbox vector tiles of the web-mercator grid, built by PostGIS in one statement:
// ST_AsMVTGeom clips and quantizes each geometry to the tile, ST_AsMVT encodes the layer.
const (
	TileExtent = 4096 // MVT coordinate units per tile side
	TileBuffer = 256  // units kept around the tile so strokes and labels cross edges cleanly

	earthRadius             = "6378137"            // of EPSG:3857's sphere, in metres
	mercatorMetresPerDegree = "111319.49079327357" // π R / 180
)

// TileQuery is one tile of a table.
type TileQuery struct {
	Z, X, Y     int
	StorageSRID int    // of the geometry column; 0 reads as 4326
	Layer       string // the layer name written into the tile
	Columns     []Column
	Filter      *cql2.Filter // over Queryables(t)
	MaxFeatures int          // the most features one tile carries; 0 for no cap
	// Simplify is the tolerance of line and polygon simplification in tile units (1 = one of the
	// 4096 units of a side); 0 leaves geometries to ST_AsMVTGeom's grid alone.
	Simplify float64
	Points   bool // the geometry column holds points only: no simplification to pay for

	// ClusterCells, when set, aggregates the features' points on a grid of ClusterCells ×
	// ClusterCells cells per tile: one point per cell with cluster, point_count and
	// point_count_abbreviated, or the lone feature itself with its columns.
	ClusterCells int
}

// Tile renders the tile; an empty tile is empty bytes.
func (r Reader) Tile(ctx context.Context, t Table, q TileQuery) ([]byte, error) {
	if t.Geom == "" {
		return nil, apperr.Unprocessable("the dataset has no geometry to tile")
	}
	var b sqlbuild.Builder
	sql, err := tileSQL(&b, t, q)
	if err != nil {
		return nil, err
	}
	var mvt []byte
	if err := r.Pool.QueryRow(ctx, sql, b.Args()...).Scan(&mvt); err != nil {
		return nil, db.QueryValueError(err)
	}
	return mvt, nil
}

// tileSQL is the statement of one tile. The tile's envelope goes to the table's reference system
// once, so the bounding-box test runs on the stored geometries and their GIST index; only the
// features found are transformed to web mercator.
func tileSQL(b *sqlbuild.Builder, t Table, q TileQuery) (string, error) {
	srid := q.StorageSRID
	if srid == 0 {
		srid = 4326
	}
	z, x, y := b.Cast(q.Z, "int"), b.Cast(q.X, "int"), b.Cast(q.Y, "int")
	margin := strconv.FormatFloat(float64(TileBuffer)/TileExtent, 'f', -1, 64)
	if q.ClusterCells > 0 {
		margin = "0" // a cell belongs to one tile: its count does not depend on the neighbours
	}
	search := "ST_TileEnvelope(" + z + ", " + x + ", " + y + ", margin => " + margin + ")"
	if srid != 3857 {
		// The buffer of an edge tile reaches past the world's edge, where a transform to
		// longitudes would wrap around to the far side: keep it within the world.
		search = "ST_ClipByBox2D(" + search + ", ST_TileEnvelope(0, 0, 0)::box2d)"
	}
	switch srid {
	case 3857:
	case 4326:
		search = "ST_Transform(" + search + ", 4326)"
	default:
		// Straight edges in mercator are curves elsewhere: densify before transforming, so
		// the envelope still covers the tile.
		search = "ST_Transform(ST_Segmentize(" + search + ", ST_XMax(" + search + ") / 64 - ST_XMin(" + search + ") / 64), " + strconv.Itoa(srid) + ")"
	}
	env := "WITH e AS (SELECT ST_TileEnvelope(" + z + ", " + x + ", " + y + ") AS tile, " + search + " AS search)"
	where := []string{t.geom() + " && e.search"}
	if q.Filter != nil {
		cond, err := q.Filter.Render(b, Queryables(t), srid)
		if err != nil {
			return "", err
		}
		where = append(where, cond)
	}
	from := " FROM " + t.ident() + " t, e WHERE " + strings.Join(where, " AND ")
	// MVT feature ids are integers: a key of another type (registered tables) gives none.
	id, idName := "NULL::bigint", "NULL"
	if kindOf(t.IDType) == kindInt {
		id, idName = t.id(), "'mvt_id'"
	}
	mercator := t.geom()
	if srid != 3857 {
		mercator = "ST_Transform(" + mercator + ", 3857)"
	}
	encode := func(rows string) string {
		return env + " SELECT ST_AsMVT(m, " + b.Cast(q.Layer, "text") + ", " + strconv.Itoa(TileExtent) + ", 'mvt_geom', " + idName + ") FROM (" +
			rows + ") m WHERE m.mvt_geom IS NOT NULL"
	}
	if q.ClusterCells > 0 {
		return encode(clusterRows(b, t, q, id, mercator, from)), nil
	}
	if q.Simplify > 0 && !q.Points {
		// The tolerance in metres: the tile's width over the extent, times the units asked.
		tol := b.Cast(q.Simplify, "float8") + " * (ST_XMax(e.tile) - ST_XMin(e.tile)) / " + strconv.Itoa(TileExtent)
		mercator = "ST_Simplify(" + mercator + ", " + tol + ", true)"
	}
	rows := "SELECT " + id + " AS mvt_id, ST_AsMVTGeom(" + mercator + ", e.tile, " + strconv.Itoa(TileExtent) + ", " +
		strconv.Itoa(TileBuffer) + ", true) AS mvt_geom" + tileColumns(q.Columns) + from
	if q.MaxFeatures > 0 {
		rows += " LIMIT " + b.Arg(q.MaxFeatures)
	}
	return encode(rows), nil
}

// clusterRows aggregates the tile's points (the point on the surface of lines and polygons) per
// grid cell; a cell of one feature is that feature, with its id and columns.
func clusterRows(b *sqlbuild.Builder, t Table, q TileQuery, id, mercator, from string) string {
	cell := "((ST_XMax(e.tile) - ST_XMin(e.tile)) / " + b.Cast(q.ClusterCells, "int") + ")"
	cells := "SELECT count(*) AS n, min(c.id) AS id, avg(c.x) AS x, avg(c.y) AS y FROM (" + clusterPoints(t, q, id, mercator, from) + ") c, e" +
		" GROUP BY floor((c.x - ST_XMin(e.tile)) / " + cell + "), floor((c.y - ST_YMin(e.tile)) / " + cell + ")"
	cols, lone := q.Columns, " LEFT JOIN "+t.ident()+" t ON c.n = 1 AND "+t.id()+" = c.id"
	if len(cols) == 0 || kindOf(t.IDType) != kindInt {
		// Nothing to read of a lone feature, or it cannot be found again by its key.
		cols, lone = nil, ""
	}
	return "SELECT CASE WHEN c.n = 1 THEN c.id END AS mvt_id, ST_AsMVTGeom(ST_SetSRID(ST_MakePoint(c.x, c.y), 3857), e.tile, " +
		strconv.Itoa(TileExtent) + ", " + strconv.Itoa(TileBuffer) + ", true) AS mvt_geom, " +
		"CASE WHEN c.n > 1 THEN true END AS cluster, CASE WHEN c.n > 1 THEN c.n END AS point_count, " +
		// Abbreviated as map clients label clusters: 1234 → 1.2k, 56789 → 57k.
		"CASE WHEN c.n >= 10000 THEN round(c.n / 1000.0)::text || 'k' WHEN c.n >= 1000 THEN round(c.n / 1000.0, 1)::text || 'k' " +
		"WHEN c.n > 1 THEN c.n::text END AS point_count_abbreviated" + tileColumns(cols) +
		" FROM (" + cells + ") c CROSS JOIN e" + lone
}

// clusterPoints selects the features' ids and points in web mercator (x, y).
func clusterPoints(t Table, q TileQuery, id, mercator, from string) string {
	points := strings.TrimRight(strings.ToUpper(t.GeomType), "ZM") == "POINT"
	if points && (q.StorageSRID == 4326 || q.StorageSRID == 0) {
		// Spherical mercator by its formulas (x = Rλ, y = R ln tan(π/4 + φ/2)) costs a tenth of
		// ST_Transform per point, and a cluster tile transforms every point it counts; the cells'
		// centres agree with PROJ's to the millimetre. The search envelope keeps latitudes within
		// the mercator world.
		g := t.geom()
		return "SELECT " + id + " AS id, ST_X(" + g + ") * " + mercatorMetresPerDegree + " AS x, ln(tan(radians(45 + ST_Y(" + g +
			") / 2))) * " + earthRadius + " AS y" + from
	}
	point := mercator
	if !points {
		point = "ST_PointOnSurface(" + mercator + ")" // one point of lines, polygons and multipoints
	}
	return "SELECT p.id, ST_X(p.g) AS x, ST_Y(p.g) AS y FROM (SELECT " + id + " AS id, " + point + " AS g" + from + ") p"
}

// tileColumns is the select list of the properties: types MVT has values for as they are, the
// rest as text.
func tileColumns(cols []Column) string {
	var sb strings.Builder
	for _, c := range cols {
		name := pgx.Identifier{c.Name}.Sanitize()
		expr := "t." + name
		switch kindOf(c.Type) {
		case kindInt, kindFloat, kindBool:
		case kindNumeric:
			expr += "::float8"
		default:
			expr += "::text"
		}
		sb.WriteString(", " + expr + " AS " + name)
	}
	return sb.String()
}
