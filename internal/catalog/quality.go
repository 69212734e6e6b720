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
	// Overall is an integer: round(0.30 metadata + 0.30 geometry + 0.25 attributes + 0.15 CRS)
	// over the parts that apply (qualityWeights).
	Overall               float64   `json:"overall"`
	MetadataCompleteness  float64   `json:"metadata_completeness"`
	AttributeCompleteness float64   `json:"attribute_completeness"`
	GeometryValidity      *float64  `json:"geometry_validity"`
	CRSDefined            *float64  `json:"crs_defined"`
	ComputedAt            time.Time `json:"computed_at"`
}

// The weights of the overall score, as the clients' own formula has them. A part that does not
// apply (a table has no geometry, hence neither validity nor CRS; an empty layer has nothing to
// validate) is left out with its weight: a table scores metadata*30/55 + attributes*25/55.
const (
	weightMetadata   = 0.30
	weightGeometry   = 0.30
	weightAttributes = 0.25
	weightCRS        = 0.15
)

// metadataFields are the catalog fields a complete record fills.
func metadataFields(d store.CatalogDataset) []bool {
	has := func(s *string) bool { return s != nil && strings.TrimSpace(*s) != "" }
	return []bool{has(d.Summary), has(d.License), has(d.Attribution), has(d.SourceOrganization), has(d.UpdateFrequency),
		has(d.LineageSummary), has(d.Language), len(d.ThemeCategory) > 0}
}

// ComputeQuality scores a dataset from its record and a check of its table (features.Validate):
// metadata completeness (share of the catalog fields filled), geometry validity (share of
// features with a valid, non-empty geometry), attribute completeness (share of attribute values
// neither null nor blank) and CRS presence. A table without geometry (no geometry column) has
// neither geometry score: both are null.
func ComputeQuality(d store.CatalogDataset, v features.Validation, now time.Time) Quality {
	q := Quality{AttributeCompleteness: round(100 * v.AttributeCompleteness), ComputedAt: now}
	if d.GeometryColumn != "" {
		if v.FeatureCount > 0 {
			valid := round(100 * float64(v.FeatureCount-v.Invalid-v.Empty-v.Null) / float64(v.FeatureCount))
			q.GeometryValidity = &valid
		}
		crs := 0.0
		if v.CRSDefined {
			crs = 100
		}
		q.CRSDefined = &crs
	}
	q.rescore(d)
	return q
}

// rescore recomputes the metadata part from the record and the overall score from the parts.
func (q *Quality) rescore(d store.CatalogDataset) {
	filled := 0
	fields := metadataFields(d)
	for _, ok := range fields {
		if ok {
			filled++
		}
	}
	q.MetadataCompleteness = round(100 * float64(filled) / float64(len(fields)))
	sum, weights := weightMetadata*q.MetadataCompleteness+weightAttributes*q.AttributeCompleteness, weightMetadata+weightAttributes
	for _, part := range []struct {
		score  *float64
		weight float64
	}{{q.GeometryValidity, weightGeometry}, {q.CRSDefined, weightCRS}} {
		if part.score != nil {
			sum, weights = sum+part.weight**part.score, weights+part.weight
		}
	}
	q.Overall = math.Round(sum / weights)
}

// round keeps one decimal of a part's score.
func round(v float64) float64 { return math.Round(v*10) / 10 }

// rescore follows a metadata edit: the stored score's metadata part and overall are recomputed
// from the record as it now is, its data parts kept. A record never scored stays unscored.
func rescore(ctx context.Context, q *store.Queries, d store.CatalogDataset) error {
	var score Quality
	if len(d.QualityDetail) == 0 || json.Unmarshal(d.QualityDetail, &score) != nil {
		return nil
	}
	score.rescore(d)
	score.ComputedAt = time.Now().UTC()
	raw, err := json.Marshal(score)
	if err != nil {
		return err
	}
	return q.SetDatasetQuality(ctx, store.SetDatasetQualityParams{ID: d.ID, QualityDetail: raw})
}

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
	q := ComputeQuality(d.row, v, time.Now().UTC())
	raw, _ := json.Marshal(q)
	return v, q, s.Q.SetDatasetQuality(ctx, store.SetDatasetQualityParams{ID: d.row.ID, QualityDetail: raw})
}
