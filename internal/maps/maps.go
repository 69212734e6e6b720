// Package maps keeps the maps of the map builder: their settings, layers and history, who may
// read and change them, and their share links. A map document (the Map schema) is built by
// PostgreSQL in one statement (catalog.map_document), with each layer's dataset fields read live
// and the layers the caller may not read left out.
package maps

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/internal/catalog"
	"meridian/internal/publicurl"
	"meridian/internal/secretbox"
	"meridian/internal/settings"
	"meridian/store"
)

// Service is the maps over a pool.
type Service struct {
	Pool     *pgxpool.Pool
	Q        *store.Queries
	Box      *secretbox.Box
	Settings settings.Reader
	Catalog  *catalog.Service
	BaseURL  string // share links point at {BaseURL}/shared/{token}

	sprite spriteCache
	docs   docCache
}

// base is the public base URL of the request (internal/publicurl), else BaseURL.
func (s *Service) base(ctx context.Context) string { return publicurl.From(ctx, s.BaseURL) }

// Doc is a map document as JSON (the Map schema).
type Doc = json.RawMessage

// Settings are what Create Map and Update Map set. Objects stay JSON; a member that is absent or
// null takes its default.
type Settings struct {
	Name              *string         `json:"name"`
	Description       *string         `json:"description"`
	Notes             *string         `json:"notes"`
	CenterLng         *float64        `json:"center_lng"`
	CenterLat         *float64        `json:"center_lat"`
	Zoom              *float64        `json:"zoom"`
	Bearing           *float64        `json:"bearing"`
	Pitch             *float64        `json:"pitch"`
	BasemapStyle      *string         `json:"basemap_style"`
	ShowBasemapLabels *bool           `json:"show_basemap_labels"`
	BasemapConfig     json.RawMessage `json:"basemap_config"`
	TerrainConfig     json.RawMessage `json:"terrain_config"`
	Visibility        *string         `json:"visibility"`
	Plugins           *[]string       `json:"plugins"`
	LegendTitle       *string         `json:"legend_title"`
	Layers            *[]LayerInput   `json:"layers"`
	ExpectedUpdatedAt *time.Time      `json:"expected_updated_at"`
}

// History actions of maps.
const (
	ActionCreated      = "map_created"
	ActionUpdated      = "map_updated"
	ActionDuplicated   = "map_duplicated"
	ActionLayerAdded   = "layer_added"
	ActionLayerChanged = "layer_updated"
	ActionLayerRemoved = "layer_removed"
	ActionLayersOrder  = "layers_reordered"
	ActionShared       = "share_created"
	ActionShareChanged = "share_updated"
	ActionShareRevoked = "share_revoked"
)

func who(p auth.Principal) (*uuid.UUID, *string) {
	if p.Anonymous() {
		return nil, nil
	}
	id, role := p.UserID, p.Role
	return &id, &role
}

func resource(m store.CatalogMap) auth.Resource {
	r := auth.Resource{ID: m.ID, Visibility: m.Visibility, Published: true}
	if m.CreatedBy != nil {
		r.OwnerID = *m.CreatedBy
	}
	return r
}

// jsonOrNull keeps a JSON member for a jsonb column: absent and null are SQL NULL.
func jsonOrNull(raw json.RawMessage) []byte {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return raw
}

// Get is the map as p may read it; 404 when p may not. Documents are kept (cache.go).
func (s *Service) Get(ctx context.Context, p auth.Principal, id uuid.UUID) (Doc, error) {
	key := docKey(p, id)
	doc, epoch, ok := s.docs.get(key)
	if ok {
		return doc, nil
	}
	doc, err := s.doc(ctx, s.Q, p, id)
	if err == nil {
		s.docs.put(key, doc, epoch)
	}
	return doc, err
}

// Announced hears PostgreSQL's announcements of changes (catalog.Service.Announced).
func (s *Service) Announced(channel string, live bool) { s.docs.Announced(channel, live) }

