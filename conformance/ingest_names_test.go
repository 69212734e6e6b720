package conformance

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// tableColumns lists a dataset table's columns as name:type, in order.
func tableColumns(t *testing.T, datasetID string) string {
	t.Helper()
	var cols string
	err := dbConn(t).QueryRow(context.Background(), `SELECT string_agg(a.attname || ':' || format_type(a.atttypid, a.atttypmod), ',' ORDER BY a.attnum)
		FROM catalog.datasets d JOIN pg_attribute a ON a.attrelid = format('%I.%I', d.table_schema, d.table_name)::regclass
		WHERE d.id = $1 AND a.attnum > 0 AND NOT a.attisdropped`, datasetID).Scan(&cols)
	if err != nil {
		t.Fatal(err)
	}
	return cols
}

// A DBF holding a field name twice (its 10-character names cut "population_2020" and
// "population_2021" to one stem) keeps both columns with their values and integer type, and the
// preview shows exactly the columns the import makes.
func TestIngestKeepsRepeatedDBFFields(t *testing.T) {
	u := newUser(t, "editor")
	dir := t.TempDir()
	csv := filepath.Join(dir, "d.csv")
	_ = os.WriteFile(csv, []byte("name,population,populatioX,lon,lat\na,10,20,5,50\nb,11,21,6,51\n"), 0o600)
	gdal(t, "ogr2ogr", "-f", "ESRI Shapefile", filepath.Join(dir, "shp"), csv, "-nln", "towns",
		"-oo", "X_POSSIBLE_NAMES=lon", "-oo", "Y_POSSIBLE_NAMES=lat", "-oo", "AUTODETECT_TYPE=YES")
	read := func(ext string) []byte { b, _ := os.ReadFile(filepath.Join(dir, "shp", "towns."+ext)); return b }
	dbf := read("dbf")
	if i := bytes.Index(dbf, []byte("populatioX")); i < 0 {
		t.Fatal("no second field in the DBF")
	} else {
		copy(dbf[i:], "population")
	}
	content := zipOf(t, "towns.shp", read("shp"), "towns.shx", read("shx"), "towns.dbf", dbf)

	id := upload(t, u, "towns.zip", content).JSON(t)["job_id"].(string)
	pv := call(t, "POST", "/ingest/preview/"+id, map[string]any{}, bearer(u.Access)...)
	if pv.Status != 200 {
		t.Fatalf("preview: %d %s", pv.Status, pv.Body)
	}
	layer := pv.JSON(t)["layers"].([]any)[0].(map[string]any)
	if cols := fmt.Sprint(layer["columns"]); !strings.Contains(cols, "name:population ") || !strings.Contains(cols, "name:population_2 ") {
		t.Fatalf("preview columns: %s", cols)
	}
	if row := layer["sample_rows"].([]any)[0].(map[string]any); row["population"] != float64(10) || row["population_2"] != float64(20) {
		t.Fatalf("preview sample: %v", row)
	}

	job := importFile(t, u, "towns.zip", content, nil)
	if job["status"] != "complete" {
		t.Fatalf("job: %v", job)
	}
	ws := fmt.Sprint(job["warnings"])
	if !strings.Contains(ws, "kind:dbf_truncation_collision") || !strings.Contains(ws, "originals:[population population_2]") {
		t.Fatalf("warnings: %s", ws)
	}
	ds := job["dataset_id"].(string)
	if cols := tableColumns(t, ds); !strings.Contains(cols, "population:integer,population_2:integer") {
		t.Fatalf("columns: %s", cols)
	}
	rows := call(t, "GET", "/datasets/"+ds+"/rows/", nil, bearer(u.Access)...)
	if !strings.Contains(string(rows.Body), `"population":10`) || !strings.Contains(string(rows.Body), `"population_2":20`) {
		t.Fatalf("rows: %s", rows.Body)
	}
}

