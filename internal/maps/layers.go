package maps

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/oapi-codegen/nullable"

	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/internal/catalog"
	"meridian/store"
)

// LayerInput is a layer as Add Layer, Patch Map Layers and Update Map send it. Objects and the
// filter stay JSON: absent is no bytes, an explicit null is "null". A change of a layer (Patch
// Map Layers' updated, Update Map's layers named by id) writes what is present, null clearing
// display_name, filter, label_config, popup_config and style_config.
type LayerInput struct {
	ID           *uuid.UUID                `json:"id"`
	DatasetID    uuid.UUID                 `json:"dataset_id"`
	SortOrder    *int32                    `json:"sort_order"`
	Visible      *bool                     `json:"visible"`
	Opacity      *float64                  `json:"opacity"`
	Paint        json.RawMessage           `json:"paint"`
	Layout       json.RawMessage           `json:"layout"`
	DisplayName  nullable.Nullable[string] `json:"display_name"`
	LayerType    *string                   `json:"layer_type"`
	Filter       json.RawMessage           `json:"filter"`
	LabelConfig  json.RawMessage           `json:"label_config"`
	PopupConfig  json.RawMessage           `json:"popup_config"`
	StyleConfig  json.RawMessage           `json:"style_config"`
	ShowInLegend *bool                     `json:"show_in_legend"`
}

// Limits of a layer (spec 2.8).
const (
	maxLayers          = 200
	maxPopupExpression = 500
	maxVisibleFields   = 100
)

// checkPopup applies the limits of popup_config.
func checkPopup(raw json.RawMessage) error {
	if jsonOrNull(raw) == nil {
		return nil
	}
	var pc struct {
		Expression    *string  `json:"expression"`
		VisibleFields []string `json:"visible_fields"`
	}
	if err := json.Unmarshal(raw, &pc); err != nil {
		return apperr.Unprocessable("popup_config: %v", err)
	}
	if pc.Expression != nil && utf8.RuneCountInString(*pc.Expression) > maxPopupExpression {
		return apperr.Unprocessable("popup_config.expression is longer than %d characters", maxPopupExpression)
	}
	if len(pc.VisibleFields) > maxVisibleFields {
		return apperr.Unprocessable("popup_config.visible_fields has more than %d entries", maxVisibleFields)
	}
	return nil
}

// layerDataset checks that p may read the dataset of a new layer (a dataset p cannot read is one
// that does not exist) and tells its default layer type.
func layerDataset(ctx context.Context, q *store.Queries, p auth.Principal, id uuid.UUID) (string, error) {
	caller, role := who(p)
	rows, err := q.DatasetsReadableBy(ctx, store.DatasetsReadableByParams{Ids: []uuid.UUID{id}, CallerID: caller, CallerRole: role, IsAdmin: p.IsAdmin()})
	if err != nil {
		return "", err
	}
	if len(rows) == 0 {
		return "", apperr.NotFound("dataset %s not found", id)
	}
	switch rows[0].RecordType {
	case "raster_dataset", "vrt_dataset":
		return "raster_service", nil
	}
	return "vector_service", nil
}

