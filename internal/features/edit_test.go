package features

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"meridian/internal/apperr"
	"meridian/internal/cql2"
	"meridian/internal/testdb"
)

// editFixture makes one table per geometry column kind in a fresh database.
func editFixture(t *testing.T) (context.Context, Reader, map[string]Table) {
	t.Helper()
	ctx := context.Background()
	pool := testdb.New(t)
	r := Reader{Pool: pool}
	ddl := map[string]string{
		"pts":     "geometry(Point, 4326)",
		"multi":   "geometry(MultiPoint, 4326)",
		"pointz":  "geometry(PointZ, 4326)",
		"generic": "geometry(Geometry, 4326)",
		"merc":    "geometry(Polygon, 3857)",
	}
	tables := map[string]Table{}
	for name, geom := range ddl {
		_, err := pool.Exec(ctx, `CREATE TABLE data.`+name+` (gid bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, geom `+geom+`,
			name text, n bigint, f double precision, d date, ok boolean, meta jsonb)`)
		if err != nil {
			t.Fatal(err)
		}
		tb, err := r.Describe(ctx, "data", name, "gid", "geom")
		if err != nil {
			t.Fatal(err)
		}
		tables[name] = tb
	}
	return ctx, r, tables
}

func spec(t *testing.T, ctx context.Context, r Reader, tb Table) GeometrySpec {
	t.Helper()
	s, err := r.GeometryOf(ctx, tb)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// want422 fails unless err is a 422 whose message contains every part.
func want422(t *testing.T, err error, parts ...string) {
	t.Helper()
	if apperr.KindOf(err) != apperr.KindUnprocessable {
		t.Fatalf("want 422, got %v", err)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("%q does not mention %q", err.Error(), p)
		}
	}
}

func TestGeometrySpecs(t *testing.T) {
	ctx, r, tables := editFixture(t)
	cases := map[string]GeometrySpec{
		"pts":     {Type: "POINT", SRID: 4326, Typed: true},
		"multi":   {Type: "MULTIPOINT", SRID: 4326, Typed: true},
		"pointz":  {Type: "POINT", SRID: 4326, Z: true, Typed: true},
		"generic": {Type: "GEOMETRY", SRID: 4326, Typed: true},
		"merc":    {Type: "POLYGON", SRID: 3857, Typed: true},
	}
	for name, want := range cases {
		if got := spec(t, ctx, r, tables[name]); got != want {
			t.Errorf("%s: %+v, want %+v", name, got, want)
		}
	}
	if l := spec(t, ctx, r, tables["pointz"]).Label(); l != "PointZ" {
		t.Errorf("label %q", l)
	}
}