// Names: the reserved ones get a src_ prefix, names PostgreSQL cannot take are cleaned the same
// way every time, letters of every script stay, and each change is reported.
func TestIngestColumnNames(t *testing.T) {
	u := newUser(t, "editor")
	props := `"gid":7,"geom":"a","GEOM_4326":1,"fid":2,"ogc_fid":3,"Área":4,"größe":5,":id":6,"population 2020":8`
	gj := `{"type":"FeatureCollection","features":[{"type":"Feature","properties":{` + props + `},"geometry":{"type":"Point","coordinates":[1,2]}}]}`
	job := importFile(t, u, "names.geojson", []byte(gj), nil)
	if job["status"] != "complete" {
		t.Fatalf("job: %v", job)
	}
	want := "gid:integer,src_gid:integer,src_geom:character varying,src_geom_4326:integer,src_fid:integer,src_ogc_fid:integer," +
		"área:integer,größe:integer,_id:integer,population_2020:integer,geom:geometry(MultiPoint,4326)"
	if cols := tableColumns(t, job["dataset_id"].(string)); cols != want {
		t.Fatalf("columns\n got %s\nwant %s", cols, want)
	}
	ws := fmt.Sprint(job["warnings"])
	for _, r := range []string{"original:gid renamed:src_gid", "original:GEOM_4326 renamed:src_geom_4326", "original::id renamed:_id",
		"original:population 2020 renamed:population_2020"} {
		if !strings.Contains(ws, r) {
			t.Errorf("warnings lack %q: %s", r, ws)
		}
	}
	if strings.Contains(ws, "Área") || strings.Contains(ws, "größe") {
		t.Errorf("names kept as they are (but for case) are reported: %s", ws)
	}
}

// x_column/y_column and geom_column of Commit Import override the detection of the usual names,
// in the CRS srid_override names; the columns stay attributes; a column that does not exist
// answers 422 naming it.
func TestIngestNamedCoordinateColumns(t *testing.T) {
	u := newUser(t, "editor")
	csv := []byte("name,lon,lat,px,py,shape\na,0,0,556597.45,6446275.84,POINT (7 51)\nb,0,0,667916.94,6621293.72,POINT (8 52)\n")
	for _, tc := range []struct {
		name   string
		commit map[string]any
		extent []float64
	}{
		{"detected lon/lat", map[string]any{}, []float64{0, 0, 0, 0}},
		{"named x/y in EPSG:3857", map[string]any{"x_column": "px", "y_column": "py", "srid_override": 3857}, []float64{5, 50, 6, 51}},
		{"named WKT column", map[string]any{"geom_column": "shape"}, []float64{7, 51, 8, 52}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := importFile(t, u, "coords.csv", csv, tc.commit)
			if job["status"] != "complete" {
				t.Fatalf("job: %v", job)
			}
			d := call(t, "GET", "/datasets/"+job["dataset_id"].(string), nil, bearer(u.Access)...).JSON(t)
			box, _ := d["extent_bbox"].([]any)
			if len(box) != 4 {
				t.Fatalf("extent: %v", d["extent_bbox"])
			}
			for i, want := range tc.extent {
				if got := box[i].(float64); got < want-1e-6 || got > want+1e-6 {
					t.Fatalf("extent %v, want %v", box, tc.extent)
				}
			}
			if cols := tableColumns(t, job["dataset_id"].(string)); !strings.Contains(cols, "px:") || !strings.Contains(cols, "lon:") || !strings.Contains(cols, "shape:") {
				t.Fatalf("the coordinate columns did not stay: %s", cols)
			}
		})
	}
	for param, body := range map[string]map[string]any{
		"x_column":    {"x_column": "east", "y_column": "py"},
		"geom_column": {"geom_column": "wkt_here"},
	} {
		id := upload(t, u, "coords.csv", csv).JSON(t)["job_id"].(string)
		r := call(t, "POST", "/ingest/commit/"+id, body, bearer(u.Access)...)
		if d, _ := r.JSON(t)["detail"].(string); r.Status != 422 || !strings.Contains(d, param) {
			t.Fatalf("%s naming a missing column: %d %s", param, r.Status, r.Body)
		}
	}
}

