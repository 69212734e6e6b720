package audit

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"meridian/store"
)

// Event is one record of the audit trail as readers see it.
type Event struct {
	ID                                 uuid.UUID // the public id
	OccurredAt                         time.Time
	ActorID                            *uuid.UUID
	ActorDisplay, Action, ResourceType string
	ResourceID, Outcome, IP, UserAgent string
	Detail                             json.RawMessage
	seq                                int64 // the keyset of exports
}

// Filter selects events; nil fields select all.
type Filter struct {
	Action                   *string
	ActorID                  *uuid.UUID
	ResourceType, ResourceID *string
	Outcome                  *string
	Since, Until             *time.Time
	Search                   *string // in the action, resource or actor
	Sort                     string  // created_at (default), action, resource_type, ip_address, username
	Ascending                bool    // default: descending (newest first)
}

func (f Filter) params() store.ListAuditRecordsParams {
	return store.ListAuditRecordsParams{Action: f.Action, ActorID: f.ActorID, ResourceType: f.ResourceType, ResourceID: f.ResourceID,
		Outcome: f.Outcome, Since: f.Since, Until: f.Until, Search: f.Search, Sort: f.Sort,
		Descending: !f.Ascending}
}

// Trail reads the audit trail.
type Trail struct{ Q *store.Queries }

func events(rows []store.ListAuditRecordsRow) ([]Event, int) {
	out := make([]Event, len(rows))
	total := 0
	for i, r := range rows {
		total = int(r.Total)
		out[i] = Event{ID: r.PublicID, OccurredAt: r.OccurredAt, ActorID: r.ActorID, ActorDisplay: r.ActorDisplay, Action: r.Action,
			ResourceType: r.ResourceType, ResourceID: r.ResourceID, Outcome: r.Outcome, IP: r.Ip, UserAgent: r.UserAgent,
			Detail: r.Detail, seq: r.ID}
	}
	return out, total
}

// List is a page of the events f selects, newest first, and how many it selects in all.
func (t Trail) List(ctx context.Context, f Filter, skip, limit int) ([]Event, int, error) {
	prm := f.params()
	prm.Off, prm.Lim = int32(skip), int32(limit)
	rows, err := t.Q.ListAuditRecords(ctx, prm)
	if err != nil {
		return nil, 0, err
	}
	out, total := events(rows)
	return out, total, nil
}

// exportPage is how many events Each reads at a time.
const exportPage = 2000

// Each calls fn for every event f selects (at most max when max > 0), newest first, reading
// keyset pages so memory stays flat however long the trail is.
func (t Trail) Each(ctx context.Context, f Filter, max int, fn func(Event) error) error {
	prm := f.params()
	prm.Lim = exportPage
	prm.Sort, prm.Descending = "", true // keyset pages walk the ids down
	n := 0
	for {
		rows, err := t.Q.ListAuditRecords(ctx, prm)
		if err != nil {
			return err
		}
		evs, _ := events(rows)
		for _, e := range evs {
			if max > 0 && n == max {
				return nil
			}
			n++
			if err := fn(e); err != nil {
				return err
			}
		}
		if len(rows) < exportPage {
			return nil
		}
		last := evs[len(evs)-1].seq
		prm.BeforeID = &last
	}
}

// Exported records that an admin downloaded the audit records f selects, as audit.export: a
// copy of the trail leaving the server is itself part of the trail.
func (t Trail) Exported(ctx context.Context, e Entry, format string, f Filter) {
	e.Action, e.ResourceType, e.ResourceID = "audit.export", "audit_log", format
	e.Detail = map[string]any{"format": format, "filter": f}
	Record(ctx, t.Q, nil, e)
}
