package oauth

import (
	"strconv"
	"strings"
	"testing"
)

func TestDeriveUsername(t *testing.T) {
	long := strings.Repeat("x", 200)
	tests := []struct {
		name        string
		email, disp string
		taken       []string
		want        string
	}{
		{name: "email local part", email: "Jane.Doe@example.org", want: "jane.doe"},
		{name: "characters outside the set are dropped", email: "jane+gis@example.org", want: "janegis"},
		{name: "unicode letters are dropped", email: "josé_ñ-1@example.org", want: "jos_-1"},
		{name: "display name when the email is empty", disp: "Jane Doe", want: "janedoe"},
		{name: "display name when the local part has nothing usable", email: "öäü@example.org", disp: "Ann", want: "ann"},
		{name: "short names are padded", email: "jo@example.org", want: "jo0"},
		{name: "one character", email: "x@example.org", want: "x00"},
		{name: "nothing usable anywhere", email: "@example.org", disp: "李雷", want: "user"},
		{name: "long names are cut to 150", email: long + "@example.org", want: long[:150]},
		{name: "taken name gets -2", email: "jane@example.org", taken: []string{"jane"}, want: "jane-2"},
		{name: "suffixes count up", email: "jane@example.org", taken: []string{"jane", "jane-2", "jane-3"}, want: "jane-4"},
		{name: "padded names get suffixes too", email: "x@a.org", taken: []string{"x00"}, want: "x00-2"},
		{name: "suffix stays within 150", email: long + "@example.org", taken: []string{long[:150]}, want: long[:148] + "-2"},
		{name: "longer suffix cuts more", email: long + "@example.org",
			taken: append([]string{long[:150]}, suffixed(long, 2, 9)...), want: long[:147] + "-10"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var asked []string
			taken := func(s string) bool {
				asked = append(asked, s)
				for _, x := range tt.taken {
					if x == s {
						return true
					}
				}
				return false
			}
			got := DeriveUsername(tt.email, tt.disp, taken)
			if got != tt.want {
				t.Errorf("DeriveUsername(%q, %q) = %q, want %q (asked %q)", tt.email, tt.disp, got, tt.want, asked)
			}
			if len(got) < 3 || len(got) > 150 || strings.Trim(got, "abcdefghijklmnopqrstuvwxyz0123456789._-") != "" {
				t.Errorf("%q breaks the username schema", got)
			}
		})
	}
	if got := DeriveUsername("ann@example.org", "", nil); got != "ann" {
		t.Errorf("nil taken: got %q", got)
	}
}

// suffixed lists base cut to fit with -from ... -to, as DeriveUsername builds them.
func suffixed(base string, from, to int) []string {
	var out []string
	for n := from; n <= to; n++ {
		s := "-" + strconv.Itoa(n)
		out = append(out, base[:150-len(s)]+s)
	}
	return out
}
