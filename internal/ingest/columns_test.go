package ingest

import (
	"strings"
	"testing"
)

func TestPlanColumns(t *testing.T) {
	long := strings.Repeat("a", 300)
	fields := []Field{{Name: "Name"}, {Name: "gid"}, {Name: "GEOM"}, {Name: "population 2020"}, {Name: long},
		{Name: long + "b"}, {Name: "2nd"}, {Name: `we"ird`}}
	names, reserved, shortened := planColumns(fields)
	want := []string{"name", "gid_src", "geom_src", "population_2020", strings.Repeat("a", 63), strings.Repeat("a", 61) + "_2", "f_2nd", "we_ird"}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Fatalf("names %v\nwant  %v", names, want)
	}
	if len(reserved) != 2 || reserved[0] != (Rename{"gid", "gid_src"}) || reserved[1].Renamed != "geom_src" {
		t.Errorf("reserved %v", reserved)
	}
	if len(shortened) != 2 {
		t.Errorf("shortened %v", shortened)
	}
	sql := renameSQL(`la"yer`, fields, names)
	// OGR SQL escapes a quote inside a quoted identifier with a backslash (doubling it fails).
	if !strings.Contains(sql, `"we\"ird" AS "we_ird"`) || !strings.HasSuffix(sql, `FROM "la\"yer"`) {
		t.Errorf("sql %s", sql)
	}
	w := warnings(reserved, shortened)
	if len(w) != 2 || w[0].Kind != "reserved_rename" || w[1].Kind != "generic" {
		t.Errorf("warnings %+v", w)
	}
}
