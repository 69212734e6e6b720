package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// zonesGeoJSON: zone A holds points p0..p4 of pointsGeoJSON, zone B p10..p14.
func zonesGeoJSON() []byte {
	box := func(x0, y0, x1, y1 float64) string {
		return fmt.Sprintf(`[[[%g,%g],[%g,%g],[%g,%g],[%g,%g],[%g,%g]]]`, x0, y0, x1, y0, x1, y1, x0, y1, x0, y0)
	}
	return []byte(`{"type":"FeatureCollection","features":[` +
		`{"type":"Feature","properties":{"zone":"A"},"geometry":{"type":"Polygon","coordinates":` + box(4.995, 49.995, 5.045, 50.045) + `}},` +
		`{"type":"Feature","properties":{"zone":"B"},"geometry":{"type":"Polygon","coordinates":` + box(5.095, 50.095, 5.145, 50.145) + `}}]}`)
}

// analysisFixture imports 20 points and the two zones as s.
func analysisFixture(t *testing.T, s session) (points, zones string) {
	t.Helper()
	p := importFile(t, s, "pts.geojson", pointsGeoJSON(20), map[string]any{"title": "Analysis points"})
	z := importFile(t, s, "zones.geojson", zonesGeoJSON(), map[string]any{"title": "Analysis zones"})
	if p["status"] != "complete" || z["status"] != "complete" {
		t.Fatalf("imports: %v %v", p, z)
	}
	return p["dataset_id"].(string), z["dataset_id"].(string)
}

// geodesicArea is PostGIS's area in square metres of a GeoJSON geometry in WGS 84.
func geodesicArea(t *testing.T, g any) float64 {
	t.Helper()
	raw, _ := json.Marshal(g)
	var a float64
	if err := dbConn(t).QueryRow(context.Background(), `SELECT ST_Area(ST_GeomFromGeoJSON($1)::geography)`, string(raw)).Scan(&a); err != nil {
		t.Fatal(err)
	}
	return a
}

// propsOf lists a property of a preview's features, sorted.
func propsOf(body map[string]any, key string) []string {
	var out []string
	for _, f := range body["geojson"].(map[string]any)["features"].([]any) {
		out = append(out, fmt.Sprint(f.(map[string]any)["properties"].(map[string]any)[key]))
	}
	sort.Strings(out)
	return out
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b)) }

