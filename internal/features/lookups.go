package features

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"meridian/internal/db"
	"meridian/internal/sqlbuild"
)

// Lookups gathers concurrent reads of single features by key into shared statements, as a
// database's group commit gathers commits. Each statement pays a round trip, the guard, and the
// executor's start; the index lookups themselves are a small part of it. So the lookups of one
// table, with one select list under one guard, run at most a quarter of the pool's connections
// at a time (at least one); lookups arriving meanwhile wait together and go as one statement of
// many keys when a running one ends. A lookup that finds none running goes at once, alone, as it
// would without Lookups; under load, the statements grow with the load and each lookup costs
// less (about five keys a statement with 16 clients on 2 cores, and a third of the database's
// CPU per lookup).
// The quarter also keeps one busy table from taking every connection of the pool.
type Lookups struct {
	mu    sync.Mutex
	lanes map[lookupKey]*lookupLane
	limit int // statements of one key at a time, from the pool's size
}

// lookupLane is the lookups of one key: the batch gathering them and the statements running.
type lookupLane struct {
	open    *lookupBatch  // taking lookups, nil when none is
	running int           // statements holding or waiting for a connection
	batches int           // batches not yet done, open or waiting included: the lane lives while any does
	freed   chan struct{} // closed, and replaced, whenever a statement ends
}

// maxBatch bounds the keys of one statement; a full batch takes no more and the next lookup
// starts another.
const maxBatch = 64

// lookupKey tells which lookups may share a statement: the same SQL (table, select list, key
// type) and the same guard, the arguments besides the keys.
type lookupKey struct {
	sql     string
	guarded bool
	dataset uuid.UUID
	version int64
	caller  uuid.UUID
	hasCall bool
	role    string
	hasRole bool
	admin   bool
}

// lookupBatch is one statement's lookups: the first to come runs it for all.
type lookupBatch struct {
	args    []any // the statement's arguments; the first, the keys, is set when it runs
	ints    []int64
	texts   []string
	done    chan struct{}
	ctx     context.Context // ends when every lookup of the batch has gone away
	cancel  context.CancelFunc
	waiters int

	// The answer, once done is closed.
	fields []pgconn.FieldDescription // without the ordinal
	found  [][][]byte                // per lookup, its row without the ordinal; nil for none
	err    error
}

// batchable reports whether q reads one feature by key and nothing else narrows it, and the key
// in the type the batch statement compares (an integer key that is not an integer's canonical
// text matches nothing, and is left to the plain statement, which says so).
func batchable(t Table, q ItemsQuery) (key any, ok bool) {
	if q.ID == nil || q.Offset != 0 || q.AfterKey != nil || q.Filtered() || len(q.Sort) > 0 {
		return nil, false
	}
	if kindOf(t.IDType) == kindInt {
		n, err := strconv.ParseInt(*q.ID, 10, 64)
		if err != nil || strconv.FormatInt(n, 10) != *q.ID {
			return nil, false
		}
		return n, true
	}
	return *q.ID, true
}

// lookupShape is what a lookup statement's text depends on besides its table.
type lookupShape struct {
	properties      string // the names asked for, NUL-separated; "" for all
	all             bool
	storage, out    int
	noGeom, guarded bool
}

// lookupStatement is the text of a lookup statement and the columns its rows hold.
type lookupStatement struct {
	sql  string
	cols []Column
}

