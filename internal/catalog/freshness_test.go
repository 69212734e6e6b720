package catalog

import (
	"math"
	"strings"
	"testing"
	"time"

	"meridian/internal/features"
	"meridian/store"
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
	q := ComputeQuality(d, features.Validation{FeatureCount: 200, Invalid: 10, Empty: 5, Null: 5, AttributeCompleteness: 0.75, CRSDefined: true}, now)
	if q.MetadataCompleteness != 37.5 || q.AttributeCompleteness != 75 || *q.GeometryValidity != 90 || *q.CRSDefined != 100 {
		t.Fatalf("quality %+v", q)
	}
	// 0.30*37.5 + 0.30*90 + 0.25*75 + 0.15*100 = 72
	if q.Overall != 72 {
		t.Fatalf("overall %v, want the weighted 72", q.Overall)
	}
	// Nothing to validate: the geometry part is left out with its weight.
	empty := ComputeQuality(store.CatalogDataset{GeometryColumn: "geom"}, features.Validation{AttributeCompleteness: 1}, now)
	if empty.GeometryValidity != nil || *empty.CRSDefined != 0 || empty.Overall != math.Round((0.25*100)/0.70) {
		t.Fatalf("empty dataset quality %+v", empty)
	}
	// A table without geometry is scored on its metadata and attributes alone: 12.5*30/55 + 50*25/55.
	table := ComputeQuality(store.CatalogDataset{Summary: s("Prices")}, features.Validation{FeatureCount: 3, Null: 3, AttributeCompleteness: 0.5, CRSDefined: true}, now)
	if table.GeometryValidity != nil || table.CRSDefined != nil || table.Overall != 30 {
		t.Fatalf("table quality %+v", table)
	}
}
