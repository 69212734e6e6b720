package catalog

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"time"

	"github.com/google/uuid"

	"meridian/internal/auth"
	"meridian/internal/features"
	"meridian/store"
)

// Quality is the QualityDetail of spec 2.5: scores from 0 to 100.
type Quality struct {
	Overall               float64   `json:"overall"`
	MetadataCompleteness  float64   `json:"metadata_completeness"`
	AttributeCompleteness float64   `json:"attribute_completeness"`
	GeometryValidity      *float64  `json:"geometry_validity"`
	CRSDefined            *float64  `json:"crs_defined"`
	ComputedAt            time.Time `json:"computed_at"`
}

// metadataFields are the catalog fields a complete record fills.
func metadataFields(d store.CatalogDataset) []bool {
	has := func(s *string) bool { return s != nil && strings.TrimSpace(*s) != "" }
	return []bool{has(d.Summary), has(d.License), has(d.Attribution), has(d.SourceOrganization), has(d.UpdateFrequency),
		has(d.LineageSummary), has(d.Language), len(d.ThemeCategory) > 0}
}

// ComputeQuality scores a dataset: metadata completeness (share of the catalog fields filled),
// geometry validity (share of features with a valid, non-empty geometry), attribute completeness
// (share of non-null attribute values) and CRS presence; overall is their mean. A table without
// geometry (no geometry column) has neither geometry score: both are null and left out.
func ComputeQuality(d store.CatalogDataset, features, invalid, empty, null int64, attrCompleteness float64, crs bool, now time.Time) Quality {
	filled := 0
	fields := metadataFields(d)
	for _, ok := range fields {
		if ok {
			filled++
		}
	}
	q := Quality{MetadataCompleteness: round(100 * float64(filled) / float64(len(fields))),
		AttributeCompleteness: round(100 * attrCompleteness), ComputedAt: now}
	parts := []float64{q.MetadataCompleteness, q.AttributeCompleteness}
	if d.GeometryColumn != "" {
		if features > 0 {
			v := round(100 * float64(features-invalid-empty-null) / float64(features))
			q.GeometryValidity = &v
			parts = append(parts, v)
		}
		c := 0.0
		if crs {
			c = 100
		}
		q.CRSDefined = &c
		parts = append(parts, c)
	}
	sum := 0.0
	for _, p := range parts {
		sum += p
	}
	q.Overall = round(sum / float64(len(parts)))
	return q
}

func round(v float64) float64 { return math.Round(v*10) / 10 }

// Validate checks a dataset the caller may read (features.Reader.Validate), scores its quality
// and stores the score on the record, so the catalog shows what the last check found.
func (s *Service) Validate(ctx context.Context, p auth.Principal, id uuid.UUID) (features.Validation, Quality, error) {
	d, err := s.Get(ctx, p, id, false)
	if err != nil {
		return features.Validation{}, Quality{}, err
	}
	t, err := features.TableOf(d.row.TableSchema, d.row.TableName, d.row.IDColumn, d.row.GeometryColumn, d.TableColumns)
	if err != nil {
		return features.Validation{}, Quality{}, err
	}
	v, err := features.Reader{Pool: s.Pool}.Validate(ctx, t)
	if err != nil {
		return v, Quality{}, err
	}
	q := ComputeQuality(d.row, v.FeatureCount, v.Invalid, v.Empty, v.Null, v.AttributeCompleteness, v.CRSDefined, time.Now().UTC())
	raw, _ := json.Marshal(q)
	return v, q, s.Q.SetDatasetQuality(ctx, store.SetDatasetQualityParams{ID: d.row.ID, QualityDetail: raw})
}
