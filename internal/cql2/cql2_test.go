package cql2

import (
	"errors"
	"meridian/internal/sqlbuild"
	"reflect"
	"strings"
	"testing"
	"time"
)

// stripPos zeroes every Pos in a tree, so trees from the two encodings can be compared.
func stripPos(e Expr) Expr {
	if e == nil {
		return nil
	}
	zero(reflect.ValueOf(e))
	return e
}

func zero(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			zero(v.Elem())
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			zero(v.Index(i))
		}
	case reflect.Struct:
		if f := v.FieldByName("Pos"); f.IsValid() && f.CanSet() {
			f.SetInt(0)
		}
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				zero(v.Field(i))
			}
		}
	}
}

func errMsg(err error) string {
	var ce *Error
	if errors.As(err, &ce) {
		return ce.Msg
	}
	if err != nil {
		return "NOT A *cql2.Error: " + err.Error()
	}
	return ""
}

// TestCorpus: both encodings of every example of the standard parse to the same tree and
// translate to the same SQL and arguments (or fail the same way).
func TestCorpus(t *testing.T) {
	opts := Options{Properties: corpusProps}
	for _, c := range corpus {
		t.Run(c.name, func(t *testing.T) {
			te, err := ParseText(c.text)
			if err != nil {
				t.Fatalf("text: %v", err)
			}
			je, err := ParseJSON([]byte(c.json))
			if err != nil {
				t.Fatalf("json: %v", err)
			}
			tsql, targs, terr := SQL(te, opts)
			jsql, jargs, jerr := SQL(je, opts)
			if !reflect.DeepEqual(stripPos(te), stripPos(je)) {
				t.Fatalf("trees differ:\ntext %#v\njson %#v", te, je)
			}
			if tsql != jsql || !reflect.DeepEqual(targs, jargs) || errMsg(terr) != errMsg(jerr) {
				t.Fatalf("translations differ:\ntext %s %v %v\njson %s %v %v", tsql, targs, terr, jsql, jargs, jerr)
			}
			if terr != nil {
				var ce *Error
				if !errors.As(terr, &ce) {
					t.Fatalf("error is not a *Error: %v", terr)
				}
				t.Logf("%s -> %v", c.text, terr)
			}
		})
	}
}

var testProps = map[string]Property{
	"name":  {Name: "name", SQL: `t."name"`, Type: String},
	"pop":   {Name: "pop", SQL: `t."pop"`, Type: Integer},
	"area":  {Name: "area", SQL: `t."area"`, Type: Number},
	"ok":    {Name: "ok", SQL: `t."ok"`, Type: Boolean},
	"born":  {Name: "born", SQL: `t."born"`, Type: Date},
	"seen":  {Name: "seen", SQL: `t."seen"`, Type: Timestamp},
	"until": {Name: "until", SQL: `t."until"`, Type: Timestamp},
	"geom":  {Name: "geom", SQL: `t."geom"`, Type: Geometry},
	"geom2": {Name: "geom2", SQL: `t."geom2"`, Type: Geometry},
	"upper": {Name: "upper", SQL: `upper(t."name")`, Type: String},
}

