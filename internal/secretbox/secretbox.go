// Package secretbox encrypts secrets Meridian has to store and later use in clear, such as the
// client secrets of OAuth providers, under a key derived from the deployment's JWT_SECRET_KEY.
//
// Deriving the key instead of configuring a second one keeps the deployment to one secret; the
// price is that rotating JWT_SECRET_KEY makes every stored secret unreadable. Sealed values carry
// a key id so that Open can say so (ErrKeyRotated) and an administrator can be asked to re-enter
// the secret, instead of the failure looking like corruption.
//
// A sealed value is laid out as
//
//	version (1 byte) | key id (8 bytes) | nonce (12 bytes) | AES-256-GCM ciphertext and tag
//
// The version byte and key id are authenticated as GCM additional data, so neither can be
// altered without Open noticing.
package secretbox

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"

	"golang.org/x/crypto/hkdf"
)

// HKDFInfo binds the derived key to this one purpose (RFC 5869 section 3.2), so the same
// JWT_SECRET_KEY can feed other derivations without their keys being related. Changing it
// makes every stored secret unreadable; bump the suffix together with formatVersion.
const HKDFInfo = "meridian/oauth-client-secret/v1"

// formatVersion is the first byte of every sealed value, so that a future layout or algorithm
// can be told apart from this one.
const formatVersion byte = 1

const (
	keyLen    = 32 // AES-256
	keyIDLen  = 8
	nonceLen  = 12 // GCM's native size; NIST SP 800-38D 8.3 allows 2^32 random nonces per key, far above our secret count
	headerLen = 1 + keyIDLen
	tagLen    = 16
	minSealed = headerLen + nonceLen + tagLen
)

var (
	// ErrKeyRotated reports a value sealed under a different key: JWT_SECRET_KEY has changed
	// since it was stored, and the secret has to be entered again.
	ErrKeyRotated = errors.New("secretbox: sealed under another key (JWT_SECRET_KEY was rotated)")
	// ErrCorrupt reports a value that is malformed or fails authentication.
	ErrCorrupt = errors.New("secretbox: sealed value is corrupt")
)

// Box seals and opens values under one derived key. It is safe for concurrent use.
type Box struct {
	aead  cipher.AEAD
	keyID [keyIDLen]byte
}

// New derives the box key from jwtSecret. The configuration already refuses short or published
// secrets, so New does not judge the secret's strength again.
func New(jwtSecret string) *Box {
	// No salt: the key must be reproducible from JWT_SECRET_KEY alone on every replica and
	// after restarts, and the input is already a high-entropy secret, which is the case
	// RFC 5869 section 3.1 allows a missing salt for.
	key := make([]byte, keyLen)
	if _, err := io.ReadFull(hkdf.New(sha256.New, []byte(jwtSecret), nil, []byte(HKDFInfo)), key); err != nil {
		// HKDF-SHA256 can produce up to 8160 bytes; failing on 32 is a broken invariant.
		panic("secretbox: hkdf: " + err.Error())
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		panic("secretbox: aes: " + err.Error())
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic("secretbox: gcm: " + err.Error())
	}
	b := &Box{aead: aead}
	// The key id is a MAC of a constant rather than a prefix of the key, so publishing it
	// (in sealed values, logs, KeyID) reveals nothing about the key.
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte("key-id"))
	copy(b.keyID[:], mac.Sum(nil))
	return b
}

// KeyID returns the hex id of this box's key. Two boxes have the same id exactly when they
// were derived from the same JWT_SECRET_KEY.
func (b *Box) KeyID() string { return hex.EncodeToString(b.keyID[:]) }

// Seal encrypts plaintext under a fresh random nonce.
func (b *Box) Seal(plaintext []byte) ([]byte, error) {
	out := make([]byte, headerLen+nonceLen, minSealed+len(plaintext))
	out[0] = formatVersion
	copy(out[1:headerLen], b.keyID[:])
	nonce := out[headerLen:]
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return b.aead.Seal(out, nonce, plaintext, out[:headerLen]), nil
}

// Open decrypts a value returned by Seal. It returns ErrKeyRotated when the value was sealed
// under another key and ErrCorrupt when it is malformed or has been altered.
func (b *Box) Open(sealed []byte) ([]byte, error) {
	if len(sealed) < headerLen || sealed[0] != formatVersion {
		return nil, ErrCorrupt
	}
	// The key id is checked before authentication, so a value whose id bytes were damaged
	// reports ErrKeyRotated; both outcomes ask for the secret to be entered again.
	if !bytes.Equal(sealed[1:headerLen], b.keyID[:]) {
		return nil, ErrKeyRotated
	}
	if len(sealed) < minSealed {
		return nil, ErrCorrupt
	}
	header, nonce, ciphertext := sealed[:headerLen], sealed[headerLen:headerLen+nonceLen], sealed[headerLen+nonceLen:]
	plaintext, err := b.aead.Open(nil, nonce, ciphertext, header)
	if err != nil {
		return nil, ErrCorrupt
	}
	if plaintext == nil {
		// An empty secret round-trips as empty, never as nil, so callers can tell it from "absent".
		plaintext = []byte{}
	}
	return plaintext, nil
}
