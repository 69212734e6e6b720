package maps

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/store"
)

// Summary is a map in a list.
type Summary struct {
	ID                uuid.UUID
	Name              string
	Description       *string
	Visibility        string
	LayerCount        int
	CreatedByUsername *string
	CreatedAt         time.Time
	UpdatedAt         time.Time
}

// Filter narrows List.
type Filter struct {
	Q, Visibility *string
	Mine          bool
	Dataset       *uuid.UUID // maps with a layer of this dataset
	Sort          string     // name, created_at, updated_at, with a leading - for descending
	Skip, Limit   int
}

// List is the maps p may read that f selects, and how many there are in all.
func (s *Service) List(ctx context.Context, p auth.Principal, f Filter) ([]Summary, int, error) {
	caller, _ := who(p)
	rows, err := s.Q.ListVisibleMaps(ctx, store.ListVisibleMapsParams{CallerID: caller, IsAdmin: p.IsAdmin(), Q: f.Q,
		Visibility: f.Visibility, Mine: f.Mine && caller != nil, DatasetID: f.Dataset, Sort: f.Sort,
		Lim: int32(f.Limit), Off: int32(f.Skip)})
	if err != nil {
		return nil, 0, err
	}
	out := make([]Summary, len(rows))
	total := 0
	for i, r := range rows {
		out[i] = Summary{ID: r.ID, Name: r.Name, Description: r.Description, Visibility: r.Visibility, LayerCount: int(r.LayerCount),
			CreatedByUsername: r.CreatedByUsername, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
		total = int(r.Total)
	}
	if len(rows) == 0 && f.Skip > 0 {
		// Past the last page: the total still counts.
		_, total, err = s.List(ctx, p, Filter{Q: f.Q, Visibility: f.Visibility, Mine: f.Mine, Dataset: f.Dataset, Sort: f.Sort, Limit: 1})
	}
	return out, total, err
}

// record reads map id for p: 404 when p may not read it.
func (s *Service) record(ctx context.Context, q *store.Queries, p auth.Principal, id uuid.UUID) (store.CatalogMap, error) {
	m, err := q.GetMapRecord(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && !auth.CanRead(p, resource(m))) {
		return m, apperr.NotFound("map %s not found", id)
	}
	return m, err
}

// Duplicate copies map id, which p may read, into a new private map of p's with the layers whose
// datasets p may read; the answer counts the others in excluded_layer_count.
func (s *Service) Duplicate(ctx context.Context, p auth.Principal, id uuid.UUID) (Doc, error) {
	if p.Anonymous() {
		return nil, apperr.Unauthorized("authentication required")
	}
	var doc Doc
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := s.Q.WithTx(tx)
		m, err := s.record(ctx, q, p, id)
		if err != nil {
			return err
		}
		name := m.Name
		if r := []rune(name + " (copy)"); len(r) <= 255 {
			name = string(r)
		}
		notes := m.Notes
		if !auth.CanManage(p, resource(m)) {
			notes = nil // notes are for the source's editors
		}
		copyID, err := q.InsertMap(ctx, store.InsertMapParams{Name: name, Description: m.Description, Notes: notes,
			CenterLng: m.CenterLng, CenterLat: m.CenterLat, Zoom: m.Zoom, Bearing: m.Bearing, Pitch: m.Pitch,
			BasemapStyle: m.BasemapStyle, ShowBasemapLabels: m.ShowBasemapLabels, BasemapConfig: m.BasemapConfig,
			TerrainConfig: m.TerrainConfig, Visibility: auth.VisibilityPrivate, Plugins: m.Plugins, LegendTitle: m.LegendTitle,
			ForkedFromID: &id, CreatedBy: &p.UserID})
		if err != nil {
			return err
		}
		caller, role := who(p)
		copied, err := q.CopyMapLayers(ctx, store.CopyMapLayersParams{NewMapID: copyID, SourceMapID: id, CallerID: caller,
			CallerRole: role, IsAdmin: p.IsAdmin()})
		if err != nil {
			return err
		}
		all, err := q.CountMapLayers(ctx, id)
		if err != nil {
			return err
		}
		events := []Event{{TargetType: "map", TargetID: &copyID, TargetName: &name, Action: ActionDuplicated,
			Summary: "Map duplicated from " + m.Name, Details: map[string]any{"source_map_id": id, "excluded_layers": all - copied}}}
		if err := record(ctx, q, p, copyID, events); err != nil {
			return err
		}
		s.auditEvents(ctx, q, p, copyID, "", events)
		if doc, err = s.doc(ctx, q, p, copyID); err != nil {
			return err
		}
		doc, err = withMember(doc, "excluded_layer_count", all-copied)
		return err
	})
	return doc, err
}

