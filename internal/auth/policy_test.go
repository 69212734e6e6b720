package auth

import (
	"testing"

	"github.com/google/uuid"

	"meridian/internal/apperr"
)

// TestVisibilityMatrix asserts every cell: 4 visibilities × anonymous / viewer / editor / owner /
// admin × read / write, for a published record; then the unpublished and grant cases.
func TestVisibilityMatrix(t *testing.T) {
	owner := uuid.New()
	callers := map[string]Principal{
		"anonymous": {},
		"viewer":    {UserID: uuid.New(), Role: RoleViewer},
		"editor":    {UserID: uuid.New(), Role: RoleEditor},
		"owner":     {UserID: owner, Role: RoleEditor},
		"admin":     {UserID: uuid.New(), Role: RoleAdmin},
	}
	// want[visibility][caller] = "rw", "r-" or "--" (404 on read, 403 on write when readable).
	want := map[string]map[string]string{
		VisibilityPrivate:    {"anonymous": "--", "viewer": "--", "editor": "--", "owner": "rw", "admin": "rw"},
		VisibilityRestricted: {"anonymous": "--", "viewer": "--", "editor": "--", "owner": "rw", "admin": "rw"},
		VisibilityInternal:   {"anonymous": "--", "viewer": "r-", "editor": "r-", "owner": "rw", "admin": "rw"},
		VisibilityPublic:     {"anonymous": "r-", "viewer": "r-", "editor": "r-", "owner": "rw", "admin": "rw"},
	}
	for vis, row := range want {
		for who, cell := range row {
			r := Resource{Visibility: vis, OwnerID: owner, Published: true}
			p := callers[who]
			checkCell(t, vis+"/"+who, p, r, cell)
		}
	}
}

func checkCell(t *testing.T, name string, p Principal, r Resource, cell string) {
	t.Helper()
	read, write := cell[0] == 'r', cell[1] == 'w'
	if got := CanRead(p, r); got != read {
		t.Errorf("%s read = %v, want %v", name, got, read)
	}
	if got := CanWrite(p, r); got != write {
		t.Errorf("%s write = %v, want %v", name, got, write)
	}
	errR, errW := Authorize(p, r, false, "dataset"), Authorize(p, r, true, "dataset")
	switch {
	case !read && (apperr.KindOf(errR) != apperr.KindNotFound || apperr.KindOf(errW) != apperr.KindNotFound):
		t.Errorf("%s: invisible resource must answer 404 to read and write, got %v / %v", name, errR, errW)
	case read && !write && (errR != nil || apperr.KindOf(errW) != apperr.KindForbidden):
		t.Errorf("%s: readable resource without write access: %v / %v, want nil / 403", name, errR, errW)
	case write && (errR != nil || errW != nil):
		t.Errorf("%s: full access refused: %v / %v", name, errR, errW)
	}
}

func TestUnpublishedAndGrants(t *testing.T) {
	owner := uuid.New()
	viewer := Principal{UserID: uuid.New(), Role: RoleViewer}
	tests := []struct {
		name string
		p    Principal
		r    Resource
		cell string
	}{
		{"unpublished public, anonymous", Principal{}, Resource{Visibility: VisibilityPublic, OwnerID: owner}, "--"},
		{"unpublished internal, viewer", viewer, Resource{Visibility: VisibilityInternal, OwnerID: owner}, "--"},
		{"unpublished private, owner", Principal{UserID: owner, Role: RoleEditor}, Resource{Visibility: VisibilityPrivate, OwnerID: owner}, "rw"},
		{"unpublished public, admin", Principal{UserID: uuid.New(), Role: RoleAdmin}, Resource{Visibility: VisibilityPublic, OwnerID: owner}, "rw"},
		{"restricted with read grant", viewer, Resource{Visibility: VisibilityRestricted, OwnerID: owner, Published: true, Grant: GrantRead}, "r-"},
		{"restricted with write grant", viewer, Resource{Visibility: VisibilityRestricted, OwnerID: owner, Published: true, Grant: GrantWrite}, "rw"},
		{"restricted grant, anonymous", Principal{}, Resource{Visibility: VisibilityRestricted, OwnerID: owner, Published: true, Grant: GrantRead}, "--"},
		{"write grant ignored on internal", viewer, Resource{Visibility: VisibilityInternal, OwnerID: owner, Published: true, Grant: GrantWrite}, "r-"},
		{"restricted grant, unpublished", viewer, Resource{Visibility: VisibilityRestricted, OwnerID: owner, Grant: GrantWrite}, "--"},
	}
	for _, tt := range tests {
		checkCell(t, tt.name, tt.p, tt.r, tt.cell)
	}
}