// insertLayer adds one layer to map id after the checks every new layer passes.
func insertLayer(ctx context.Context, q *store.Queries, p auth.Principal, mapID uuid.UUID, in LayerInput, order int32) (uuid.UUID, Event, error) {
	kind, err := layerDataset(ctx, q, p, in.DatasetID)
	if err != nil {
		return uuid.Nil, Event{}, err
	}
	if err := checkPopup(in.PopupConfig); err != nil {
		return uuid.Nil, Event{}, err
	}
	prm := store.InsertMapLayerParams{MapID: mapID, DatasetID: in.DatasetID, SortOrder: order, Visible: true, Opacity: 1,
		Paint: []byte("{}"), Layout: []byte("{}"), DisplayName: in.displayName(), LayerType: kind, Filter: jsonOrNull(in.Filter),
		LabelConfig: jsonOrNull(in.LabelConfig), PopupConfig: jsonOrNull(in.PopupConfig), StyleConfig: jsonOrNull(in.StyleConfig),
		ShowInLegend: true}
	set(&prm.SortOrder, in.SortOrder)
	set(&prm.Visible, in.Visible)
	set(&prm.Opacity, in.Opacity)
	set(&prm.LayerType, in.LayerType)
	set(&prm.ShowInLegend, in.ShowInLegend)
	if b := jsonOrNull(in.Paint); b != nil {
		prm.Paint = b
	}
	if b := jsonOrNull(in.Layout); b != nil {
		prm.Layout = b
	}
	id, err := q.InsertMapLayer(ctx, prm)
	return id, Event{TargetType: "layer", TargetID: &id, TargetName: prm.DisplayName, Action: ActionLayerAdded,
		Summary: "Layer added", Details: map[string]any{"dataset_id": in.DatasetID}}, err
}

// addLayers appends layers after the map's last one, in the given order unless they say theirs.
func addLayers(ctx context.Context, q *store.Queries, p auth.Principal, mapID uuid.UUID, in []LayerInput) ([]Event, error) {
	existing, err := q.ListMapLayers(ctx, mapID)
	if err != nil {
		return nil, err
	}
	if len(existing)+len(in) > maxLayers {
		return nil, apperr.Unprocessable("a map holds at most %d layers", maxLayers)
	}
	next := int32(0)
	for _, l := range existing {
		next = max(next, l.SortOrder+1)
	}
	events := make([]Event, 0, len(in))
	for i, l := range in {
		_, e, err := insertLayer(ctx, q, p, mapID, l, min(next+int32(i), 32767))
		if err != nil {
			return nil, err
		}
		events = append(events, e)
	}
	return events, nil
}

// replaceLayers makes in the map's whole layer list: layers named by id are changed in place, the
// others added, the rest removed.
func replaceLayers(ctx context.Context, q *store.Queries, p auth.Principal, mapID uuid.UUID, in []LayerInput) ([]Event, error) {
	existing, err := q.ListMapLayers(ctx, mapID)
	if err != nil {
		return nil, err
	}
	if len(in) > maxLayers {
		return nil, apperr.Unprocessable("a map holds at most %d layers", maxLayers)
	}
	var keep, gone []uuid.UUID
	var events []Event
	for i, l := range in {
		order := int32(i)
		if l.SortOrder == nil {
			l.SortOrder = &order
		}
		if l.ID != nil && slices.ContainsFunc(existing, func(e store.CatalogMapLayer) bool { return e.ID == *l.ID }) {
			if _, err := patchLayer(ctx, q, mapID, l); err != nil {
				return nil, err
			}
			keep = append(keep, *l.ID)
			continue
		}
		_, e, err := insertLayer(ctx, q, p, mapID, l, order)
		if err != nil {
			return nil, err
		}
		events = append(events, e)
	}
	for _, e := range existing {
		if !slices.Contains(keep, e.ID) {
			gone = append(gone, e.ID)
		}
	}
	removed, err := removeLayers(ctx, q, mapID, gone)
	return append(events, removed...), err
}

