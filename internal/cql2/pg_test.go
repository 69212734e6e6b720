package cql2

import (
	"context"
	"reflect"
	"testing"

	"meridian/internal/testdb"
)

// TestPostgres runs translated filters against PostGIS and checks the rows they select: it
// proves the SQL is valid (casts, functions, placeholders) and means what it should.
func TestPostgres(t *testing.T) {
	pool := testdb.New(t)
	ctx := context.Background()
	_, err := pool.Exec(ctx, `
CREATE TABLE cql2_t (id int PRIMARY KEY, name text, pop int, area float8, born date, seen timestamptz, ok bool,
	geom geometry(Geometry, 4326));
INSERT INTO cql2_t VALUES
 (1, 'Toronto', 2794356, 630.2, '1834-03-06', '2020-01-01T00:00:00Z', true, 'SRID=4326;POINT(-79.38 43.65)'),
 (2, 'Frankfurt', 773068, 248.3, '1866-01-01', '2021-06-15T12:00:00Z', false, 'SRID=4326;POINT(8.68 50.11)'),
 (3, 'Tokyo', 13960000, 2194.1, '1868-09-03', '2019-12-31T23:00:00Z', true, 'SRID=4326;POINT(139.69 35.69)'),
 (4, 'Suva', 93970, 2048.0, '1882-01-01', '2020-01-01T12:00:00Z', false, 'SRID=4326;POINT(178.44 -18.14)'),
 (5, 'Apia', 37708, 60.0, '1900-01-01', '2022-01-01T00:00:00Z', true, 'SRID=4326;POINT(-171.76 -13.83)'),
 (6, '100% Pure_Name\', NULL, NULL, NULL, NULL, NULL, NULL),
 (7, 'Débárquér', 5, 2.5, NULL, NULL, NULL, 'SRID=4326;MULTIPOINT(179 -15, -179 -15)');
SET TIME ZONE 'Pacific/Auckland';`)
	if err != nil {
		t.Fatal(err)
	}
	props := map[string]Property{
		"name":  {Name: "name", SQL: `t."name"`, Type: String},
		"pop":   {Name: "pop", SQL: `t."pop"`, Type: Integer},
		"area":  {Name: "area", SQL: `t."area"`, Type: Number},
		"ok":    {Name: "ok", SQL: `t."ok"`, Type: Boolean},
		"born":  {Name: "born", SQL: `t."born"`, Type: Date},
		"seen":  {Name: "seen", SQL: `t."seen"`, Type: Timestamp},
		"geom":  {Name: "geom", SQL: `t."geom"`, Type: Geometry},
		"g3857": {Name: "g3857", SQL: `ST_Transform(t."geom", 3857)`, Type: Geometry},
	}
	all := []int{1, 2, 3, 4, 5, 6, 7}
	cases := []struct {
		filter string
		opts   Options
		want   []int
	}{
		{`name = 'Toronto'`, Options{}, []int{1}},
		{`pop > 1000000`, Options{}, []int{1, 3}},
		{`pop = 2.5`, Options{}, nil},
		{`pop < 5.5`, Options{}, []int{7}},
		{`area = 2.5`, Options{}, []int{7}},
		{`name LIKE 'T%'`, Options{}, []int{1, 3}},
		{`name NOT LIKE 'T%'`, Options{}, []int{2, 4, 5, 6, 7}},
		{`name LIKE '100\% Pure\_%'`, Options{}, []int{6}},
		{`name LIKE '1_0%'`, Options{}, []int{6}},
		{`name LIKE '100\%'`, Options{}, nil},
		{`{"op":"like","args":[{"property":"name"},"%\\"]}`, Options{}, []int{6}},
		{`CASEI(name) LIKE CASEI('t%')`, Options{}, []int{1, 3}},
		{`CASEI(name) = CASEI('TOKYO')`, Options{}, []int{3}},
		{`ACCENTI(name) = ACCENTI('Debarquer')`, Options{}, []int{7}},
		{`CASEI(ACCENTI(name)) = CASEI(ACCENTI('DÉBARQUER'))`, Options{}, []int{7}},
		{`pop BETWEEN 50000 AND 1000000`, Options{}, []int{2, 4}},
		{`pop NOT BETWEEN 50000 AND 1000000`, Options{}, []int{1, 3, 5, 7}},
		{`name IN ('Tokyo', 'Suva')`, Options{}, []int{3, 4}},
		{`name NOT IN ('Tokyo', 'Suva')`, Options{}, []int{1, 2, 5, 6, 7}},
		{`pop IN (773068, 93970.0)`, Options{}, []int{2, 4}},
		{`pop IS NULL`, Options{}, []int{6}},
		{`geom IS NOT NULL AND born IS NULL`, Options{}, []int{7}},
		{`ok`, Options{}, []int{1, 3, 5}},
		{`NOT ok`, Options{}, []int{2, 4}},
		{`ok = FALSE OR name = 'Tokyo'`, Options{}, []int{2, 3, 4}},
		{`pop / 2 = 2.5`, Options{}, []int{7}},
		{`pop div 2 = 2`, Options{}, []int{7}},
		{`pop % 2 = 1 AND pop < 10`, Options{}, []int{7}},
		{`area % 2 = 0.5`, Options{}, []int{7}},
		{`area ^ 2 = 6.25`, Options{}, []int{7}},
		{`-area < -2000 AND pop * 2 > 100000`, Options{}, []int{3, 4}},
		{`(pop / 0) IS NULL`, Options{}, all},
		{`pop > area * 1000`, Options{}, []int{1, 2, 3}},
		{`born < DATE('1850-01-01')`, Options{}, []int{1}},
		{`born = DATE('1866-01-01')`, Options{}, []int{2}},
		{`seen >= TIMESTAMP('2020-01-01T00:00:00Z') AND seen < TIMESTAMP('2021-01-01T00:00:00Z')`, Options{}, []int{1, 4}},
		{`seen = DATE('2020-01-01')`, Options{}, []int{1}},
		{`born < TIMESTAMP('1834-03-06T00:00:01Z')`, Options{}, []int{1}},
		{`T_INTERSECTS(seen, INTERVAL('2020-01-01T00:00:00Z', '2020-12-31T23:59:59Z'))`, Options{}, []int{1, 4}},
		{`T_BEFORE(seen, TIMESTAMP('2020-01-01T00:00:00Z'))`, Options{}, []int{3}},
		{`T_AFTER(seen, INTERVAL('..', '2020-06-01'))`, Options{}, []int{2, 5}},
		{`T_DURING(seen, INTERVAL('2020-01-01T00:00:00Z', '..'))`, Options{}, []int{2, 4, 5}},
		{`T_EQUALS(born, DATE('1834-03-06'))`, Options{}, []int{1}},
		{`T_DISJOINT(born, INTERVAL('1850-01-01', '1870-01-01'))`, Options{}, []int{1, 4, 5}},
		{`T_INTERSECTS(INTERVAL(born, seen), DATE('1867-01-01'))`, Options{}, []int{1, 2}},
		{`T_STARTS(seen, INTERVAL('2020-01-01T00:00:00Z', '2020-02-01T00:00:00Z'))`, Options{}, []int{1}},
		{`T_METBY(INTERVAL(born, seen), INTERVAL('1800-01-01', '2020-01-01T00:00:00Z'))`, Options{}, nil},
		{`T_MEETS(INTERVAL('1800-01-01', '1834-03-06'), INTERVAL(born, seen))`, Options{}, []int{1}},
		{`S_INTERSECTS(geom, BBOX(-80, 43, -79, 44))`, Options{}, []int{1}},
		{`S_INTERSECTS(geom, BBOX(43, -80, 44, -79))`, Options{SwapXY: true}, []int{1}},
		{`S_INTERSECTS(geom, BBOX(170, -20, -170, -10))`, Options{}, []int{4, 5, 7}},
		{`S_WITHIN(geom, BBOX(170, -20, -170, -10))`, Options{}, []int{4, 5, 7}},
		{`S_DISJOINT(geom, BBOX(170, -20, -170, -10))`, Options{}, []int{1, 2, 3}},
		{`S_INTERSECTS(geom, BBOX(-20, 170, -10, -170))`, Options{SwapXY: true}, []int{4, 5, 7}},
		{`S_INTERSECTS(geom, POLYGON((-80 43, -79 43, -79 44, -80 44, -80 43)))`, Options{}, []int{1}},
		{`S_INTERSECTS(geom, POLYGON((43 -80, 43 -79, 44 -79, 44 -80, 43 -80)))`, Options{SwapXY: true}, []int{1}},
		{`S_INTERSECTS(g3857, BBOX(-80, 43, -79, 44))`, Options{StorageSRID: 3857}, []int{1}},
		{`S_INTERSECTS(g3857, POINT(-79.38 43.65))`, Options{StorageSRID: 3857}, []int{1}},
		{`S_CONTAINS(POLYGON((0 0, 20 0, 20 60, 0 60, 0 0)), geom)`, Options{}, []int{2}},
		{`S_EQUALS(geom, POINT(139.69 35.69)) OR S_TOUCHES(geom, LINESTRING(8.68 50.11, 9 51))`, Options{}, []int{2, 3}},
		{`S_CROSSES(LINESTRING(178 -15, 180 -15), geom)`, Options{}, []int{7}},
		{`S_OVERLAPS(geom, MULTIPOINT((179 -15), (0 0)))`, Options{}, []int{7}},
		{`S_INTERSECTS(geom, GEOMETRYCOLLECTION(POINT(-79.38 43.65), POINT Z(1 1 1)))`, Options{}, nil}, // mixed dimensions: rejected, see below
		{`{"op":"s_intersects","args":[{"property":"geom"},{"type":"Point","coordinates":[-79.38,43.65]}]}`, Options{}, []int{1}},
		{`{"op":"s_within","args":[{"property":"geom"},{"type":"Polygon","coordinates":[[[-80,43,0],[-79,43,0],[-79,44,0],[-80,44,0],[-80,43,0]]]}]}`, Options{}, []int{1}},
		{`{"op":"and","args":[{"op":">","args":[{"property":"pop"},50000]},{"op":"s_intersects","args":[{"property":"geom"},{"bbox":[170,-20,-170,-10]}]}]}`, Options{}, []int{4}},
	}
	for _, c := range cases {
		t.Run(c.filter, func(t *testing.T) {
			lang := "cql2-text"
			if c.filter[0] == '{' {
				lang = "cql2-json"
			}
			e, err := Parse(lang, c.filter)
			if err != nil {
				if c.want == nil {
					return
				}
				t.Fatal(err)
			}
			c.opts.Properties = props
			where, args, err := SQL(e, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			rows, err := pool.Query(ctx, `SELECT id FROM cql2_t t WHERE `+where+` ORDER BY id`, args...)
			if err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			var got []int
			for rows.Next() {
				var id int
				if err := rows.Scan(&id); err != nil {
					t.Fatal(err)
				}
				got = append(got, id)
			}
			if err := rows.Err(); err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %v, want %v\n%s %v", got, c.want, where, args)
			}
		})
	}
}
