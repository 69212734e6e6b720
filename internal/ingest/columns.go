package ingest

import (
	"fmt"
	"strings"
	"unicode"
)

// reservedColumns are the columns every dataset table has; source fields with these names are
// renamed (spec: reported as a reserved_rename warning).
var reservedColumns = map[string]bool{"gid": true, "geom": true}

// maxIdentifier is PostgreSQL's identifier length in bytes; longer names would be cut silently.
const maxIdentifier = 63

// Rename is a source field stored under another name.
type Rename struct {
	Original string `json:"original"`
	Renamed  string `json:"renamed"`
}

// Warning is a job warning in the discriminated shape of JobStatusResponse.warnings.
type Warning struct {
	Kind    string   `json:"kind"`
	Message string   `json:"message"`
	Details []Rename `json:"details,omitempty"`
}

// launder is the column name PostgreSQL gets: lowercase letters, digits and underscores.
func launder(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		if r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	s := b.String()
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		s = "f_" + s
	}
	return s
}

// planColumns decides the stored name of every source field: laundered, reserved names and
// over-long names renamed, duplicates made unique. It returns the renames that differ from
// plain laundering, split by cause, so the job can report them.
func planColumns(fields []Field) (names []string, reserved, shortened []Rename) {
	used := map[string]bool{}
	for _, f := range fields {
		n := launder(f.Name)
		cause := ""
		if reservedColumns[n] {
			n, cause = n+"_src", "reserved"
		}
		if len(n) > maxIdentifier {
			n, cause = n[:maxIdentifier], "long"
		}
		for base, i := n, 2; used[n]; i++ {
			suffix := fmt.Sprintf("_%d", i)
			n = base[:min(len(base), maxIdentifier-len(suffix))] + suffix
			if cause == "" {
				cause = "long"
			}
		}
		used[n] = true
		names = append(names, n)
		switch cause {
		case "reserved":
			reserved = append(reserved, Rename{Original: f.Name, Renamed: n})
		case "long":
			shortened = append(shortened, Rename{Original: f.Name, Renamed: n})
		}
	}
	return names, reserved, shortened
}

// renameSQL is an OGR SQL statement that stores each field under its planned name. Identifiers
// are quoted with ogrIdent, so field names from the file cannot break the statement.
func renameSQL(layer string, fields []Field, names []string) string {
	cols := make([]string, len(fields))
	for i, f := range fields {
		cols[i] = ogrIdent(f.Name) + " AS " + ogrIdent(names[i])
	}
	return "SELECT " + strings.Join(cols, ", ") + " FROM " + ogrIdent(layer)
}

// warnings turns the renames into job warnings.
func warnings(reserved, shortened []Rename) []Warning {
	var w []Warning
	if len(reserved) > 0 {
		w = append(w, Warning{Kind: "reserved_rename", Details: reserved,
			Message: fmt.Sprintf("%d field(s) collided with the reserved columns gid and geom and were renamed", len(reserved))})
	}
	if len(shortened) > 0 {
		parts := make([]string, len(shortened))
		for i, r := range shortened {
			parts[i] = fmt.Sprintf("%.40s… → %s", r.Original, r.Renamed)
		}
		w = append(w, Warning{Kind: "generic",
			Message: "field names longer than 63 bytes or clashing after shortening were renamed: " + strings.Join(parts, "; ")})
	}
	return w
}