// patchLayer changes the members of a layer that in carries.
func patchLayer(ctx context.Context, q *store.Queries, mapID uuid.UUID, in LayerInput) (Event, error) {
	if in.ID == nil {
		return Event{}, apperr.Unprocessable("a layer to update needs its id")
	}
	if err := checkPopup(in.PopupConfig); err != nil {
		return Event{}, err
	}
	n, err := q.UpdateMapLayer(ctx, store.UpdateMapLayerParams{ID: *in.ID, MapID: mapID, SortOrder: in.SortOrder, Visible: in.Visible,
		Opacity: in.Opacity, Paint: jsonOrNull(in.Paint), Layout: jsonOrNull(in.Layout),
		SetDisplayName: in.DisplayName.IsSpecified(), DisplayName: in.displayName(), LayerType: in.LayerType,
		SetFilter: len(in.Filter) > 0, Filter: jsonOrNull(in.Filter),
		SetLabelConfig: len(in.LabelConfig) > 0, LabelConfig: jsonOrNull(in.LabelConfig),
		SetPopupConfig: len(in.PopupConfig) > 0, PopupConfig: jsonOrNull(in.PopupConfig),
		SetStyleConfig: len(in.StyleConfig) > 0, StyleConfig: jsonOrNull(in.StyleConfig), ShowInLegend: in.ShowInLegend})
	if err != nil {
		return Event{}, err
	}
	if n == 0 {
		return Event{}, apperr.NotFound("the map has no layer %s", *in.ID)
	}
	return Event{TargetType: "layer", TargetID: in.ID, TargetName: in.displayName(), Action: ActionLayerChanged, Summary: "Layer changed"}, nil
}

// displayName is the layer's display name as sent, nil when absent or null.
func (in LayerInput) displayName() *string {
	if v, err := in.DisplayName.Get(); err == nil {
		return &v
	}
	return nil
}

func removeLayers(ctx context.Context, q *store.Queries, mapID uuid.UUID, ids []uuid.UUID) ([]Event, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := q.DeleteMapLayers(ctx, store.DeleteMapLayersParams{MapID: mapID, Ids: ids})
	events := make([]Event, len(rows))
	for i, r := range rows {
		id := r.ID
		events[i] = Event{TargetType: "layer", TargetID: &id, TargetName: r.DisplayName, Action: ActionLayerRemoved,
			Summary: "Layer removed", Details: map[string]any{"dataset_id": r.DatasetID}}
	}
	return events, err
}

// AddLayer adds a layer to map id and answers it as the map shows it.
func (s *Service) AddLayer(ctx context.Context, p auth.Principal, mapID uuid.UUID, in LayerInput) (json.RawMessage, error) {
	var layerID uuid.UUID
	doc, err := s.change(ctx, p, mapID, AuditMapAddLayer, func(q *store.Queries, m store.CatalogMap) ([]Event, error) {
		events, err := addLayers(ctx, q, p, mapID, []LayerInput{in})
		if err == nil {
			layerID = *events[0].TargetID
		}
		return events, err
	})
	if err != nil {
		return nil, err
	}
	return layerOf(doc, layerID)
}

// layerOf picks one layer out of a map document.
func layerOf(doc Doc, id uuid.UUID) (json.RawMessage, error) {
	var m struct {
		Layers []json.RawMessage `json:"layers"`
	}
	if err := json.Unmarshal(doc, &m); err != nil {
		return nil, err
	}
	for _, l := range m.Layers {
		var head struct {
			ID uuid.UUID `json:"id"`
		}
		if json.Unmarshal(l, &head) == nil && head.ID == id {
			return l, nil
		}
	}
	return nil, fmt.Errorf("maps: layer %s missing from its map", id)
}

// LayerDiff is a Patch Map Layers request.
type LayerDiff struct {
	Added               []LayerInput `json:"added"`
	Updated             []LayerInput `json:"updated"`
	Removed             []uuid.UUID  `json:"removed"`
	Order               []uuid.UUID  `json:"order"`
	FallbackFullReplace bool         `json:"fallback_full_replace"`
}

