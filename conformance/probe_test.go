package conformance

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

// probeSource serves one of each kind of source Probe Service URL recognises.
func probeSource(t *testing.T) (*httptest.Server, *atomic.Int32) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		q := r.URL.Query()
		json := func(s string) { w.Header().Set("Content-Type", "application/json"); _, _ = w.Write([]byte(s)) }
		xmlDoc := func(s string) { w.Header().Set("Content-Type", "text/xml"); _, _ = w.Write([]byte(s)) }
		switch {
		case r.URL.Path == "/ogc/":
			json(`{"title":"Roads API","links":[{"rel":"conformance","href":"/ogc/conformance"},{"rel":"data","href":"/ogc/collections"}]}`)
		case r.URL.Path == "/ogc/collections":
			if r.Header.Get("Authorization") != "Bearer tkn" {
				w.WriteHeader(401)
				return
			}
			json(`{"collections":[{"id":"roads","title":"Roads","itemType":"feature","links":[]},{"id":"rivers","title":"Rivers","links":[]}],"links":[]}`)
		case r.URL.Path == "/wfs" && q.Get("request") == "GetCapabilities" && q.Get("service") == "WFS":
			xmlDoc(`<?xml version="1.0"?><wfs:WFS_Capabilities xmlns:wfs="http://www.opengis.net/wfs/2.0" version="2.0.0"><FeatureTypeList>` +
				`<FeatureType><Name>ns:parcels</Name><Title>Parcels</Title></FeatureType><FeatureType><Name>ns:trees</Name><Title>Trees</Title></FeatureType></FeatureTypeList></wfs:WFS_Capabilities>`)
		case r.URL.Path == "/wfs":
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte("<html><body>Use GetCapabilities</body></html>"))
		case r.URL.Path == "/wms" && q.Get("request") == "GetCapabilities":
			xmlDoc(`<WMS_Capabilities version="1.3.0"><Capability><Layer><Title>Root</Title><Layer><Name>ortho</Name><Title>Orthophoto</Title></Layer>` +
				`<Layer><Title>Group</Title><Layer><Name>dem</Name><Title>Elevation</Title></Layer></Layer></Layer></Capability></WMS_Capabilities>`)
		case r.URL.Path == "/arcgis/rest/services/City/FeatureServer":
			if q.Get("f") != "json" || q.Get("token") != "tkn" || r.Header.Get("Authorization") != "" {
				w.WriteHeader(403)
				return
			}
			json(`{"currentVersion":11.1,"layers":[{"id":0,"name":"Parcels","geometryType":"esriGeometryPolygon","type":"Feature Layer"}],"tables":[{"id":1,"name":"Owners"}]}`)
		case r.URL.Path == "/arcgis/rest/services/City/FeatureServer/0":
			json(`{"currentVersion":11.1,"id":0,"name":"Parcels","type":"Feature Layer","geometryType":"esriGeometryPolygon","objectIdField":"OBJECTID"}`)
		case r.URL.Path == "/stac/":
			json(`{"stac_version":"1.0.0","type":"Catalog","id":"c","description":"d","links":[{"rel":"data","href":"/stac/collections"}]}`)
		case r.URL.Path == "/stac/collections":
			json(`{"collections":[{"stac_version":"1.0.0","type":"Collection","id":"scenes","title":"Scenes"}],"links":[]}`)
		case r.URL.Path == "/data.geojson":
			json(`{"type":"FeatureCollection","features":[{"type":"Feature","properties":{},"geometry":{"type":"Point","coordinates":[5,50]}},` +
				`{"type":"Feature","properties":{},"geometry":{"type":"Point","coordinates":[6,50]}}]}`)
		case r.URL.Path == "/file.csv":
			w.Header().Set("Content-Type", "text/csv")
			_, _ = w.Write([]byte("a,b\n1,2\n"))
		case r.URL.Path == "/broken":
			w.WriteHeader(500)
		case r.URL.Path == "/page.html":
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte("<!doctype html><p>hello"))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func TestProbeServiceURL(t *testing.T) {
	src, hits := probeSource(t)
	s := startFresh(t, "RATE_LIMIT_ENABLED=false", "REMOTE_ALLOW_PRIVATE=true", "REMOTE_TIMEOUT=5s")
	hc := contractAt(t, s)
	tok := loginAt(t, hc, s.APIRoot, "admin", AdminPassword)
	for name, tc := range map[string]struct {
		url, token, service string
		layers              []string
		kind, selected      string
	}{
		"OGC API Features landing page": {src.URL + "/ogc/", "tkn", "ogc_api_features", []string{"rivers", "roads"}, "vector", ""},
		"our own OGC API":               {s.APIRoot + "/", "", "ogc_api_features", nil, "", ""},
		"a bare WFS address":            {src.URL + "/wfs", "", "wfs", []string{"ns:parcels", "ns:trees"}, "vector", ""},
		"WMS capabilities":              {src.URL + "/wms?service=WMS&request=GetCapabilities", "", "wms", []string{"dem", "ortho"}, "raster", ""},
		"an ArcGIS FeatureServer":       {src.URL + "/arcgis/rest/services/City/FeatureServer", "tkn", "arcgis_feature_server", []string{"Owners", "Parcels"}, "vector", ""},
		"an ArcGIS layer":               {src.URL + "/arcgis/rest/services/City/FeatureServer/0", "", "arcgis_feature_server", []string{"Parcels"}, "vector", "0"},
		"a STAC catalog":                {src.URL + "/stac/", "", "stac", []string{"scenes"}, "vector", ""},
		"a GeoJSON file":                {src.URL + "/data.geojson", "", "geojson", []string{"data"}, "vector", ""},
		"a CSV file":                    {src.URL + "/file.csv", "", "csv", []string{"file"}, "vector", ""},
		"an XYZ template":               {src.URL + "/tiles/{z}/{x}/{y}.png", "", "xyz", []string{"tiles"}, "raster", ""},
	} {
		t.Run(name, func(t *testing.T) {
			body := map[string]any{"url": tc.url}
			if tc.token != "" {
				body["token"] = tc.token
			}
			r := callAt(t, hc, s.APIRoot, "POST", "/services/probe/", body, bearer(tok)...)
			b := r.JSON(t)
			if r.Status != 200 || b["service_type"] != tc.service {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			var names []string
			for _, l := range b["layers"].([]any) {
				l := l.(map[string]any)
				names = append(names, l["name"].(string))
				if tc.kind != "" && l["layer_type"] != "table" && l["kind"] != tc.kind {
					t.Fatalf("layer %v: kind %v, want %s", l["name"], l["kind"], tc.kind)
				}
			}
			slices.Sort(names)
			if tc.layers != nil && !slices.Equal(names, tc.layers) {
				t.Fatalf("layers %v, want %v", names, tc.layers)
			}
			if sel := b["selected_layer_id"]; tc.selected != "" && (sel == nil || fmt.Sprint(sel) != tc.selected) {
				t.Fatalf("selected %v", sel)
			}
		})
	}
	t.Run("the ArcGIS layer names its key field, the GeoJSON its count", func(t *testing.T) {
		b := callAt(t, hc, s.APIRoot, "POST", "/services/probe/", map[string]any{"url": src.URL + "/arcgis/rest/services/City/FeatureServer/0"}, bearer(tok)...).JSON(t)
		if l := b["layers"].([]any)[0].(map[string]any); l["object_id_field"] != "OBJECTID" || l["geometry_type"] != "MultiPolygon" || l["layer_id"] != 0.0 {
			t.Fatalf("%v", l)
		}
		b = callAt(t, hc, s.APIRoot, "POST", "/services/probe/", map[string]any{"url": src.URL + "/data.geojson"}, bearer(tok)...).JSON(t)
		if l := b["layers"].([]any)[0].(map[string]any); l["feature_count"] != 2.0 || l["geometry_type"] != "Point" {
			t.Fatalf("%v", l)
		}
	})
	before := hits.Load()
	for name, tc := range map[string]struct {
		url    string
		status int
	}{
		"not a service":        {src.URL + "/page.html", 422},
		"a failing service":    {src.URL + "/broken", 502},
		"not found":            {src.URL + "/nothing", 502},
		"not http":             {"file:///etc/passwd", 422},
		"credentials in a URL": {strings.Replace(src.URL, "http://", "http://user:pw@", 1) + "/data.geojson", 422},
	} {
		t.Run(name, func(t *testing.T) {
			if r := callAt(t, hc, s.APIRoot, "POST", "/services/probe/", map[string]any{"url": tc.url}, bearer(tok)...); r.Status != tc.status {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
		})
	}
	if hits.Load()-before > 5 { // page.html and its two capabilities requests, broken, nothing
		t.Fatalf("%d requests for five refusals: a refused URL was fetched", hits.Load()-before)
	}
}

// The shared server keeps REMOTE_ALLOW_PRIVATE off: a private address is refused before any
// request; a viewer may not probe at all.
func TestProbeRefusesPrivateAddressesAndViewers(t *testing.T) {
	src, hits := probeSource(t)
	if r := call(t, "POST", "/services/probe/", map[string]any{"url": src.URL + "/data.geojson"}, bearer(newUser(t, "editor").Access)...); r.Status != 422 || hits.Load() != 0 {
		t.Fatalf("%d %s (requests that reached it: %d)", r.Status, r.Body, hits.Load())
	}
	if r := call(t, "POST", "/services/probe/", map[string]any{"url": "https://example.org/x.geojson"}, bearer(newUser(t, "viewer").Access)...); r.Status != 403 {
		t.Fatalf("viewer: %d %s", r.Status, r.Body)
	}
}
