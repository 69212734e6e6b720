package maps

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/internal/tiles"
	"meridian/store"
)

// Share links: 32 random bytes, URL-safe base64 (open-points.md). The token is stored sealed, so
// its owner can read the link again, and found by its SHA-256. Only a public map is shared, and
// its links end when it stops being public (Update).

// Share is a share link as its map's editors see it.
type Share struct {
	ID, MapID uuid.UUID
	Token     string // the token; a hint of it (TokenHint) once the link exists
	URL       string // the web app's page of the link, {public app URL}/m/{token}
	ExpiresAt *time.Time
	Active    bool
	CreatedAt time.Time
}

// Expiry is a share link's lifetime: an instant, a number of days, or neither (never expires).
type Expiry struct {
	At   *time.Time
	Days *int
}

func (e Expiry) resolve(now time.Time) (*time.Time, error) {
	switch {
	case e.At != nil && e.Days != nil:
		return nil, apperr.Unprocessable("give expires_at or expires_in_days, not both")
	case e.Days != nil:
		t := now.Add(time.Duration(*e.Days) * 24 * time.Hour)
		return &t, nil
	case e.At != nil && !e.At.After(now):
		return nil, apperr.Unprocessable("expires_at must lie in the future")
	}
	return e.At, nil
}

func (s *Service) shareOf(ctx context.Context, row store.CatalogMapShareToken, now time.Time) (Share, error) {
	token, err := s.Box.Open(row.TokenSealed)
	if err != nil {
		return Share{}, err
	}
	app, err := s.appURL(ctx)
	if err != nil {
		return Share{}, err
	}
	return Share{ID: row.ID, MapID: row.MapID, Token: string(token), URL: app + "/m/" + url.PathEscape(string(token)),
		ExpiresAt: row.ExpiresAt, Active: row.RevokedAt == nil && (row.ExpiresAt == nil || row.ExpiresAt.After(now)), CreatedAt: row.CreatedAt}, nil
}

// appURL is where the web app is served: the public_app_url setting, else this server's public
// base URL (the app is served beside the API).
func (s *Service) appURL(ctx context.Context) (string, error) {
	app, _, err := s.Settings.PublicAddresses(ctx)
	if app == "" {
		app = s.base(ctx)
	}
	return app, err
}

// TokenHint is what a share link's token shows once it exists: its first and last four
// characters, enough to tell links apart.
func TokenHint(token string) string {
	if len(token) <= 8 {
		return "…"
	}
	return token[:4] + "…" + token[len(token)-4:]
}

// errNotPublic is the refusal to share a map that is not public, in the words clients translate.
func errNotPublic() error { return apperr.Invalid("Map must be public before sharing") }

func tokenHash(token string) []byte {
	sum := sha256.Sum256([]byte(token))
	return sum[:]
}

// Share makes a new share link of map id, replacing the live one.
func (s *Service) Share(ctx context.Context, p auth.Principal, id uuid.UUID, e Expiry, now time.Time) (Share, error) {
	expires, err := e.resolve(now)
	if err != nil {
		return Share{}, err
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return Share{}, err
	}
	token := base64.RawURLEncoding.EncodeToString(raw)
	sealed, err := s.Box.Seal([]byte(token))
	if err != nil {
		return Share{}, err
	}
	var out Share
	_, err = s.change(ctx, p, id, "", func(q *store.Queries, m store.CatalogMap) ([]Event, error) {
		if m.Visibility != auth.VisibilityPublic {
			return nil, errNotPublic()
		}
		if _, err := q.RevokeMapShareTokens(ctx, id); err != nil {
			return nil, err
		}
		row, err := q.InsertMapShareToken(ctx, store.InsertMapShareTokenParams{MapID: id, TokenSha256: tokenHash(token),
			TokenSealed: sealed, ExpiresAt: expires, CreatedBy: &p.UserID})
		if err != nil {
			return nil, err
		}
		out, err = s.shareOf(ctx, row, now)
		return []Event{{TargetType: "share", TargetID: &row.ID, Action: ActionShared, Summary: "Share link created",
			Details: map[string]any{"expires_at": expires}}}, err
	})
	return out, err
}

