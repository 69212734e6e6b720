package catalog

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"

	"meridian/internal/auth"
	"meridian/internal/features"
)

// Feature reads are the requests that decide how the product feels (single features, small
// pages, tiles), so they do not pay a round trip to look up the dataset record first: records
// read by Get are kept here, and a read that finds its record runs as one statement that also
// checks, in the database, that the record is unchanged and visible to the caller
// (features.Guard). A record changed through any server fails that check on the next read,
// which then reads the record again; nothing needs to be told to forget anything.

// maxRecords bounds the records kept; past it the set starts again empty.
const maxRecords = 10000

type records struct {
	m sync.Map // uuid.UUID -> *Dataset (a pointer: forget compares entries)
	n atomic.Int64

	live  atomic.Bool   // the listener is up (watch.go)
	epoch atomic.Uint64 // announcements received so far
}

// keep keeps d, read when the announcements numbered epoch; it is vouched for only when none
// arrived since.
func (r *records) keep(d Dataset, epoch uint64) {
	d.grant = "" // the caller's grant is no property of the record
	// The table description is parsed once per kept version, not on every read.
	if t, err := d.Table(); err == nil {
		t = t.Kept()
		d.table = &t
	}
	d.vouched = r.live.Load() && r.epoch.Load() == epoch
	kept := &d
	if _, loaded := r.m.Swap(d.row.ID, kept); !loaded && r.n.Add(1) > maxRecords {
		r.clear()
	}
	// An announcement between the check above and the Swap found nothing to forget: undo.
	if d.vouched && r.epoch.Load() != epoch {
		r.m.CompareAndDelete(d.row.ID, kept)
	}
}

func (r *records) get(id uuid.UUID) (*Dataset, bool) {
	v, ok := r.m.Load(id)
	if !ok {
		return nil, false
	}
	return v.(*Dataset), true
}

// forget drops d unless a newer read has replaced it meanwhile.
func (r *records) forget(d *Dataset) { r.m.CompareAndDelete(d.row.ID, d) }

// changed drops the record of dataset id after an announcement of its change.
func (r *records) changed(id uuid.UUID) {
	r.epoch.Add(1)
	r.m.Delete(id)
}

func (r *records) clear() {
	r.m.Clear()
	r.n.Store(0)
}

// goLive starts vouching once the listener is up. Whatever changed while nobody listened is
// unknown, reads in flight included: start from nothing kept.
func (r *records) goLive() {
	r.epoch.Add(1)
	r.clear()
	r.live.Store(true)
}

// unvouch stops vouching for any record: the listener is down.
func (r *records) unvouch() {
	r.live.Store(false)
	r.epoch.Add(1)
	r.clear()
}

// Table is the dataset's data table as feature reads see it.
func (d Dataset) Table() (features.Table, error) {
	if d.table != nil {
		return *d.table, nil
	}
	t, err := features.TableOf(d.row.TableSchema, d.row.TableName, d.row.IDColumn, d.row.GeometryColumn, d.TableColumns)
	if d.row.GeometryType != nil {
		t.GeomType = *d.row.GeometryType
	}
	return t, err
}

// ReadPlan turns a dataset the caller may read into the query of a feature read; its error
// (a dataset without features, a bad parameter) is the read's answer.
type ReadPlan func(Dataset, features.Table) (features.ItemsQuery, error)

// ReadFeatures runs a feature read of dataset id for p: in one statement when the record is
// kept, else after Get (which authorizes the caller and keeps the record).
func (s *Service) ReadFeatures(ctx context.Context, p auth.Principal, id uuid.UUID, plan ReadPlan) (Dataset, *features.Cursor, error) {
	if d, ok := s.reads.get(id); ok {
		cur, err := s.guardedRead(ctx, p, *d, plan)
		switch {
		case errors.Is(err, errPlan):
			// Not answered from the kept record: whether the caller may know of the dataset
			// at all is decided first, below, as for any read.
		case !retry(err):
			return *d, cur, err
		default:
			s.reads.forget(d)
		}
	}
	d, err := s.Get(ctx, p, id, false)
	if err != nil {
		return d, nil, err
	}
	t, err := d.Table()
	if err != nil {
		return d, nil, err
	}
	q, err := plan(d, t)
	if err != nil {
		return d, nil, err
	}
	cur, err := s.featureReader().Items(ctx, t, counted(d, q))
	return d, cur, err
}

// featureReader reads dataset tables with the catalog's shared lookups and kept counts.
func (s *Service) featureReader() features.Reader {
	return features.Reader{Pool: s.Pool, Lookups: &s.lookups, Counts: &s.counts, CountPool: s.CountPool}
}

// counted names the data version a read's number matched may be kept for: the dataset's tile
// version, which every change of its data through the service moves on.
func counted(d Dataset, q features.ItemsQuery) features.ItemsQuery {
	q.Count = &features.CountKey{Dataset: d.row.ID, Version: d.Entry.TileVersion, External: d.row.Registered}
	return q
}

func (s *Service) guardedRead(ctx context.Context, p auth.Principal, d Dataset, plan ReadPlan) (*features.Cursor, error) {
	t, err := d.Table()
	if err != nil {
		return nil, err
	}
	q, err := plan(d, t)
	if err != nil {
		return nil, errPlan
	}
	caller, role := who(p)
	q.Guard = &features.Guard{Dataset: d.row.ID, Version: d.Version, Caller: caller, Role: role, Admin: p.IsAdmin()}
	return s.featureReader().Items(ctx, t, counted(d, q))
}

// errPlan marks a read its plan refused before the guard could say whether the caller may see
// the dataset.
var errPlan = errors.New("catalog: the read's plan refused it")

// retry reports whether a guarded read failed because the kept record no longer describes the
// dataset or its table: the record changed or is hidden from the caller, or the table was
// changed behind the catalog's back (a registered table altered by its operator).
func retry(err error) bool {
	if err == nil {
		return false
	}
	var pgErr *pgconn.PgError
	return errors.Is(err, features.ErrStale) ||
		errors.As(err, &pgErr) && (pgErr.Code == "42703" || pgErr.Code == "42P01" || pgErr.Code == "42804")
}
