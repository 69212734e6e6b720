package auth

import (
	"context"
	"slices"

	"github.com/google/uuid"
)

// Roles, lowest to highest.
const (
	RoleViewer = "viewer"
	RoleEditor = "editor"
	RoleAdmin  = "admin"
)

// Capabilities of open-points.md. Only the admin role has manage_users and manage_settings.
const (
	CapUpload            = "upload"
	CapCreateLayers      = "create_layers"
	CapExport            = "export"
	CapEditMetadata      = "edit_metadata"
	CapManageCollections = "manage_collections"
	CapUseAIChat         = "use_ai_chat"
	CapManageUsers       = "manage_users"
	CapManageSettings    = "manage_settings"
)

var roleCapabilities = map[string][]string{
	RoleViewer: {CapExport},
	RoleEditor: {CapExport, CapUpload, CapCreateLayers, CapEditMetadata, CapManageCollections, CapUseAIChat},
	RoleAdmin: {CapExport, CapUpload, CapCreateLayers, CapEditMetadata, CapManageCollections, CapUseAIChat,
		CapManageUsers, CapManageSettings},
}

// Capabilities lists what role may do, in a stable order.
func Capabilities(role string) []string { return slices.Clone(roleCapabilities[role]) }

// ValidRole reports whether role is one of the three roles.
func ValidRole(role string) bool { _, ok := roleCapabilities[role]; return ok }

// How a request was authenticated.
const (
	ViaAnonymous = "anonymous"
	ViaAPIKey    = "api_key"
	ViaBearer    = "bearer"
	// ViaTileSignature: a signed tile template, which authorizes the tiles of its Scope only.
	ViaTileSignature = "tile_signature"
	// ViaEmbedToken: a map's embed token, which lends read access to the map and its layers'
	// datasets (Lent).
	ViaEmbedToken = "embed_token"
)

// Principal is who a request acts as. The zero value is the anonymous caller.
type Principal struct {
	UserID   uuid.UUID
	Username string
	Role     string
	Via      string
	KeyID    uuid.UUID // set when Via is ViaAPIKey
	KeyScope string    // "full" or "read_only" for API keys
	Session  uuid.UUID // refresh-token family of a bearer token
	Scope    string    // what a capability (signed tile template) was issued for
	Exp      int64     // when that capability ends, Unix seconds
	// Lent are the maps and datasets a capability (an embed token) lets the request read,
	// whoever sends it.
	Lent []uuid.UUID
}

// Anonymous reports whether no identity stands behind the request.
func (p Principal) Anonymous() bool { return p.UserID == uuid.Nil }

// Can reports whether the principal's role grants capability.
func (p Principal) Can(capability string) bool {
	return !p.Anonymous() && slices.Contains(roleCapabilities[p.Role], capability)
}

// IsAdmin reports whether the principal has the admin role.
func (p Principal) IsAdmin() bool { return !p.Anonymous() && p.Role == RoleAdmin }

type principalKey struct{}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// From returns the principal of ctx, the anonymous one when none was set.
func From(ctx context.Context) Principal {
	p, _ := ctx.Value(principalKey{}).(Principal)
	if p.Via == "" {
		p.Via = ViaAnonymous
	}
	return p
}
