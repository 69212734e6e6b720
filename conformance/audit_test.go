package conformance

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
)

// TestAuditTrail: sign-ins (success and failure), key creation and revocation and role changes
// leave audit records that admins can list and download.
func TestAuditTrail(t *testing.T) {
	a := admin(t)
	u := newUser(t, "viewer")
	call(t, "POST", "/auth/login", url.Values{"username": {u.Username}, "password": {"Wrong-password-9"}})
	_, keyID := newKey(t, u, "full")
	call(t, "DELETE", "/auth/api-keys/"+keyID, nil, bearer(u.Access)...)
	call(t, "PATCH", "/admin/users/"+u.ID, map[string]any{"role": "editor"}, bearer(a.Access)...)

	want := map[string]string{ // action -> outcome
		"user.login.failure": "failure", "api_key.create": "success", "api_key.revoke": "success", "user.update": "success",
	}
	list := call(t, "GET", "/admin/audit-logs/?limit=200&actor_id="+u.ID, nil, bearer(a.Access)...)
	roleChange := call(t, "GET", "/admin/audit-logs/?action=user.*&resource_id="+u.ID, nil, bearer(a.Access)...)
	var items []map[string]any
	for _, r := range []reply{list, roleChange} {
		if r.Status != 200 {
			t.Fatalf("list: %d %s", r.Status, r.Body)
		}
		for _, it := range r.JSON(t)["logs"].([]any) {
			items = append(items, it.(map[string]any))
		}
	}
	for action, outcome := range want {
		found := false
		for _, it := range items {
			found = found || (it["action"] == action && it["outcome"] == outcome)
		}
		if !found {
			t.Errorf("no %s/%s audit record among %d", action, outcome, len(items))
		}
	}

	for _, format := range []string{"json", "ndjson", "csv"} {
		r := call(t, "GET", "/admin/audit-logs/export/"+format+"?actor_id="+u.ID, nil, bearer(a.Access)...)
		if r.Status != 200 || !strings.Contains(r.Header.Get("Content-Disposition"), "attachment") {
			t.Fatalf("%s export: %d %v", format, r.Status, r.Header)
		}
		n := 0
		switch format {
		case "json":
			var recs []map[string]any
			if err := json.Unmarshal(r.Body, &recs); err != nil {
				t.Fatalf("json export: %v", err)
			}
			n = len(recs)
		case "ndjson":
			sc := bufio.NewScanner(bytes.NewReader(r.Body))
			for sc.Scan() {
				var m map[string]any
				if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
					t.Fatalf("ndjson line: %v", err)
				}
				n++
			}
		case "csv":
			recs, err := csv.NewReader(bytes.NewReader(r.Body)).ReadAll()
			if err != nil || recs[0][0] != "id" {
				t.Fatalf("csv export: %v", err)
			}
			n = len(recs) - 1
		}
		if n < 3 {
			t.Errorf("%s export has %d records of the user, want at least 3", format, n)
		}
	}
	if r := call(t, "GET", "/admin/audit-logs/", nil, bearer(newUser(t, "editor").Access)...); r.Status != 403 {
		t.Fatalf("audit list as non-admin: %d", r.Status)
	}
}
