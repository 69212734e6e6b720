package conformance

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// pagedFeatures answers a page of n points in all, starting at offset, as GeoJSON.
func pagedFeatures(w http.ResponseWriter, n, offset, count int, extra string) {
	var b strings.Builder
	b.WriteString(`{"type":"FeatureCollection",` + extra + `"features":[`)
	for i := offset; i < min(n, offset+count); i++ {
		if i > offset {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"type":"Feature","properties":{"fid":%d,"kind":"tree"},"geometry":{"type":"Point","coordinates":[%g,50]}}`, i, 5+float64(i)*1e-4)
	}
	b.WriteString("]}")
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(b.String()))
}

// Preview Service Layer reads every page of a layer (WFS startIndex, ArcGIS resultOffset, OGC
// API next links: our own server as the source) into a pending import; its commit makes a
// dataset that remembers its source for refreshes.
func TestPreviewServiceLayerAndImport(t *testing.T) {
	var wfsPages, arcPages atomic.Int32
	src := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		switch {
		case r.URL.Path == "/wfs" && q.Get("request") == "GetFeature" && q.Get("typeNames") == "ns:trees":
			wfsPages.Add(1)
			start, _ := strconv.Atoi(q.Get("startIndex"))
			count, _ := strconv.Atoi(q.Get("count"))
			pagedFeatures(w, 2500, start, count, "")
		case r.URL.Path == "/arcgis/rest/services/City/FeatureServer/3/query":
			if q.Get("token") != "tkn" || q.Get("f") != "geojson" {
				w.WriteHeader(403)
				return
			}
			arcPages.Add(1)
			off, _ := strconv.Atoi(q.Get("resultOffset"))
			extra := ""
			if off == 0 {
				extra = `"properties":{"exceededTransferLimit":true},`
			}
			pagedFeatures(w, 1200, off, 1000, extra) // the service serves at most 1000 a page
		default:
			http.NotFound(w, r)
		}
	}))
	defer src.Close()
	s := startFresh(t, "RATE_LIMIT_ENABLED=false", "REMOTE_ALLOW_PRIVATE=true", "OGC_MAX_LIMIT=10")
	hc := contractAt(t, s)
	tok := loginAt(t, hc, s.APIRoot, "admin", AdminPassword)
	up := uploadAt(t, hc, s.APIRoot, tok, "pts.geojson", pointsGeoJSON(25)).JSON(t)["job_id"].(string)
	callAt(t, hc, s.APIRoot, "POST", "/ingest/commit/"+up, map[string]any{"visibility": "public"}, bearer(tok)...)
	own := waitJob(t, hc, s.APIRoot, tok, up, time.Minute, func(j map[string]any) bool { return j["status"] == "complete" })["dataset_id"].(string)

	preview := func(t *testing.T, body map[string]any) map[string]any {
		t.Helper()
		r := callAt(t, hc, s.APIRoot, "POST", "/services/preview/", body, bearer(tok)...)
		if r.Status != 200 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		return r.JSON(t)
	}
	for name, tc := range map[string]struct {
		body  map[string]any
		count float64
		pages *atomic.Int32
		want  int32
	}{
		"WFS, three pages": {map[string]any{"url": src.URL + "/wfs", "service_type": "wfs", "layer_name": "ns:trees"}, 2500, &wfsPages, 3},
		"ArcGIS, two pages": {map[string]any{"url": src.URL + "/arcgis/rest/services/City/FeatureServer", "service_type": "arcgis_feature_server",
			"layer_name": "Trees", "layer_id": 3, "token": "tkn", "object_id_field": "fid"}, 1200, &arcPages, 2},
		"our own OGC API, pages of ten": {map[string]any{"url": s.APIRoot + "/", "service_type": "ogc_api_features", "layer_name": own}, 25, nil, 0},
	} {
		t.Run(name, func(t *testing.T) {
			b := preview(t, tc.body)
			if b["feature_count"] != tc.count || b["geometry_type"] == nil || len(b["columns"].([]any)) == 0 || len(b["sample_rows"].([]any)) == 0 {
				t.Fatalf("%v", b)
			}
			if tc.pages != nil && tc.pages.Load() != tc.want {
				t.Fatalf("%d page requests, want %d", tc.pages.Load(), tc.want)
			}
		})
	}
	t.Run("commit keeps the source", func(t *testing.T) {
		b := preview(t, map[string]any{"url": src.URL + "/wfs", "service_type": "wfs", "layer_name": "ns:trees"})
		job := b["job_id"].(string)
		callAt(t, hc, s.APIRoot, "POST", "/ingest/commit/"+job, map[string]any{"title": "Trees"}, bearer(tok)...)
		done := waitJob(t, hc, s.APIRoot, tok, job, time.Minute, func(j map[string]any) bool { return j["status"] == "complete" || j["status"] == "failed" })
		d := callAt(t, hc, s.APIRoot, "GET", "/datasets/"+fmt.Sprint(done["dataset_id"]), nil, bearer(tok)...).JSON(t)
		ref, _ := d["origin_ref"].(map[string]any)
		if d["feature_count"] != 2500.0 || d["source_url"] != src.URL+"/wfs" || d["origin"] != "service" || ref["layer_name"] != "ns:trees" || ref["token"] != nil {
			t.Fatalf("%v", d)
		}
	})
	for name, tc := range map[string]struct {
		body   map[string]any
		status int
	}{
		"a display-only layer":  {map[string]any{"url": src.URL + "/wms", "service_type": "wms", "layer_name": "ortho"}, 422},
		"a layer that is gone":  {map[string]any{"url": src.URL + "/wfs", "service_type": "wfs", "layer_name": "ns:nothing"}, 502},
		"an unknown kind":       {map[string]any{"url": src.URL + "/x", "service_type": "gopher", "layer_name": "x"}, 422},
		"ArcGIS without its id": {map[string]any{"url": src.URL + "/arcgis/rest/services/City/FeatureServer", "service_type": "arcgis_feature_server", "layer_name": "x"}, 422},
	} {
		t.Run(name, func(t *testing.T) {
			if r := callAt(t, hc, s.APIRoot, "POST", "/services/preview/", tc.body, bearer(tok)...); r.Status != tc.status {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
		})
	}
}

// On the shared server private addresses stay refused and viewers may not import.
func TestPreviewServiceLayerRefusals(t *testing.T) {
	var hits atomic.Int32
	src := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer src.Close()
	body := map[string]any{"url": src.URL + "/wfs", "service_type": "wfs", "layer_name": "ns:trees"}
	if r := call(t, "POST", "/services/preview/", body, bearer(newUser(t, "editor").Access)...); r.Status != 422 || hits.Load() != 0 {
		t.Fatalf("%d %s (requests that reached it: %d)", r.Status, r.Body, hits.Load())
	}
	if r := call(t, "POST", "/services/preview/", body, bearer(newUser(t, "viewer").Access)...); r.Status != 403 {
		t.Fatalf("viewer: %d %s", r.Status, r.Body)
	}
}
