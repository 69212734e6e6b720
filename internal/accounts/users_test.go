package accounts

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"meridian/internal/testdb"
	"meridian/store"
)

// Each reads every selected user across pages, in the list's order, each once.
func TestEachReadsEveryPage(t *testing.T) {
	pool := testdb.New(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `INSERT INTO catalog.users (username, email, role)
		SELECT 'user' || i, 'user' || i || '@example.org', CASE WHEN i % 3 = 0 THEN 'editor' ELSE 'viewer' END
		FROM generate_series(1, 1203) i`); err != nil {
		t.Fatal(err)
	}
	s := &Service{Pool: pool, Q: store.New(pool), Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	editor := "editor"
	for _, tc := range []struct {
		f    Filter
		skip int
		want int
	}{{Filter{}, 0, 1203}, {Filter{Role: &editor}, 0, 401}, {Filter{}, ExportPage, 1203 - ExportPage}} {
		seen := map[string]bool{}
		err := s.Each(ctx, tc.f, tc.skip, func(u User) error {
			if seen[u.Username] {
				t.Fatalf("%s read twice", u.Username)
			}
			seen[u.Username] = true
			return nil
		})
		if err != nil || len(seen) != tc.want {
			t.Fatalf("filter %+v from %d: %d users (%v), want %d", tc.f, tc.skip, len(seen), err, tc.want)
		}
	}
	if _, total, err := s.List(ctx, Filter{Role: &editor}, 0, 10); err != nil || total != 401 {
		t.Fatalf("List total %d (%v), want 401", total, err)
	}
}
