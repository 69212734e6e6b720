package conformance

// Authorization gaps of issue 10 section 3: owner-only dataset matters, who may read a dataset's
// job, access tokens ending with their session on every replica, collection names per owner.

import (
	"strings"
	"testing"
)

// TestWriteGrantCannotChangeOwnerMatters: a write grant lets its holder edit a restricted
// dataset's metadata, but visibility (who may read it) and grants stay with the owner and admins.
func TestWriteGrantCannotChangeOwnerMatters(t *testing.T) {
	owner, grantee, adm := newUser(t, "editor"), newUser(t, "editor"), admin(t)
	id := createDataset(t, owner, "restricted", true)["id"].(string)
	if r := call(t, "POST", "/datasets/"+id+"/grants/", map[string]any{"user_id": grantee.ID, "level": "write"}, bearer(owner.Access)...); r.Status != 201 {
		t.Fatalf("write grant: %d %s", r.Status, r.Body)
	}
	tests := []struct {
		name   string
		as     session
		body   map[string]any
		status int
	}{
		{"grantee edits metadata", grantee, map[string]any{"summary": "edited by the grantee"}, 200},
		{"grantee sends the current visibility unchanged", grantee, map[string]any{"visibility": "restricted", "title": "Kept restricted"}, 200},
		{"grantee makes it public", grantee, map[string]any{"visibility": "public"}, 403},
		{"grantee makes it public beside a metadata edit", grantee, map[string]any{"visibility": "public", "summary": "sneaky"}, 403},
		{"grantee makes it private", grantee, map[string]any{"visibility": "private"}, 403},
		{"grantee makes it internal", grantee, map[string]any{"visibility": "internal"}, 403},
		{"owner makes it internal", owner, map[string]any{"visibility": "internal"}, 200},
		{"admin makes it restricted again", adm, map[string]any{"visibility": "restricted"}, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := call(t, "PATCH", "/datasets/"+id, tt.body, bearer(tt.as.Access)...)
			if r.Status != tt.status {
				t.Fatalf("PATCH %v: %d %s, want %d", tt.body, r.Status, r.Body, tt.status)
			}
			if r.Status == 403 && !strings.HasPrefix(r.Header.Get("Content-Type"), "application/problem+json") {
				t.Fatalf("403 is not a problem: %s", r.Header.Get("Content-Type"))
			}
		})
	}
	// The refused changes left nothing behind: still restricted, unreadable anonymously, and the
	// refused edit's summary was not applied either.
	if r := call(t, "GET", "/datasets/"+id, nil); r.Status != 404 {
		t.Fatalf("anonymous read after the grantee's attempts: %d", r.Status)
	}
	d := call(t, "GET", "/datasets/"+id, nil, bearer(owner.Access)...).JSON(t)
	if d["visibility"] != "restricted" || d["summary"] != "edited by the grantee" {
		t.Fatalf("record after the attempts: visibility %v, summary %v", d["visibility"], d["summary"])
	}
	// Grants are the owner's too.
	if r := call(t, "POST", "/datasets/"+id+"/grants/", map[string]any{"role": "viewer", "level": "read"}, bearer(grantee.Access)...); r.Status != 403 {
		t.Fatalf("grantee adding a grant: %d %s", r.Status, r.Body)
	}
	if r := call(t, "DELETE", "/datasets/"+id, nil, bearer(grantee.Access)...); r.Status != 403 {
		t.Fatalf("grantee deleting the dataset: %d %s", r.Status, r.Body)
	}
}
