// Package audit writes the audit trail: sign-ins, key and role changes, provider changes.
package audit

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/google/uuid"

	"meridian/store"
)

// Entry is one audited event.
type Entry struct {
	ActorID      uuid.UUID // uuid.Nil for anonymous or system actions
	ActorDisplay string
	Action       string // dotted resource.verb, e.g. "user.login.success", "api_key.create"
	ResourceType string
	ResourceID   string
	Failed       bool
	IP, UA       string
	Detail       map[string]any
}

// Record writes e with q (a pool or a transaction). An audit write that fails is logged, not
// returned: losing an audit line must not turn a successful sign-in into an error, and a failed
// sign-in must still answer 401 quickly.
func Record(ctx context.Context, q *store.Queries, log *slog.Logger, e Entry) {
	if c, ok := ctx.Value(clientKey{}).(client); ok && e.IP == "" && e.UA == "" {
		e.IP, e.UA = c.ip, c.ua
	}
	var actor *uuid.UUID
	if e.ActorID != uuid.Nil {
		actor = &e.ActorID
	}
	outcome := "success"
	if e.Failed {
		outcome = "failure"
	}
	detail, _ := json.Marshal(e.Detail)
	if e.Detail == nil {
		detail = []byte("{}")
	}
	err := q.RecordAudit(ctx, store.RecordAuditParams{
		ActorID: actor, ActorDisplay: e.ActorDisplay, Action: e.Action, ResourceType: e.ResourceType,
		ResourceID: e.ResourceID, Outcome: outcome, Ip: e.IP, UserAgent: e.UA, Detail: detail,
	})
	if err != nil && log != nil {
		log.Warn("audit write failed", "action", e.Action, "err", err)
	}
}

type clientKey struct{}

type client struct{ ip, ua string }

// WithClient returns ctx carrying the request's client address and user agent, which Record
// writes into entries that name none: domain code records what a request did without knowing
// HTTP (internal/web sets it for every request).
func WithClient(ctx context.Context, ip, ua string) context.Context {
	return context.WithValue(ctx, clientKey{}, client{ip: ip, ua: ua})
}
