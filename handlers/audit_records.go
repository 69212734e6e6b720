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
	"meridian/store"
)

func auditOut(r store.ListAuditRecordsRow) gen.AuditRecord {
	detail := map[string]any{}
	_ = json.Unmarshal(r.Detail, &detail)
	out := gen.AuditRecord{Id: r.PublicID, OccurredAt: r.OccurredAt, ActorId: r.ActorID, ActorDisplay: r.ActorDisplay,
		Action: r.Action, ResourceType: r.ResourceType, Outcome: gen.AuditRecordOutcome(r.Outcome), Detail: detail}
	if r.ResourceID != "" {
		out.ResourceId = &r.ResourceID
	}
	if r.Ip != "" {
		out.Ip = &r.Ip
	}
	if r.UserAgent != "" {
		out.UserAgent = &r.UserAgent
	}
	return out
}

// auditExport streams every matching audit record as csv, json (one array) or ndjson, reading
// newest first in keyset pages so memory stays flat however long the trail is.
type auditExport struct {
	q      *store.Queries
	filter store.ListAuditRecordsParams
	format string
	ctx    context.Context // the request's: a client that goes away stops the export
}

const auditExportPage = 2000

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
	f := x.filter
	f.Lim = auditExportPage
	for {
		rows, err := x.q.ListAuditRecords(x.ctx, f)
		if err != nil {
			return err // headers are out: the error handler can only log it
		}
		for _, r := range rows {
			rec := auditOut(r)
			switch x.format {
			case "csv":
				actor := ""
				if r.ActorID != nil {
					actor = r.ActorID.String()
				}
				_ = cw.Write([]string{rec.Id.String(), r.OccurredAt.UTC().Format(time.RFC3339Nano), actor, csvSafe(r.ActorDisplay), r.Action,
					r.ResourceType, csvSafe(r.ResourceID), r.Outcome, r.Ip, csvSafe(r.UserAgent), string(r.Detail)})
			default:
				b, _ := json.Marshal(rec)
				if x.format == "json" && !first {
					_, _ = io.WriteString(w, ",")
				}
				_, _ = w.Write(b)
				if x.format == "ndjson" {
					_, _ = io.WriteString(w, "\n")
				}
			}
			first = false
		}
		cw.Flush()
		if len(rows) < auditExportPage {
			break
		}
		last := rows[len(rows)-1].ID
		f.BeforeID = &last
	}
	if x.format == "json" {
		_, _ = io.WriteString(w, "]")
	}
	return cw.Error()
}