func TestAnalysisPreviewAgainstPostGIS(t *testing.T) {
	u := newUser(t, "editor")
	points, zones := analysisFixture(t, u)
	ctx := context.Background()
	conn := dbConn(t)
	var zoneTable string
	if err := conn.QueryRow(ctx, `SELECT table_name FROM catalog.datasets WHERE id = $1`, zones).Scan(&zoneTable); err != nil {
		t.Fatal(err)
	}
	preview := func(t *testing.T, id string, body map[string]any) map[string]any {
		t.Helper()
		r := call(t, "POST", "/datasets/"+id+"/analysis/preview/", body, bearer(u.Access)...)
		if r.Status != 200 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		return r.JSON(t)
	}
	maskA := map[string]any{"type": "Polygon", "coordinates": [][][]float64{{{4.995, 49.995}, {5.045, 49.995}, {5.045, 50.045}, {4.995, 50.045}, {4.995, 49.995}}}}
	halfA := map[string]any{"type": "Polygon", "coordinates": [][][]float64{{{4.995, 49.995}, {5.02, 49.995}, {5.02, 50.045}, {4.995, 50.045}, {4.995, 49.995}}}}

	t.Run("buffer", func(t *testing.T) {
		b := preview(t, points, map[string]any{"operation": "buffer", "distance_meters": 100})
		var want float64
		if err := conn.QueryRow(ctx, `SELECT ST_Area(ST_Buffer(ST_SetSRID(ST_MakePoint(5, 50), 4326)::geography, 100))`).Scan(&want); err != nil {
			t.Fatal(err)
		}
		f := b["geojson"].(map[string]any)["features"].([]any)
		first := slices.IndexFunc(f, func(x any) bool { return x.(map[string]any)["properties"].(map[string]any)["name"] == "p0" })
		if b["feature_count"] != 20.0 || len(f) != 20 || b["truncated"] != false || first < 0 {
			t.Fatalf("%v", b)
		}
		// The preview's GeoJSON is rounded to 7 decimals; the area agrees to well under 0.1 %.
		if got := geodesicArea(t, f[first].(map[string]any)["geometry"]); math.Abs(got-want)/want > 1e-3 {
			t.Fatalf("buffer area %g, PostGIS %g", got, want)
		}
	})
	t.Run("measure", func(t *testing.T) {
		b := preview(t, zones, map[string]any{"operation": "measure"})
		rows, err := conn.Query(ctx, `SELECT zone, ST_Area(geom::geography), ST_Perimeter(geom::geography) FROM data.`+zoneTable+` ORDER BY zone`)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string][2]float64{}
		for rows.Next() {
			var z string
			var a, p float64
			_ = rows.Scan(&z, &a, &p)
			want[z] = [2]float64{a, p}
		}
		for _, f := range b["geojson"].(map[string]any)["features"].([]any) {
			pr := f.(map[string]any)["properties"].(map[string]any)
			w := want[pr["zone"].(string)]
			if !near(pr["area_m2"].(float64), w[0]) || !near(pr["perimeter_m"].(float64), w[1]) || pr["length_m"] != 0.0 {
				t.Fatalf("measure %v, PostGIS %v", pr, w)
			}
		}
	})
	t.Run("centroid", func(t *testing.T) {
		b := preview(t, zones, map[string]any{"operation": "centroid"})
		var x, y float64
		if err := conn.QueryRow(ctx, `SELECT ST_X(ST_Centroid(geom)), ST_Y(ST_Centroid(geom)) FROM data.`+zoneTable+` WHERE zone = 'A'`).Scan(&x, &y); err != nil {
			t.Fatal(err)
		}
		for _, f := range b["geojson"].(map[string]any)["features"].([]any) {
			if f.(map[string]any)["properties"].(map[string]any)["zone"] == "A" {
				c := f.(map[string]any)["geometry"].(map[string]any)["coordinates"].([]any)
				if math.Abs(c[0].(float64)-x) > 1e-7 || math.Abs(c[1].(float64)-y) > 1e-7 {
					t.Fatalf("centroid %v, PostGIS %g %g", c, x, y)
				}
			}
		}
	})
	for name, tc := range map[string]struct {
		body           map[string]any
		names          []string
		count, matched float64
	}{
		"select by a mask dataset": {map[string]any{"operation": "select_by_location", "mask_dataset_id": zones},
			[]string{"p0", "p1", "p10", "p11", "p12", "p13", "p14", "p2", "p3", "p4"}, 10, 10},
		"select by a mask geometry": {map[string]any{"operation": "select_by_location", "mask": maskA},
			[]string{"p0", "p1", "p2", "p3", "p4"}, 5, 5},
		"select within a distance": {map[string]any{"operation": "select_by_location", "distance_meters": 1400,
			"mask": map[string]any{"type": "Point", "coordinates": []float64{5, 50}}}, []string{"p0", "p1"}, 2, 2},
		"select a Feature's geometry within a bbox": {map[string]any{"operation": "select_by_location", "bbox": []float64{4.99, 49.99, 5.025, 50.025},
			"mask": map[string]any{"type": "Feature", "geometry": maskA}}, []string{"p0", "p1", "p2"}, 3, 3},
		"intersect": {map[string]any{"operation": "intersect", "mask_dataset_id": zones},
			[]string{"p0", "p1", "p10", "p11", "p12", "p13", "p14", "p2", "p3", "p4"}, 10, 10},
	} {
		t.Run(name, func(t *testing.T) {
			b := preview(t, points, tc.body)
			if got := propsOf(b, "name"); !slices.Equal(got, tc.names) || b["feature_count"] != tc.count || b["match_count"] != tc.matched {
				t.Fatalf("%v (names %v)", b, got)
			}
		})
	}
	t.Run("spatial join", func(t *testing.T) {
		b := preview(t, points, map[string]any{"operation": "spatial_join", "join_dataset_id": zones, "join_fields": []string{"zone"}})
		zonesByName := map[string]any{}
		for _, f := range b["geojson"].(map[string]any)["features"].([]any) {
			pr := f.(map[string]any)["properties"].(map[string]any)
			zonesByName[pr["name"].(string)] = pr["join_zone"]
		}
		if b["feature_count"] != 20.0 || b["match_count"] != 10.0 || zonesByName["p3"] != "A" || zonesByName["p12"] != "B" || zonesByName["p7"] != nil {
			t.Fatalf("%v", b)
		}
	})
	t.Run("clip", func(t *testing.T) {
		b := preview(t, zones, map[string]any{"operation": "clip", "mask": halfA})
		var want float64
		raw, _ := json.Marshal(halfA)
		if err := conn.QueryRow(ctx, `SELECT ST_Area(ST_Intersection(geom, ST_SetSRID(ST_GeomFromGeoJSON($1), 4326))::geography)
			FROM data.`+zoneTable+` WHERE zone = 'A'`, string(raw)).Scan(&want); err != nil {
			t.Fatal(err)
		}
		f := b["geojson"].(map[string]any)["features"].([]any)
		if len(f) != 1 || b["match_count"] != 1.0 || math.Abs(geodesicArea(t, f[0].(map[string]any)["geometry"])-want)/want > 1e-3 {
			t.Fatalf("clip %v, PostGIS area %g", b, want)
		}
	})
}

