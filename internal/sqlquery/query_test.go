package sqlquery

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzRequestBody: whatever body arrives, checking it neither panics nor lets through a table
// name that is more than a plain identifier, an SQL text over the limit or a row limit out of
// range.
func FuzzRequestBody(f *testing.F) {
	for _, seed := range []string{
		`{"sql":"SELECT 1","restrict_tables":["ds_a"]}`,
		`{"sql":"SELECT 1; DROP TABLE x","restrict_tables":["data.ds_a"],"row_limit":0}`,
		`{"sql":"","restrict_tables":[]}`,
		`{"sql":"SELECT 1","restrict_tables":["\"x\"","..","ds_а"],"row_limit":1001}`,
		`{"sql":"SELECT '\u0000'","restrict_tables":["ds_a"],"row_limit":-1}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var in struct {
			SQL      string   `json:"sql"`
			Tables   []string `json:"restrict_tables"`
			RowLimit int      `json:"row_limit"`
		}
		if json.Unmarshal(body, &in) != nil {
			return
		}
		r := Request{SQL: in.SQL, Tables: in.Tables, RowLimit: in.RowLimit}
		if r.Check() != nil {
			return
		}
		if utf8.RuneCountInString(r.SQL) > MaxSQL || strings.ContainsRune(r.SQL, 0) || r.RowLimit < 1 || r.RowLimit > MaxRowLimit ||
			len(r.Tables) < 1 || len(r.Tables) > MaxTables {
			t.Fatalf("accepted %+v", r)
		}
		for _, name := range r.Tables {
			if !tableName.MatchString(name) || strings.ContainsAny(name, `."' `) {
				t.Fatalf("accepted the table name %q", name)
			}
		}
	})
}

func TestRFC3339(t *testing.T) {
	cases := map[string]string{
		"2024-05-01 12:00:00+02":       "2024-05-01T12:00:00+02:00",
		"2024-05-01 12:00:00.5-09:30":  "2024-05-01T12:00:00.5-09:30",
		"2024-05-01 12:00:00":          "2024-05-01T12:00:00",
		"infinity":                     "infinity",
		"2024-05-01 12:00:00+05:45:30": "2024-05-01T12:00:00+05:45:30",
	}
	for in, want := range cases {
		if got := string(rfc3339([]byte(in))); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}
