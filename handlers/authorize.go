package handlers

import (
	"context"

	"meridian/internal/apperr"
	"meridian/internal/auth"
)

// requireCapability returns the caller when its role grants capability, else 403 (or 401 for an
// anonymous caller, which the authentication middleware normally stops earlier).
func requireCapability(ctx context.Context, capability string) (auth.Principal, error) {
	p := auth.From(ctx)
	if p.Anonymous() {
		return p, apperr.Unauthorized("authentication required")
	}
	if !p.Can(capability) {
		return p, apperr.Forbidden("this operation needs the %s capability, which the %s role does not have", capability, p.Role)
	}
	return p, nil
}