// batchSQL is the statement of a batch: the keys come as an array in the first argument, and
// each found row leads (after the guard's column) with the ordinal of its key in the array. A
// kept table writes the text once per shape of query; the arguments are bound each time.
func batchSQL(t Table, q ItemsQuery) (string, []any, []Column, error) {
	shape := lookupShape{properties: strings.Join(q.Properties, "\x00"), all: q.Properties == nil, storage: q.StorageSRID,
		out: q.OutSRID, noGeom: q.NoGeometry, guarded: q.Guard != nil}
	if st, ok := t.memo.recall(shape); ok {
		args := make([]any, 1, 1+len(guardTypes)) // the keys, then the guard's values as wrap binds them
		if q.Guard != nil {
			v := q.Guard.values()
			args = append(args, v[:]...)
		}
		return st.sql, args, st.cols, nil
	}
	list, cols, err := selectList(t, q)
	if err != nil {
		return "", nil, nil, err
	}
	match, keyType := t.id()+" = k.v", "bigint[]"
	if kindOf(t.IDType) != kindInt {
		match, keyType = t.id()+"::text = k.v", "text[]"
	}
	var b sqlbuild.Builder
	keys := b.Cast(nil, keyType)
	// The keys pass through a sub-select: a custom plan sees the array's length, estimates its
	// own cost by it and comes out cheaper than the generic plan's guess of ten keys, so PostgreSQL
	// would plan every run anew (as much CPU as the lookups). Behind the sub-select no plan
	// knows the length, and the generic plan is kept after five runs.
	st := lookupStatement{cols: cols}
	st.sql = "SELECT " + guardColumn(q) + "k.i, " + list + " FROM unnest((SELECT " + keys + ")) WITH ORDINALITY k(v, i) JOIN " +
		t.ident() + " t ON " + match
	if q.Guard != nil {
		st.sql = q.Guard.wrap(&b, st.sql)
	}
	t.memo.remember(shape, st)
	return st.sql, b.Args(), st.cols, nil
}

// read looks up the feature of q together with the lookups that share its statement; ok is
// false when q is not a lookup by key, for the caller to run as any other read.
func (l *Lookups) read(ctx context.Context, pool *pgxpool.Pool, t Table, q ItemsQuery) (_ rows, _ []Column, ok bool, _ error) {
	id, ok := batchable(t, q)
	if !ok {
		return nil, nil, false, nil
	}
	sql, args, cols, err := batchSQL(t, q)
	if err != nil {
		return nil, nil, true, err
	}
	k := lookupKey{sql: sql}
	if g := q.Guard; g != nil {
		k.guarded, k.dataset, k.version, k.admin = true, g.Dataset, g.Version, g.Admin
		if g.Caller != nil {
			k.caller, k.hasCall = *g.Caller, true
		}
		if g.Role != nil {
			k.role, k.hasRole = *g.Role, true
		}
	}

	l.mu.Lock()
	lane := l.lanes[k]
	if lane == nil {
		if l.lanes == nil {
			l.lanes = map[lookupKey]*lookupLane{}
			l.limit = max(1, int(pool.Config().MaxConns)/4)
		}
		lane = &lookupLane{freed: make(chan struct{})}
		l.lanes[k] = lane
	}
	b, joined := lane.open, lane.open != nil
	if !joined {
		b = &lookupBatch{args: args, done: make(chan struct{})}
		b.ctx, b.cancel = context.WithCancel(context.WithoutCancel(ctx))
		lane.open = b
		lane.batches++
	}
	i := b.add(id)
	if i+1 == maxBatch {
		lane.open = nil
	}
	b.waiters++
	l.mu.Unlock()

	if joined {
		select {
		case <-b.done:
		case <-ctx.Done():
			l.leave(b)
			return nil, nil, true, ctx.Err()
		}
	} else {
		stop := context.AfterFunc(ctx, func() { l.leave(b) })
		l.run(pool, k, lane, b, q.Guard != nil)
		stop()
	}
	if b.err != nil {
		return nil, nil, true, b.err
	}
	return &heldRow{raw: b.found[i], fields: b.fields}, cols, true, nil
}

// add puts a key in the batch and returns its index.
func (b *lookupBatch) add(id any) int {
	if n, ok := id.(int64); ok {
		b.ints = append(b.ints, n)
		return len(b.ints) - 1
	}
	b.texts = append(b.texts, id.(string))
	return len(b.texts) - 1
}

// leave is a lookup giving up on its batch; the last one to go cancels the statement.
func (l *Lookups) leave(b *lookupBatch) {
	l.mu.Lock()
	b.waiters--
	if b.waiters == 0 {
		b.cancel()
	}
	l.mu.Unlock()
}