// TestOwnerMatters: visibility, grants and deletion belong to the owner and admins; a write grant
// does not reach them (404 when invisible, 403 when visible).
func TestOwnerMatters(t *testing.T) {
	owner := uuid.New()
	grantee := Principal{UserID: uuid.New(), Role: RoleEditor}
	restricted := Resource{Visibility: VisibilityRestricted, OwnerID: owner, Published: true, Grant: GrantWrite}
	public := Resource{Visibility: VisibilityPublic, OwnerID: owner, Published: true}
	ownerless := Resource{Visibility: VisibilityPublic, Published: true}
	const allowed = 0
	tests := []struct {
		name string
		p    Principal
		r    Resource
		want int // allowed, or the HTTP status of the refusal
	}{
		{"owner", Principal{UserID: owner, Role: RoleEditor}, restricted, allowed},
		{"admin", Principal{UserID: uuid.New(), Role: RoleAdmin}, restricted, allowed},
		{"write grantee", grantee, restricted, 403},
		{"reader of a public record", grantee, public, 403},
		{"stranger to a private record", grantee, Resource{Visibility: VisibilityPrivate, OwnerID: owner, Published: true}, 404},
		{"anonymous, public record", Principal{}, public, 403},
		{"anonymous, ownerless record", Principal{}, ownerless, 403},
		{"signed-in, ownerless record", grantee, ownerless, 403},
		{"admin, ownerless record", Principal{UserID: uuid.New(), Role: RoleAdmin}, ownerless, allowed},
	}
	status := map[apperr.Kind]int{apperr.KindForbidden: 403, apperr.KindNotFound: 404}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CanManage(tt.p, tt.r); got != (tt.want == allowed) {
				t.Errorf("CanManage = %v", got)
			}
			err := AuthorizeManage(tt.p, tt.r, "dataset", "change its visibility")
			got := allowed
			if err != nil {
				got = status[apperr.KindOf(err)]
			}
			if got != tt.want {
				t.Errorf("AuthorizeManage: %v (%d), want %d", err, got, tt.want)
			}
		})
	}
}

func TestCanReadJob(t *testing.T) {
	creator, owner, grantee := uuid.New(), uuid.New(), uuid.New()
	tests := []struct {
		name           string
		p              Principal
		creator        *uuid.UUID
		datasetOwnerID uuid.UUID
		want           bool
	}{
		{"job creator", Principal{UserID: creator, Role: RoleEditor}, &creator, owner, true},
		{"dataset owner", Principal{UserID: owner, Role: RoleEditor}, &creator, owner, true},
		{"admin", Principal{UserID: uuid.New(), Role: RoleAdmin}, &creator, owner, true},
		{"write grantee", Principal{UserID: grantee, Role: RoleEditor}, &creator, owner, false},
		{"anonymous, job without creator", Principal{}, nil, owner, false},
		{"anonymous, dataset without owner", Principal{}, &creator, uuid.Nil, false},
		{"signed-in, job without creator", Principal{UserID: grantee, Role: RoleViewer}, nil, owner, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Resource{Visibility: VisibilityRestricted, OwnerID: tt.datasetOwnerID, Published: true, Grant: GrantWrite}
			if got := CanReadJob(tt.p, tt.creator, r); got != tt.want {
				t.Errorf("CanReadJob = %v, want %v", got, tt.want)
			}
		})
	}
}
