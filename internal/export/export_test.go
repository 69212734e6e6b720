package export

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"meridian/internal/cql2"
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
			rc, _, err := e.spool(t.TempDir(), cmd, stderr, cancel, func() {}, Request{DatasetID: "d"})
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

// A reader that takes nothing does not hold the process: it writes its whole output into the
// spool and ends at its own speed, its slot given back; the reader then still gets every byte,
// and the spool leaves nothing behind.
func TestSpoolFreesTheProcessFromASlowReader(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	// 8 MB, far more than any pipe holds: written to a pipe, the process would block on it.
	cmd := exec.CommandContext(ctx, "sh", "-c", "head -c 8388608 /dev/zero")
	stderr := &capped{max: 64}
	cmd.Stderr = stderr
	released := make(chan struct{})
	dir := t.TempDir()
	e := &Exporter{}
	rc, _, err := e.spool(dir, cmd, stderr, cancel, func() { close(released) }, Request{DatasetID: "d"})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	select {
	case <-released:
	case <-time.After(10 * time.Second):
		t.Fatal("the process still runs while its reader reads nothing")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("the spool has a name in %s: %v", dir, entries)
	}
	n, err := io.Copy(io.Discard, rc)
	if err != nil || n != 8<<20 {
		t.Fatalf("read %d bytes (%v), want the whole 8 MB", n, err)
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
	where, err := cql2.ParseFilter("cql2-text", "name = 'a b -c role=postgres' AND pop > 5", 4326, false)
	if err != nil {
		t.Fatal(err)
	}
	props := map[string]cql2.Property{"name": {Name: "name", SQL: `t."name"`, Type: cql2.String},
		"pop": {Name: "pop", SQL: `t."pop"`, Type: cql2.Integer}}
	tests := []struct {
		name           string
		r              Request
		want, settings string
	}{
		{"integer key leaves as the FIDs", Request{Schema: "data", Table: "t1", ID: "gid", IDType: "integer", Geom: "geom", Columns: []string{"name"}},
			`SELECT t."gid" AS ogc_fid, t."geom", t."name" FROM "data"."t1" t`, ""},
		{"odd names are quoted", Request{Schema: "public", Table: `odd.Name "x"`, ID: "Id", IDType: "bigint", Geom: "the geom", Columns: []string{`a"b`}},
			`SELECT t."Id" AS ogc_fid, t."the geom", t."a""b" FROM "public"."odd.Name ""x""" t`, ""},
		{"text key stays an attribute", Request{Schema: "s", Table: "t", ID: "code", IDType: "text", Geom: "g"},
			`SELECT t."code", t."g" FROM "s"."t" t`, ""},
		{"a column named ogc_fid keeps its name", Request{Schema: "s", Table: "t", ID: "gid", IDType: "integer", Geom: "g", Columns: []string{"ogc_fid"}},
			`SELECT t."gid", t."g", t."ogc_fid" FROM "s"."t" t`, ""},
		{"unknown columns: the whole row", Request{Schema: "s", Table: "t"}, `SELECT * FROM "s"."t" t`, ""},
		// The values travel as settings, their spaces escaped: never in the SQL, never an option.
		{"a filter's values are settings", Request{Schema: "s", Table: "t", Where: where, Props: props},
			`SELECT * FROM "s"."t" t WHERE (t."name" = current_setting('meridian.arg1')::text AND t."pop" > current_setting('meridian.arg2')::bigint)`,
			` -c meridian.arg1=a\ b\ -c\ role=postgres -c meridian.arg2=5`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, settings, err := selectSQL(tt.r)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want || settings != tt.settings {
				t.Fatalf("got  %s %q\nwant %s %q", got, settings, tt.want, tt.settings)
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
