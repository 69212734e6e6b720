package catalog

import (
	"context"
	"encoding/json"
	"sync"
	"time"
)

// Stats are the admin dashboard's counts.
type Stats struct {
	TotalDatasets, RecentAdditions, StorageBytes, TotalUsers int64
	ByGeometryType, ByVisibility, UsersByStatus              map[string]int
	At                                                       time.Time
}

// statsAge is how long counts are reused: the dashboard polls, and a hundred thousand datasets
// take tens of milliseconds to count.
const statsAge = 30 * time.Second

type statsCache struct {
	mu   sync.Mutex
	last Stats
}

// Stats counts the catalog in one statement, or answers the counts of less than statsAge ago.
func (s *Service) Stats(ctx context.Context) (Stats, error) {
	s.stats.mu.Lock()
	defer s.stats.mu.Unlock()
	if time.Since(s.stats.last.At) < statsAge {
		return s.stats.last, nil
	}
	r, err := s.Q.CatalogStats(ctx)
	if err != nil {
		return Stats{}, err
	}
	st := Stats{TotalDatasets: r.TotalDatasets, RecentAdditions: r.RecentAdditions, StorageBytes: r.StorageBytes,
		TotalUsers: r.TotalUsers, At: time.Now()}
	for _, m := range []struct {
		raw []byte
		dst *map[string]int
	}{{r.ByGeometryType, &st.ByGeometryType}, {r.ByVisibility, &st.ByVisibility}, {r.UsersByStatus, &st.UsersByStatus}} {
		if err := json.Unmarshal(m.raw, m.dst); err != nil {
			return Stats{}, err
		}
	}
	s.stats.last = st
	return st, nil
}
