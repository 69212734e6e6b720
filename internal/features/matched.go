package features

import (
	"context"
	"strings"

	"meridian/internal/db"
	"meridian/internal/sqlbuild"
)

// matchCount is how many features a query matches over all its pages, counted on a connection
// of its own while the page is read, so the count costs the request no extra round trip in
// sequence. It is started only when the figure is not known for free: without filters the
// catalog's maintained count is exact, and a last page tells its own.
type matchCount struct {
	cancel context.CancelFunc
	done   chan struct{}
	n      int64
	err    error
	known  *int64 // the maintained count, when it is the answer

	// inPage: the page query counts (countedPageSQL); recount counts when the page had no row
	// to carry the count (a page past the end).
	inPage  bool
	recount func() (int64, error)

	// shared: a count kept by Counts that this request waits for with any other asking it;
	// release tells Counts the request is done with it (once).
	ctx     context.Context
	shared  *countEntry
	release func()
}

// wait waits for a shared count, or for the request to end.
func (m *matchCount) wait() (int64, error) {
	defer m.leave()
	select {
	case <-m.shared.done:
		return m.shared.n, m.shared.err
	case <-m.ctx.Done():
		return 0, m.ctx.Err()
	}
}

func (m *matchCount) leave() {
	if m.release != nil {
		m.release()
		m.release = nil
	}
}

// countsInPage reports whether the page query should count the matches itself: a filtered page
// whose count no cheaper source gives. Keyset pages count apart, since their query leaves out
// what precedes the cursor; and counts a Counts may keep are counted apart, so that the page
// query stops at its page.
func (r Reader) countsInPage(q ItemsQuery) bool {
	return q.ID == nil && q.Limit > 0 && q.AfterKey == nil && q.Filtered() && !r.keepsCount(q)
}

// keepsCount reports whether the query's count is kept per dataset version.
func (r Reader) keepsCount(q ItemsQuery) bool { return r.Counts != nil && q.Count != nil }

func (r Reader) countMatched(ctx context.Context, t Table, q ItemsQuery) *matchCount {
	if q.ID != nil || q.Limit <= 0 {
		return nil // one feature, or a stream of all: no numberMatched to give
	}
	if !q.Filtered() && q.KnownCount != nil {
		return &matchCount{known: q.KnownCount}
	}
	if r.keepsCount(q) {
		return r.keptCount(ctx, t, q)
	}
	if q.countInPage {
		return &matchCount{inPage: true, recount: func() (int64, error) { return r.count(ctx, t, q) }}
	}
	return r.countAlongside(ctx, t, q)
}

// count counts the matches of q over every page.
func (r Reader) count(ctx context.Context, t Table, q ItemsQuery) (int64, error) {
	sql, args, err := countSQL(t, q)
	if err != nil {
		return 0, err
	}
	var n int64
	err = r.countPool().QueryRow(ctx, sql, args...).Scan(&n)
	return n, db.QueryValueError(err)
}

func countSQL(t Table, q ItemsQuery) (string, []any, error) {
	var b sqlbuild.Builder
	sql, err := countOn(&b, t, q)
	return sql, b.Args(), err
}

// countOn writes the count statement of q with b.
func countOn(b *sqlbuild.Builder, t Table, q ItemsQuery) (string, error) {
	q.AfterKey = nil // matched counts every page, not what follows the cursor
	where, err := conditions(b, t, q, storageOf(q))
	if err != nil {
		return "", err
	}
	sql := "SELECT count(*) FROM " + t.ident() + " t"
	if len(where) > 0 {
		sql += " WHERE " + strings.Join(where, " AND ")
	}
	return sql, nil
}

// keptCount is the count of q kept by r.Counts for its dataset version, or started now. The
// count statement also reads the dataset's version, in the same snapshot, so a count made while
// the data moved on to another version is answered but not kept.
func (r Reader) keptCount(ctx context.Context, t Table, q ItemsQuery) *matchCount {
	var b sqlbuild.Builder
	sql, err := countOn(&b, t, q)
	if err != nil {
		return nil // the page query reports the same error
	}
	key := *q.Count
	digest := countDigest(key, sql, b.Args())
	versioned := "SELECT (" + sql + "), (SELECT tile_version = " + b.Cast(key.Version, "bigint") +
		" FROM catalog.datasets WHERE id = " + b.Cast(key.Dataset, "uuid") + ")"
	return r.Counts.join(ctx, key, digest, func(ctx context.Context) (int64, bool, error) {
		var n int64
		var current *bool
		err := r.countPool().QueryRow(ctx, versioned, b.Args()...).Scan(&n, &current)
		return n, current != nil && *current, db.QueryValueError(err)
	})
}

// countAlongside starts counting on a connection of its own while the page is read.
func (r Reader) countAlongside(ctx context.Context, t Table, q ItemsQuery) *matchCount {
	sql, args, err := countSQL(t, q)
	if err != nil {
		return nil // the page query reports the same error
	}
	ctx, cancel := context.WithCancel(ctx)
	m := &matchCount{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		m.err = db.QueryValueError(r.countPool().QueryRow(ctx, sql, args...).Scan(&m.n))
	}()
	return m
}

// Matched is how many features the query matches over all its pages; call it once the page has
// been read (Append said it ended).
func (c *Cursor) Matched() (int64, error) {
	m := c.matched
	// The page is read: its connection goes back before anything waits for a count on another
	// one. Pages holding every connection while their counts wait for one would wait forever.
	c.rows.Close()
	if !c.more && !c.keyset && (c.n > 0 || c.offset == 0) {
		return int64(c.offset + c.n), nil // the last page counts itself
	}
	switch {
	case m == nil:
		return int64(c.offset + c.n), nil
	case m.known != nil:
		return *m.known, nil
	case m.inPage && c.pageMatched >= 0:
		return c.pageMatched, nil
	case m.inPage:
		return m.recount()
	case m.shared != nil:
		return m.wait()
	}
	<-m.done
	return m.n, m.err
}

func (c *Cursor) stopCount() {
	if c.matched != nil && c.matched.cancel != nil {
		c.matched.cancel()
	}
	if c.matched != nil {
		c.matched.leave()
	}
}

func storageOf(q ItemsQuery) int {
	if q.StorageSRID == 0 {
		return 4326
	}
	return q.StorageSRID
}
