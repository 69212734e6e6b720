package auth

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"time"

	"github.com/google/uuid"
	"golang.org/x/crypto/hkdf"

	"meridian/internal/apperr"
)

// DownloadTokens issues and checks the short-lived tokens that let a browser follow a download
// link without headers. They are stateless: dataset, user and expiry signed with HMAC-SHA256
// under a key derived from JWT_SECRET_KEY for this purpose only.
type DownloadTokens struct {
	key []byte
	ttl time.Duration
	now func() time.Time
}

// DownloadTokenTTL is the lifetime of open-points.md ({token, expires_in: 120}).
const DownloadTokenTTL = 120 * time.Second

// NewDownloadTokens derives the signing key from the deployment secret.
func NewDownloadTokens(secret string) *DownloadTokens {
	key := make([]byte, 32)
	_, _ = io.ReadFull(hkdf.New(sha256.New, []byte(secret), nil, []byte("meridian/download-token/v1")), key)
	return &DownloadTokens{key: key, ttl: DownloadTokenTTL, now: time.Now}
}

// Issue returns a token for userID to download datasetID.
func (d *DownloadTokens) Issue(datasetID, userID uuid.UUID) string {
	payload := make([]byte, 40)
	copy(payload, datasetID[:])
	copy(payload[16:], userID[:])
	binary.BigEndian.PutUint64(payload[32:], uint64(d.now().Add(d.ttl).Unix()))
	b64 := base64.RawURLEncoding
	return b64.EncodeToString(payload) + "." + b64.EncodeToString(d.mac(payload))
}

// ErrBadDownloadToken covers a malformed, forged, expired or other-dataset token.
var ErrBadDownloadToken = errors.New("auth: invalid or expired download token")

// Verify returns the user a token was issued to, if it is valid for datasetID now.
func (d *DownloadTokens) Verify(token string, datasetID uuid.UUID) (uuid.UUID, error) {
	b64 := base64.RawURLEncoding
	p, s, ok := strings.Cut(token, ".")
	payload, err1 := b64.DecodeString(p)
	sig, err2 := b64.DecodeString(s)
	if !ok || err1 != nil || err2 != nil || len(payload) != 40 || !hmac.Equal(sig, d.mac(payload)) {
		return uuid.Nil, ErrBadDownloadToken
	}
	if uuid.UUID(payload[:16]) != datasetID || d.now().Unix() > int64(binary.BigEndian.Uint64(payload[32:])) {
		return uuid.Nil, ErrBadDownloadToken
	}
	return uuid.UUID(payload[16:32]), nil
}

func (d *DownloadTokens) mac(payload []byte) []byte {
	m := hmac.New(sha256.New, d.key)
	m.Write(payload)
	return m.Sum(nil)
}

// DownloadPrincipal is the caller a valid download token stands for: its user, while that user
// may still sign in.
func (s *Service) DownloadPrincipal(ctx context.Context, userID uuid.UUID) (Principal, error) {
	u, err := s.Q.GetUserByID(ctx, userID)
	if err != nil || u.Status != "active" {
		return Principal{}, apperr.Unauthorized("the download token's user can no longer sign in")
	}
	return Principal{UserID: u.ID, Username: u.Username, Role: u.Role, Via: "download_token"}, nil
}
