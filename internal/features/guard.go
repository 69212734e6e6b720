package features

import (
	"errors"
	"strconv"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"

	"meridian/internal/sqlbuild"
)

// ErrStale is the answer of a guarded read whose dataset record changed since the caller read it,
// or which the caller may not (or no longer) see: read the record again, then decide.
var ErrStale = errors.New("features: the dataset record changed or is not visible to the caller")

// Guard makes a read conditional on the dataset's catalog record, checked by the database in the
// same statement: the record is still the version the caller holds (its row version, xmin,
// changes with every update of the record) and catalog.dataset_visible lets the caller see it.
// A caller that keeps records in memory so pays no round trip to look one up, and still sees a
// change made through any server the moment it is committed.
type Guard struct {
	Dataset uuid.UUID
	Version int64 // the record's xmin when it was read
	Caller  *uuid.UUID
	Role    *string
	Admin   bool
}

// wrap puts the page query under the guard: one row per feature, or one row of NULLs for an
// empty page, when the guard holds; no row when it does not.
func (g *Guard) wrap(b *sqlbuild.Builder, page string) string {
	var p [len(guardTypes)]string
	for i, v := range g.values() {
		p[i] = b.Cast(v, guardTypes[i])
	}
	return "SELECT p.* FROM catalog.datasets d LEFT JOIN LATERAL (" + page + ") p ON true WHERE d.id = " + p[0] +
		" AND d.xmin = " + p[1] + "::xid" +
		" AND catalog.dataset_visible(d.id, d.visibility, d.record_status, d.created_by, " + p[2] + ", " + p[3] + ", " + p[4] + ")"
}

// guardTypes are the SQL types of the guard's values, in the order of values.
var guardTypes = [...]string{"uuid", "text", "uuid", "text", "boolean"}

// values are the guard's values in the order wrap binds them: a statement wrap wrote once is
// run again with these as its arguments.
func (g *Guard) values() [len(guardTypes)]any {
	// Ids go as pgtype.UUID: pgx sends those in binary, uuid.UUID through its text form.
	caller := pgtype.UUID{}
	if g.Caller != nil {
		caller = pgtype.UUID{Bytes: *g.Caller, Valid: true}
	}
	return [...]any{pgtype.UUID{Bytes: g.Dataset, Valid: true}, strconv.FormatInt(g.Version, 10), caller, g.Role, g.Admin}
}
