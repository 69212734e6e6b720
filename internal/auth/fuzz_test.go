package auth

import (
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// FuzzVerifyAccessToken: no input makes Verify panic, and whatever it accepts carries the claims
// the server relies on (a subject that is a user id, an expiry, an audience).
func FuzzVerifyAccessToken(f *testing.F) {
	s := NewSigner("fuzz-secret-0123456789-abcdefghijklmnop", time.Hour)
	good, err := s.Issue(uuid.New(), RoleEditor, 3, uuid.New())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)-1])
	f.Add(strings.Replace(good, ".", "..", 1))
	f.Add("eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.")
	f.Add("")
	f.Fuzz(func(t *testing.T, tok string) {
		id, claims, err := s.Verify(tok)
		if err != nil {
			return
		}
		if id == uuid.Nil || claims.ExpiresAt == nil || len(claims.Audience) == 0 {
			t.Fatalf("accepted a token without subject, expiry or audience: %q", tok)
		}
	})
}

// TestTamperedTokensAreRefused flips every character of a valid token: none of the results may
// verify except where the flip lands in base64 padding bits that decode to the same bytes.
func TestTamperedTokensAreRefused(t *testing.T) {
	s := NewSigner("tamper-secret-0123456789-abcdefghijklmno", time.Hour)
	good, _ := s.Issue(uuid.New(), RoleViewer, 1, uuid.New())
	other := NewSigner("another-secret-0123456789-abcdefghijklm", time.Hour)
	if _, _, err := other.Verify(good); err == nil {
		t.Fatal("a token signed with another key verified")
	}
	accepted := 0
	for i := range good {
		for _, c := range []byte{'A', 'z', '0', '-'} {
			if good[i] == c || good[i] == '.' {
				continue
			}
			bad := good[:i] + string(c) + good[i+1:]
			if _, _, err := s.Verify(bad); err == nil {
				accepted++
			}
		}
	}
	// Only the last character of the signature carries spare bits in unpadded base64url.
	if accepted > 3 {
		t.Fatalf("%d tampered tokens verified", accepted)
	}
}

// FuzzVerifyPassword: a malformed stored hash never panics nor verifies.
func FuzzVerifyPassword(f *testing.F) {
	h, _ := HashPassword("Correct-Horse-9")
	f.Add(h, "Correct-Horse-9")
	f.Add("$argon2id$v=19$m=4294967295,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA", "x")
	f.Add("$argon2id$v=19$m=8,t=1,p=1$$", "")
	f.Fuzz(func(t *testing.T, hash, password string) {
		ok, err := VerifyPassword(hash, password)
		if err != nil && ok {
			t.Fatal("reported a match together with an error")
		}
		if ok && hash != h {
			// Any other accepted hash must be well-formed argon2id.
			if !strings.HasPrefix(hash, "$argon2id$v=19$") {
				t.Fatalf("accepted non-argon2id hash %q", hash)
			}
		}
	})
}