// GetShare is the active share link of map id, its token shown as a hint; nil when the map has
// none (never shared, revoked or expired; a link of a map that is not public opens nothing).
// For the map's editors.
func (s *Service) GetShare(ctx context.Context, p auth.Principal, id uuid.UUID, now time.Time) (*Share, error) {
	m, err := s.record(ctx, s.Q, p, id)
	if err != nil {
		return nil, err
	}
	if err := auth.AuthorizeManage(p, resource(m), "map", "read its share link"); err != nil || m.Visibility != auth.VisibilityPublic {
		return nil, err
	}
	row, err := s.Q.LiveMapShareToken(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out, err := s.shareOf(ctx, row, now)
	if err != nil || !out.Active {
		return nil, err
	}
	out.Token = TokenHint(out.Token)
	return &out, nil
}

// UpdateShare changes the expiry of map id's live share link.
func (s *Service) UpdateShare(ctx context.Context, p auth.Principal, id uuid.UUID, e Expiry, now time.Time) (Share, error) {
	expires, err := e.resolve(now)
	if err != nil {
		return Share{}, err
	}
	var out Share
	_, err = s.change(ctx, p, id, "", func(q *store.Queries, m store.CatalogMap) ([]Event, error) {
		row, err := q.SetMapShareExpiry(ctx, store.SetMapShareExpiryParams{MapID: id, ExpiresAt: expires})
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, apperr.NotFound("map %s has no share link", id)
		}
		if err != nil {
			return nil, err
		}
		out, err = s.shareOf(ctx, row, now)
		out.Token = TokenHint(out.Token)
		return []Event{{TargetType: "share", TargetID: &row.ID, Action: ActionShareChanged, Summary: "Share link expiry changed",
			Details: map[string]any{"expires_at": expires}}}, err
	})
	return out, err
}

// RevokeShare ends map id's live share link; its URL answers 410 from now on.
func (s *Service) RevokeShare(ctx context.Context, p auth.Principal, id uuid.UUID) error {
	_, err := s.change(ctx, p, id, "", func(q *store.Queries, m store.CatalogMap) ([]Event, error) {
		n, err := q.RevokeMapShareTokens(ctx, id)
		if err == nil && len(n) == 0 {
			err = apperr.NotFound("map %s has no share link", id)
		}
		return []Event{{TargetType: "share", Action: ActionShareRevoked, Summary: "Share link revoked"}}, err
	})
	return err
}

// SharedLayer is a layer of a shared map, with the signed tile template that opens its dataset.
type SharedLayer struct {
	ID                 uuid.UUID       `json:"id"`
	DatasetID          uuid.UUID       `json:"dataset_id"`
	DatasetName        string          `json:"dataset_name"`
	DisplayName        *string         `json:"display_name"`
	TableName          string          `json:"table_name"`
	GeometryType       *string         `json:"geometry_type"`
	ColumnInfo         json.RawMessage `json:"column_info"`
	SortOrder          int             `json:"sort_order"`
	Visible            bool            `json:"visible"`
	Opacity            float64         `json:"opacity"`
	Paint              json.RawMessage `json:"paint"`
	Layout             json.RawMessage `json:"layout"`
	LayerType          string          `json:"layer_type"`
	RecordType         *string         `json:"dataset_record_type"`
	Filter             json.RawMessage `json:"filter"`
	LabelConfig        json.RawMessage `json:"label_config"`
	PopupConfig        json.RawMessage `json:"popup_config"`
	StyleConfig        json.RawMessage `json:"style_config"`
	ShowInLegend       bool            `json:"show_in_legend"`
	TileURL            string          `json:"tile_url"`
	Is3D               *bool           `json:"is_3d"`
	FeatureCount       *int64          `json:"feature_count"`
	TileVersion        *int64          `json:"tile_version"`
	DatasetAttribution *string         `json:"dataset_attribution"`
}

// Shared is the map behind a share link.
type Shared struct {
	Name               string          `json:"name"`
	Description        *string         `json:"description"`
	CenterLng          float64         `json:"center_lng"`
	CenterLat          float64         `json:"center_lat"`
	Zoom               float64         `json:"zoom"`
	Bearing            float64         `json:"bearing"`
	Pitch              float64         `json:"pitch"`
	BasemapStyle       string          `json:"basemap_style"`
	ShowBasemapLabels  bool            `json:"show_basemap_labels"`
	BasemapConfig      json.RawMessage `json:"basemap_config"`
	TerrainConfig      json.RawMessage `json:"terrain_config"`
	HasNonPublicLayers bool            `json:"has_non_public_layers"`
	LegendTitle        *string         `json:"legend_title"`
	Layers             []SharedLayer   `json:"layers"`
}

