package handlers

import (
	openapi_types "github.com/oapi-codegen/runtime/types"

	"meridian/gen"
	"meridian/internal/auth"
	"meridian/store"
)

// userOut maps a stored user to the User schema; the password hash never leaves the store.
func userOut(u store.CatalogUser) gen.User {
	return gen.User{
		Id: u.ID, Username: u.Username, Email: openapi_types.Email(u.Email), Role: gen.UserRole(u.Role),
		Status: gen.UserStatus(u.Status), IsActive: u.Status == "active", EmailVerified: u.EmailVerified,
		HasPassword: u.PasswordHash != nil, LastLoginAt: u.LastLoginAt, CreatedAt: u.CreatedAt,
	}
}

func keyCreatedOut(k auth.CreatedKey) gen.ApiKeyCreateResponse {
	return gen.ApiKeyCreateResponse{
		Id: k.Key.ID, Name: k.Key.Name, Key: k.Secret, Fingerprint: k.Key.Fingerprint,
		Scope: gen.ApiKeyCreateResponseScope(k.Key.Scope), ExpiresAt: k.Key.ExpiresAt, CreatedAt: k.Key.CreatedAt,
	}
}

// page clamps skip/limit: a limit above max is clamped rather than refused (open-points, paging).
func page(skip, limit *int, def, max int) (int, int) {
	s, l := 0, def
	if skip != nil && *skip > 0 {
		s = *skip
	}
	if limit != nil && *limit > 0 {
		l = *limit
	}
	if l > max {
		l = max
	}
	return s, l
}

// val dereferences an optional request field.
func val[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// set overwrites *dst when a partial update carries the field.
func set[T any](dst *T, p *T) {
	if p != nil {
		*dst = *p
	}
}
