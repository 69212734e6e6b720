package auth

import (
	"slices"

	"github.com/google/uuid"

	"meridian/internal/apperr"
)

// Visibilities of datasets and records (spec 3.4); maps use the same words minus restricted.
const (
	VisibilityPrivate    = "private"
	VisibilityRestricted = "restricted"
	VisibilityInternal   = "internal"
	VisibilityPublic     = "public"
)

// Grant levels a restricted resource can give a user or a role.
const (
	GrantNone  = ""
	GrantRead  = "read"
	GrantWrite = "write"
)

// Resource is what the policy needs to know about a dataset, record or map.
type Resource struct {
	ID         uuid.UUID // the dataset or map, which a capability may lend (Principal.Lent)
	Visibility string
	OwnerID    uuid.UUID
	Published  bool   // record_status is the workflow's last status
	Grant      string // the strongest grant the caller holds on it (user or role grant)
}

// CanRead applies the visibility rules of open-points.md: admins see everything; anonymous
// callers see public, published records; signed-in users see public and internal ones, their own
// private ones and restricted ones they own or hold a grant for; a record that is not published
// is visible only to its creator and admins.
func CanRead(p Principal, r Resource) bool {
	if p.IsAdmin() || (r.ID != uuid.Nil && slices.Contains(p.Lent, r.ID)) {
		return true
	}
	owner := !p.Anonymous() && p.UserID == r.OwnerID
	if owner {
		return true
	}
	if !r.Published {
		return false
	}
	switch r.Visibility {
	case VisibilityPublic:
		return true
	case VisibilityInternal:
		return !p.Anonymous()
	case VisibilityRestricted:
		return !p.Anonymous() && r.Grant != GrantNone
	default:
		return false
	}
}

// CanWrite: admins, the owner, and holders of a write grant (restricted resources) may change a
// resource; everyone else may at most read it.
func CanWrite(p Principal, r Resource) bool {
	if p.Anonymous() {
		return false
	}
	if p.IsAdmin() || p.UserID == r.OwnerID {
		return true
	}
	return r.Visibility == VisibilityRestricted && r.Grant == GrantWrite && CanRead(p, r)
}

// CanManage: who may read a resource (its visibility and grants) and whether it exists
// (deletion) is for its owner and admins only. A write grant covers the content, never the
// audience, or a grantee could publish what the owner restricted.
func CanManage(p Principal, r Resource) bool {
	return !p.Anonymous() && (p.IsAdmin() || p.UserID == r.OwnerID)
}

// AuthorizeManage is Authorize for an owner's matter: 404 when the resource is invisible to the
// caller, 403 naming the action when the caller may see it but is neither its owner nor an admin.
func AuthorizeManage(p Principal, r Resource, what, action string) error {
	if err := Authorize(p, r, false, what); err != nil {
		return err
	}
	if !CanManage(p, r) {
		return apperr.Forbidden("only the %s's owner or an admin may %s", what, action)
	}
	return nil
}

// CanReadJob: an ingestion job (file names, errors, progress) is the business of whoever started
// it, the owner of the dataset it made and admins; reading the dataset is not enough.
func CanReadJob(p Principal, creator *uuid.UUID, dataset Resource) bool {
	if p.Anonymous() {
		return false
	}
	return p.IsAdmin() || (creator != nil && *creator == p.UserID) || p.UserID == dataset.OwnerID
}

// Authorize answers the way the spec wants callers told: a resource the caller may not read
// does not exist for them (404, no existence leak); a visible one they may not change is 403.
func Authorize(p Principal, r Resource, write bool, what string) error {
	if !CanRead(p, r) {
		return apperr.NotFound("%s not found", what)
	}
	if write && !CanWrite(p, r) {
		return apperr.Forbidden("no write access to this %s", what)
	}
	return nil
}