func (s *Service) doc(ctx context.Context, q *store.Queries, p auth.Principal, id uuid.UUID) (Doc, error) {
	caller, role := who(p)
	doc, err := q.MapDocument(ctx, store.MapDocumentParams{ID: id, CallerID: caller, CallerRole: role, IsAdmin: p.IsAdmin(),
		Lent: nonNilIDs(p.Lent)})
	if err != nil {
		return nil, err
	}
	if len(doc) == 0 || string(doc) == "null" {
		return nil, apperr.NotFound("map %s not found", id)
	}
	return doc, nil
}

// editable locks map id for a change by p (its owner or an admin): 404 when p cannot see it, 403
// when p can see but not change it.
func editable(ctx context.Context, q *store.Queries, p auth.Principal, id uuid.UUID) (store.CatalogMap, error) {
	m, err := q.LockMapRecord(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return m, apperr.NotFound("map %s not found", id)
	}
	if err != nil {
		return m, err
	}
	return m, auth.AuthorizeManage(p, resource(m), "map", "change it")
}

// change runs fn on map id, locked for p's change, in a transaction that also writes the history
// entry fn describes and moves updated_at on; it answers the map as p reads it afterwards.
func (s *Service) change(ctx context.Context, p auth.Principal, id uuid.UUID, fn func(q *store.Queries, m store.CatalogMap) ([]Event, error)) (Doc, error) {
	defer s.docs.forget() // this server's next read shows the change
	var doc Doc
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := s.Q.WithTx(tx)
		m, err := editable(ctx, q, p, id)
		if err != nil {
			return err
		}
		events, err := fn(q, m)
		if err != nil {
			return err
		}
		if err := record(ctx, q, p, id, events); err != nil {
			return err
		}
		if len(events) > 0 {
			if err := q.TouchMap(ctx, id); err != nil {
				return err
			}
		}
		doc, err = s.doc(ctx, q, p, id)
		return err
	})
	return doc, err
}

// Event is one history entry of a map.
type Event struct {
	TargetType, Action, Summary string
	TargetID                    *uuid.UUID
	TargetName                  *string
	Details                     map[string]any
}

func record(ctx context.Context, q *store.Queries, p auth.Principal, mapID uuid.UUID, events []Event) error {
	actor, _ := who(p)
	for _, e := range events {
		details, err := json.Marshal(e.Details)
		if err != nil {
			return err
		}
		if e.Details == nil {
			details = []byte("{}")
		}
		if err := q.RecordMapHistory(ctx, store.RecordMapHistoryParams{MapID: mapID, ActorID: actor, TargetType: e.TargetType,
			TargetID: e.TargetID, TargetName: e.TargetName, Action: e.Action, Summary: e.Summary, Details: details}); err != nil {
			return err
		}
	}
	return nil
}

// Create makes a map of p's, starting from the map defaults where s says nothing.
func (s *Service) Create(ctx context.Context, p auth.Principal, in Settings) (Doc, error) {
	if p.Anonymous() {
		return nil, apperr.Unauthorized("authentication required")
	}
	d, err := s.Settings.MapDefaults(ctx)
	if err != nil {
		return nil, err
	}
	prm, err := settingsParams(in, d, nil)
	if err != nil {
		return nil, err
	}
	var doc Doc
	err = pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := s.Q.WithTx(tx)
		id, err := q.InsertMap(ctx, store.InsertMapParams{Name: prm.Name, Description: prm.Description, Notes: prm.Notes,
			CenterLng: prm.CenterLng, CenterLat: prm.CenterLat, Zoom: prm.Zoom, Bearing: prm.Bearing, Pitch: prm.Pitch,
			BasemapStyle: prm.BasemapStyle, ShowBasemapLabels: prm.ShowBasemapLabels, BasemapConfig: prm.BasemapConfig,
			TerrainConfig: prm.TerrainConfig, Visibility: prm.Visibility, Plugins: prm.Plugins, LegendTitle: prm.LegendTitle,
			CreatedBy: &p.UserID})
		if err != nil {
			return err
		}
		if in.Layers != nil {
			if _, err := addLayers(ctx, q, p, id, *in.Layers); err != nil {
				return err
			}
		}
		if err := record(ctx, q, p, id, []Event{{TargetType: "map", Action: ActionCreated, Summary: "Map created", TargetID: &id, TargetName: &prm.Name}}); err != nil {
			return err
		}
		doc, err = s.doc(ctx, q, p, id)
		return err
	})
	return doc, err
}

