package features

import "testing"

func TestSemanticRole(t *testing.T) {
	tests := []struct {
		col               Column
		nonNull, distinct int64
		want              string
	}{
		{Column{"surveyed", "date"}, 10, 10, "temporal"},
		{Column{"created_at", "character varying"}, 10, 10, "temporal"},
		{Column{"year", "integer"}, 10, 3, "temporal"},
		{Column{"parcel_id", "integer"}, 10, 10, "identifier"},
		{Column{"name", "character varying"}, 10, 10, "identifier"},
		{Column{"kind", "character varying"}, 100, 4, "category"},
		{Column{"ok", "boolean"}, 100, 2, "category"},
		{Column{"area", "double precision"}, 100, 97, "measure"},
		{Column{"note", "character varying"}, 10, 8, "text"},
	}
	for _, tt := range tests {
		if got := semanticRole(tt.col, tt.nonNull, tt.distinct); got != tt.want {
			t.Errorf("%s (%s, %d/%d): %s, want %s", tt.col.Name, tt.col.Type, tt.distinct, tt.nonNull, got, tt.want)
		}
	}
}