// withMember sets one member of a JSON object.
func withMember(doc Doc, name string, value any) (Doc, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(doc, &m); err != nil {
		return nil, err
	}
	v, err := json.Marshal(value)
	if err != nil {
		return nil, err
	}
	m[name] = v
	return json.Marshal(m)
}

// HistoryEvent is one entry of a map's history.
type HistoryEvent struct {
	store.CatalogMapHistory
	ActorUsername *string
}

// History pages through the changes of map id, newest first; for its editors.
func (s *Service) History(ctx context.Context, p auth.Principal, id uuid.UUID, skip, limit int) ([]HistoryEvent, int, error) {
	m, err := s.record(ctx, s.Q, p, id)
	if err != nil {
		return nil, 0, err
	}
	if err := auth.AuthorizeManage(p, resource(m), "map", "read its history"); err != nil {
		return nil, 0, err
	}
	rows, err := s.Q.ListMapHistory(ctx, store.ListMapHistoryParams{MapID: id, Lim: int32(limit), Off: int32(skip)})
	if err != nil {
		return nil, 0, err
	}
	out := make([]HistoryEvent, len(rows))
	total := 0
	for i, r := range rows {
		out[i] = HistoryEvent{CatalogMapHistory: r.CatalogMapHistory, ActorUsername: r.ActorUsername}
		total = int(r.Total)
	}
	return out, total, nil
}

// Access is what p may do with a map, and why.
type Access struct {
	View, Edit, Share bool
	Reason            string // owner, admin, internal_map, public_map, embed_token
}

// Access tells p's access to map id; 404 when p may not even read it.
func (s *Service) Access(ctx context.Context, p auth.Principal, id uuid.UUID) (Access, error) {
	m, err := s.record(ctx, s.Q, p, id)
	if err != nil {
		return Access{}, err
	}
	manage := auth.CanManage(p, resource(m))
	a := Access{View: true, Edit: manage, Share: manage}
	switch {
	case p.Via == auth.ViaEmbedToken:
		a.Reason = "embed_token"
	case p.IsAdmin():
		a.Reason = "admin"
	case manage:
		a.Reason = "owner"
	case m.Visibility == auth.VisibilityInternal:
		a.Reason = "internal_map"
	default:
		a.Reason = "public_map"
	}
	return a, nil
}

// visibilityRank orders visibilities from the narrowest audience to the widest.
var visibilityRank = map[string]int{auth.VisibilityPrivate: 0, auth.VisibilityRestricted: 1, auth.VisibilityInternal: 2, auth.VisibilityPublic: 3}

// VisibilityCheck names the datasets of map id's layers that reach fewer people than the map
// would (target, or its current visibility): publishing the map shows holes where they are.
// Unpublished datasets count as private. For the map's editors.
func (s *Service) VisibilityCheck(ctx context.Context, p auth.Principal, id uuid.UUID, target *string) ([]string, error) {
	m, err := s.record(ctx, s.Q, p, id)
	if err != nil {
		return nil, err
	}
	if err := auth.AuthorizeManage(p, resource(m), "map", "check its visibility"); err != nil {
		return nil, err
	}
	want := m.Visibility
	set(&want, target)
	caller, role := who(p)
	rows, err := s.Q.ReadableLayerDatasets(ctx, store.ReadableLayerDatasetsParams{MapID: id, CallerID: caller, CallerRole: role, IsAdmin: p.IsAdmin()})
	if err != nil {
		return nil, err
	}
	out := []string{}
	for _, r := range rows {
		rank := visibilityRank[r.Visibility]
		if r.RecordStatus != "published" {
			rank = 0
		}
		name := r.Title
		if !r.Readable {
			name = "a dataset you cannot read" // its title is not the editor's to learn here
		}
		if rank < visibilityRank[want] && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out, nil
}

// DatasetMaps lists the maps p may read that show dataset id, which p must be able to read.
func (s *Service) DatasetMaps(ctx context.Context, p auth.Principal, id uuid.UUID, skip, limit int) ([]Summary, int, error) {
	caller, role := who(p)
	rows, err := s.Q.DatasetsReadableBy(ctx, store.DatasetsReadableByParams{Ids: []uuid.UUID{id}, CallerID: caller, CallerRole: role, IsAdmin: p.IsAdmin()})
	if err != nil {
		return nil, 0, err
	}
	if len(rows) == 0 {
		return nil, 0, apperr.NotFound("dataset %s not found", id)
	}
	return s.List(ctx, p, Filter{Dataset: &id, Sort: "-updated_at", Skip: skip, Limit: limit})
}
