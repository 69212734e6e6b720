package features

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"meridian/internal/testdb"
)

// A keyset page with a filter counts its matches on a second connection. On a pool of one
// connection, the count can only run once the page has given its connection back: a page that
// kept it while waiting for the count would wait forever (with more such requests than
// connections, a whole server did).
func TestMatchedCountDoesNotWaitOnThePagesConnection(t *testing.T) {
	setup := testdb.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := setup.Exec(ctx, `CREATE TABLE data.pts AS SELECT g AS gid, ST_SetSRID(ST_MakePoint(g % 360 - 180, 0), 4326)::geometry(Point, 4326) AS geom,
		g % 10 AS n FROM generate_series(1, 1000) g; ALTER TABLE data.pts ADD PRIMARY KEY (gid)`); err != nil {
		t.Fatal(err)
	}
	cfg := setup.Config().Copy()
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	r := Reader{Pool: pool}
	tbl, err := r.Describe(ctx, "data", "pts", "gid", "geom")
	if err != nil {
		t.Fatal(err)
	}
	after := int64(100)
	cur, err := r.Items(ctx, tbl, ItemsQuery{Limit: 5, AfterKey: &after, Equals: map[string]string{"n": "3"}})
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close()
	for {
		_, ok, err := cur.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
	}
	n, err := cur.Matched()
	if err != nil || n != 100 || cur.Returned() != 5 {
		t.Fatalf("matched %d (%v), returned %d; want 100 of which 5", n, err, cur.Returned())
	}
}
