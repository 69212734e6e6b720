package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
)

// AccessClaims are the claims of an access token: who, which role, and the user's token version
// at issue time (a password, role or status change bumps the version and kills older tokens).
type AccessClaims struct {
	Role    string `json:"role"`
	Version int32  `json:"ver"`
	Session string `json:"sid"` // the refresh-token family, so logout can end this session only
	jwt.RegisteredClaims
}

const accessAudience = "meridian-api"

// Signer issues and verifies HS256 access tokens with JWT_SECRET_KEY.
type Signer struct {
	key []byte
	ttl time.Duration
	now func() time.Time
}

// NewSigner returns a signer for secret with tokens valid for ttl.
func NewSigner(secret string, ttl time.Duration) *Signer {
	return &Signer{key: []byte(secret), ttl: ttl, now: time.Now}
}

// TTL is how long issued access tokens live.
func (s *Signer) TTL() time.Duration { return s.ttl }

// Issue signs an access token for the user.
func (s *Signer) Issue(userID uuid.UUID, role string, version int32, session uuid.UUID) (string, error) {
	now := s.now()
	claims := AccessClaims{Role: role, Version: version, Session: session.String(), RegisteredClaims: jwt.RegisteredClaims{
		Subject:   userID.String(),
		Audience:  jwt.ClaimStrings{accessAudience},
		IssuedAt:  jwt.NewNumericDate(now),
		NotBefore: jwt.NewNumericDate(now.Add(-30 * time.Second)),
		ExpiresAt: jwt.NewNumericDate(now.Add(s.ttl)),
		ID:        uuid.NewString(),
	}}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(s.key)
}

// ErrBadToken covers every way a presented token fails: malformed, bad signature, expired.
var ErrBadToken = errors.New("auth: invalid or expired token")

// Verify checks signature, algorithm, audience and expiry and returns the user id and claims.
func (s *Signer) Verify(token string) (uuid.UUID, AccessClaims, error) {
	var c AccessClaims
	_, err := jwt.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return s.key, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithAudience(accessAudience),
		jwt.WithExpirationRequired(),
		jwt.WithTimeFunc(s.now),
	)
	if err != nil {
		return uuid.Nil, c, fmt.Errorf("%w: %v", ErrBadToken, err)
	}
	id, err := uuid.Parse(c.Subject)
	if err != nil {
		return uuid.Nil, c, ErrBadToken
	}
	return id, c, nil
}

// NewOpaqueToken returns 32 random bytes, URL-safe: refresh tokens and API key secrets.
func NewOpaqueToken() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err) // the system's randomness source failing leaves nothing safe to do
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// HashToken is how opaque tokens are stored and looked up: SHA-256 suffices for 256-bit random
// secrets (no dictionary to attack), and a hash lookup leaks nothing through timing.
func HashToken(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// Fingerprint identifies an API key without revealing it: first 8 characters, an ellipsis, last 4.
func Fingerprint(key string) string {
	if len(key) < 12 {
		return "…"
	}
	return key[:8] + "…" + key[len(key)-4:]
}