// run waits for its turn and a connection, closes the batch to newcomers and runs its
// statement.
func (l *Lookups) run(pool *pgxpool.Pool, k lookupKey, lane *lookupLane, b *lookupBatch, guarded bool) {
	defer close(b.done)
	defer b.cancel()
	l.mu.Lock()
	for lane.running >= l.limit && b.ctx.Err() == nil {
		freed := lane.freed
		l.mu.Unlock()
		select {
		case <-freed:
		case <-b.ctx.Done():
		}
		l.mu.Lock()
	}
	lane.running++
	l.mu.Unlock()
	defer l.finish(k, lane)

	// Lookups keep joining while the connection is awaited: under load, that is when they come.
	conn, err := pool.Acquire(b.ctx)
	l.mu.Lock()
	if lane.open == b {
		lane.open = nil
	}
	if b.ints != nil {
		b.args[0] = b.ints
	} else {
		b.args[0] = b.texts
	}
	b.found = make([][][]byte, len(b.ints)+len(b.texts))
	l.mu.Unlock()
	if err != nil {
		b.err = err
		return
	}
	defer conn.Release()
	b.err = b.scan(conn, k.sql, guarded)
}

// finish ends a statement of the lane, lets a waiting batch go, and forgets the lane once no
// batch of it is left.
func (l *Lookups) finish(k lookupKey, lane *lookupLane) {
	l.mu.Lock()
	defer l.mu.Unlock()
	lane.running--
	lane.batches--
	close(lane.freed)
	lane.freed = make(chan struct{})
	if lane.batches == 0 {
		delete(l.lanes, k)
	}
}

// scan runs the statement and keeps each lookup's row. A guarded statement answers no row at
// all when the guard does not hold, and one row of NULLs when it holds but no key is found.
func (b *lookupBatch) scan(conn *pgxpool.Conn, sql string, guarded bool) error {
	rs, err := conn.Query(b.ctx, sql, b.args...)
	if err != nil {
		return db.QueryValueError(err)
	}
	defer rs.Close()
	at := 0 // the ordinal's column
	if guarded {
		at = 1
	}
	answered := false
	for rs.Next() {
		answered = true
		raw, fds := rs.RawValues(), rs.FieldDescriptions()
		if b.fields == nil {
			b.fields = slices.Delete(slices.Clone(fds), at, at+1)
		}
		if raw[at] == nil {
			continue // the guard's row of an empty answer
		}
		i, err := ordinal(raw[at], fds[at].Format)
		if err != nil || i < 1 || i > int64(len(b.found)) {
			return fmt.Errorf("features: a batch row has ordinal %q: %v", raw[at], err)
		}
		b.found[i-1] = heldValues(raw, at)
	}
	if err := rs.Err(); err != nil {
		return db.QueryValueError(err)
	}
	if guarded && !answered {
		return ErrStale
	}
	if guarded {
		for i, r := range b.found {
			if r == nil {
				b.found[i] = [][]byte{nil} // as the guard's row of an empty page reads
			}
		}
	}
	return nil
}

// ordinal decodes the bigint WITH ORDINALITY numbers the keys by.
func ordinal(v []byte, format int16) (int64, error) {
	if format == pgx.BinaryFormatCode {
		if len(v) != 8 {
			return 0, fmt.Errorf("%d bytes", len(v))
		}
		return int64(binary.BigEndian.Uint64(v)), nil
	}
	return strconv.ParseInt(string(v), 10, 64)
}

// heldValues copies a row's values but the one at skip into one allocation: pgx reuses the
// buffer behind RawValues for the next row.
func heldValues(raw [][]byte, skip int) [][]byte {
	size := 0
	for _, v := range raw {
		size += len(v)
	}
	buf := make([]byte, 0, size)
	out := make([][]byte, 0, len(raw)-1)
	for i, v := range raw {
		switch {
		case i == skip:
		case v == nil:
			out = append(out, nil)
		default:
			buf = append(buf, v...)
			out = append(out, buf[len(buf)-len(v):len(buf):len(buf)])
		}
	}
	return out
}

// heldRow is one lookup's row, read as a one-row result.
type heldRow struct {
	raw    [][]byte
	fields []pgconn.FieldDescription
	read   bool
}

func (h *heldRow) Next() bool {
	if h.read || h.raw == nil {
		return false
	}
	h.read = true
	return true
}

func (h *heldRow) Err() error                                   { return nil }
func (h *heldRow) RawValues() [][]byte                          { return h.raw }
func (h *heldRow) FieldDescriptions() []pgconn.FieldDescription { return h.fields }
func (h *heldRow) Close()                                       {}
