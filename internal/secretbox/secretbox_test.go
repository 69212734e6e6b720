package secretbox

import (
	"bytes"
	"encoding/hex"
	"errors"
	"regexp"
	"strings"
	"testing"
)

const (
	secretA = "a-deployment-jwt-secret-of-more-than-32-characters"
	secretB = "another-deployment-jwt-secret-after-rotation-0000"
)

// Values sealed under secretA by the first version of this package. They pin the whole format
// (HKDF info, key id, layout, additional data): if they stop opening, every secret stored in a
// deployment stops opening too. They were checked against an independent HKDF-SHA256 and
// AES-GCM implementation (Python's cryptography package).
var golden = []struct {
	sealedHex string
	plaintext string
}{
	{"010ac6192c06ffd9c5de0f8a7ba9401b820645545260c7f249239a694701a69bb8848aab01", ""},
	{"010ac6192c06ffd9c5265654da5c8fb496417cf4ed55a8858590e224bdc9fe97b1069b267fc3cdd8562c75801374681950fe45e3ecb3d140", "client-secret-value"},
}

func mustHex(tb testing.TB, s string) []byte {
	tb.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func TestGoldenValuesOpen(t *testing.T) {
	box := New(secretA)
	if got, want := box.KeyID(), "0ac6192c06ffd9c5"; got != want {
		t.Errorf("KeyID = %s, want %s", got, want)
	}
	for _, g := range golden {
		got, err := box.Open(mustHex(t, g.sealedHex))
		if err != nil || string(got) != g.plaintext {
			t.Errorf("Open(%s) = %q, %v; want %q", g.sealedHex, got, err, g.plaintext)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	box := New(secretA)
	tests := []struct {
		name      string
		plaintext []byte
	}{
		{"client secret", []byte("s3cr3t-0auth-client-value")},
		{"empty", []byte{}},
		{"nil", nil},
		{"binary", []byte{0, 1, 2, 0xff, 0xfe, 0}},
		{"utf-8", []byte("geheimnis-ÄÖÜ-秘密")},
		{"long", bytes.Repeat([]byte("x"), 64<<10)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sealed, err := box.Seal(tt.plaintext)
			if err != nil {
				t.Fatal(err)
			}
			if want := minSealed + len(tt.plaintext); len(sealed) != want {
				t.Errorf("sealed length %d, want %d", len(sealed), want)
			}
			if len(tt.plaintext) >= 8 && bytes.Contains(sealed, tt.plaintext) {
				t.Error("sealed value contains the plaintext")
			}
			got, err := box.Open(sealed)
			if err != nil {
				t.Fatal(err)
			}
			if got == nil || !bytes.Equal(got, tt.plaintext) {
				t.Errorf("Open = %q, want %q", got, tt.plaintext)
			}
			// A second Box from the same secret stands for another replica or a restart.
			if got, err := New(secretA).Open(sealed); err != nil || !bytes.Equal(got, tt.plaintext) {
				t.Errorf("Open with a re-derived box = %q, %v", got, err)
			}
		})
	}
}

func TestKeyID(t *testing.T) {
	a1, a2, b := New(secretA), New(secretA), New(secretB)
	if !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(a1.KeyID()) {
		t.Fatalf("KeyID %q is not 8 bytes of hex", a1.KeyID())
	}
	if a1.KeyID() != a2.KeyID() {
		t.Error("one secret derived two key ids")
	}
	if a1.KeyID() == b.KeyID() {
		t.Error("two secrets derived one key id")
	}
	if strings.Contains(secretA, a1.KeyID()) {
		t.Error("key id leaks the secret")
	}
}

func TestNoncesDiffer(t *testing.T) {
	box := New(secretA)
	plaintext := []byte("same plaintext")
	s1, err := box.Seal(plaintext)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := box.Seal(plaintext)
	if err != nil {
		t.Fatal(err)
	}
	n1, n2 := s1[headerLen:headerLen+nonceLen], s2[headerLen:headerLen+nonceLen]
	if bytes.Equal(n1, n2) {
		t.Fatalf("two seals used one nonce %x", n1)
	}
	if bytes.Equal(s1, s2) {
		t.Fatal("two seals of one plaintext are identical")
	}
}

func TestOpenRejects(t *testing.T) {
	box := New(secretA)
	sealed, err := box.Seal([]byte("client-secret-value"))
	if err != nil {
		t.Fatal(err)
	}
	flip := func(i int) []byte {
		c := bytes.Clone(sealed)
		c[i] ^= 0x01
		return c
	}
	fromOtherKey, err := New(secretB).Seal([]byte("client-secret-value"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		input []byte
		want  error
	}{
		{"nil", nil, ErrCorrupt},
		{"empty", []byte{}, ErrCorrupt},
		{"version byte only", sealed[:1], ErrCorrupt},
		{"header only", sealed[:headerLen], ErrCorrupt},
		{"header and nonce", sealed[:headerLen+nonceLen], ErrCorrupt},
		{"one byte short of a tag", sealed[:minSealed-1], ErrCorrupt},
		{"last byte cut", sealed[:len(sealed)-1], ErrCorrupt},
		{"byte appended", append(bytes.Clone(sealed), 0), ErrCorrupt},
		{"unknown version", flip(0), ErrCorrupt},
		{"nonce altered", flip(headerLen), ErrCorrupt},
		{"ciphertext altered", flip(headerLen + nonceLen), ErrCorrupt},
		{"tag altered", flip(len(sealed) - 1), ErrCorrupt},
		// The key id is read before authentication; damage there is indistinguishable from
		// rotation and asks for the same remedy.
		{"key id altered", flip(1), ErrKeyRotated},
		{"sealed by another secret", fromOtherKey, ErrKeyRotated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := box.Open(tt.input)
			if !errors.Is(err, tt.want) {
				t.Errorf("Open error = %v, want %v", err, tt.want)
			}
			if got != nil {
				t.Errorf("Open returned plaintext %q alongside an error", got)
			}
		})
	}
}

func TestAnotherSecretReportsRotation(t *testing.T) {
	sealed, err := New(secretA).Seal([]byte("client-secret-value"))
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{secretB, secretA + " ", strings.ToUpper(secretA), ""} {
		if _, err := New(secret).Open(sealed); !errors.Is(err, ErrKeyRotated) {
			t.Errorf("Open under %q: error %v, want ErrKeyRotated", secret, err)
		}
	}
}

// FuzzOpen feeds arbitrary bytes to Open. Open must not panic, must fail with one of the two
// documented errors, and may succeed only on a value sealed under this key. The seeds are fixed
// golden values rather than fresh seals because fuzz workers run in separate processes, and
// the oracle has to know every valid value the corpus can contain.
func FuzzOpen(f *testing.F) {
	box := New(secretA)
	valid := map[string]string{}
	for _, g := range golden {
		s := mustHex(f, g.sealedHex)
		valid[string(s)] = g.plaintext
		f.Add(s)
		f.Add(s[:len(s)-1])
		f.Add(s[:headerLen])
	}
	other, err := New(secretB).Seal([]byte("client-secret-value"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(other)
	f.Add([]byte{})
	f.Add([]byte{formatVersion})

	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := box.Open(data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrKeyRotated) {
				t.Fatalf("Open(%x) returned undocumented error %v", data, err)
			}
			if got != nil {
				t.Fatalf("Open(%x) returned plaintext with error %v", data, err)
			}
			return
		}
		want, ok := valid[string(data)]
		if !ok {
			t.Fatalf("Open accepted %x, which was never sealed, as %q", data, got)
		}
		if string(got) != want {
			t.Fatalf("Open(%x) = %q, want %q", data, got, want)
		}
	})
}
