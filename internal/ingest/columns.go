package ingest

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// reservedColumns are the columns every dataset table has, or that GDAL and other tools give a
// meaning of their own; source fields with these names are stored under a src_ prefix and
// reported (spec: the reserved_rename warning).
var reservedColumns = map[string]bool{"gid": true, "geom": true, "geom_4326": true, "fid": true, "ogc_fid": true, "wkb_geometry": true}

// maxIdentifier is PostgreSQL's identifier length in bytes; longer names would be cut silently.
const maxIdentifier = 63

// Rename is a source field stored under another name.
type Rename struct {
	Original string `json:"original"`
	Renamed  string `json:"renamed"`
}

// Collision is a name a Shapefile's DBF holds more than once (its 10-character limit cut longer
// names to the same stem); the originals are the columns the copies became.
type Collision struct {
	Truncated string   `json:"truncated"`
	Originals []string `json:"originals"`
}

// Warning is a job warning in the discriminated shape of JobStatusResponse.warnings.
type Warning struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
	Details any    `json:"details,omitempty"`
}

// ColumnName is the one naming rule for dataset columns (import, reupload, column operations):
// lower case; letters of every script, digits and underscores kept; any other run of
// characters one underscore; never starting with a digit; at most 63 bytes, cut at a character
// boundary. The same name always gives the same result.
func ColumnName(name string) string {
	var b strings.Builder
	gap := false
	for _, r := range strings.ToLower(name) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' {
			b.WriteRune(r)
			gap = false
		} else if !gap {
			b.WriteByte('_')
			gap = true
		}
	}
	s := b.String()
	if s == "" || s == "_" {
		s = "field"
	}
	if r, _ := utf8.DecodeRuneInString(s); unicode.IsDigit(r) {
		s = "f_" + s
	}
	return cut(s, maxIdentifier)
}

// cut shortens s to at most n bytes without splitting a character.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// planColumns decides the stored name of every source field (ColumnName; reserved names get the
// src_ prefix; names that repeat get _2, _3 ...). renamed lists the fields stored under a name
// other than their own in lower case; collisions the names the source holds more than once.
func planColumns(fields []Field) (names []string, renamed []Rename, collisions []Collision) {
	used := map[string]bool{}
	seen := map[string][]int{}
	for i, f := range fields {
		n := ColumnName(f.Name)
		if reservedColumns[n] {
			n = cut("src_"+n, maxIdentifier)
		}
		for base, k := n, 2; used[n]; k++ {
			suffix := fmt.Sprintf("_%d", k)
			n = cut(base, maxIdentifier-len(suffix)) + suffix
		}
		used[n] = true
		names = append(names, n)
		seen[f.Name] = append(seen[f.Name], i)
		if n != strings.ToLower(f.Name) {
			renamed = append(renamed, Rename{Original: f.Name, Renamed: n})
		}
	}
	for i, f := range fields {
		if idx := seen[f.Name]; len(idx) > 1 && idx[0] == i {
			c := Collision{Truncated: f.Name}
			for _, j := range idx {
				c.Originals = append(c.Originals, names[j])
			}
			collisions = append(collisions, c)
		}
	}
	return names, renamed, collisions
}

// warnings turns the renames into job warnings of the kinds clients know.
func warnings(renamed []Rename, collisions []Collision) []Warning {
	var w []Warning
	if len(renamed) > 0 {
		w = append(w, Warning{Kind: "reserved_rename", Details: renamed,
			Message: fmt.Sprintf("%d field(s) are stored under another name: they clashed with the reserved columns "+
				"(gid, geom, geom_4326, fid, ogc_fid, wkb_geometry), were too long for PostgreSQL, held punctuation, or repeated a name", len(renamed))})
	}
	if len(collisions) > 0 {
		w = append(w, Warning{Kind: "dbf_truncation_collision", Details: collisions,
			Message: fmt.Sprintf("%d field name(s) appear more than once in the file (a DBF cuts names to 10 characters); every copy was kept, numbered", len(collisions))})
	}
	return w
}

// cutCollision reports whether two different source names share their first 63 bytes:
// PostgreSQL would cut both to one column name, so GDAL cannot create the table as it is.
func cutCollision(fields []Field) bool {
	seen := map[string]string{}
	for _, f := range fields {
		k := cut(f.Name, maxIdentifier)
		if prev, ok := seen[k]; ok && prev != f.Name {
			return true
		}
		seen[k] = f.Name
	}
	return false
}

// renameSQL is an OGR SQL statement that stores each field under its planned name, for the rare
// source whose names collide once cut to 63 bytes. Identifiers are quoted with ogrIdent, so field
// names from the file cannot break the statement. (OGR SQL picks the first of two equal names,
// so it is never used for sources that repeat a name.)
func renameSQL(layer string, fields []Field, names []string) string {
	cols := make([]string, len(fields))
	for i, f := range fields {
		cols[i] = ogrIdent(f.Name) + " AS " + ogrIdent(names[i])
	}
	return "SELECT " + strings.Join(cols, ", ") + " FROM " + ogrIdent(layer)
}