// A layer without geometry is a dataset all the same: record_type table, no geometry type or
// extent, its rows readable as rows, features and OGC items (geometry null), with statistics,
// values and the records collection, and exports to the formats that hold plain tables.
func TestIngestTableWithoutGeometry(t *testing.T) {
	u := newUser(t, "editor")
	job := importFile(t, u, "prices.csv", []byte("item,price,updated\napple,1.5,2024-01-02\npear,2.25,2024-02-03\nplum,,2024-03-04\n"), nil)
	if job["status"] != "complete" {
		t.Fatalf("job: %v", job)
	}
	id := job["dataset_id"].(string)
	d := call(t, "GET", "/datasets/"+id, nil, bearer(u.Access)...).JSON(t)
	if d["record_type"] != "table" || d["geometry_type"] != nil || d["extent_bbox"] != nil || d["feature_count"] != float64(3) {
		t.Fatalf("dataset: record_type %v geometry_type %v extent %v count %v", d["record_type"], d["geometry_type"], d["extent_bbox"], d["feature_count"])
	}
	if r := call(t, "GET", "/datasets/"+id+"/rows/", nil, bearer(u.Access)...); r.Status != 200 || !strings.Contains(string(r.Body), `"pear"`) {
		t.Fatalf("rows: %d %s", r.Status, r.Body)
	}
	fs := call(t, "GET", "/datasets/"+id+"/features/", nil, bearer(u.Access)...)
	if fs.Status != 200 || !strings.Contains(string(fs.Body), `"geometry":null`) || strings.Contains(string(fs.Body), `"coordinates"`) {
		t.Fatalf("features: %d %s", fs.Status, fs.Body)
	}
	items := call(t, "GET", "/collections/"+id+"/items?limit=5", nil, bearer(u.Access)...)
	if items.Status != 200 || items.JSON(t)["numberReturned"] != float64(3) || !strings.Contains(string(items.Body), `"geometry":null`) {
		t.Fatalf("OGC items: %d %s", items.Status, items.Body)
	}
	if st := call(t, "GET", "/datasets/"+id+"/columns/price/stats/", nil, bearer(u.Access)...); st.Status != 200 {
		t.Fatalf("stats: %d %s", st.Status, st.Body)
	}
	if v := call(t, "GET", "/datasets/"+id+"/columns/item/values/", nil, bearer(u.Access)...); v.Status != 200 || !strings.Contains(string(v.Body), "plum") {
		t.Fatalf("values: %d %s", v.Status, v.Body)
	}
	if v := call(t, "GET", "/datasets/"+id+"/validate/", nil, bearer(u.Access)...).JSON(t); v["valid"] != true ||
		fmt.Sprint(v["quality_detail"].(map[string]any)["crs_defined"]) != "<nil>" {
		t.Fatalf("validate: %v", v)
	}
	if rec := call(t, "GET", "/collections/datasets/items/"+d["id"].(string), nil, bearer(u.Access)...); rec.Status != 200 || !strings.Contains(string(rec.Body), `"geometry":null`) {
		t.Fatalf("record: %d %s", rec.Status, rec.Body)
	}
}

