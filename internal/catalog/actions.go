package catalog

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// History actions: dotted resource.verb names, as the web UI reads them (it labels
// dataset.create, metadata.edit and dataset.delete and hides dataset.view). Migration 50 moved
// the older names forward.
const (
	ActionDatasetCreate = "dataset.create"
	ActionMetadataEdit  = "metadata.edit"
	ActionStatusChange  = "status.change"
	// ActionDatasetDelete goes to the audit trail: the dataset's own history goes with it.
	ActionDatasetDelete = "dataset.delete"
	ActionDatasetExport = "dataset.export"
	ActionDatasetView   = "dataset.view"

	ActionFeatureInsert  = "feature.insert"
	ActionFeatureUpdate  = "feature.update"
	ActionFeatureReplace = "feature.replace"
	ActionFeatureDelete  = "feature.delete"

	ActionColumnAdd       = "column.add"
	ActionColumnRename    = "column.rename"
	ActionColumnAlterType = "column.alter_type"
	ActionColumnDrop      = "column.drop"

	ActionKeywordAdd          = "keyword.add"
	ActionKeywordRemove       = "keyword.remove"
	ActionContactAdd          = "contact.add"
	ActionContactUpdate       = "contact.update"
	ActionContactRemove       = "contact.remove"
	ActionDistributionAdd     = "distribution.add"
	ActionDistributionUpdate  = "distribution.update"
	ActionDistributionRemove  = "distribution.remove"
	ActionRelationshipAdd     = "relationship.add"
	ActionRelationshipRemove  = "relationship.remove"
	ActionTranslationSet      = "translation.set"
	ActionTranslationRemove   = "translation.remove"
	ActionAttributeUpdate     = "attribute.update"
	ActionAttributeReset      = "attribute.reset"
	ActionDatasetReupload     = "dataset.reupload"
	ActionDatasetRefresh      = "dataset.refresh"
	ActionDatasetAnalysis     = "dataset.analysis"
	ActionDatasetRegeneration = "dataset.regenerate"
)

// columnActions change the table's schema: the column DDL feed lists them.
var columnActions = []string{ActionColumnAdd, ActionColumnRename, ActionColumnAlterType, ActionColumnDrop}

// dataActions make a new data version: current_version counts them and Get Dataset Versions
// lists them. Metadata, status, views and exports carry the version they saw.
var dataActions = append([]string{ActionDatasetCreate, ActionFeatureInsert, ActionFeatureUpdate, ActionFeatureReplace,
	ActionFeatureDelete, ActionDatasetReupload, ActionDatasetRefresh, ActionDatasetAnalysis, ActionDatasetRegeneration},
	columnActions...)

// Summary is the entry's one line for people: what happened, and to what.
func (h HistoryEntry) Summary() string {
	var ch map[string]struct{ Old, New any }
	_ = json.Unmarshal(h.Changes, &ch)
	gid := func() string {
		if g, ok := ch["gid"]; ok {
			return fmt.Sprint(cmp.Or(g.New, g.Old))
		}
		return "?"
	}
	var column struct {
		Column any `json:"column"`
	}
	_ = json.Unmarshal(h.Changes, &column)
	switch h.Action {
	case ActionDatasetCreate:
		return "Dataset created"
	case ActionMetadataEdit:
		return "Metadata edited: " + strings.Join(slices.Sorted(maps.Keys(ch)), ", ")
	case ActionStatusChange:
		s := ch["record_status"]
		return fmt.Sprintf("Status changed from %v to %v", s.Old, s.New)
	case ActionDatasetView:
		return "Viewed"
	case ActionDatasetExport:
		var ex struct{ Format string }
		_ = json.Unmarshal(h.Changes, &ex)
		return "Exported as " + ex.Format
	case ActionFeatureInsert:
		return "Feature " + gid() + " added"
	case ActionFeatureUpdate:
		return "Feature " + gid() + " edited"
	case ActionFeatureReplace:
		return "Feature " + gid() + " replaced"
	case ActionFeatureDelete:
		return "Feature " + gid() + " deleted"
	case ActionColumnAdd:
		return fmt.Sprintf("Column %v added", column.Column)
	case ActionColumnDrop:
		return fmt.Sprintf("Column %v dropped", column.Column)
	case ActionColumnAlterType:
		return fmt.Sprintf("Column %v retyped", column.Column)
	case ActionColumnRename:
		r := ch["column"]
		return fmt.Sprintf("Column %v renamed to %v", r.Old, r.New)
	}
	verb := strings.ReplaceAll(h.Action, ".", " ")
	return strings.ToUpper(verb[:1]) + verb[1:]
}
