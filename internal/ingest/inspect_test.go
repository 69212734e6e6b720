package ingest

import "testing"

const twoLayers = "INFO: Open of `two.gpkg'\n      using driver `GPKG' successful.\n\nLayer name: roads\nGeometry: Line String\nFeature Count: 3\n" +
	"Extent: (1.000000, 2.000000) - (3.500000, 4.000000)\nLayer SRS WKT:\nGEOGCRS[\"WGS 84\",\n    PRIMEM[\"Greenwich\",0,\n        ANGLEUNIT[\"degree\",0.0174532925199433]],\n" +
	"    ID[\"EPSG\",4326]]\nData axis to CRS axis mapping: 2,1\nFID Column = fid\nGeometry Column = geom\nname: String (0.0)\nlanes: Integer (0.0)\nok: Integer(Boolean) (0.0)\n\n" +
	"Layer name: parks: north\nGeometry: Polygon\nFeature Count: 1\nLayer SRS WKT:\nPROJCRS[\"WGS 84 / Pseudo-Mercator\",\n    BASEGEOGCRS[\"WGS 84\",\n        ID[\"EPSG\",4326]],\n" +
	"    ID[\"EPSG\",3857]]\nsurveyed: Date (0.0)\n"

func TestParseOgrinfo(t *testing.T) {
	layers, driver, err := parseOgrinfo(twoLayers)
	if err != nil || driver != "GPKG" || len(layers) != 2 {
		t.Fatalf("layers %v driver %q err %v", layers, driver, err)
	}
	r, p := layers[0], layers[1]
	if r.Name != "roads" || r.GeometryType != "Line String" || r.FeatureCount != 3 || r.SRID != 4326 || len(r.Extent) != 4 || r.Extent[2] != 3.5 {
		t.Errorf("roads: %+v", r)
	}
	if len(r.Columns) != 3 || r.Columns[2] != (Field{Name: "ok", Type: "Integer"}) {
		t.Errorf("roads columns: %+v", r.Columns)
	}
	if p.Name != "parks: north" || p.SRID != 3857 || p.Extent != nil || len(p.Columns) != 1 || p.Columns[0].Type != "Date" {
		t.Errorf("parks: %+v", p)
	}
	if _, _, err := parseOgrinfo("INFO: Open of `x'\n      using driver `GPKG' successful.\n"); err == nil {
		t.Error("a file without layers was accepted")
	}
}
