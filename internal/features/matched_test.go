package features

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"meridian/internal/apperr"
	"meridian/internal/testdb"
)

// onePool reads, through a pool of one connection to the test database, the table data.pts
// (1,000 points, n = gid % 10): a request that waits for a second connection while it holds one
// waits forever. It gives up after 10 seconds.
func onePool(t *testing.T) (context.Context, Reader, Table) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	setup := testdb.New(t)
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
	t.Cleanup(pool.Close)
	r := Reader{Pool: pool}
	tbl, err := r.Describe(ctx, "data", "pts", "gid", "geom")
	if err != nil {
		t.Fatal(err)
	}
	return ctx, r, tbl
}

// A keyset page with a filter counts its matches on a second connection. On a pool of one
// connection, the count can only run once the page has given its connection back: a page that
// kept it while waiting for the count would wait forever (with more such requests than
// connections, a whole server did).
func TestMatchedCountDoesNotWaitOnThePagesConnection(t *testing.T) {
	ctx, r, tbl := onePool(t)
	after := int64(100)
	n, returned := readPage(t, ctx, r, tbl, ItemsQuery{Limit: 5, AfterKey: &after, Equals: map[string]string{"n": "3"}})
	if n != 100 || returned != 5 {
		t.Fatalf("matched %d, returned %d; want 100 of which 5", n, returned)
	}
}

// A rows page of no rows is refused: it could neither say where the next page starts nor carry
// its count, and counting instead while its rows were still open would wait forever for a second
// connection on a one-connection pool.
func TestRowsRefuseAnEmptyLimit(t *testing.T) {
	ctx, r, tbl := onePool(t)
	var ae *apperr.Error
	if _, err := r.Rows(ctx, tbl, RowsQuery{Limit: 0, Q: "3"}); !errors.As(err, &ae) || ae.Kind != apperr.KindInvalid {
		t.Fatalf("limit 0: %v, want an invalid-input error", err)
	}
	page, err := r.Rows(ctx, tbl, RowsQuery{Limit: 1, Q: "3", Skip: 5000})
	if err != nil || len(page.Rows) != 0 || page.Total != 271 {
		t.Fatalf("past the end: %d rows, total %d (%v); want none of 271", len(page.Rows), page.Total, err)
	}
}
