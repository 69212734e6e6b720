package catalog

import (
	"testing"

	"github.com/google/uuid"
)

// TestGeneratedDistributionIDsStay: the ids of generated distributions are never stored, so
// clients hold them across releases: each is the name-based uuid of the dataset, kind and format
// (uuid.NewSHA1), whatever computes it.
func TestGeneratedDistributionIDsStay(t *testing.T) {
	for _, kind := range []string{"vector_dataset", "table", "raster_dataset"} {
		id := uuid.New()
		dists := GeneratedDistributions(id, uuid.New(), kind, "data", "roads")
		if len(dists) == 0 {
			t.Fatalf("%s: no distributions", kind)
		}
		seen := map[uuid.UUID]bool{}
		for _, d := range dists {
			want := uuid.NewSHA1(generatedNamespace, []byte(id.String()+"/"+d.Type+"/"+d.Format))
			if d.ID != want || seen[d.ID] {
				t.Errorf("%s %s/%s: id %s, want %s (once)", kind, d.Type, d.Format, d.ID, want)
			}
			seen[d.ID] = true
			if d.Title == nil || *d.Title == "" || d.MediaType == nil || *d.MediaType == "" || !d.Generated {
				t.Errorf("%s %s/%s: %+v", kind, d.Type, d.Format, d)
			}
		}
	}
}
