package catalog

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/google/uuid"

	"meridian/internal/apperr"
	"meridian/internal/auth"
)

// Provenance is where an analysis output comes from: its source dataset, the operation, the
// operation's params and when it ran.
type Provenance struct {
	DatasetID uuid.UUID      `json:"dataset_id"`
	Operation string         `json:"operation"`
	Params    map[string]any `json:"params"`
	CreatedAt time.Time      `json:"created_at"`
}

// ProvenanceFor is d's provenance as p may see it: a param naming a dataset p may not read
// (mask_dataset_id, join_dataset_id ...) is left out, so it tells nothing of that dataset.
// nil for a dataset that is no analysis output.
func (s *Service) ProvenanceFor(ctx context.Context, p auth.Principal, d Dataset) (*Provenance, error) {
	if len(d.Entry.DerivedFrom) == 0 {
		return nil, nil
	}
	var pv Provenance
	if err := json.Unmarshal(d.Entry.DerivedFrom, &pv); err != nil {
		return nil, err
	}
	for k, v := range pv.Params {
		str, _ := v.(string)
		id, err := uuid.Parse(str)
		if !strings.HasSuffix(k, "dataset_id") || err != nil {
			continue
		}
		_, err = s.Get(ctx, p, id, false)
		switch apperr.KindOf(err) {
		case apperr.KindNotFound, apperr.KindForbidden:
			delete(pv.Params, k)
		case apperr.KindInternal:
			if err != nil {
				return nil, err
			}
		}
	}
	return &pv, nil
}