func ts(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

// The caller's own conditions and the filter share one builder, so the filter's placeholders
// continue the caller's numbering.
func TestRenderContinuesTheCallersPlaceholders(t *testing.T) {
	e, err := ParseText(`pop > 5 AND area <= 2.5`)
	if err != nil {
		t.Fatal(err)
	}
	var b sqlbuild.Builder
	for _, v := range []any{"x", "y", "z"} {
		b.Arg(v)
	}
	sql, err := Render(&b, e, Options{Properties: testProps})
	if err != nil {
		t.Fatal(err)
	}
	if want := `(t."pop" > $4::bigint AND t."area" <= $5::double precision)`; sql != want {
		t.Fatalf("sql\n got %s\nwant %s", sql, want)
	}
	if want := []any{"x", "y", "z", int64(5), 2.5}; !reflect.DeepEqual(b.Args(), want) {
		t.Fatalf("args %#v, want %#v", b.Args(), want)
	}
}

func TestSQL(t *testing.T) {
	d2020 := ts("2020-01-01T00:00:00Z")
	cases := []struct {
		filter string
		opts   Options
		sql    string
		args   []any
	}{
		{`name = 'Toronto'`, Options{}, `t."name" = $1::text`, []any{"Toronto"}},
		{`pop > 5 AND area <= 2.5`, Options{}, `(t."pop" > $1::bigint AND t."area" <= $2::double precision)`, []any{int64(5), 2.5}},
		{`pop = 2.5`, Options{}, `t."pop" = $1::double precision`, []any{2.5}},
		{`pop = -9007199254740993`, Options{}, `t."pop" = $1::bigint`, []any{int64(-9007199254740993)}},
		{`area > 1e3`, Options{}, `t."area" > $1::double precision`, []any{1000.0}},
		{`a OR b`, Options{}, "", nil}, // unknown property: see TestErrors
		{`pop = 1 OR pop = 2 AND NOT area = 3`, Options{}, `(t."pop" = $1::bigint OR (t."pop" = $2::bigint AND NOT (t."area" = $3::bigint)))`, []any{int64(1), int64(2), int64(3)}},
		{`NOT (pop = 1 OR pop = 2)`, Options{}, `NOT (t."pop" = $1::bigint OR t."pop" = $2::bigint)`, []any{int64(1), int64(2)}},
		{`ok`, Options{}, `t."ok"`, nil},
		{`ok = FALSE`, Options{}, `t."ok" = $1::boolean`, []any{false}},
		{`TRUE`, Options{}, `$1::boolean`, []any{true}},
		{`name IS NULL OR geom IS NOT NULL`, Options{}, `(t."name" IS NULL OR t."geom" IS NOT NULL)`, nil},
		{`name LIKE 'It''s 100\% _done_%'`, Options{}, `t."name" LIKE $1::text`, []any{`It's 100\% _done_%`}},
		{`CASEI(name) LIKE casei('abc%')`, Options{}, `lower(t."name") LIKE lower($1::text)`, []any{"abc%"}},
		{`ACCENTI(name) = ACCENTI('é')`, Options{}, `regexp_replace(normalize(t."name", NFD), '[\u0300-\u036f]', '', 'g') = regexp_replace(normalize($1::text, NFD), '[\u0300-\u036f]', '', 'g')`, []any{"é"}},
		{`pop NOT BETWEEN 1 AND 10.5`, Options{}, `t."pop" NOT BETWEEN $1::bigint AND $2::double precision`, []any{int64(1), 10.5}},
		{`name IN ('a', 'b') AND pop NOT IN (1)`, Options{}, `(t."name" IN ($1::text, $2::text) AND t."pop" NOT IN ($3::bigint))`, []any{"a", "b", int64(1)}},
		{`upper = 'X'`, Options{}, `(upper(t."name")) = $1::text`, []any{"X"}},
		{`pop = area`, Options{}, `t."pop" = t."area"`, nil},
		{`pop * 2 + 1 > area / 4`, Options{}, `((t."pop" * $1::bigint) + $2::bigint) > (CAST(t."area" AS double precision) / NULLIF($3::bigint, 0))`, []any{int64(2), int64(1), int64(4)}},
		{`pop % 3 = 1 AND pop div 2 = area % 2 AND 2 ^ pop > -area`, Options{},
			`(mod(t."pop", NULLIF($1::bigint, 0)) = $2::bigint AND (t."pop" / NULLIF($3::bigint, 0)) = mod(CAST(t."area" AS numeric), NULLIF(CAST($4::bigint AS numeric), 0)) AND power(CAST($5::bigint AS double precision), CAST(t."pop" AS double precision)) > (-t."area"))`,
			[]any{int64(3), int64(1), int64(2), int64(2), int64(2)}},
		{`seen > TIMESTAMP('2020-01-01T01:00:00+01:00')`, Options{}, `t."seen" > $1::timestamptz`, []any{d2020}},
		{`born = DATE('2020-01-01')`, Options{}, `t."born" = $1::date`, []any{d2020}},
		{`seen >= DATE('2020-01-01')`, Options{}, `t."seen" >= $1::timestamptz`, []any{d2020}},
		{`born < TIMESTAMP('2020-01-01T00:00:00Z')`, Options{}, `(t."born"::timestamp AT TIME ZONE 'UTC') < $1::timestamptz`, []any{d2020}},
		{`T_INTERSECTS(seen, INTERVAL('2020-01-01', '..'))`, Options{}, `(t."seen" <= 'infinity'::timestamptz AND t."seen" >= $1::timestamptz)`, []any{d2020}},
		{`T_DURING(born, INTERVAL('..', '2020-01-01'))`, Options{}, `(t."born" > '-infinity'::date AND t."born" < $1::date)`, []any{d2020}},
		{`T_EQUALS(seen, TIMESTAMP('2020-01-01T00:00:00Z'))`, Options{}, `t."seen" = $1::timestamptz`, []any{d2020}},
		{`T_AFTER(seen, INTERVAL('2019-01-01', '2020-01-01'))`, Options{}, `t."seen" > $1::timestamptz`, []any{d2020}},
		{`T_DISJOINT(INTERVAL(seen, until), born)`, Options{}, `(t."until" < (t."born"::timestamp AT TIME ZONE 'UTC') OR t."seen" > (t."born"::timestamp AT TIME ZONE 'UTC'))`, nil},
		{`T_OVERLAPS(INTERVAL(seen, until), INTERVAL('2019-01-01T00:00:00Z', '2020-01-01T00:00:00Z'))`, Options{},
			`(t."seen" < $1::timestamptz AND t."until" > $1::timestamptz AND t."until" < $2::timestamptz)`, []any{ts("2019-01-01T00:00:00Z"), d2020}},
		{`S_INTERSECTS(geom, POINT(1 2))`, Options{}, `ST_Intersects(t."geom", ST_GeomFromText($1::text, 4326))`, []any{"POINT (1 2)"}},
		{`S_CONTAINS(geom, geom2)`, Options{}, `ST_Contains(t."geom", t."geom2")`, nil},
		{`S_WITHIN(POINT Z (1 2 3), geom)`, Options{StorageSRID: 3857, SwapXY: true}, `ST_Within(ST_Transform(ST_FlipCoordinates(ST_GeomFromText($1::text, 4326)), 3857), t."geom")`, []any{"POINT Z (1 2 3)"}},
		{`S_EQUALS(geom, MULTIPOLYGON(((0 0, 1 0, 1 1, 0 0)), ((5 5, 6 5, 6 6, 5 5), (5.1 5.1, 5.2 5.1, 5.2 5.2, 5.1 5.1))))`, Options{}, `ST_Equals(t."geom", ST_GeomFromText($1::text, 4326))`,
			[]any{"MULTIPOLYGON (((0 0, 1 0, 1 1, 0 0)), ((5 5, 6 5, 6 6, 5 5), (5.1 5.1, 5.2 5.1, 5.2 5.2, 5.1 5.1)))"}},
		{`S_TOUCHES(geom, GEOMETRYCOLLECTION(POINT(1 2), LINESTRING(0 0, 1 1), MULTIPOINT(1 1, 2 2)))`, Options{}, `ST_Touches(t."geom", ST_GeomFromText($1::text, 4326))`,
			[]any{"GEOMETRYCOLLECTION (POINT (1 2), LINESTRING (0 0, 1 1), MULTIPOINT ((1 1), (2 2)))"}},
		{`S_INTERSECTS(geom, BBOX(-10, 40, 10, 50))`, Options{FilterSRID: 4326, StorageSRID: 3857},
			`ST_Intersects(t."geom", ST_Transform(ST_MakeEnvelope($1::double precision, $2::double precision, $3::double precision, $4::double precision, 4326), 3857))`, []any{-10.0, 40.0, 10.0, 50.0}},
		{`S_INTERSECTS(geom, BBOX(40, -10, 50, 10))`, Options{SwapXY: true},
			`ST_Intersects(t."geom", ST_MakeEnvelope($1::double precision, $2::double precision, $3::double precision, $4::double precision, 4326))`, []any{-10.0, 40.0, 10.0, 50.0}},
		{`S_INTERSECTS(geom, BBOX(170, -10, -170, 10))`, Options{},
			`(ST_Intersects(t."geom", ST_MakeEnvelope($1::double precision, $2::double precision, 180, $4::double precision, 4326)) OR ST_Intersects(t."geom", ST_MakeEnvelope(-180, $2::double precision, $3::double precision, $4::double precision, 4326)))`,
			[]any{170.0, -10.0, -170.0, 10.0}},
		{`S_DISJOINT(BBOX(170, -10, -170, 10), geom)`, Options{},
			`(ST_Disjoint(ST_MakeEnvelope($1::double precision, $2::double precision, 180, $4::double precision, 4326), t."geom") AND ST_Disjoint(ST_MakeEnvelope(-180, $2::double precision, $3::double precision, $4::double precision, 4326), t."geom"))`,
			[]any{170.0, -10.0, -170.0, 10.0}},
		{`S_WITHIN(geom, BBOX(170, -10, 0, -170, 10, 5))`, Options{},
			`ST_Within(t."geom", ST_Collect(ST_MakeEnvelope($1::double precision, $2::double precision, 180, $4::double precision, 4326), ST_MakeEnvelope(-180, $2::double precision, $3::double precision, $4::double precision, 4326)))`,
			[]any{170.0, -10.0, -170.0, 10.0}},
	}
	for _, c := range cases {
		if c.sql == "" {
			continue
		}
		t.Run(c.filter, func(t *testing.T) {
			e, err := ParseText(c.filter)
			if err != nil {
				t.Fatal(err)
			}
			c.opts.Properties = testProps
			sql, args, err := SQL(e, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			if sql != c.sql {
				t.Errorf("sql\n got %s\nwant %s", sql, c.sql)
			}
			if !reflect.DeepEqual(args, c.args) {
				t.Errorf("args\n got %#v\nwant %#v", args, c.args)
			}
		})
	}
}

// TestErrors: invalid filters fail with a *Error at the right position.
func TestErrors(t *testing.T) {
	cases := []struct {
		lang, filter string
		pos          int
		msg          string
	}{
		{"cql2-text", `pop > 5 AND popul < 3`, 12, `unknown property "popul"`},
		{"cql2-text", ``, 0, `filter is empty`},
		{"cql2-text", `name = 'abc`, 7, `string is not terminated`},
		{"cql2-text", `name = "abc`, 7, `quoted identifier is not terminated`},
		{"cql2-text", `name = 5`, 7, `cannot compare property "name" (String) with number 5`},
		{"cql2-text", `5 = name`, 0, `cannot compare number 5 with property "name" (String)`},
		{"cql2-text", `name = pop`, 7, `cannot compare property "name" (String) with property "pop" (Integer)`},
		{"cql2-text", `seen > '2020-01-01'`, 7, `write instants as DATE(`},
		{"cql2-text", `pop LIKE '1%'`, 0, `LIKE needs a string on its left, not property "pop" (Integer)`},
		{"cql2-text", `name LIKE pop`, 10, `the pattern of LIKE must be a string literal`},
		{"cql2-text", `S_INTERSECTS(name, POINT(1 2))`, 13, `S_INTERSECTS needs geometries, but property "name" is String`},
		{"cql2-text", `S_INTERSECTS(geom, 5)`, 19, `needs geometries`},
		{"cql2-text", `T_AFTER(pop, DATE('2020-01-01'))`, 8, `T_AFTER needs instants or intervals, but property "pop" is Integer`},
		{"cql2-text", `T_AFTER(seen, 'x')`, 14, `T_AFTER needs instants or intervals`},
		{"cql2-text", `name + 1 > 2`, 0, `arithmetic needs numbers, not property "name" (String)`},
		{"cql2-text", `pop > 'a' * 2`, 6, `arithmetic needs numbers, not string 'a'`},
		{"cql2-text", `geom = POINT(1 2)`, 0, `geometries cannot be used with comparison operators`},
		{"cql2-text", `seen = INTERVAL('..', '..')`, 7, `an INTERVAL can only be used in a temporal function`},
		{"cql2-text", `ok < TRUE`, 3, `booleans can only be compared with = and <>`},
		{"cql2-text", `pop BETWEEN 'a' AND 3`, 12, `cannot compare property "pop" (Integer) with string 'a'`},
		{"cql2-text", `pop IN (1, 'a')`, 11, `cannot compare property "pop" (Integer) with string 'a'`},
		{"cql2-text", `pop`, 0, `property "pop" is Integer, not Boolean`},
		{"cql2-text", `pop + 1`, 4, `filter must be a predicate`},
		{"cql2-text", `CASEI(name)`, 0, `is a string, not a predicate`},
		{"cql2-text", `CASEI(pop) = 'a'`, 6, `CASEI needs a string, not property "pop" (Integer)`},
		{"cql2-text", `A_CONTAINS(name, ('a'))`, 0, `array functions (A_CONTAINS) are not supported`},
		{"cql2-text", `Buffer(geom, 10) = TRUE`, 0, `function "Buffer" is not supported`},
		{"cql2-text", `pop = 1 AND`, 11, `expected a value, a property or a function, found end of filter`},
		{"cql2-text", `pop = 1 pop = 2`, 8, `expected AND, OR or the end of the filter, found "pop"`},
		{"cql2-text", `pop = = 1`, 6, `expected a value`},
		{"cql2-text", `pop != 1`, 4, `CQL2 writes not-equal as '<>'`},
		{"cql2-text", `pop = 1 = 2`, 4, `must be values, not a predicate`},
		{"cql2-text", `pop = 1 AND 5`, 12, `AND needs predicates on both sides, not number 5`},
		{"cql2-text", `pop NOT = 1`, 8, `expected LIKE, BETWEEN or IN after NOT`},
		{"cql2-text", `pop IS 1`, 7, `expected NULL or NOT NULL after IS`},
		{"cql2-text", `pop = NULL`, 6, `NULL can only be tested with IS NULL`},
		{"cql2-text", `pop BETWEEN 1 OR 2`, 14, `expected AND of BETWEEN`},
		{"cql2-text", `pop IN 1`, 7, `expected '(' opening the IN list`},
		{"cql2-text", `pop = 1e999`, 6, `number 1e999 is out of range`},
		{"cql2-text", `pop = 1e`, 7, `exponent without digits`},
		{"cql2-text", `seen > TIMESTAMP('2020-01-01')`, 17, `invalid timestamp '2020-01-01'`},
		{"cql2-text", `seen > TIMESTAMP('2020-13-01T00:00:00Z')`, 17, `invalid timestamp`},
		{"cql2-text", `born > DATE('2020-02-30')`, 12, `invalid date '2020-02-30'`},
		{"cql2-text", `T_DURING(seen, INTERVAL('2021-01-01', '2020-01-01'))`, 15, `INTERVAL starts after it ends`},
		{"cql2-text", `T_DURING(seen, INTERVAL(5, '..'))`, 24, `an INTERVAL end must be`},
		{"cql2-text", `S_INTERSECTS(geom, POLYGON((0 0, 1 0, 1 1, 0 1)))`, 27, `a polygon ring must be closed`},
		{"cql2-text", `S_INTERSECTS(geom, POLYGON((0 0, 1 0, 0 0)))`, 27, `a polygon ring needs at least 4 positions`},
		{"cql2-text", `S_INTERSECTS(geom, LINESTRING(0 0))`, 29, `a line string needs at least 2 positions`},
		{"cql2-text", `S_INTERSECTS(geom, LINESTRING(0 0, 1 1 1))`, 35, `cannot mix 2D and 3D coordinates`},
		{"cql2-text", `S_INTERSECTS(geom, POINT(0))`, 26, `expected a coordinate (x y or x y z)`},
		{"cql2-text", `S_INTERSECTS(geom, POINT EMPTY)`, 25, `empty geometries are not supported`},
		{"cql2-text", `S_INTERSECTS(geom, BBOX(1, 2, 3))`, 19, `BBOX takes 4 numbers`},
		{"cql2-text", `S_INTERSECTS(geom, BBOX(0, 10, 1, 5))`, 19, `BBOX minimum y (10) is greater than its maximum (5)`},
		{"cql2-text", `S_INTERSECTS(geom)`, 0, `S_INTERSECTS takes 2 argument(s), not 1`},
		{"cql2-text", `name = 'a` + "\x00" + `'`, 9, `NUL character`},
		{"cql2-text", `name = '` + "\xff" + `'`, 8, `not valid UTF-8`},
		{"cql2-text", strings.Repeat("(", 150) + "ok" + strings.Repeat(")", 150), 100, `nested too deeply`},
		{"cql2-text", strings.Repeat("NOT ", 150) + "ok", 400, `nested too deeply`},
		{"cql2-text", "pop = 1" + strings.Repeat(" + 1", 150), 208, `nested too deeply`},
		{"cql2-text", "pop = '" + strings.Repeat("x", MaxLength) + "'", 0, `filter is longer than 65536 bytes`},
		{"cql2-json", `{"op":"=","args":[{"property":"popul"},1]}`, 18, `unknown property "popul"`},
		{"cql2-json", `{"op":"=","args":[{"property":"name"},1]}`, 38, `cannot compare property "name" (String) with number 1`},
		{"cql2-json", `{"op":"=","args":[{"property":"name"}]}`, 17, `"=" takes 2 argument(s), not 1`},
		{"cql2-json", `{"op":"and","args":[{"op":"=","args":[{"property":"pop"},1]},5]}`, 61, `"and" needs predicates, not number 5`},
		{"cql2-json", `{"op":"=","args":[{"property":"pop"},1],"x":1}`, 44, `unexpected member "x" in an operation`},
		{"cql2-json", `{"op":"=","args":[{"property":"pop"},null]}`, 37, `null is not a CQL2 value`},
		{"cql2-json", `{"op":"=","args":[{"property":"pop"},1]`, 39, `expected ',' or '}' in the JSON object`},
		{"cql2-json", `{"op":"=","args":[{"property":"pop"},1]} x`, 41, `unexpected data after the JSON value`},
		{"cql2-json", `{"op":"s_intersects","args":[{"property":"geom"},{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,1]]]}]}`, 82, `a polygon ring must be closed`},
		{"cql2-json", `{"op":"s_intersects","args":[{"property":"geom"},{"type":"Pointy","coordinates":[0,0]}]}`, 57, `"type" must be a GeoJSON geometry type`},
		{"cql2-json", `{"op":"t_after","args":[{"property":"seen"},{"timestamp":"yesterday"}]}`, 57, `invalid timestamp 'yesterday'`},
		{"cql2-json", `{"op":"in","args":[{"property":"pop"},1]}`, 38, `the second argument of "in" must be a non-empty array`},
		{"cql2-json", `{"op":"=","args":[{"property":"name"},"\ud800"]}`, 39, `unpaired surrogate`},
		{"cql2-json", `{"op":"=","args":[{"property":"name"},"\u0000"]}`, 39, `NUL character`},
		{"cql2-json", `{"op":"like","args":[{"property":"name"},"a"],"op":"x"}`, 46, `duplicate member "op"`},
		{"cql2-json", `5`, 0, `filter must be a predicate`},
		{"cql2-json", strings.Repeat(`{"op":"not","args":[`, 150) + `true` + strings.Repeat(`]}`, 150), 2080, `nested too deeply`},
		{"cql2-json", strings.Repeat(`[`, 300), 208, `nested too deeply`},
		{"cql2-yaml", `x`, 0, `unknown filter-lang "cql2-yaml"`},
	}
	for _, c := range cases {
		name := c.filter
		if len(name) > 60 {
			name = name[:60]
		}
		t.Run(name, func(t *testing.T) {
			e, err := Parse(c.lang, c.filter)
			if err == nil {
				_, _, err = SQL(e, Options{Properties: testProps})
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("want a *cql2.Error, got %v", err)
			}
			if ce.Pos != c.pos || !strings.Contains(ce.Msg, c.msg) {
				t.Errorf("got %v\nwant at position %d: ...%s...", ce, c.pos, c.msg)
			}
			if !strings.HasPrefix(ce.Error(), "cql2: at position ") {
				t.Errorf("Error() = %q", ce.Error())
			}
		})
	}
}

// TestLikeTrailingBackslash: a pattern ending in a lone backslash (possible in JSON; in text
// \' escapes the quote) matches a backslash instead of failing in PostgreSQL.
func TestLikeTrailingBackslash(t *testing.T) {
	e, err := ParseJSON([]byte(`{"op":"like","args":[{"property":"name"},"ends with \\"]}`))
	if err != nil {
		t.Fatal(err)
	}
	_, args, err := SQL(e, Options{Properties: testProps})
	if err != nil || args[0] != `ends with \\` {
		t.Fatalf("%v %q", err, args)
	}
}

// TestKeywordsCaseInsensitive: keywords, functions and geometry types in any case.
func TestKeywordsCaseInsensitive(t *testing.T) {
	a, err := ParseText(`pop between 1 and 2 or not name like 'x' and geom is not null and s_intersects(geom, point(1 2)) and t_after(seen, timestamp('2020-01-01T00:00:00Z')) and ok = true`)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ParseText(`pop BETWEEN 1 AND 2 OR NOT name LIKE 'x' AND geom IS NOT NULL AND S_INTERSECTS(geom, POINT(1 2)) AND T_AFTER(seen, TIMESTAMP('2020-01-01T00:00:00Z')) AND ok = TRUE`)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatal("lower- and upper-case keywords parse differently")
	}
}

// TestSQLNeverInlinesLiterals: a value that would break out of SQL text stays a parameter.
func TestSQLNeverInlinesLiterals(t *testing.T) {
	evil := `x'); DROP TABLE t; --`
	for _, f := range []string{
		`name = 'x''); DROP TABLE t; --'`,
		`{"op":"=","args":[{"property":"name"},"x'); DROP TABLE t; --"]}`,
	} {
		lang := "cql2-text"
		if f[0] == '{' {
			lang = "cql2-json"
		}
		e, err := Parse(lang, f)
		if err != nil {
			t.Fatal(err)
		}
		sql, args, err := SQL(e, Options{Properties: testProps})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(sql, "DROP") || len(args) != 1 || args[0] != evil {
			t.Fatalf("%s -> %s %v", f, sql, args)
		}
	}
}
