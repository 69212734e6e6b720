package export

import (
	"context"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
)

// A streamed export is only handed out once it has produced bytes, and its end is only an EOF
// when the process succeeded.
func TestStreamEnds(t *testing.T) {
	tests := []struct {
		name, script string
		openErr      bool   // Open fails: nothing was sent, a problem can still be answered
		body         string // what the reader yields before its end
		readErr      bool   // the end is an error, not io.EOF: the response must be cut
	}{
		{"complete", `printf 'abc'`, false, "abc", false},
		{"fails before the first byte", `echo 'ERROR 1: relation does not exist' >&2; exit 1`, true, "", false},
		{"no output at all", `exit 0`, true, "", false},
		{"fails after bytes", `printf 'ab'; sleep 0.1; echo 'ERROR 1: boom' >&2; exit 1`, false, "ab", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			cmd := exec.CommandContext(ctx, "sh", "-c", tt.script)
			stderr := &capped{max: 64}
			cmd.Stderr = stderr
			e := &Exporter{}
			rc, _, err := e.stream(cmd, stderr, cancel, Request{DatasetID: "d"})
			if (err != nil) != tt.openErr {
				t.Fatalf("open error %v, want error: %v", err, tt.openErr)
			}
			if err != nil {
				return
			}
			defer rc.Close()
			b, err := io.ReadAll(rc)
			if string(b) != tt.body {
				t.Fatalf("body %q, want %q", b, tt.body)
			}
			if (err != nil) != tt.readErr || errors.Is(err, io.EOF) {
				t.Fatalf("read error %v, want error: %v", err, tt.readErr)
			}
		})
	}
}

func TestCappedKeepsTheStart(t *testing.T) {
	c := &capped{max: 5}
	for _, s := range []string{"abc", "defg", "hij"} {
		if n, err := c.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("write %q: %d %v", s, n, err)
		}
	}
	if c.String() != "abcde" {
		t.Fatalf("kept %q, want abcde", c.String())
	}
}

func TestSelectSQL(t *testing.T) {
	tests := []struct {
		name string
		r    Request
		want string
	}{
		{"integer key leaves as the FIDs", Request{Schema: "data", Table: "t1", ID: "gid", IDType: "integer", Geom: "geom", Columns: []string{"name"}},
			`SELECT "gid" AS ogc_fid, "geom", "name" FROM "data"."t1"`},
		{"odd names are quoted", Request{Schema: "public", Table: `odd.Name "x"`, ID: "Id", IDType: "bigint", Geom: "the geom", Columns: []string{`a"b`}},
			`SELECT "Id" AS ogc_fid, "the geom", "a""b" FROM "public"."odd.Name ""x"""`},
		{"text key stays an attribute", Request{Schema: "s", Table: "t", ID: "code", IDType: "text", Geom: "g"},
			`SELECT "code", "g" FROM "s"."t"`},
		{"a column named ogc_fid keeps its name", Request{Schema: "s", Table: "t", ID: "gid", IDType: "integer", Geom: "g", Columns: []string{"ogc_fid"}},
			`SELECT "gid", "g", "ogc_fid" FROM "s"."t"`},
		{"unknown columns: the whole row", Request{Schema: "s", Table: "t"}, `SELECT * FROM "s"."t"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := selectSQL(tt.r); got != tt.want {
				t.Fatalf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestLayerName(t *testing.T) {
	for _, tc := range []struct{ title, want string }{
		{"Export me", "Export_me"},
		{"--config", "config"},
		{"-sql x", "sql_x"},
		{"gpkg_contents", "layer_gpkg_contents"},
		{"GPKG roads", "layer_GPKG_roads"},
		{`a "quoted" / slashed \ title`, "a_quoted_slashed_title"},
		{"2024 parcels", "layer_2024_parcels"},
		{"Área größe", "Área_größe"},
		{"名前", "名前"},
		{strings.Repeat("ä", 40), strings.Repeat("ä", 30)},
		{"", "dataset"},
		{strings.Repeat("abc ", 200), strings.TrimRight(strings.Repeat("abc_", 15), "_")},
	} {
		got := LayerName(tc.title)
		if got != tc.want {
			t.Errorf("LayerName(%q) = %q, want %q", tc.title, got, tc.want)
		}
		if strings.HasPrefix(got, "-") || strings.HasPrefix(strings.ToLower(got), "gpkg") || len(got) > 60 {
			t.Errorf("LayerName(%q) = %q is not safe for GDAL", tc.title, got)
		}
	}
}
