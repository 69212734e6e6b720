package handlers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"reflect"
	"testing"
	"time"

	"meridian/gen"
)

// filled sets every field of v, at every depth, to a value of its type: strings that need
// escaping, numbers of every form encoding/json writes, two entries per slice and map. A field
// added to the records' schema is filled too, so the test below covers it without being told.
func filled(v reflect.Value, n *int) {
	*n++
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		filled(v.Elem(), n)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Date(2026, 11, 27, 6, 30, *n%60, 123456789, time.UTC)))
			return
		}
		if v.Type() == reflect.TypeFor[gen.Geometry]() {
			g := gen.Geometry{}
			_ = g.UnmarshalJSON([]byte(`{"type":"Polygon","coordinates":[[[-180,-90],[180,-90],[180,90],[-180,-90]]]}`))
			v.Set(reflect.ValueOf(g))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				filled(v.Field(i), n)
			}
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			filled(v.Index(i), n)
		}
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		for i := range 2 {
			key, val := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			key.SetString(fmt.Sprintf("k%d-%d", *n, i))
			filled(val, n)
			v.SetMapIndex(key, val)
		}
	case reflect.Interface:
		values := []any{"a <b> & \"c\" \u2028", 1e21, 1e-7, -0.5, 12345678.0, true, nil, []any{1.5, "x"}, map[string]any{"z": 1.0, "a": "b"}}
		if x := values[*n%len(values)]; x != nil {
			v.Set(reflect.ValueOf(x))
		}
	case reflect.String:
		texts := []string{"plain", "<script>&amp;</script>", "quote \" backslash \\ tab \t", "ünïcödé \u2028\u2029", "\x01ctl"}
		v.SetString(texts[*n%len(texts)])
	case reflect.Int, reflect.Int32, reflect.Int64:
		v.SetInt(int64(*n * 7919))
	case reflect.Float32, reflect.Float64:
		floats := []float64{-179.99999999, 1e21, 1e-7, 0, 123456789.125, -0.000001}
		v.SetFloat(floats[*n%len(floats)])
	case reflect.Bool:
		v.SetBool(*n%2 == 0)
	case reflect.Array: // UUIDs
		for i := range v.Len() {
			v.Index(i).SetUint(uint64(*n + i))
		}
	}
}

// TestRecordPagesEncodeAsEncodingJSON: record pages written by goccy/go-json are the bytes
// encoding/json writes, for a page with every field set (twice over, with escapes and every
// number form) and for a page of records with none.
func TestRecordPagesEncodeAsEncodingJSON(t *testing.T) {
	var full gen.OgcRecordCollection
	n := 0
	filled(reflect.ValueOf(&full).Elem(), &n)
	bare := gen.OgcRecordCollection{Type: "FeatureCollection", Features: []gen.OgcRecord{{Id: "x", Type: "Feature"}}}
	for name, page := range map[string]gen.OgcRecordCollection{"every field": full, "no field": bare, "empty": {}} {
		var want bytes.Buffer
		if err := json.NewEncoder(&want).Encode(page); err != nil {
			t.Fatal(err)
		}
		got := httptest.NewRecorder()
		if err := searchPage(page).VisitSearchDatasetsResponse(got); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Body.Bytes(), want.Bytes()) {
			t.Errorf("%s: goccy/go-json wrote\n%s\nencoding/json\n%s", name, got.Body.Bytes(), want.Bytes())
		}
		if ct := got.Header().Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: Content-Type %q", name, ct)
		}
	}
	got := httptest.NewRecorder()
	if err := recordItems(full).VisitOgcCollectionItemsResponse(got); err != nil || got.Header().Get("Content-Type") != geoJSON || got.Code != 200 {
		t.Errorf("records items: %v %d %q", err, got.Code, got.Header().Get("Content-Type"))
	}
	if n < 200 {
		t.Fatalf("only %d values filled", n)
	}
}

// BenchmarkRecordPageJSON compares the two encoders on a hybrid search's first page of ten
// records as the server wrote it (testdata/search-page.json).
func BenchmarkRecordPageJSON(b *testing.B) {
	raw, err := os.ReadFile("testdata/search-page.json")
	if err != nil {
		b.Fatal(err)
	}
	var page gen.OgcRecordCollection
	if err := json.Unmarshal(raw, &page); err != nil {
		b.Fatal(err)
	}
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			var buf bytes.Buffer
			_ = json.NewEncoder(&buf).Encode(page)
		}
	})
	b.Run("goccy-go-json", func(b *testing.B) {
		for b.Loop() {
			_ = searchPage(page).VisitSearchDatasetsResponse(httptest.NewRecorder())
		}
	})
}