// layerDoc is what a shared map reads of a layer of the map document beyond SharedLayer.
type layerDoc struct {
	SharedLayer
	TableName  string          `json:"dataset_table_name"`
	Geometry   *string         `json:"dataset_geometry_type"`
	Columns    json.RawMessage `json:"dataset_column_info"`
	Features   *int64          `json:"dataset_feature_count"`
	Visibility string          `json:"dataset_visibility"`
	Status     string          `json:"dataset_status"`
}

// SharedMap answers a share link: 404 for a token nobody issued and for a map that is not public
// (whatever became of the link), 410 for a revoked or expired one. The map shows the layers its
// owner may read and lend now (their own datasets, public ones; an admin's: any), each with a
// signed tile template; a map without a view of its own is shown at the map defaults.
func (s *Service) SharedMap(ctx context.Context, token string, now time.Time, sign *tiles.Service) (Shared, error) {
	row, err := s.Q.FindMapShareToken(ctx, tokenHash(token))
	if errors.Is(err, pgx.ErrNoRows) {
		return Shared{}, apperr.NotFound("no such share link")
	}
	if err != nil {
		return Shared{}, err
	}
	m, err := s.Q.GetMapRecord(ctx, row.MapID)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return Shared{}, err
	}
	if err != nil || m.Visibility != auth.VisibilityPublic {
		// A link of a map that is not public tells nothing of it, not even that it was revoked.
		return Shared{}, apperr.NotFound("no such share link")
	}
	if row.RevokedAt != nil || (row.ExpiresAt != nil && !row.ExpiresAt.After(now)) {
		return Shared{}, apperr.Gone("this share link was revoked or has expired")
	}
	d, err := s.Settings.MapDefaults(ctx)
	if err != nil {
		return Shared{}, err
	}
	owner, err := s.ownerOf(ctx, row.MapID)
	if err != nil {
		return Shared{}, err
	}
	doc, err := s.doc(ctx, s.Q, owner, row.MapID)
	if err != nil {
		return Shared{}, err
	}
	var view struct {
		Shared
		CenterLng *float64   `json:"center_lng"`
		CenterLat *float64   `json:"center_lat"`
		Zoom      *float64   `json:"zoom"`
		Layers    []layerDoc `json:"layers"`
	}
	if err := json.Unmarshal(doc, &view); err != nil {
		return Shared{}, err
	}
	out := view.Shared
	out.CenterLng, out.CenterLat, out.Zoom = deref(view.CenterLng, d.CenterLng), deref(view.CenterLat, d.CenterLat), deref(view.Zoom, d.Zoom)
	out.Layers = make([]SharedLayer, 0, len(view.Layers))
	scopes, err := s.lendableScopes(ctx, owner, view.Layers)
	if err != nil {
		return Shared{}, err
	}
	for _, l := range view.Layers {
		scope, lendable := scopes[l.DatasetID]
		if !lendable {
			// The owner reads it by a grant or as a signed-in user: the link shows nothing of it,
			// neither the layer nor its columns' sample values nor a template of its tiles.
			continue
		}
		t, err := sign.Sign(ctx, scope, now)
		if err != nil {
			return Shared{}, err
		}
		l.SharedLayer.TableName, l.GeometryType, l.ColumnInfo, l.FeatureCount = l.TableName, l.Geometry, l.Columns, l.Features
		l.TileURL = fmt.Sprintf("%s/api/tiles/%s/{z}/{x}/{y}.pbf?sig=%s&exp=%d&scope=%s", s.base(ctx), l.DatasetID, t.Sig, t.Exp, url.QueryEscape(t.Scope))
		out.Layers = append(out.Layers, l.SharedLayer)
		out.HasNonPublicLayers = out.HasNonPublicLayers || l.Visibility != auth.VisibilityPublic || l.Status != "published"
	}
	return out, nil
}

func deref(p *float64, otherwise float64) float64 {
	if p == nil {
		return otherwise
	}
	return *p
}

