package features

import (
	"context"
	"math"
	"testing"

	"meridian/internal/testdb"
)

// Cluster tiles of longitude/latitude points compute web mercator by its formulas instead of
// ST_Transform; every point must land where PROJ puts it (to the millimetre), from the
// antimeridian to the mercator world's edge at ±85.0511°.
func TestClusterPointsAgreeWithPROJ(t *testing.T) {
	pool := testdb.New(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `CREATE TABLE public.pts AS
		SELECT g AS gid, ST_SetSRID(ST_MakePoint(-180 + 360 * random(), -85.0511 + 170.1022 * random()), 4326) AS geom
		FROM generate_series(1, 2000) g
		UNION ALL SELECT 2000 + g, ST_SetSRID(ST_MakePoint(x, y), 4326)
		FROM (VALUES (1, -180, -85.0511), (2, 180, 85.0511), (3, 0, 0), (4, 179.999999, -0.000001)) v (g, x, y)`); err != nil {
		t.Fatal(err)
	}
	tbl := Table{Schema: "public", Name: "pts", ID: "gid", Geom: "geom", IDType: "integer", GeomType: "POINT"}
	points := clusterPoints(tbl, TileQuery{StorageSRID: 4326}, tbl.id(), "ST_Transform("+tbl.geom()+", 3857)", " FROM public.pts t WHERE true")
	rows, err := pool.Query(ctx, `SELECT c.x, c.y, ST_X(ST_Transform(p.geom, 3857)), ST_Y(ST_Transform(p.geom, 3857))
		FROM (`+points+`) c JOIN public.pts p ON p.gid = c.id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var x, y, wantX, wantY float64
		if err := rows.Scan(&x, &y, &wantX, &wantY); err != nil {
			t.Fatal(err)
		}
		if math.Abs(x-wantX) > 1e-3 || math.Abs(y-wantY) > 1e-3 {
			t.Fatalf("(%f, %f) in mercator, PROJ says (%f, %f)", x, y, wantX, wantY)
		}
		n++
	}
	if rows.Err() != nil || n != 2004 {
		t.Fatalf("%d points compared: %v", n, rows.Err())
	}
}
