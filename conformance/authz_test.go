package conformance

// Authorization gaps of issue 10 section 3: owner-only dataset matters, who may read a dataset's
// job, access tokens ending with their session on every replica, collection names per owner.

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"meridian/openapi"
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
	ds := job["dataset_id"].(string) // an import is published
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

// replicas starts two servers on one fresh database sharing a JWT secret, as a deployment with two
// replicas behind a load balancer does, and returns a validating client for each.
func replicas(t *testing.T) (a, b *Server, ca, cb *http.Client) {
	t.Helper()
	secret := "JWT_SECRET_KEY=" + randomHex(24)
	a = startFresh(t, secret, "RATE_LIMIT_ENABLED=false")
	b, err := Start(context.Background(), a.DBURL, secret, "RATE_LIMIT_ENABLED=false")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Stop)
	clientFor := func(s *Server) *http.Client {
		doc, err := openapi.Load()
		if err != nil {
			t.Fatal(err)
		}
		c, err := NewContract(doc, s.APIRoot)
		if err != nil {
			t.Fatal(err)
		}
		return c.Client()
	}
	return a, b, clientFor(a), clientFor(b)
}

// TestAccessTokenEndsWithItsSessionOnEveryReplica: logout, refresh-token reuse detection,
// password change, role change and deactivation end the session on replica A or B, and the
// session's access token is refused within a second by both. API keys outlive a web logout.
func TestAccessTokenEndsWithItsSessionOnEveryReplica(t *testing.T) {
	a, b, ca, cb := replicas(t)
	at := func(c *http.Client, s *Server) func(t *testing.T, method, path string, body any, headers ...string) reply {
		return func(t *testing.T, method, path string, body any, headers ...string) reply {
			t.Helper()
			return callAt(t, c, s.APIRoot, method, path, body, headers...)
		}
	}
	onA, onB := at(ca, a), at(cb, b)
	var adminAccess string
	if r := onA(t, "POST", "/auth/login", url.Values{"username": {"admin"}, "password": {AdminPassword}}); r.Status == 200 {
		adminAccess = r.JSON(t)["access_token"].(string)
	} else {
		t.Fatalf("admin login: %d %s", r.Status, r.Body)
	}
	newAccount := func(t *testing.T) (id, username, password string) {
		t.Helper()
		username, password = "repl"+randomHex(4), "Pass-word-"+randomHex(4)
		r := onB(t, "POST", "/admin/users/", map[string]any{"username": username, "email": username + "@example.org",
			"password": password, "role": "editor", "email_verified": true}, bearer(adminAccess)...)
		if r.Status != 201 {
			t.Fatalf("create user: %d %s", r.Status, r.Body)
		}
		return r.JSON(t)["id"].(string), username, password
	}
	signIn := func(t *testing.T, username, password string) (access, refresh string) {
		t.Helper()
		r := onA(t, "POST", "/auth/login", url.Values{"username": {username}, "password": {password}})
		if r.Status != 200 {
			t.Fatalf("login: %d %s", r.Status, r.Body)
		}
		m := r.JSON(t)
		return m["access_token"].(string), m["refresh_token"].(string)
	}
	// refusedWithinASecond polls both replicas for ~1.5 s: the contract allows no lag beyond 1 s.
	refusedWithinASecond := func(t *testing.T, access string) {
		t.Helper()
		start := time.Now()
		for name, on := range map[string]func(*testing.T, string, string, any, ...string) reply{"A": onA, "B": onB} {
			for {
				r := on(t, "GET", "/auth/me/", nil, bearer(access)...)
				if r.Status == 401 {
					if lag := time.Since(start); lag > time.Second {
						t.Errorf("replica %s refused the token only after %v", name, lag)
					}
					break
				}
				if r.Status != 200 {
					t.Fatalf("replica %s: %d %s", name, r.Status, r.Body)
				}
				if time.Since(start) > 1500*time.Millisecond {
					t.Fatalf("replica %s still accepts the access token %v after its session ended", name, time.Since(start).Round(time.Millisecond))
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
	}
	tests := []struct {
		name string
		end  func(t *testing.T, userID, password, access, refresh string)
	}{
		{"logout with the access token on A", func(t *testing.T, _, _, access, _ string) {
			if r := onA(t, "POST", "/auth/logout/", nil, bearer(access)...); r.Status != 204 {
				t.Fatalf("logout: %d %s", r.Status, r.Body)
			}
		}},
		{"logout with the refresh token on A", func(t *testing.T, _, _, _, refresh string) {
			if r := onA(t, "POST", "/auth/logout/", map[string]any{"refresh_token": refresh}); r.Status != 204 {
				t.Fatalf("logout: %d %s", r.Status, r.Body)
			}
		}},
		{"refresh-token reuse detected on B", func(t *testing.T, _, _, _, refresh string) {
			for i, want := range []int{200, 200, 401} { // rotation, grace reuse, theft
				if r := onB(t, "POST", "/auth/refresh/", map[string]any{"refresh_token": refresh}); r.Status != want {
					t.Fatalf("refresh %d: %d %s, want %d", i, r.Status, r.Body, want)
				}
			}
		}},
		{"password change on A", func(t *testing.T, _, password, access, _ string) {
			r := onA(t, "POST", "/auth/change-password/", map[string]any{"current_password": password, "new_password": "Brand-new-pass-1"}, bearer(access)...)
			if r.Status != 204 {
				t.Fatalf("change password: %d %s", r.Status, r.Body)
			}
		}},
		{"role change on B", func(t *testing.T, id, _, _, _ string) {
			if r := onB(t, "PATCH", "/admin/users/"+id, map[string]any{"role": "viewer"}, bearer(adminAccess)...); r.Status != 200 {
				t.Fatalf("role change: %d %s", r.Status, r.Body)
			}
		}},
		{"deactivation on B", func(t *testing.T, id, _, _, _ string) {
			if r := onB(t, "POST", "/admin/users/"+id+"/deactivate/", nil, bearer(adminAccess)...); r.Status != 200 {
				t.Fatalf("deactivate: %d %s", r.Status, r.Body)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, username, password := newAccount(t)
			access, refresh := signIn(t, username, password)
			for name, on := range map[string]func(*testing.T, string, string, any, ...string) reply{"A": onA, "B": onB} {
				if r := on(t, "GET", "/auth/me/", nil, bearer(access)...); r.Status != 200 {
					t.Fatalf("replica %s before: %d %s", name, r.Status, r.Body)
				}
			}
			tt.end(t, id, password, access, refresh)
			refusedWithinASecond(t, access)
		})
	}

	t.Run("another session of the same user survives a logout", func(t *testing.T) {
		_, username, password := newAccount(t)
		first, _ := signIn(t, username, password)
		second, _ := signIn(t, username, password)
		if r := onA(t, "POST", "/auth/logout/", nil, bearer(first)...); r.Status != 204 {
			t.Fatalf("logout: %d %s", r.Status, r.Body)
		}
		refusedWithinASecond(t, first)
		if r := onB(t, "GET", "/auth/me/", nil, bearer(second)...); r.Status != 200 {
			t.Fatalf("the other session after logout: %d %s", r.Status, r.Body)
		}
	})

	t.Run("API keys outlive a web logout", func(t *testing.T) {
		_, username, password := newAccount(t)
		access, refresh := signIn(t, username, password)
		r := onA(t, "POST", "/auth/api-keys/", map[string]any{"name": "survivor", "scope": "full"}, bearer(access)...)
		if r.Status != 201 {
			t.Fatalf("create key: %d %s", r.Status, r.Body)
		}
		key := r.JSON(t)["key"].(string)
		if r := onA(t, "POST", "/auth/logout/", map[string]any{"refresh_token": refresh}, bearer(access)...); r.Status != 204 {
			t.Fatalf("logout: %d %s", r.Status, r.Body)
		}
		refusedWithinASecond(t, access)
		for name, on := range map[string]func(*testing.T, string, string, any, ...string) reply{"A": onA, "B": onB} {
			if r := on(t, "GET", "/auth/me/", nil, apiKey(key)...); r.Status != 200 {
				t.Fatalf("API key on replica %s after logout: %d %s", name, r.Status, r.Body)
			}
		}
	})
}

// TestCollectionNamesArePerOwner: two users may each have a "Roads"; one user may not have two
// (compared without case), and the conflict speaks of the caller's own collection only.
func TestCollectionNamesArePerOwner(t *testing.T) {
	first, second := newUser(t, "editor"), newUser(t, "editor")
	name := "Roads " + randomHex(3)
	create := func(t *testing.T, s session, name string) reply {
		t.Helper()
		return call(t, "POST", "/catalog/collections/", map[string]any{"name": name}, bearer(s.Access)...)
	}
	r := create(t, first, name)
	if r.Status != 201 {
		t.Fatalf("first user's collection: %d %s", r.Status, r.Body)
	}
	firstID := r.JSON(t)["id"].(string)
	r = create(t, second, name)
	if r.Status != 201 {
		t.Fatalf("second user's collection of the same name: %d %s", r.Status, r.Body)
	}
	secondID := r.JSON(t)["id"].(string)
	other := create(t, second, "Rivers "+randomHex(3))
	if other.Status != 201 {
		t.Fatalf("second user's other collection: %d %s", other.Status, other.Body)
	}
	tests := []struct {
		name   string
		send   func(t *testing.T) reply
		status int
	}{
		{"same user, same name", func(t *testing.T) reply { return create(t, second, name) }, 409},
		{"same user, same name in other case", func(t *testing.T) reply { return create(t, second, strings.ToUpper(name)) }, 409},
		{"same user, renaming onto the name", func(t *testing.T) reply {
			return call(t, "PATCH", "/catalog/collections/"+other.JSON(t)["id"].(string), map[string]any{"name": name}, bearer(second.Access)...)
		}, 409},
		{"admin, same name as two users", func(t *testing.T) reply { return create(t, admin(t), name) }, 201},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.send(t)
			if r.Status != tt.status {
				t.Fatalf("%d %s, want %d", r.Status, r.Body, tt.status)
			}
			if r.Status != 409 {
				return
			}
			detail := r.JSON(t)["detail"].(string)
			for _, secret := range []string{firstID, first.Username, first.ID} {
				if strings.Contains(string(r.Body), secret) {
					t.Fatalf("the conflict mentions another user's collection (%s): %s", secret, r.Body)
				}
			}
			if !strings.Contains(detail, "you already") {
				t.Fatalf("the conflict should say the caller already has the name: %q", detail)
			}
		})
	}
	// Both "Roads" are listed to an admin, each with its owner.
	list := call(t, "GET", "/catalog/collections/?q="+url.QueryEscape(name)+"&limit=200", nil, bearer(admin(t).Access)...)
	if list.Status != 200 || !strings.Contains(string(list.Body), firstID) || !strings.Contains(string(list.Body), secondID) {
		t.Fatalf("admin list: %d %s", list.Status, list.Body)
	}
}