// ownerOf is the principal of map id's owner, whose read access a share link lends.
func (s *Service) ownerOf(ctx context.Context, id uuid.UUID) (auth.Principal, error) {
	m, err := s.Q.GetMapRecord(ctx, id)
	if err != nil || m.CreatedBy == nil {
		return auth.Principal{}, err // an owner gone: the link shows what anyone may see
	}
	u, err := s.Q.GetUserByID(ctx, *m.CreatedBy)
	if err != nil || u.Status != "active" {
		return auth.Principal{}, err // as embed tokens: an owner no longer active lends what anyone may see
	}
	return auth.Principal{UserID: u.ID, Username: u.Username, Role: u.Role}, nil
}

// scopes are the tile scopes of the layers' datasets.
func (s *Service) scopes(ctx context.Context, layers []layerDoc) (map[uuid.UUID]string, error) {
	rows, err := s.Q.DatasetsReadableBy(ctx, store.DatasetsReadableByParams{Ids: layerDatasets(layers), IsAdmin: true})
	out := make(map[uuid.UUID]string, len(rows))
	for _, r := range rows {
		out[r.ID] = tiles.ScopeOf(r.TableSchema, r.TableName)
	}
	return out, err
}

// lendableScopes are the tile scopes of the layers' datasets that owner may lend through a share
// link (catalog.dataset_lendable); the others are missing.
func (s *Service) lendableScopes(ctx context.Context, owner auth.Principal, layers []layerDoc) (map[uuid.UUID]string, error) {
	var creator *uuid.UUID
	if !owner.Anonymous() {
		creator = &owner.UserID
	}
	rows, err := s.Q.DatasetsLendableBy(ctx, store.DatasetsLendableByParams{Ids: layerDatasets(layers), Creator: creator,
		CreatorIsAdmin: owner.IsAdmin()})
	out := make(map[uuid.UUID]string, len(rows))
	for _, r := range rows {
		out[r.ID] = tiles.ScopeOf(r.TableSchema, r.TableName)
	}
	return out, err
}

func layerDatasets(layers []layerDoc) []uuid.UUID {
	ids := make([]uuid.UUID, len(layers))
	for i, l := range layers {
		ids[i] = l.DatasetID
	}
	return ids
}

// ShareFilter narrows the admin's list of share links.
type ShareFilter struct {
	MapID       *uuid.UUID
	Active      *bool
	Q           *string
	Skip, Limit int
}

// AdminShare is a share link in the admin's list.
type AdminShare struct {
	Share
	MapName   string
	CreatedBy *uuid.UUID
}

// ListShares lists every share link (admins).
func (s *Service) ListShares(ctx context.Context, p auth.Principal, f ShareFilter, now time.Time) ([]AdminShare, int, error) {
	if !p.Can(auth.CapManageSettings) {
		return nil, 0, apperr.Forbidden("listing share links is for admins")
	}
	rows, err := s.Q.ListAllShareTokens(ctx, store.ListAllShareTokensParams{MapID: f.MapID, Active: f.Active, Q: f.Q,
		Lim: int32(f.Limit), Off: int32(f.Skip)})
	if err != nil {
		return nil, 0, err
	}
	out := make([]AdminShare, len(rows))
	total := 0
	for i, r := range rows {
		sh, err := s.shareOf(ctx, r.CatalogMapShareToken, now)
		if err != nil {
			return nil, 0, err
		}
		out[i] = AdminShare{Share: sh, MapName: r.MapName, CreatedBy: r.CatalogMapShareToken.CreatedBy}
		total = int(r.Total)
	}
	return out, total, nil
}

// RevokeShareByID ends a share link (admins); 404 for an unknown id.
func (s *Service) RevokeShareByID(ctx context.Context, p auth.Principal, id uuid.UUID) error {
	if !p.Can(auth.CapManageSettings) {
		return apperr.Forbidden("revoking other users' share links is for admins")
	}
	mapID, err := s.Q.RevokeShareTokenByID(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return apperr.NotFound("share link %s not found", id)
	}
	if err == nil {
		s.audit(ctx, s.Q, p, AuditMapRevokeShare, "map", mapID, map[string]any{"share_id": id, "by_admin": true})
	}
	return err
}
