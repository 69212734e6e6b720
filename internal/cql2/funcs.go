package cql2

import (
	"strings"
	"time"
	"unicode/utf8"
)

// funcInfo describes a standard CQL2 function.
type funcInfo struct {
	name  string // canonical (cql2-json) spelling
	nargs int
	sql   string // PostGIS function for the spatial ones
}

var stdFuncs = map[string]funcInfo{}

func init() {
	for _, f := range []funcInfo{
		{"casei", 1, ""}, {"accenti", 1, ""},
		{"s_intersects", 2, "ST_Intersects"}, {"s_equals", 2, "ST_Equals"}, {"s_disjoint", 2, "ST_Disjoint"},
		{"s_touches", 2, "ST_Touches"}, {"s_within", 2, "ST_Within"}, {"s_overlaps", 2, "ST_Overlaps"},
		{"s_crosses", 2, "ST_Crosses"}, {"s_contains", 2, "ST_Contains"},
		{"t_after", 2, ""}, {"t_before", 2, ""}, {"t_contains", 2, ""}, {"t_disjoint", 2, ""},
		{"t_during", 2, ""}, {"t_equals", 2, ""}, {"t_finishedBy", 2, ""}, {"t_finishes", 2, ""},
		{"t_intersects", 2, ""}, {"t_meets", 2, ""}, {"t_metBy", 2, ""}, {"t_overlappedBy", 2, ""},
		{"t_overlaps", 2, ""}, {"t_startedBy", 2, ""}, {"t_starts", 2, ""},
		{"a_equals", 2, ""}, {"a_contains", 2, ""}, {"a_containedBy", 2, ""}, {"a_overlaps", 2, ""},
	} {
		stdFuncs[strings.ToLower(f.name)] = f
	}
}

// lookupFunc finds a standard function by any capitalisation, without allocating.
func lookupFunc(name string) (funcInfo, bool) {
	if len(name) > 32 {
		return funcInfo{}, false
	}
	var buf [32]byte
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	f, ok := stdFuncs[string(buf[:len(name)])]
	return f, ok
}

// geomKindOf recognises a WKT geometry keyword.
func geomKindOf(s string) GeomKind {
	for k := Point; k <= GeometryCollection; k++ {
		if strings.EqualFold(s, geomWKT[k]) {
			return k
		}
	}
	return 0
}

// parseInstant reads the string of DATE(), TIMESTAMP() or an INTERVAL bound. want is 'd' for
// a date, 't' for a timestamp, 0 for either (told apart by length).
func parseInstant(s string, pos int, want byte) *TimeLit {
	if want == 0 {
		want = 't'
		if len(s) == 10 {
			want = 'd'
		}
	}
	if want == 'd' {
		t, err := time.Parse("2006-01-02", s)
		if err != nil {
			fail(pos, "invalid date "+quoteForMsg(s)+" (want YYYY-MM-DD, e.g. 2021-04-08)")
		}
		return &TimeLit{Pos: pos, Date: true, Val: t}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || len(s) < 20 || s[10] != 'T' && s[10] != 't' {
		fail(pos, "invalid timestamp "+quoteForMsg(s)+" (want RFC 3339, e.g. 2021-04-08T04:39:23Z)")
	}
	return &TimeLit{Pos: pos, Val: t.UTC()}
}

// quoteForMsg quotes client text for an error message, shortened so a huge literal does not
// make a huge message.
func quoteForMsg(s string) string {
	if len(s) > 60 {
		cut := 57
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}
