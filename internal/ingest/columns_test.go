package ingest

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestColumnName(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Name", "name"},
		{"population 2020", "population_2020"},
		{"größe", "größe"},
		{"Área", "área"},
		{"名前", "名前"},
		{":id", "_id"},
		{"a -- b", "a_b"},
		{`we"ird`, "we_ird"},
		{"2nd", "f_2nd"},
		{"", "field"},
		{"%%", "field"},
		{strings.Repeat("a", 300), strings.Repeat("a", 63)},
		// 31 two-byte letters are 62 bytes; a 32nd would cross 63 and is dropped whole.
		{strings.Repeat("ä", 40), strings.Repeat("ä", 31)},
	} {
		got := ColumnName(tc.in)
		if got != tc.want {
			t.Errorf("ColumnName(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if len(got) > maxIdentifier || !utf8.ValidString(got) || ColumnName(got) != got {
			t.Errorf("ColumnName(%q) = %q is not a stable name PostgreSQL keeps", tc.in, got)
		}
	}
}

func TestPlanColumns(t *testing.T) {
	long := strings.Repeat("a", 300)
	fields := []Field{{Name: "Name"}, {Name: "gid"}, {Name: "GEOM"}, {Name: "fid"}, {Name: "population 2020"}, {Name: long},
		{Name: long + "b"}, {Name: "2nd"}, {Name: `we"ird`}, {Name: "population"}, {Name: "population"}, {Name: "größe"}}
	names, renamed, collisions := planColumns(fields)
	want := []string{"name", "src_gid", "src_geom", "src_fid", "population_2020", strings.Repeat("a", 63), strings.Repeat("a", 61) + "_2",
		"f_2nd", "we_ird", "population", "population_2", "größe"}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Fatalf("names %v\nwant  %v", names, want)
	}
	// Lower-casing alone is no rename; everything else is reported with both names.
	if len(renamed) != 9 || renamed[0] != (Rename{"gid", "src_gid"}) || renamed[8] != (Rename{"population", "population_2"}) {
		t.Errorf("renamed %v", renamed)
	}
	if len(collisions) != 1 || collisions[0].Truncated != "population" || strings.Join(collisions[0].Originals, ",") != "population,population_2" {
		t.Errorf("collisions %v", collisions)
	}
	w := warnings(renamed, collisions)
	if len(w) != 2 || w[0].Kind != "reserved_rename" || w[1].Kind != "dbf_truncation_collision" {
		t.Errorf("warnings %+v", w)
	}
	if !cutCollision(fields) || cutCollision(fields[:5]) {
		t.Error("cutCollision misjudges names that share their first 63 bytes")
	}
	sql := renameSQL(`la"yer`, fields, names)
	// OGR SQL escapes a quote inside a quoted identifier with a backslash (doubling it fails).
	if !strings.Contains(sql, `"we\"ird" AS "we_ird"`) || !strings.HasSuffix(sql, `FROM "la\"yer"`) {
		t.Errorf("sql %s", sql)
	}
}
