package handlers

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"meridian/gen"
	"meridian/internal/audit"
)

func auditOut(e audit.Event) gen.AuditRecord {
	detail := map[string]any{}
	_ = json.Unmarshal(e.Detail, &detail)
	out := gen.AuditRecord{Id: e.ID, OccurredAt: e.OccurredAt, ActorId: e.ActorID, ActorDisplay: e.ActorDisplay,
		Action: e.Action, ResourceType: e.ResourceType, Outcome: gen.AuditRecordOutcome(e.Outcome), Detail: detail,
		UserId: e.ActorID, CreatedAt: e.OccurredAt, Details: &detail}
	if e.ActorID != nil {
		out.Username = &e.ActorDisplay
	}
	if e.ResourceID != "" {
		out.ResourceId = &e.ResourceID
	}
	if e.IP != "" {
		out.Ip, out.IpAddress = &e.IP, &e.IP
	}
	if e.UserAgent != "" {
		out.UserAgent = &e.UserAgent
	}
	return out
}

// auditExport streams every matching audit event as csv, json (one array) or ndjson.
type auditExport struct {
	trail  audit.Trail
	filter audit.Filter
	format string
	max    int             // rows at most
	ctx    context.Context // the request's: a client that goes away stops the export
}

func (x auditExport) VisitDownloadAuditRecordsResponse(w http.ResponseWriter) error {
	ctype := map[string]string{"csv": "text/csv; charset=utf-8", "json": "application/json", "ndjson": "application/x-ndjson"}[x.format]
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="audit-%s.%s"`, time.Now().UTC().Format("20060102T150405Z"), x.format))
	w.WriteHeader(http.StatusOK)
	cw := csv.NewWriter(w)
	first := true
	switch x.format {
	case "csv":
		_ = cw.Write([]string{"id", "occurred_at", "actor_id", "actor_display", "action", "resource_type", "resource_id", "outcome", "ip", "user_agent", "detail"})
	case "json":
		_, _ = io.WriteString(w, "[")
	}
	err := x.trail.Each(x.ctx, x.filter, x.max, func(e audit.Event) error {
		err := x.writeRow(w, cw, e, first)
		first = false
		return err
	})
	if err != nil {
		return err // headers are out: the error handler can only log it
	}
	cw.Flush()
	if x.format == "json" {
		_, _ = io.WriteString(w, "]")
	}
	return cw.Error()
}

// writeRow writes one event in the export's format (csv through cw), a comma before all but
// the first of a json array.
func (x auditExport) writeRow(w io.Writer, cw *csv.Writer, e audit.Event, first bool) error {
	switch x.format {
	case "csv":
		actor := ""
		if e.ActorID != nil {
			actor = e.ActorID.String()
		}
		return cw.Write([]string{e.ID.String(), e.OccurredAt.UTC().Format(time.RFC3339Nano), actor, csvSafe(e.ActorDisplay), e.Action,
			e.ResourceType, csvSafe(e.ResourceID), e.Outcome, e.IP, csvSafe(e.UserAgent), string(e.Detail)})
	case "json":
		if !first {
			if _, err := io.WriteString(w, ","); err != nil {
				return err
			}
		}
	}
	b, _ := json.Marshal(auditOut(e))
	if _, err := w.Write(b); err != nil {
		return err
	}
	if x.format == "ndjson" {
		_, err := io.WriteString(w, "\n")
		return err
	}
	return nil
}
