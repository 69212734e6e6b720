package catalog

import (
	"meridian/store"
	"strings"
	"testing"
	"time"
)

func TestFreshness(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) *time.Time { t := now.Add(-d); return &t }
	s := func(v string) *string { return &v }
	day := 24 * time.Hour
	tests := []struct {
		name      string
		origin    string
		freq      *string
		refreshed *time.Time
		want      string
	}{
		{"weekly, refreshed yesterday", "upload", s("weekly"), ago(day), "fresh"},
		{"weekly, 8 days", "upload", s("weekly"), ago(8 * day), "due"},
		{"weekly, 15 days", "upload", s("weekly"), ago(15 * day), "overdue"},
		{"weekly, exactly one period", "upload", s("weekly"), ago(7 * day), "fresh"},
		{"daily, 3 days", "service", s("daily"), ago(3 * day), "overdue"},
		{"annually, 400 days", "upload", s("annually"), ago(400 * day), "due"},
		{"created datasets cannot be refreshed", "created", s("daily"), ago(30 * day), "unknown"},
		{"no cadence: asNeeded", "upload", s("asNeeded"), ago(30 * day), "unknown"},
		{"no cadence: irregular", "upload", s("irregular"), ago(30 * day), "unknown"},
		{"no cadence: notPlanned", "upload", s("notPlanned"), ago(30 * day), "unknown"},
		{"no cadence: unknown", "upload", s("unknown"), ago(30 * day), "unknown"},
		{"no frequency declared", "upload", nil, ago(30 * day), "unknown"},
		{"never refreshed", "upload", s("daily"), nil, "unknown"},
	}
	for _, tt := range tests {
		if got := Freshness(tt.origin, tt.freq, tt.refreshed, now); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
		}
	}
}

func TestWorkflowPath(t *testing.T) {
	tests := []struct {
		from, to string
		want     string
	}{
		{"draft", "published", "ready,internal,published"},
		{"published", "draft", "internal,ready,draft"},
		{"ready", "internal", "internal"},
		{"internal", "internal", "internal"},
		{"custom", "ready", "ready"},
	}
	for _, tt := range tests {
		if got := strings.Join(path(tt.from, tt.to), ","); got != tt.want {
			t.Errorf("path(%s, %s) = %s, want %s", tt.from, tt.to, got, tt.want)
		}
	}
	if got := strings.Join(allowedMoves("draft"), ","); got != "ready" {
		t.Errorf("allowed from draft: %s", got)
	}
	if got := strings.Join(allowedMoves("internal"), ","); got != "ready,published" {
		t.Errorf("allowed from internal: %s", got)
	}
}

func TestComputeQuality(t *testing.T) {
	s := func(v string) *string { return &v }
	d := store.CatalogDataset{Summary: s("Roads of the city"), License: s("CC-BY-4.0"), Attribution: s(" "), ThemeCategory: []string{"transportation"},
		GeometryColumn: "geom"}
	now := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	q := ComputeQuality(d, 200, 10, 5, 5, 0.75, true, now)
	if q.MetadataCompleteness != 37.5 || q.AttributeCompleteness != 75 || *q.GeometryValidity != 90 || *q.CRSDefined != 100 {
		t.Fatalf("quality %+v", q)
	}
	if q.Overall != 75.6 {
		t.Fatalf("overall %v, want the mean 75.6", q.Overall)
	}
	empty := ComputeQuality(store.CatalogDataset{GeometryColumn: "geom"}, 0, 0, 0, 0, 1, false, now)
	if empty.GeometryValidity != nil || *empty.CRSDefined != 0 || empty.Overall != round((0+100+0)/3.0) {
		t.Fatalf("empty dataset quality %+v", empty)
	}
	// A table without geometry is scored on its metadata and attributes alone.
	table := ComputeQuality(store.CatalogDataset{Summary: s("Prices")}, 3, 0, 0, 3, 0.5, true, now)
	if table.GeometryValidity != nil || table.CRSDefined != nil || table.Overall != round((12.5+50)/2) {
		t.Fatalf("table quality %+v", table)
	}
}
