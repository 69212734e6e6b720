package cql2

import (
	"errors"
	"strconv"
	"testing"
)

var fuzzProps = func() map[string]Property {
	m := map[string]Property{}
	for k, v := range corpusProps {
		m[k] = v
	}
	for k, v := range testProps {
		m[k] = v
	}
	return m
}()

var fuzzSeeds = []string{
	`pop * 2 + 1 > area / 4 AND name LIKE 'a\%%' OR NOT ok`,
	`S_INTERSECTS(geom, BBOX(170, -10, -170, 10)) AND T_DURING(INTERVAL(seen, until), INTERVAL('..', '2020-01-01'))`,
	`S_WITHIN(geom, GEOMETRYCOLLECTION(POINT Z(1 2 3), MULTIPOLYGON Z(((0 0 0, 1 0 0, 1 1 0, 0 0 0)))))`,
	`CASEI(ACCENTI(name)) IN (CASEI('x'), 'y') AND pop NOT BETWEEN -1 AND 2e3 AND born IS NOT NULL`,
	`pop % 2 = 1 AND pop div 2 ^ -2 = -(area)`,
}

// checkTranslation is the fuzzers' oracle: translating a parsed filter either succeeds, with
// exactly one argument a placeholder, or fails with a *Error.
func checkTranslation(t *testing.T, e Expr, opts Options) {
	sql, args, err := SQL(e, opts)
	if err != nil {
		var ce *Error
		if !errors.As(err, &ce) {
			t.Fatalf("SQL returned %T %v", err, err)
		}
		return
	}
	seen := make([]bool, len(args))
	for i := 0; i < len(sql); i++ {
		if sql[i] != '$' {
			continue
		}
		j := i + 1
		for j < len(sql) && sql[j] >= '0' && sql[j] <= '9' {
			j++
		}
		n, err := strconv.Atoi(sql[i+1 : j])
		if err != nil || n < 1 || n > len(args) {
			t.Fatalf("bad placeholder in %s (%d args)", sql, len(args))
		}
		seen[n-1] = true
	}
	for i, s := range seen {
		if !s {
			t.Fatalf("argument %d is never used: %s", i+1, sql)
		}
	}
}

func fuzzOptions(b byte) Options {
	return Options{Properties: fuzzProps, SwapXY: b&1 != 0, StorageSRID: []int{0, 3857}[b>>1&1]}
}

func FuzzParseText(f *testing.F) {
	for _, c := range corpus {
		f.Add(c.text)
	}
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		e, err := ParseText(src)
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("ParseText returned %T %v", err, err)
			}
			return
		}
		var b byte
		if len(src) > 0 {
			b = src[0]
		}
		checkTranslation(t, e, fuzzOptions(b))
	})
}

func FuzzParseJSON(f *testing.F) {
	for _, c := range corpus {
		f.Add([]byte(c.json))
	}
	f.Add([]byte(`{"op":"and","args":[{"op":"s_intersects","args":[{"property":"geom"},{"bbox":[170,-10,-170,10]}]},{"op":"t_starts","args":[{"property":"seen"},{"interval":["2020-01-01",".."]}]}]}`))
	f.Add([]byte(`{"op":"like","args":[{"op":"casei","args":[{"property":"name"}]},"a\u00e9\\"]}`))
	f.Fuzz(func(t *testing.T, src []byte) {
		e, err := ParseJSON(src)
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("ParseJSON returned %T %v", err, err)
			}
			return
		}
		var b byte
		if len(src) > 0 {
			b = src[len(src)-1]
		}
		checkTranslation(t, e, fuzzOptions(b))
	})
}