// PatchLayers applies a diff of the layers in one transaction: removals, changes, additions, then
// the order (ids first to last). With fallback_full_replace, added is the whole new list.
func (s *Service) PatchLayers(ctx context.Context, p auth.Principal, mapID uuid.UUID, d LayerDiff) (Doc, error) {
	return s.change(ctx, p, mapID, AuditMapPatchLayers, func(q *store.Queries, m store.CatalogMap) ([]Event, error) {
		if d.FallbackFullReplace {
			return replaceLayers(ctx, q, p, mapID, d.Added)
		}
		events, err := removeLayers(ctx, q, mapID, d.Removed)
		if err != nil {
			return nil, err
		}
		for _, l := range d.Updated {
			e, err := patchLayer(ctx, q, mapID, l)
			if err != nil {
				return nil, err
			}
			events = append(events, e)
		}
		added, err := addLayers(ctx, q, p, mapID, d.Added)
		if err != nil {
			return nil, err
		}
		events = append(events, added...)
		for i, id := range d.Order {
			order := int32(min(i, 32767))
			if _, err := patchLayer(ctx, q, mapID, LayerInput{ID: &id, SortOrder: &order}); err != nil {
				return nil, err
			}
		}
		if len(d.Order) > 0 {
			events = append(events, Event{TargetType: "map", TargetID: &mapID, Action: ActionLayersOrder, Summary: "Layers reordered"})
		}
		return events, nil
	})
}

// RemoveLayer removes one layer of map id; 404 when the map has no such layer.
func (s *Service) RemoveLayer(ctx context.Context, p auth.Principal, mapID, layerID uuid.UUID) error {
	_, err := s.change(ctx, p, mapID, AuditMapRemoveLayer, func(q *store.Queries, m store.CatalogMap) ([]Event, error) {
		events, err := removeLayers(ctx, q, mapID, []uuid.UUID{layerID})
		if err == nil && len(events) == 0 {
			err = apperr.NotFound("the map has no layer %s", layerID)
		}
		return events, err
	})
	return err
}

// BulkDeleteLayers removes the layers of map id that exist; the others are reported as failed.
func (s *Service) BulkDeleteLayers(ctx context.Context, p auth.Principal, mapID uuid.UUID, ids []uuid.UUID) (deleted, missing []uuid.UUID, err error) {
	_, err = s.change(ctx, p, mapID, AuditMapRemoveLayer, func(q *store.Queries, m store.CatalogMap) ([]Event, error) {
		events, err := removeLayers(ctx, q, mapID, ids)
		for _, e := range events {
			deleted = append(deleted, *e.TargetID)
		}
		for _, id := range ids {
			if !slices.Contains(deleted, id) && !slices.Contains(missing, id) {
				missing = append(missing, id)
			}
		}
		return events, err
	})
	return deleted, missing, err
}

// CreateLayer makes an empty dataset to draw into and, with mapID, puts it on top of that map
// (whose editability is checked first, so a refused map leaves no dataset behind).
func (s *Service) CreateLayer(ctx context.Context, p auth.Principal, nd catalog.NewDataset, mapID *uuid.UUID) (catalog.Dataset, json.RawMessage, error) {
	if !p.Can(auth.CapCreateLayers) {
		return catalog.Dataset{}, nil, apperr.Forbidden("creating layers needs the create_layers capability")
	}
	if mapID != nil {
		m, err := s.record(ctx, s.Q, p, *mapID)
		if err != nil {
			return catalog.Dataset{}, nil, err
		}
		if err := auth.AuthorizeManage(p, resource(m), "map", "change it"); err != nil {
			return catalog.Dataset{}, nil, err
		}
		if m.Visibility == auth.VisibilityPublic {
			// The new dataset starts private, which a public map may not show (publicDatasetsOnly).
			return catalog.Dataset{}, nil, apperr.Invalid("a public map may show only public datasets, and a new layer's dataset starts private: " +
				"create the layer without map_id, publish its dataset, then add it to the map")
		}
	}
	d, err := s.Catalog.CreateLayer(ctx, p, nd)
	if err != nil {
		return d, nil, err
	}
	if mapID == nil {
		s.audit(ctx, s.Q, p, AuditLayerAdd, "dataset", d.Entry.ID, map[string]any{"created_dataset": true})
		return d, nil, nil
	}
	layer, err := s.AddLayer(ctx, p, *mapID, LayerInput{DatasetID: d.Entry.ID})
	return d, layer, err
}