func TestAnalysisPreviewTruncates(t *testing.T) {
	u := newUser(t, "editor")
	job := importFile(t, u, "many.geojson", pointsGeoJSON(620), nil)
	r := call(t, "POST", "/datasets/"+job["dataset_id"].(string)+"/analysis/preview/", map[string]any{"operation": "centroid"}, bearer(u.Access)...)
	b := r.JSON(t)
	if r.Status != 200 || b["feature_count"] != 620.0 || b["truncated"] != true || len(b["geojson"].(map[string]any)["features"].([]any)) != 500 ||
		b["source_feature_count"] != 620.0 {
		t.Fatalf("%d %v", r.Status, b["feature_count"])
	}
}

func TestAnalysisRefusals(t *testing.T) {
	u, other := newUser(t, "editor"), newUser(t, "editor")
	points, zones := analysisFixture(t, u)
	foreign := importFile(t, other, "theirs.geojson", zonesGeoJSON(), nil)["dataset_id"].(string)
	table := importFile(t, u, "rows.csv", []byte("a,b\n1,2\n"), nil)["dataset_id"].(string)
	for name, tc := range map[string]struct {
		id     string
		body   map[string]any
		status int
	}{
		"buffer without a distance":           {points, map[string]any{"operation": "buffer"}, 422},
		"a param the operation does not take": {points, map[string]any{"operation": "centroid", "join_fields": []string{"zone"}}, 422},
		"both a mask and a mask dataset":      {points, map[string]any{"operation": "clip", "mask_dataset_id": zones, "mask": map[string]any{"type": "Point", "coordinates": []float64{5, 50}}}, 422},
		"no mask":                             {points, map[string]any{"operation": "intersect"}, 422},
		"a mask that is not GeoJSON":          {points, map[string]any{"operation": "clip", "mask": map[string]any{"type": "Blob", "coordinates": 3}}, 422},
		"a join field that is no column":      {points, map[string]any{"operation": "spatial_join", "join_dataset_id": zones, "join_fields": []string{"nope\"; DROP TABLE x"}}, 422},
		"a bbox upside down":                  {points, map[string]any{"operation": "centroid", "bbox": []float64{5, 51, 6, 50}}, 422},
		"another user's private dataset":      {foreign, map[string]any{"operation": "centroid"}, 404},
		"another user's private mask":         {points, map[string]any{"operation": "select_by_location", "mask_dataset_id": foreign}, 404},
		"another user's private join":         {points, map[string]any{"operation": "spatial_join", "join_dataset_id": foreign, "join_fields": []string{"zone"}}, 404},
		"a table without geometry":            {table, map[string]any{"operation": "centroid"}, 409},
		"an unknown operation":                {points, map[string]any{"operation": "explode"}, 422},
	} {
		t.Run(name, func(t *testing.T) {
			r := call(t, "POST", "/datasets/"+tc.id+"/analysis/preview/", tc.body, bearer(u.Access)...)
			if r.Status != tc.status || r.Header.Get("Content-Type") != "application/problem+json" {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
		})
	}
	t.Run("a viewer cannot materialize", func(t *testing.T) {
		v := newUser(t, "viewer")
		publishAs(t, u, points, "public")
		r := call(t, "POST", "/datasets/"+points+"/analysis/materialize/", map[string]any{"operation": "centroid", "title": "Mine"}, bearer(v.Access)...)
		if r.Status != 403 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	})
}

func TestAnalysisMaterialize(t *testing.T) {
	u, reader := newUser(t, "editor"), newUser(t, "viewer")
	points, zones := analysisFixture(t, u)
	materialize := func(t *testing.T, body map[string]any) map[string]any {
		t.Helper()
		r := call(t, "POST", "/datasets/"+points+"/analysis/materialize/", body, bearer(u.Access)...)
		if r.Status != 200 || r.JSON(t)["job_id"] == nil {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		return waitJobEnd(t, u, r.JSON(t)["job_id"].(string))
	}
	job := materialize(t, map[string]any{"operation": "select_by_location", "mask_dataset_id": zones, "title": "Points in zones"})
	if job["status"] != "complete" {
		t.Fatalf("%v", job)
	}
	id := job["dataset_id"].(string)
	d := call(t, "GET", "/datasets/"+id, nil, bearer(u.Access)...).JSON(t)
	from, _ := d["derived_from"].(map[string]any)
	if d["origin"] != "analysis" || d["feature_count"] != 10.0 || d["title"] != "Points in zones" || d["visibility"] != "private" ||
		from["dataset_id"] != points || from["operation"] != "select_by_location" || from["params"].(map[string]any)["mask_dataset_id"] != zones {
		t.Fatalf("%v", d)
	}
	// The new dataset serves features and takes new ones (its key has a default).
	items := call(t, "GET", "/collections/"+id+"/items?limit=100", nil, bearer(u.Access)...)
	if items.Status != 200 || len(items.JSON(t)["features"].([]any)) != 10 {
		t.Fatalf("items: %d %s", items.Status, items.Body)
	}
	add := call(t, "POST", "/datasets/"+id+"/features/", map[string]any{"type": "Feature", "properties": map[string]any{"name": "new"},
		"geometry": map[string]any{"type": "Point", "coordinates": []float64{5, 50}}}, bearer(u.Access)...)
	if add.Status != 201 {
		t.Fatalf("add a feature: %d %s", add.Status, add.Body)
	}
	// A reader who may read the output but not the mask does not learn the mask's id.
	publishAs(t, u, id, "public")
	if p := call(t, "GET", "/datasets/"+id, nil, bearer(reader.Access)...).JSON(t)["derived_from"].(map[string]any)["params"].(map[string]any); p["mask_dataset_id"] != nil {
		t.Fatalf("a reader sees the private mask's id: %v", p)
	}

	t.Run("dissolve by a field", func(t *testing.T) {
		r := call(t, "POST", "/datasets/"+zones+"/analysis/materialize/", map[string]any{"operation": "dissolve", "by_field": "zone", "title": "Zones dissolved"}, bearer(u.Access)...)
		job := waitJobEnd(t, u, r.JSON(t)["job_id"].(string))
		if job["status"] != "complete" {
			t.Fatalf("%v", job)
		}
		d := call(t, "GET", "/datasets/"+job["dataset_id"].(string), nil, bearer(u.Access)...).JSON(t)
		if d["feature_count"] != 2.0 || d["geometry_type"] != "MULTIPOLYGON" {
			t.Fatalf("%v", d)
		}
	})
	t.Run("an empty result fails the job and leaves no table", func(t *testing.T) {
		before := dataTables(t)
		job := materialize(t, map[string]any{"operation": "select_by_location", "title": "Nothing",
			"mask": map[string]any{"type": "Point", "coordinates": []float64{-60, -60}}})
		if job["status"] != "failed" || job["error_message"] != "the analysis produced no features" || dataTables(t) != before {
			t.Fatalf("%v (tables %d → %d)", job, before, dataTables(t))
		}
	})
}

// The bounds of section 8's kind: ANALYSIS_MAX_FEATURES refuses a large input before any work,
// ANALYSIS_TIMEOUT stops a materialization that runs too long (its job fails, no table stays).
// The registered table is in web mercator: the analysis works in WGS 84 all the same.
func TestAnalysisLimits(t *testing.T) {
	s := startFresh(t, "RATE_LIMIT_ENABLED=false", "ANALYSIS_MAX_FEATURES=5", "ANALYSIS_TIMEOUT=1s")
	hc := contractAt(t, s)
	tok := loginAt(t, hc, s.APIRoot, "admin", AdminPassword)
	ctx := context.Background()
	conn := connect(t, s.DBURL)
	for _, sql := range []string{
		`CREATE TABLE public.merc (id serial PRIMARY KEY, name text, geom geometry(Point, 3857))`,
		`INSERT INTO public.merc (name, geom) SELECT 'm' || i, ST_Transform(ST_SetSRID(ST_MakePoint(5 + i * 0.01, 50), 4326), 3857) FROM generate_series(1, 3) i`,
		`CREATE TABLE public.big (id serial PRIMARY KEY, geom geometry(Point, 4326))`,
		`INSERT INTO public.big (geom) SELECT ST_SetSRID(ST_MakePoint(5, 50), 4326) FROM generate_series(1, 6)`,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	register := func(path string) string {
		r := callAt(t, hc, s.APIRoot, "POST", "/ingest/register/", map[string]any{"table_path": path, "title": path}, bearer(tok)...)
		if r.Status != 201 {
			t.Fatalf("register: %d %s", r.Status, r.Body)
		}
		return r.JSON(t)["id"].(string)
	}
	merc, big := register("public.merc"), register("public.big")
	r := callAt(t, hc, s.APIRoot, "POST", "/datasets/"+big+"/analysis/preview/", map[string]any{"operation": "centroid"}, bearer(tok)...)
	if r.Status != 422 || !strings.Contains(string(r.Body), "ANALYSIS_MAX_FEATURES") {
		t.Fatalf("over the feature bound: %d %s", r.Status, r.Body)
	}
	r = callAt(t, hc, s.APIRoot, "POST", "/datasets/"+merc+"/analysis/preview/", map[string]any{"operation": "centroid", "bbox": []float64{5.005, 49.9, 5.025, 50.1}}, bearer(tok)...)
	f := r.JSON(t)["geojson"].(map[string]any)["features"].([]any)
	if r.Status != 200 || len(f) != 2 {
		t.Fatalf("web mercator input: %d %s", r.Status, r.Body)
	}
	if c := f[0].(map[string]any)["geometry"].(map[string]any)["coordinates"].([]any); math.Abs(c[1].(float64)-50) > 1e-6 {
		t.Fatalf("not in WGS 84: %v", c)
	}
	// The table turns slow: 0.4 s a row, three rows, past the 1 s bound.
	for _, sql := range []string{
		`ALTER TABLE public.merc RENAME TO merc_base`,
		`CREATE VIEW public.merc AS SELECT b.id, (SELECT b.name FROM pg_sleep(0.4 + b.id * 0)) AS name, b.geom FROM public.merc_base b`,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	var before int
	_ = conn.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE schemaname = 'data'").Scan(&before)
	r = callAt(t, hc, s.APIRoot, "POST", "/datasets/"+merc+"/analysis/materialize/", map[string]any{"operation": "centroid", "title": "Slow"}, bearer(tok)...)
	if r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	job := map[string]any{}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline) && job["status"] != "failed" && job["status"] != "complete"; time.Sleep(100 * time.Millisecond) {
		job = callAt(t, hc, s.APIRoot, "GET", "/jobs/"+r.JSON(t)["job_id"].(string), nil, bearer(tok)...).JSON(t)
	}
	var after int
	_ = conn.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE schemaname = 'data'").Scan(&after)
	if job["status"] != "failed" || !strings.Contains(fmt.Sprint(job["error_message"]), "statement timeout") || after != before || job["can_retry"] != true {
		t.Fatalf("%v (data tables %d → %d)", job, before, after)
	}
	// Once the table is fast again, Retry Job runs the analysis again from its spec.
	if _, err := conn.Exec(ctx, `DROP VIEW public.merc; ALTER TABLE public.merc_base RENAME TO merc`); err != nil {
		t.Fatal(err)
	}
	id := job["id"].(string)
	if r := callAt(t, hc, s.APIRoot, "POST", "/jobs/"+id+"/retry", nil, bearer(tok)...); r.Status != 200 {
		t.Fatalf("retry: %d %s", r.Status, r.Body)
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if job = callAt(t, hc, s.APIRoot, "GET", "/jobs/"+id, nil, bearer(tok)...).JSON(t); job["status"] == "complete" || job["status"] == "failed" {
			break
		}
	}
	if job["status"] != "complete" || job["rows_processed"] != 3.0 {
		t.Fatalf("after the retry: %v", job)
	}
}
