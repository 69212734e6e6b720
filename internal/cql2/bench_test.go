package cql2

import "testing"

// benchFilter is a realistic ten-clause filter of the kind a map client sends.
const benchFilter = `name LIKE 'Tor%' AND pop > 100000 AND pop < 5000000 AND area BETWEEN 10.5 AND 2500 ` +
	`AND name IN ('Toronto', 'Tokyo', 'Suva', 'Apia') AND ok = TRUE AND born >= DATE('1800-01-01') ` +
	`AND NOT name = 'Frankfurt' AND S_INTERSECTS(geom, BBOX(-180, -60, 180, 75)) ` +
	`AND T_INTERSECTS(seen, INTERVAL('2019-01-01T00:00:00Z', '..'))`

func BenchmarkParseAndTranslate(b *testing.B) {
	opts := Options{Properties: testProps, StorageSRID: 3857}
	b.ReportAllocs()
	for b.Loop() {
		e, err := ParseText(benchFilter)
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := SQL(e, opts); err != nil {
			b.Fatal(err)
		}
	}
}