func TestPrepareGeometry(t *testing.T) {
	ctx, r, tables := editFixture(t)
	ewkt := func(b []byte) string {
		var s string
		if err := r.Pool.QueryRow(ctx, "SELECT ST_AsEWKT(ST_GeomFromEWKB($1::bytea))", b).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	prep := func(table, geojson string) ([]byte, error) {
		return r.PrepareGeometry(ctx, spec(t, ctx, r, tables[table]), json.RawMessage(geojson))
	}
	ok := func(table, geojson, want string) {
		t.Helper()
		b, err := prep(table, geojson)
		if err != nil {
			t.Fatalf("%s %s: %v", table, geojson, err)
		}
		if got := ewkt(b); got != want {
			t.Fatalf("%s %s: %s, want %s", table, geojson, got, want)
		}
	}
	ok("pts", `{"type":"Point","coordinates":[6.1,46.2]}`, "SRID=4326;POINT(6.1 46.2)")
	ok("pts", `{"type":"Point","coordinates":[6.1,46.2,400]}`, "SRID=4326;POINT(6.1 46.2)")        // Z dropped
	ok("pointz", `{"type":"Point","coordinates":[6.1,46.2]}`, "SRID=4326;POINT(6.1 46.2 0)")       // Z 0 added
	ok("pointz", `{"type":"Point","coordinates":[6.1,46.2,400]}`, "SRID=4326;POINT(6.1 46.2 400)") // kept
	ok("multi", `{"type":"Point","coordinates":[1,2]}`, "SRID=4326;MULTIPOINT(1 2)")               // promoted
	ok("generic", `{"type":"GeometryCollection","geometries":[{"type":"Point","coordinates":[1,2]},{"type":"LineString","coordinates":[[0,0],[1,1]]}]}`,
		"SRID=4326;GEOMETRYCOLLECTION(POINT(1 2),LINESTRING(0 0,1 1))")
	ok("merc", `{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,0]]]}`,
		"SRID=3857;POLYGON((0 0,111319.49079327357 0,111319.49079327357 111325.1428663851,0 0))")
	if b, err := prep("pts", "null"); err != nil || b != nil {
		t.Fatalf("null geometry: %v %v", b, err)
	}

	_, err := prep("pts", `{"type":"LineString","coordinates":[[0,0],[1,1]]}`)
	want422(t, err, "LineString", "Point")
	_, err = prep("pts", `{"type":"GeometryCollection","geometries":[{"type":"Point","coordinates":[1,2]}]}`)
	want422(t, err, "GeometryCollection", "generic")
	_, err = prep("generic", `{"type":"GeometryCollection","geometries":[{"type":"GeometryCollection","geometries":[]}]}`)
	want422(t, err, "nested")
	_, err = prep("merc", `{"type":"Polygon","coordinates":[[[0,0],[1,1],[1,0],[0,1],[0,0]]]}`)
	want422(t, err, "invalid", "Self-intersection")
	_, err = prep("pts", `{"type":"Point","coordinates":[200,10]}`)
	want422(t, err, "[200, 10]", "-180..180")
	_, err = prep("generic", `{"type":"GeometryCollection","geometries":[{"type":"Point","coordinates":[1,95]}]}`)
	want422(t, err, "geometries[0]", "latitude")
	_, err = prep("multi", `{"type":"MultiPoint","coordinates":[]}`)
	want422(t, err, "empty")
	_, err = prep("generic", `{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,2]]]}`)
	want422(t, err, "closed")
	_, err = prep("merc", `{"type":"Polygon","coordinates":[[[0,-89.9999999],[1,-89.9999999],[1,-90],[0,-89.9999999]]]}`)
	if err != nil && apperr.KindOf(err) != apperr.KindUnprocessable {
		t.Fatalf("a geometry the CRS cannot hold must be a 422, not %v", err)
	}
}

func TestCheckProperties(t *testing.T) {
	ctx, r, tables := editFixture(t)
	tb := tables["pts"]
	values, names, err := r.CheckProperties(ctx, tb, map[string]any{"name": "a", "n": 5.0, "f": 1.5, "d": "2024-02-29", "ok": true, "meta": map[string]any{"k": 1}})
	if err != nil || strings.Join(names, ",") != "d,f,meta,n,name,ok" || !strings.Contains(string(values), `"n":5`) {
		t.Fatalf("valid properties: %s %v %v", values, names, err)
	}
	_, _, err = r.CheckProperties(ctx, tb, map[string]any{"colour": "red", "name": "x", "size": 3.0})
	want422(t, err, "unknown properties colour, size")
	_, _, err = r.CheckProperties(ctx, tb, map[string]any{"gid": 4.0})
	want422(t, err, "unknown property gid")
	_, _, err = r.CheckProperties(ctx, tb, map[string]any{"n": "abc", "ok": "maybe"})
	want422(t, err, "n: a string does not fit a bigint column", "ok: a string")
	_, _, err = r.CheckProperties(ctx, tb, map[string]any{"n": 5.5})
	want422(t, err, "n: 5.5 is not a whole number")
	_, _, err = r.CheckProperties(ctx, tb, map[string]any{"d": "2024-13-45", "name": "fine"})
	want422(t, err, "d: ", "date")
	_, _, err = r.CheckProperties(ctx, tb, map[string]any{"n": 1e20})
	want422(t, err, "n: ", "out of range")
	_, _, err = r.CheckProperties(ctx, tb, map[string]any{"name": map[string]any{"a": 1}})
	want422(t, err, "name: an object")
	if _, names, err := r.CheckProperties(ctx, tb, nil); err != nil || len(names) != 0 {
		t.Fatalf("no properties: %v %v", names, err)
	}
}

func TestFeatureEditsAndExtent(t *testing.T) {
	ctx, r, tables := editFixture(t)
	tb := tables["pts"]
	sp := spec(t, ctx, r, tb)
	insert := func(lon, lat float64, props map[string]any) int64 {
		t.Helper()
		g, _ := json.Marshal(map[string]any{"type": "Point", "coordinates": []float64{lon, lat}})
		ewkb, err := r.PrepareGeometry(ctx, sp, g)
		if err != nil {
			t.Fatal(err)
		}
		values, names, err := r.CheckProperties(ctx, tb, props)
		if err != nil {
			t.Fatal(err)
		}
		gid, err := InsertFeature(ctx, r.Pool, tb, values, names, ewkb)
		if err != nil {
			t.Fatal(err)
		}
		return gid
	}
	a := insert(170, -10, map[string]any{"name": "east", "n": 1.0})
	b := insert(-170, 10, map[string]any{"name": "west", "n": 9007199254740993.0})
	e, err := TableExtent(ctx, r.Pool, tb, 4326)
	if err != nil {
		t.Fatal(err)
	}
	// Across the antimeridian the box is given west > east.
	if e.Count != 2 || len(e.BBox) != 4 || e.BBox[0] != 170 || e.BBox[2] != -170 || e.BBox[1] != -10 || e.BBox[3] != 10 {
		t.Fatalf("extent: %+v", e)
	}

	f, err := r.FeatureByID(ctx, tb, a)
	if err != nil || f.Type() != "Point" || f.Properties["name"] != "east" || f.Properties["n"] != json.Number("1") || f.Properties["d"] != nil {
		t.Fatalf("feature: %+v %v", f, err)
	}
	if _, err := r.FeatureByID(ctx, tb, 999); apperr.KindOf(err) != apperr.KindNotFound {
		t.Fatalf("unknown gid: %v", err)
	}

	// Patch: one property, geometry kept.
	tx, err := r.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before, err := LockFeature(ctx, tx, tb, a)
	if err != nil {
		t.Fatal(err)
	}
	values, names, _ := r.CheckProperties(ctx, tb, map[string]any{"name": "east!"})
	after, diff, err := UpdateFeature(ctx, tx, tb, before, values, names, false, nil, false)
	if err != nil || after.Properties["name"] != "east!" || after.Properties["n"] != json.Number("1") || after.Type() != "Point" {
		t.Fatalf("patch: %+v %v", after, err)
	}
	if len(diff) != 1 || string(diff["properties.name"][0].(json.RawMessage)) != `"east"` {
		t.Fatalf("patch diff: %v", diff)
	}
	// Replace: unnamed columns become null; the geometry is cleared.
	before, _ = LockFeature(ctx, tx, tb, a)
	values, names, _ = r.CheckProperties(ctx, tb, map[string]any{"ok": false})
	after, diff, err = UpdateFeature(ctx, tx, tb, before, values, names, true, nil, true)
	if err != nil || after.Properties["name"] != nil || after.Properties["n"] != nil || after.Properties["ok"] != false || after.Geometry != nil {
		t.Fatalf("replace: %+v %v", after, err)
	}
	if _, ok := diff["geometry"]; !ok || len(diff) != 4 {
		t.Fatalf("replace diff: %v", diff)
	}
	// The same replacement again changes nothing.
	before, _ = LockFeature(ctx, tx, tb, a)
	if _, diff, err = UpdateFeature(ctx, tx, tb, before, values, names, true, nil, true); err != nil || len(diff) != 0 {
		t.Fatalf("no-op replace: %v %v", diff, err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if e, _ := TableExtent(ctx, r.Pool, tb, 4326); e.Count != 2 || e.BBox[0] != -170 || e.BBox[2] != -170 {
		t.Fatalf("extent after clearing a geometry: %+v", e)
	}
	// A bigint above 2^53 comes back exactly (through float64 on the way in it is rounded, as
	// JSON numbers are; on the way out no further).
	fb, _ := r.FeatureByID(ctx, tb, b)
	if fb.Properties["n"] != json.Number("9007199254740992") {
		t.Fatalf("big number: %v", fb.Properties["n"])
	}

	if err := DeleteFeature(ctx, r.Pool, tb, a); err != nil {
		t.Fatal(err)
	}
	if err := DeleteFeature(ctx, r.Pool, tb, a); apperr.KindOf(err) != apperr.KindNotFound {
		t.Fatalf("delete twice: %v", err)
	}
	if e, _ := TableExtent(ctx, r.Pool, tb, 4326); e.Count != 1 {
		t.Fatalf("count after delete: %+v", e)
	}
	if err := DeleteFeature(ctx, r.Pool, tb, b); err != nil {
		t.Fatal(err)
	}
	if e, _ := TableExtent(ctx, r.Pool, tb, 4326); e.Count != 0 || e.BBox != nil {
		t.Fatalf("empty extent: %+v", e)
	}
}

func TestWriteErrorsName(t *testing.T) {
	ctx, r, tables := editFixture(t)
	tb := tables["pts"]
	if _, err := r.Pool.Exec(ctx, "ALTER TABLE data.pts ALTER COLUMN name SET NOT NULL, ADD CONSTRAINT positive CHECK (n > 0)"); err != nil {
		t.Fatal(err)
	}
	values, names, _ := r.CheckProperties(ctx, tb, map[string]any{"n": 3.0})
	_, err := InsertFeature(ctx, r.Pool, tb, values, names, nil)
	want422(t, err, "name may not be null")
	values, names, _ = r.CheckProperties(ctx, tb, map[string]any{"n": -3.0, "name": "x"})
	_, err = InsertFeature(ctx, r.Pool, tb, values, names, nil)
	want422(t, err, "positive")
}

func TestFeaturePageAndStream(t *testing.T) {
	ctx, r, tables := editFixture(t)
	tb := tables["pointz"]
	for i, p := range [][3]float64{{10, 10, 5}, {20, 20, 6}, {179, 0, 7}, {-179, 0, 8}} {
		if _, err := r.Pool.Exec(ctx, "INSERT INTO data.pointz (geom, name, n) VALUES (ST_SetSRID(ST_MakePoint($1, $2, $3), 4326), $4, $5)",
			p[0], p[1], p[2], "p"+string(rune('a'+i)), i); err != nil {
			t.Fatal(err)
		}
	}
	page := func(q ItemsQuery) (fc featureCollection, matched int64) {
		t.Helper()
		q.StorageSRID = 4326
		cur, err := r.Items(ctx, tb, q)
		if err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		err = WriteCollection(&out, cur, func(dst []byte) ([]byte, error) {
			matched, err = cur.Matched()
			return append(dst, '}'), err
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(out.String()), &fc); err != nil {
			t.Fatalf("%v: %s", err, out.String())
		}
		fc.raw = out.String()
		return fc, matched
	}
	known := int64(4)
	fc, matched := page(ItemsQuery{Offset: 1, Limit: 2, KnownCount: &known})
	if matched != 4 || len(fc.Features) != 2 || fc.Features[0].ID != 2 || fc.Features[1].ID != 3 {
		t.Fatalf("page: %s (matched %d)", fc.raw, matched)
	}
	if !strings.Contains(fc.raw, `{"type":"Point","coordinates":[20,20,6]}`) {
		t.Fatalf("geometry: %s", fc.raw)
	}
	// Filtered, one page: the page counts itself. Filtered with more pages: counted alongside.
	if fc, matched = page(ItemsQuery{BBox: []float64{5, 5, 15, 15}, Limit: 10, KnownCount: &known}); matched != 1 || len(fc.Features) != 1 || fc.Features[0].ID != 1 {
		t.Fatalf("bbox: %s (matched %d)", fc.raw, matched)
	}
	if fc, matched = page(ItemsQuery{BBox: []float64{170, -5, -170, 5}, Limit: 1, KnownCount: &known}); matched != 2 || len(fc.Features) != 1 || fc.Features[0].ID != 3 {
		t.Fatalf("antimeridian bbox: %s (matched %d)", fc.raw, matched)
	}
	if fc, matched = page(ItemsQuery{Offset: 10, Limit: 10}); matched != 4 || len(fc.Features) != 0 {
		t.Fatalf("past the end: %s (matched %d)", fc.raw, matched)
	}
	// Filtered: counted by the page query itself, or apart when no row of the page carries it.
	if fc, matched = page(ItemsQuery{BBox: []float64{170, -5, -170, 5}, Offset: 1, Limit: 1, KnownCount: &known}); matched != 2 || len(fc.Features) != 1 || fc.Features[0].ID != 4 {
		t.Fatalf("second of two filtered pages: %s (matched %d)", fc.raw, matched)
	}
	if fc, matched = page(ItemsQuery{BBox: []float64{170, -5, -170, 5}, Offset: 5, Limit: 1, KnownCount: &known}); matched != 2 || len(fc.Features) != 0 {
		t.Fatalf("filtered, past the end: %s (matched %d)", fc.raw, matched)
	}
	filter, err := cql2.ParseFilter("cql2-text", "n >= 1", 4326, false)
	if err != nil {
		t.Fatal(err)
	}
	if fc, matched = page(ItemsQuery{Filter: filter, Offset: 1, Limit: 1, KnownCount: &known}); matched != 3 || len(fc.Features) != 1 || fc.Features[0].ID != 3 {
		t.Fatalf("a filter's second page: %s (matched %d)", fc.raw, matched)
	}
	after := int64(2)
	if fc, matched = page(ItemsQuery{AfterKey: &after, Limit: 1, KnownCount: &known}); matched != 4 || len(fc.Features) != 1 || fc.Features[0].ID != 3 {
		t.Fatalf("after key 2: %s (matched %d)", fc.raw, matched)
	}
	if fc, _ = page(ItemsQuery{Limit: 1, NoGeometry: true}); !strings.Contains(fc.raw, `"geometry":null`) {
		t.Fatalf("without geometry: %s", fc.raw)
	}

	stream := func(tb Table) string {
		t.Helper()
		cur, err := r.Items(ctx, tb, ItemsQuery{ForceZ: true})
		if err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		if err := WriteCollection(&out, cur, func(dst []byte) ([]byte, error) { return append(dst, '}'), nil }); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	out := stream(tb)
	if err := json.Unmarshal([]byte(out), &fc); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(fc.Features) != 4 || fc.Features[3].Geometry.Coordinates[2] != 8 || fc.Features[0].Properties["name"] != "pa" {
		t.Fatalf("stream: %s", out)
	}
	// Column order is kept in the stream.
	if !strings.Contains(out, `"properties":{"name":"pa","n":0,"f":null`) {
		t.Fatalf("property order: %s", out)
	}

	// A 2D table streams Z 0; an empty one streams an empty collection.
	flat := tables["pts"]
	if _, err := r.Pool.Exec(ctx, "INSERT INTO data.pts (geom) VALUES ('SRID=4326;POINT(1 2)'), (NULL)"); err != nil {
		t.Fatal(err)
	}
	if out := stream(flat); !strings.Contains(out, `"coordinates":[1,2,0]`) || !strings.Contains(out, `"geometry":null`) {
		t.Fatalf("2D stream: %s", out)
	}
	if out := stream(tables["multi"]); out != `{"type":"FeatureCollection","features":[]}` {
		t.Fatalf("empty stream: %s", out)
	}
}

type featureCollection struct {
	Features []struct {
		ID         int64
		Geometry   struct{ Coordinates []float64 }
		Properties map[string]any
	}
	raw string
}