// settingsParams resolves the settings of a create or a full update: what in leaves out takes its
// default d (the name: the current one, when there is one).
func settingsParams(in Settings, d settings.MapDefaults, current *store.CatalogMap) (store.ReplaceMapSettingsParams, error) {
	prm := store.ReplaceMapSettingsParams{Description: in.Description, Notes: in.Notes, CenterLng: in.CenterLng,
		CenterLat: in.CenterLat, Zoom: in.Zoom, Bearing: 0, Pitch: 0, BasemapStyle: d.BasemapStyle,
		ShowBasemapLabels: d.ShowBasemapLabels, BasemapConfig: jsonOrNull(in.BasemapConfig), TerrainConfig: jsonOrNull(in.TerrainConfig),
		Visibility: auth.VisibilityPrivate, LegendTitle: in.LegendTitle}
	switch {
	case in.Name != nil:
		prm.Name = *in.Name
	case current != nil:
		prm.Name = current.Name
	default:
		return prm, apperr.Unprocessable("name is required")
	}
	if in.CenterLng == nil && in.CenterLat == nil && in.Zoom == nil {
		prm.CenterLng, prm.CenterLat, prm.Zoom = &d.CenterLng, &d.CenterLat, &d.Zoom
	}
	set(&prm.Bearing, in.Bearing)
	set(&prm.Pitch, in.Pitch)
	set(&prm.BasemapStyle, in.BasemapStyle)
	set(&prm.ShowBasemapLabels, in.ShowBasemapLabels)
	set(&prm.Visibility, in.Visibility)
	if in.Plugins != nil {
		prm.Plugins = *in.Plugins
	}
	if len(prm.Name) == 0 || len(prm.Name) > 255 {
		return prm, apperr.Unprocessable("name must be 1 to 255 characters")
	}
	return prm, nil
}

func set[T any](dst *T, p *T) {
	if p != nil {
		*dst = *p
	}
}

// Update replaces the settings of map id (and its layers, when in has them). With
// expected_updated_at, a map saved by someone else meanwhile is left alone: 409.
func (s *Service) Update(ctx context.Context, p auth.Principal, id uuid.UUID, in Settings) (Doc, error) {
	// Read before the transaction: a read through the pool inside it would wait for a second
	// connection while holding one, which a busy pool may never give.
	d, err := s.Settings.MapDefaults(ctx)
	if err != nil {
		return nil, err
	}
	return s.change(ctx, p, id, func(q *store.Queries, m store.CatalogMap) ([]Event, error) {
		if in.ExpectedUpdatedAt != nil && !in.ExpectedUpdatedAt.Equal(m.UpdatedAt) {
			return nil, apperr.Conflict("the map was saved by someone else at %s; reload it and apply your change again",
				m.UpdatedAt.Format(time.RFC3339Nano))
		}
		prm, err := settingsParams(in, d, &m)
		if err != nil {
			return nil, err
		}
		prm.ID = id
		if err := q.ReplaceMapSettings(ctx, prm); err != nil {
			return nil, err
		}
		events := []Event{{TargetType: "map", Action: ActionUpdated, Summary: "Map settings saved", TargetID: &id, TargetName: &prm.Name,
			Details: map[string]any{"visibility": map[string]any{"old": m.Visibility, "new": prm.Visibility}}}}
		if in.Layers != nil {
			replaced, err := replaceLayers(ctx, q, p, id, *in.Layers)
			if err != nil {
				return nil, err
			}
			events = append(events, replaced...)
		}
		return events, nil
	})
}

// Delete removes map id with its layers, history and share links (owner or admin).
func (s *Service) Delete(ctx context.Context, p auth.Principal, id uuid.UUID) error {
	defer s.docs.forget()
	return pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := s.Q.WithTx(tx)
		if _, err := editable(ctx, q, p, id); err != nil {
			return err
		}
		return q.DeleteMap(ctx, id)
	})
}

func nonNilIDs(ids []uuid.UUID) []uuid.UUID {
	if ids == nil {
		return []uuid.UUID{}
	}
	return ids
}
