// Package maps keeps the maps of the map builder: their settings, layers and history, who may
// read and change them, and their share links. A map document (the Map schema) is built by
// PostgreSQL in one statement (catalog.map_document), with each layer's dataset fields read live
// and the layers the caller may not read left out.
package maps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oapi-codegen/nullable"

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
	Log      *slog.Logger // audit writes that fail are logged here
	BaseURL  string       // the public base URL when no request names one (internal/publicurl)
	Pictures Pictures     // bounds of the decoding of uploaded pictures

	sprite spriteCache
	docs   docCache
}

// base is the public base URL of the request (internal/publicurl), else BaseURL.
func (s *Service) base(ctx context.Context) string { return publicurl.From(ctx, s.BaseURL) }

// Doc is a map document as JSON (the Map schema).
type Doc = json.RawMessage

// Settings are what Create Map and Update Map set: only the members present change (Update Map
// saves what the map builder sends, which never includes the visibility). An explicit null
// clears a member that may be empty; on the others (name, bearing, pitch, basemap style and
// labels, visibility) it changes nothing. Objects stay JSON: absent is no bytes, null is "null".
type Settings struct {
	Name              *string                     `json:"name"`
	Description       nullable.Nullable[string]   `json:"description"`
	Notes             nullable.Nullable[string]   `json:"notes"`
	CenterLng         nullable.Nullable[float64]  `json:"center_lng"`
	CenterLat         nullable.Nullable[float64]  `json:"center_lat"`
	Zoom              nullable.Nullable[float64]  `json:"zoom"`
	Bearing           *float64                    `json:"bearing"`
	Pitch             *float64                    `json:"pitch"`
	BasemapStyle      *string                     `json:"basemap_style"`
	ShowBasemapLabels *bool                       `json:"show_basemap_labels"`
	BasemapConfig     json.RawMessage             `json:"basemap_config"`
	TerrainConfig     json.RawMessage             `json:"terrain_config"`
	Visibility        *string                     `json:"visibility"`
	Plugins           nullable.Nullable[[]string] `json:"plugins"`
	LegendTitle       nullable.Nullable[string]   `json:"legend_title"`
	Layers            *[]LayerInput               `json:"layers"`
	ExpectedUpdatedAt *time.Time                  `json:"expected_updated_at"`
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
// entries fn describes with their audit records (and op's, the operation's own, unless ""),
// moves updated_at on, and holds a public map to public datasets (publicDatasetsOnly); it
// answers the map as p reads it afterwards.
func (s *Service) change(ctx context.Context, p auth.Principal, id uuid.UUID, op string, fn func(q *store.Queries, m store.CatalogMap) ([]Event, error)) (Doc, error) {
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
		if m.Visibility != auth.VisibilityPublic || slices.ContainsFunc(events, func(e Event) bool { return e.Action == ActionLayerAdded }) {
			// Only a change that makes the map public or adds layers can break the rule: a
			// dataset made private by its owner later must not block its map's other changes.
			if err := publicDatasetsOnly(ctx, q, p, id); err != nil {
				return err
			}
		}
		s.auditEvents(ctx, q, p, id, op, events)
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

// Create makes a map of p's. What in leaves out starts from the map defaults, except the view:
// a map made without one keeps center and zoom null, and the map builder fits its layers (a new
// empty map is shown at the map defaults by the client).
func (s *Service) Create(ctx context.Context, p auth.Principal, in Settings) (Doc, error) {
	return s.create(ctx, p, in, AuditMapCreate, nil)
}

// create makes the map, audited as action (with detail).
func (s *Service) create(ctx context.Context, p auth.Principal, in Settings, action string, detail map[string]any) (Doc, error) {
	if p.Anonymous() {
		return nil, apperr.Unauthorized("authentication required")
	}
	d, err := s.Settings.MapDefaults(ctx)
	if err != nil {
		return nil, err
	}
	prm := store.ReplaceMapSettingsParams{BasemapStyle: d.BasemapStyle, ShowBasemapLabels: d.ShowBasemapLabels,
		Visibility: auth.VisibilityPrivate}
	if in.Name == nil {
		return nil, apperr.Unprocessable("name is required")
	}
	if err := in.apply(&prm); err != nil {
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
		events := []Event{{TargetType: "map", Action: ActionCreated, Summary: "Map created", TargetID: &id, TargetName: &prm.Name}}
		if in.Layers != nil {
			added, err := addLayers(ctx, q, p, id, *in.Layers)
			if err != nil {
				return err
			}
			events = append(events, added...)
		}
		if err := record(ctx, q, p, id, events[:1]); err != nil {
			return err
		}
		if err := publicDatasetsOnly(ctx, q, p, id); err != nil {
			return err
		}
		s.audit(ctx, q, p, action, "map", id, detail)
		s.auditEvents(ctx, q, p, id, "", events[1:])
		doc, err = s.doc(ctx, q, p, id)
		return err
	})
	return doc, err
}

// apply writes the members in carries over prm: present ones change, an explicit null clears a
// member that may be empty and leaves the others as they are.
func (in Settings) apply(prm *store.ReplaceMapSettingsParams) error {
	set(&prm.Name, in.Name)
	setNullable(&prm.Description, in.Description)
	setNullable(&prm.Notes, in.Notes)
	setNullable(&prm.CenterLng, in.CenterLng)
	setNullable(&prm.CenterLat, in.CenterLat)
	setNullable(&prm.Zoom, in.Zoom)
	set(&prm.Bearing, in.Bearing)
	set(&prm.Pitch, in.Pitch)
	set(&prm.BasemapStyle, in.BasemapStyle)
	set(&prm.ShowBasemapLabels, in.ShowBasemapLabels)
	set(&prm.Visibility, in.Visibility)
	setNullable(&prm.LegendTitle, in.LegendTitle)
	if len(in.BasemapConfig) > 0 {
		prm.BasemapConfig = jsonOrNull(in.BasemapConfig)
	}
	if len(in.TerrainConfig) > 0 {
		prm.TerrainConfig = jsonOrNull(in.TerrainConfig)
	}
	if in.Plugins.IsSpecified() {
		prm.Plugins = nil
		if !in.Plugins.IsNull() {
			prm.Plugins = in.Plugins.MustGet()
		}
	}
	if len(prm.Name) == 0 || len(prm.Name) > 255 {
		return apperr.Unprocessable("name must be 1 to 255 characters")
	}
	return nil
}

func set[T any](dst *T, p *T) {
	if p != nil {
		*dst = *p
	}
}

// setNullable applies a member that may be absent (no change), null (cleared) or a value.
func setNullable[T any](dst **T, n nullable.Nullable[T]) {
	switch {
	case !n.IsSpecified():
	case n.IsNull():
		*dst = nil
	default:
		v := n.MustGet()
		*dst = &v
	}
}

// Update changes the settings of map id that in names, and its layers when in has them. With
// expected_updated_at, a map saved by someone else meanwhile is left alone: 409. A public map
// made private or internal takes back its share links and embed tokens.
func (s *Service) Update(ctx context.Context, p auth.Principal, id uuid.UUID, in Settings) (Doc, error) {
	return s.change(ctx, p, id, "", func(q *store.Queries, m store.CatalogMap) ([]Event, error) {
		if in.ExpectedUpdatedAt != nil && !in.ExpectedUpdatedAt.Equal(m.UpdatedAt) {
			return nil, apperr.Conflict("the map was saved by someone else at %s; reload it and apply your change again",
				m.UpdatedAt.Format(time.RFC3339Nano))
		}
		prm := store.ReplaceMapSettingsParams{ID: id, Name: m.Name, Description: m.Description, Notes: m.Notes,
			CenterLng: m.CenterLng, CenterLat: m.CenterLat, Zoom: m.Zoom, Bearing: m.Bearing, Pitch: m.Pitch,
			BasemapStyle: m.BasemapStyle, ShowBasemapLabels: m.ShowBasemapLabels, BasemapConfig: m.BasemapConfig,
			TerrainConfig: m.TerrainConfig, Visibility: m.Visibility, Plugins: m.Plugins, LegendTitle: m.LegendTitle}
		if err := in.apply(&prm); err != nil {
			return nil, err
		}
		if err := q.ReplaceMapSettings(ctx, prm); err != nil {
			return nil, err
		}
		details := map[string]any{"visibility": map[string]any{"old": m.Visibility, "new": prm.Visibility}}
		events := []Event{{TargetType: "map", Action: ActionUpdated, Summary: "Map settings saved", TargetID: &id, TargetName: &prm.Name,
			Details: details}}
		if m.Visibility == auth.VisibilityPublic && prm.Visibility != auth.VisibilityPublic {
			revoked, err := s.unpublish(ctx, q, p, id)
			if err != nil {
				return nil, err
			}
			events = append(events, revoked...)
		}
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

// unpublish takes back the share links and embed tokens of map id, which stopped being public:
// a link or token handed out for a public map must not open it now that it is not.
func (s *Service) unpublish(ctx context.Context, q *store.Queries, p auth.Principal, id uuid.UUID) ([]Event, error) {
	links, err := q.RevokeMapShareTokens(ctx, id)
	if err != nil {
		return nil, err
	}
	var events []Event
	for _, link := range links {
		events = append(events, Event{TargetType: "share", TargetID: &link, Action: ActionShareRevoked,
			Summary: "Share link revoked: the map is no longer public"})
	}
	tokens, err := q.RevokeMapEmbedTokens(ctx, id)
	for _, t := range tokens {
		s.audit(ctx, q, p, AuditEmbedRevoke, "embed_token", t, map[string]any{"map_id": id, "reason": "the map is no longer public"})
	}
	return events, err
}

// publicDatasetsOnly refuses (400) a public map holding a layer of a dataset that anonymous
// readers cannot read: the map would show them holes, and its share links and embeds would lend
// nobody the data. The detail names each dataset by title and id (the id alone for one the
// caller may not read).
func publicDatasetsOnly(ctx context.Context, q *store.Queries, p auth.Principal, id uuid.UUID) error {
	caller, role := who(p)
	rows, err := q.NonPublicLayerDatasets(ctx, store.NonPublicLayerDatasetsParams{MapID: id, CallerID: caller, CallerRole: role,
		IsAdmin: p.IsAdmin()})
	if err != nil || len(rows) == 0 {
		return err
	}
	names := make([]string, len(rows))
	for i, r := range rows {
		names[i] = fmt.Sprintf("%q (%s)", r.Title, r.ID)
		if !r.Readable {
			names[i] = fmt.Sprintf("a dataset you cannot read (%s)", r.ID)
		}
	}
	return apperr.Invalid("a public map may show only public datasets; these are not public: %s", strings.Join(names, ", "))
}

// Delete removes map id with its layers, history and share links (owner or admin).
func (s *Service) Delete(ctx context.Context, p auth.Principal, id uuid.UUID) error {
	defer s.docs.forget()
	return pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := s.Q.WithTx(tx)
		m, err := editable(ctx, q, p, id)
		if err != nil {
			return err
		}
		s.audit(ctx, q, p, AuditMapDelete, "map", id, map[string]any{"name": m.Name})
		return q.DeleteMap(ctx, id)
	})
}

func nonNilIDs(ids []uuid.UUID) []uuid.UUID {
	if ids == nil {
		return []uuid.UUID{}
	}
	return ids
}