// Preview describes what the import makes: the format GDAL reads, CSV column types detected as
// the import detects them, and the columns the geometry comes from.
func TestPreviewDetectsTypesAndGeometryColumns(t *testing.T) {
	u := newUser(t, "editor")
	for _, tc := range []struct {
		file, content, detected, types string
	}{
		{"pts.csv", "name,Longitude,Latitude,count\na,5,50,3\n", "map[x:longitude y:latitude]", "name:String longitude:Real latitude:Real count:Integer"},
		{"wkt.csv", "name,WKT\na,POINT (5 50)\n", "map[wkt:wkt]", "name:String wkt:String"},
		{"plain.csv", "name,count\na,3\n", "<nil>", "name:String count:Integer"},
	} {
		id := upload(t, u, tc.file, []byte(tc.content)).JSON(t)["job_id"].(string)
		pv := call(t, "POST", "/ingest/preview/"+id, map[string]any{}, bearer(u.Access)...)
		if pv.Status != 200 || pv.JSON(t)["detected_format"] != "CSV" {
			t.Fatalf("%s: %d %s", tc.file, pv.Status, pv.Body)
		}
		l := pv.JSON(t)["layers"].([]any)[0].(map[string]any)
		if got := fmt.Sprint(l["detected_geometry_columns"]); got != tc.detected {
			t.Errorf("%s: detected %s, want %s", tc.file, got, tc.detected)
		}
		var types []string
		for _, c := range l["columns"].([]any) {
			m := c.(map[string]any)
			types = append(types, fmt.Sprint(m["name"], ":", m["type"]))
		}
		if got := strings.Join(types, " "); got != tc.types {
			t.Errorf("%s: columns %s, want %s", tc.file, got, tc.types)
		}
	}
}

// GeoParquet is refused at upload with the reason and what to send instead.
func TestGeoParquetIsRefusedClearly(t *testing.T) {
	u := newUser(t, "editor")
	r := upload(t, u, "buildings.parquet", []byte("PAR1....PAR1"))
	if d, _ := r.JSON(t)["detail"].(string); r.Status != 422 || !strings.Contains(d, "GeoParquet") || !strings.Contains(d, "GeoPackage") {
		t.Fatalf("parquet upload: %d %s", r.Status, r.Body)
	}
}

// Exports take their layer and file names from the title, whatever it holds: GDAL's reserved
// gpkg prefix, option-like dashes, quotes and slashes, 500 characters, other scripts. A table
// without geometry exports to the formats that hold tables and is refused, with the reason, by
// the others.
func TestExportAwkwardTitlesAndTables(t *testing.T) {
	u := newUser(t, "editor")
	job := importFile(t, u, "awk.geojson", pointsGeoJSON(4), nil)
	id := job["dataset_id"].(string)
	dir := t.TempDir()
	exported := func(t *testing.T, id, format, ext string, want int) {
		t.Helper()
		path, _ := exportedFile(t, dir, id, format, ext, u.Access)
		if n := ogrCount(t, path); n != want {
			t.Fatalf("%s holds %d features, want %d", format, n, want)
		}
		// Files that declare a geometry type declare the dataset's, not a generic one.
		if out, _ := exec.Command("ogrinfo", "-ro", "-so", "-al", path).CombinedOutput(); want == 4 && (ext == "gpkg" || ext == "fgb") &&
			!strings.Contains(string(out), "Geometry: Multi Point") {
			t.Fatalf("%s declares another geometry type:\n%s", format, out)
		}
	}
	for _, title := range []string{"gpkg_contents", "--config", "-sql -f", `a "quoted" / slashed \ title`, strings.Repeat("Long title ", 46)[:500], "Área größe 名前"} {
		if r := call(t, "PATCH", "/datasets/"+id, map[string]any{"title": title}, bearer(u.Access)...); r.Status != 200 {
			t.Fatalf("retitle %q: %d %s", title, r.Status, r.Body)
		}
		for _, f := range exportFormats {
			t.Run(fmt.Sprintf("%.20s/%s", title, f.format), func(t *testing.T) { exported(t, id, f.format, f.ext, 4) })
		}
	}

	table := importFile(t, u, "plain.csv", []byte("name,count\na,1\nb,2\nc,3\n"), nil)["dataset_id"].(string)
	for _, f := range exportFormats {
		if f.format == "shp" || f.format == "fgb" {
			r := call(t, "GET", "/datasets/"+table+"/export?format="+f.format, nil, bearer(u.Access)...)
			if d, _ := r.JSON(t)["detail"].(string); r.Status != 422 || !strings.Contains(d, "without geometry") {
				t.Fatalf("table as %s: %d %s", f.format, r.Status, r.Body)
			}
			continue
		}
		exported(t, table, f.format, f.ext, 3)
	}
}
