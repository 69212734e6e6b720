// Package auth holds credentials: password hashing, tokens, API keys and the authorization policy.
package auth

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"unicode"

	"golang.org/x/crypto/argon2"
)

// argon2id parameters: OWASP's recommended minimum (19 MiB, 2 passes, 1 lane). They are stored in
// every hash, so raising them later leaves old hashes verifiable.
const (
	argonMemoryKiB = 19 * 1024
	argonTime      = 2
	argonThreads   = 1
	argonKeyLen    = 32
	argonSaltLen   = 16
)

// HashPassword returns a PHC-formatted argon2id hash of password.
func HashPassword(password string) (string, error) {
	salt := make([]byte, argonSaltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	key := argon2.IDKey([]byte(password), salt, argonTime, argonMemoryKiB, argonThreads, argonKeyLen)
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemoryKiB, argonTime,
		argonThreads, b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}

// ErrMalformedHash reports a stored hash this package cannot read.
var ErrMalformedHash = errors.New("auth: malformed password hash")

// VerifyPassword reports whether password matches the PHC argon2id hash, in constant time.
func VerifyPassword(hash, password string) (bool, error) {
	parts := strings.Split(hash, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false, ErrMalformedHash
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return false, ErrMalformedHash
	}
	var mem, t uint32
	var p uint8
	// Bounds keep a damaged or planted hash from making one verification allocate gigabytes.
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &mem, &t, &p); err != nil || p == 0 || t == 0 ||
		mem < 8 || mem > 1<<20 || t > 16 || p > 16 {
		return false, ErrMalformedHash
	}
	b64 := base64.RawStdEncoding
	salt, err := b64.DecodeString(parts[4])
	if err != nil {
		return false, ErrMalformedHash
	}
	want, err := b64.DecodeString(parts[5])
	if err != nil || len(want) < 16 || len(want) > 128 {
		return false, ErrMalformedHash
	}
	got := argon2.IDKey([]byte(password), salt, t, mem, p, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1, nil
}

// PasswordPolicyError explains why a new password is refused.
type PasswordPolicyError struct{ Reason string }

func (e *PasswordPolicyError) Error() string { return e.Reason }

// Password policy of spec section 4.1: at least 12 characters from at least 3 of the 4 classes.
const (
	PasswordMinLength  = 12
	PasswordMinClasses = 3
)

// CheckPasswordPolicy returns a *PasswordPolicyError when password is too weak.
func CheckPasswordPolicy(password string) error {
	if n := len([]rune(password)); n < PasswordMinLength {
		return &PasswordPolicyError{Reason: fmt.Sprintf("password must be at least %d characters", PasswordMinLength)}
	}
	var lower, upper, digit, symbol int
	for _, r := range password {
		switch {
		case unicode.IsLower(r):
			lower = 1
		case unicode.IsUpper(r):
			upper = 1
		case unicode.IsDigit(r):
			digit = 1
		default:
			symbol = 1
		}
	}
	if lower+upper+digit+symbol < PasswordMinClasses {
		return &PasswordPolicyError{Reason: "password must mix at least 3 of: lowercase, uppercase, digits, symbols"}
	}
	return nil
}
