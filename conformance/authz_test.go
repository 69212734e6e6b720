package conformance

// Authorization gaps of issue 10 section 3: owner-only dataset matters, who may read a dataset's
// job, access tokens ending with their session on every replica, collection names per owner.

import (
	"fmt"
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

// TestJobByDatasetOnlyForCreatorOwnerAdmin: the latest job of a dataset is the job's creator's,
// the dataset owner's and admins' business; anyone else, even a reader of the dataset, gets 404
// like for a dataset without a job.
func TestJobByDatasetOnlyForCreatorOwnerAdmin(t *testing.T) {
	creator, reader, grantee, adm := newUser(t, "editor"), newUser(t, "viewer"), newUser(t, "editor"), admin(t)
	job := importFile(t, creator, "jobs-by-dataset.geojson", pointsGeoJSON(2), map[string]any{"visibility": "restricted"})
	if job["status"] != "complete" {
		t.Fatalf("import: %v", job)
	}
	ds := job["dataset_id"].(string)
	for _, st := range []string{"ready", "internal", "published"} {
		if r := call(t, "PATCH", "/datasets/"+ds+"/status/", map[string]any{"status": st}, bearer(creator.Access)...); r.Status != 200 {
			t.Fatalf("status %s: %d %s", st, r.Status, r.Body)
		}
	}
	for who, level := range map[string]string{reader.ID: "read", grantee.ID: "write"} {
		if r := call(t, "POST", "/datasets/"+ds+"/grants/", map[string]any{"user_id": who, "level": level}, bearer(creator.Access)...); r.Status != 201 {
			t.Fatalf("grant: %d %s", r.Status, r.Body)
		}
	}
	// A dataset of the same visibility without any job: what outsiders see must look the same.
	nojob := createDataset(t, creator, "public", true)["id"].(string)
	tests := []struct {
		name    string
		headers []string
		status  int
	}{
		{"job creator and dataset owner", bearer(creator.Access), 200},
		{"admin", bearer(adm.Access), 200},
		{"reader with a read grant", bearer(reader.Access), 404},
		{"editor with a write grant", bearer(grantee.Access), 404},
		{"signed-in stranger", bearer(newUser(t, "editor").Access), 404},
		{"anonymous", nil, 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := call(t, "GET", "/jobs/by-dataset/"+ds, nil, tt.headers...)
			if r.Status != tt.status {
				t.Fatalf("%d %s, want %d", r.Status, r.Body, tt.status)
			}
			if r.Status == 200 && r.JSON(t)["id"] != job["id"] {
				t.Fatalf("another job: %s", r.Body)
			}
		})
	}
	// No existence leak: a reader's 404 says what a dataset without a job says.
	hidden := call(t, "GET", "/jobs/by-dataset/"+ds, nil, bearer(reader.Access)...)
	absent := call(t, "GET", "/jobs/by-dataset/"+nojob, nil, bearer(reader.Access)...)
	if hidden.Status != 404 || absent.Status != 404 {
		t.Fatalf("reader: %d for a hidden job, %d for no job; want 404 for both", hidden.Status, absent.Status)
	}
	leak, none := hidden.JSON(t)["detail"], absent.JSON(t)["detail"]
	if strings.ReplaceAll(fmt.Sprint(leak), ds, "X") != strings.ReplaceAll(fmt.Sprint(none), nojob, "X") {
		t.Fatalf("404 for a hidden job %q differs from 404 for no job %q", leak, none)
	}
}
