package maps

import (
	"context"

	"github.com/google/uuid"

	"meridian/internal/audit"
	"meridian/internal/auth"
	"meridian/store"
)

// Actions of the admin audit log (client-semantics "Audit"): what was done to maps, their layers
// and embed tokens, by whom. A map's own history (Event) tells its editors the same story in
// their words; the audit log is the administrator's, across all maps.
const (
	AuditMapCreate      = "map.create"
	AuditMapUpdate      = "map.update"
	AuditMapDelete      = "map.delete"
	AuditMapDuplicate   = "map.duplicate"
	AuditMapShare       = "map.share"
	AuditMapRevokeShare = "map.revoke_share"
	AuditMapAddLayer    = "map.add_layer"
	AuditMapRemoveLayer = "map.remove_layer"
	AuditMapPatchLayers = "map.patch_layers"
	AuditMapImportStyle = "map.import_style"
	AuditLayerAdd       = "layer.add"
	AuditLayerRemove    = "layer.remove"
	AuditLayerReorder   = "layer.reorder"
	AuditEmbedCreate    = "embed_token.create"
	AuditEmbedUpdate    = "embed_token.update"
	AuditEmbedRevoke    = "embed_token.revoke"
	AuditIconDelete     = "map_icon.delete"
)

// auditOf is the audit action of a history action, "" for changes the audit log leaves to the
// map's history (restyling one layer, a new thumbnail).
var auditOf = map[string]string{
	ActionUpdated:      AuditMapUpdate,
	ActionDuplicated:   AuditMapDuplicate,
	ActionLayerAdded:   AuditLayerAdd,
	ActionLayerRemoved: AuditLayerRemove,
	ActionLayersOrder:  AuditLayerReorder,
	ActionShared:       AuditMapShare,
	ActionShareChanged: AuditMapShare,
	ActionShareRevoked: AuditMapRevokeShare,
}

// audit writes one audit record of p's with q (the change's transaction, so a change rolled back
// leaves none).
func (s *Service) audit(ctx context.Context, q *store.Queries, p auth.Principal, action, resourceType string, id uuid.UUID, detail map[string]any) {
	audit.Record(ctx, q, s.Log, audit.Entry{ActorID: p.UserID, ActorDisplay: p.Username, Action: action,
		ResourceType: resourceType, ResourceID: id.String(), Detail: detail})
}

// auditEvents writes the audit records of a change of map mapID: op (the operation, "" for none)
// and those of its history events.
func (s *Service) auditEvents(ctx context.Context, q *store.Queries, p auth.Principal, mapID uuid.UUID, op string, events []Event) {
	if op != "" {
		s.audit(ctx, q, p, op, "map", mapID, nil)
	}
	for _, e := range events {
		action := auditOf[e.Action]
		if action == "" {
			continue
		}
		detail := map[string]any{"map_id": mapID}
		for k, v := range e.Details {
			detail[k] = v
		}
		kind, id := e.TargetType, mapID
		if e.TargetID != nil {
			id = *e.TargetID
		}
		if kind == "share" {
			// The audit log files share links under their map, which is what admins look for.
			kind, id, detail["share_id"] = "map", mapID, e.TargetID
		}
		s.audit(ctx, q, p, action, kind, id, detail)
	}
}
