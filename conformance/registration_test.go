package conformance

import (
	"context"
	"net/url"
	"testing"
)

// setSetting writes a runtime setting directly: the typed settings API (PUT /settings/) is part of
// a later capability, and the registration tests need the three modes now.
func setSetting(t *testing.T, key string, jsonValue string) {
	t.Helper()
	ctx := context.Background()
	conn := dbConn(t)
	if _, err := conn.Exec(ctx, `INSERT INTO catalog.settings (key, value) VALUES ($1, $2::jsonb)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value`, key, jsonValue); err != nil {
		t.Fatal(err)
	}
}

func register(t *testing.T, name, password string) reply {
	t.Helper()
	return call(t, "POST", "/auth/register/", map[string]any{"username": name, "email": name + "@example.org", "password": password})
}

func TestRegistrationModes(t *testing.T) {
	defer setSetting(t, "auth.registration_mode", `"closed"`) // the default: registration_enabled false
	a := admin(t)

	// closed: refused.
	setSetting(t, "auth.registration_mode", `"closed"`)
	if cfg := call(t, "GET", "/auth/config/", nil).JSON(t); cfg["registration_mode"] != "closed" || cfg["demo_mode"] != nil {
		t.Fatalf("auth config: %v", cfg)
	}
	if r := register(t, "closed"+randomHex(3), "Good-password-1"); r.Status != 403 {
		t.Fatalf("register while closed: %d", r.Status)
	}

	// approval: verify the email, then wait for an admin.
	setSetting(t, "auth.registration_mode", `"approval"`)
	name := "appr" + randomHex(3)
	before := mails.count()
	r := register(t, name, "Good-password-1")
	if r.Status != 201 || r.JSON(t)["next_step"] != "verify_email" {
		t.Fatalf("register: %d %s", r.Status, r.Body)
	}
	body := mails.waitFor(t, name+"@example.org", before)
	m := verificationCode.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no verification code in mail: %s", body)
	}
	if r := call(t, "POST", "/auth/login", url.Values{"username": {name}, "password": {"Good-password-1"}}); r.Status != 403 {
		t.Fatalf("login before verification: %d", r.Status)
	}
	v := call(t, "POST", "/auth/verify-email/", map[string]any{"token": m[1]})
	if v.Status != 200 || v.JSON(t)["status"] != "pending" {
		t.Fatalf("verify: %d %s", v.Status, v.Body)
	}
	if r := call(t, "POST", "/auth/verify-email/", map[string]any{"token": m[1]}); r.Status != 400 {
		t.Fatalf("second use of a verification token: %d", r.Status)
	}
	if r := call(t, "POST", "/auth/login", url.Values{"username": {name}, "password": {"Good-password-1"}}); r.Status != 403 {
		t.Fatalf("login before approval: %d", r.Status)
	}
	users := call(t, "GET", "/admin/users/?status=pending&q="+name, nil, bearer(a.Access)...).JSON(t)
	id := users["users"].([]any)[0].(map[string]any)["id"].(string)
	if r := call(t, "POST", "/admin/users/"+id+"/approve/", nil, bearer(a.Access)...); r.Status != 200 {
		t.Fatalf("approve: %d", r.Status)
	}
	login(t, name, "Good-password-1")

	// open: verification alone activates.
	setSetting(t, "auth.registration_mode", `"open"`)
	name = "open" + randomHex(3)
	before = mails.count()
	if r := register(t, name, "Good-password-1"); r.Status != 201 {
		t.Fatalf("register open: %d", r.Status)
	}
	// A resend replaces the first link.
	first := verificationCode.FindStringSubmatch(mails.waitFor(t, name+"@example.org", before))[1]
	before = mails.count()
	if r := call(t, "POST", "/auth/resend-verification/", map[string]any{"email": name + "@example.org"}); r.Status != 200 {
		t.Fatalf("resend: %d", r.Status)
	}
	second := verificationCode.FindStringSubmatch(mails.waitFor(t, name+"@example.org", before))[1]
	if r := call(t, "POST", "/auth/verify-email/", map[string]any{"token": first}); r.Status != 400 {
		t.Fatalf("superseded link: %d", r.Status)
	}
	if v := call(t, "POST", "/auth/verify-email/", map[string]any{"token": second}); v.Status != 200 || v.JSON(t)["status"] != "active" {
		t.Fatalf("verify open: %d %s", v.Status, v.Body)
	}
	login(t, name, "Good-password-1")
}

// allowRegistration switches self-registration on (with admin approval) for the rest of the test:
// it is off by default (registration_enabled false).
func allowRegistration(t *testing.T) {
	t.Helper()
	wantStatus(t, "registration on", call(t, "PUT", "/settings/", map[string]any{"settings": map[string]any{"registration_enabled": true}},
		bearer(admin(t).Access)...), 200)
	t.Cleanup(func() {
		call(t, "POST", "/settings/reset/", map[string]any{"keys": []string{"registration_enabled"}}, bearer(admin(t).Access)...)
	})
}

// Registration must not reveal which addresses or which unverified accounts exist.
func TestRegistrationDoesNotEnumerateUsers(t *testing.T) {
	allowRegistration(t)
	u := newUser(t, "viewer")
	fresh := "fresh" + randomHex(3)
	a := call(t, "POST", "/auth/register/", map[string]any{"username": fresh, "email": fresh + "@example.org", "password": "Good-password-1"})
	b := call(t, "POST", "/auth/register/", map[string]any{"username": "x" + fresh, "email": u.Username + "@example.org", "password": "Good-password-1"})
	if a.Status != 201 || b.Status != 201 || a.JSON(t)["next_step"] != b.JSON(t)["next_step"] {
		t.Fatalf("new address %d %s vs known address %d %s", a.Status, a.Body, b.Status, b.Body)
	}
	r1 := call(t, "POST", "/auth/resend-verification/", map[string]any{"email": "nobody-" + fresh + "@example.org"})
	r2 := call(t, "POST", "/auth/resend-verification/", map[string]any{"email": u.Username + "@example.org"})
	if r1.Status != 200 || string(r1.JSON(t)["message"].(string)) != r2.JSON(t)["message"] {
		t.Fatalf("resend answers differ: %s vs %s", r1.Body, r2.Body)
	}
	if r := call(t, "POST", "/auth/register/", map[string]any{"username": u.Username, "email": "new-" + fresh + "@example.org", "password": "Good-password-1"}); r.Status != 409 {
		t.Fatalf("taken username: %d", r.Status)
	}
	if r := call(t, "POST", "/auth/register/", map[string]any{"username": "weak" + fresh, "email": "weak" + fresh + "@example.org", "password": "weakpassword"}); r.Status != 422 {
		t.Fatalf("weak password: %d", r.Status)
	}
}
