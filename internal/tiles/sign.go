// Package tiles serves vector tiles: signed tile templates, the tile grid, the version-keyed
// cache with single-flight fills, and the service that puts them together over the catalog and
// the tile SQL of internal/features.
package tiles

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"
)

// Signed templates let a client that holds no credential (a map library fetching tiles, the
// desktop plugin's layer) load the tiles of one dataset until exp (open-points.md): sig is
// HMAC-SHA256 over "{scope}:{exp}", lowercase hex; exp lies on a 900-second boundary, so every
// token issued within the same quarter hour yields the same URLs and caches keep their tiles.
const (
	expStep   = 900
	minExpGap = 60
)

// Signer issues and checks signed templates.
type Signer struct{ secret []byte }

// NewSigner signs with secret.
func NewSigner(secret string) Signer { return Signer{secret: []byte(secret)} }

// Token is a signed template for one scope.
type Token struct {
	Scope     string
	Exp       int64 // Unix seconds
	Sig       string
	ExpiresIn int64 // seconds from issue to Exp
}

// Issue signs scope for at least ttl from now: exp is now+ttl rounded up to the next boundary,
// and at least a minute away.
func (s Signer) Issue(scope string, ttl time.Duration, now time.Time) Token {
	return s.IssueAbove(scope, ttl, now, 0)
}

// IssueAbove is Issue for a dataset whose templates up to floor are void (its audience narrowed
// since they were issued, catalog.Dataset.SignedTilesFloor): exp lies on the first boundary
// above floor when Issue's would not. Templates issued before the narrowing and after it then
// never share a URL, so the old ones can be refused while the new ones serve.
func (s Signer) IssueAbove(scope string, ttl time.Duration, now time.Time, floor int64) Token {
	at := now.Unix()
	exp := (at + int64(ttl/time.Second) + expStep - 1) / expStep * expStep
	for exp-at < minExpGap {
		exp += expStep
	}
	if exp <= floor {
		exp = (floor/expStep + 1) * expStep
	}
	return Token{Scope: scope, Exp: exp, Sig: s.sign(scope, exp), ExpiresIn: exp - at}
}

// Valid reports whether sig signs scope until exp and exp is still ahead; the comparison takes
// the same time whatever the signature.
func (s Signer) Valid(scope, sig string, exp int64, now time.Time) bool {
	if exp <= now.Unix() {
		return false
	}
	want := s.sign(scope, exp)
	return hmac.Equal([]byte(sig), []byte(want))
}

func (s Signer) sign(scope string, exp int64) string {
	m := hmac.New(sha256.New, s.secret)
	m.Write([]byte(scope + ":" + strconv.FormatInt(exp, 10)))
	return hex.EncodeToString(m.Sum(nil))
}
