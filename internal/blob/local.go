// Package blob stores uploaded files. The local backend stands in for object storage: it signs
// expiring PUT URLs (HMAC-SHA256) that Meridian itself accepts, so the presigned upload flow
// works with no object store at all.
package blob

import (
	"crypto/hmac"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/google/uuid"
)

// Local signs and stores the parts of presigned uploads under Dir/staging/<job>/parts.
type Local struct {
	Dir string // DATA_DIR
	// BaseURL is the public base URL when the request does not say another (see PartURL).
	BaseURL string
	key     []byte
}

// PartPath is where the API receives the parts of local presigned uploads, under its own root:
// browsers send them to the origin they talk to, and refuse others.
const PartPath = "/api/storage/uploads/"

// NewLocal derives the URL-signing key from secret (a purpose-specific HMAC of it).
func NewLocal(dir, baseURL, secret string) *Local {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("meridian/presigned-upload/v1"))
	return &Local{Dir: dir, BaseURL: baseURL, key: m.Sum(nil)}
}

func (l *Local) sign(job uuid.UUID, part int, exp int64) string {
	m := hmac.New(sha256.New, l.key)
	fmt.Fprintf(m, "%s|%d|%d", job, part, exp)
	return hex.EncodeToString(m.Sum(nil))
}

// PartURL is the presigned PUT URL of one part (1-based) at base, the public base URL of the
// request that asked for it (BASE_URL, or a trusted proxy's address), like every other absolute
// link the API gives.
func (l *Local) PartURL(base string, job uuid.UUID, part int, expires time.Time) string {
	exp := expires.Unix()
	q := url.Values{"exp": {strconv.FormatInt(exp, 10)}, "sig": {l.sign(job, part, exp)}}
	return fmt.Sprintf("%s%s%s/%d?%s", base, PartPath, job, part, q.Encode())
}

// Errors of a presigned PUT.
var (
	ErrBadSignature = errors.New("blob: the upload URL's signature does not match")
	ErrExpired      = errors.New("blob: the upload URL has expired")
)

// Verify checks a part URL's signature (constant time) and expiry.
func (l *Local) Verify(job uuid.UUID, part int, exp, sig string, now time.Time) error {
	e, err := strconv.ParseInt(exp, 10, 64)
	if err != nil || !hmac.Equal([]byte(sig), []byte(l.sign(job, part, e))) {
		return ErrBadSignature
	}
	if now.Unix() > e {
		return ErrExpired
	}
	return nil
}

func (l *Local) partsDir(job uuid.UUID) string {
	return filepath.Join(l.Dir, "staging", job.String(), "parts")
}

// PutPart streams one part to disk, refusing more than max bytes, and returns its ETag (MD5 hex,
// as S3 gives for single-part objects).
func (l *Local) PutPart(job uuid.UUID, part int, r io.Reader, max int64) (string, int64, error) {
	dir := l.partsDir(job)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", 0, err
	}
	f, err := os.CreateTemp(dir, ".part-*")
	if err != nil {
		return "", 0, err
	}
	h := md5.New()
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(r, max+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n > max {
		err = ErrTooLarge
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(dir, strconv.Itoa(part)))
	}
	if err != nil {
		os.Remove(f.Name())
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// ErrTooLarge: more bytes than the part (or the declared file) may have.
var ErrTooLarge = errors.New("blob: more data than declared")

// PartETag returns the ETag of a stored part, or "" when the part is missing.
func (l *Local) PartETag(job uuid.UUID, part int) (string, int64, error) {
	f, err := os.Open(filepath.Join(l.partsDir(job), strconv.Itoa(part)))
	if errors.Is(err, os.ErrNotExist) {
		return "", 0, nil
	}
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := md5.New()
	n, err := io.Copy(h, f)
	return hex.EncodeToString(h.Sum(nil)), n, err
}

// Assemble concatenates parts 1..count into dst and removes the parts.
func (l *Local) Assemble(job uuid.UUID, count int, dst string) (int64, error) {
	out, err := os.Create(dst)
	if err != nil {
		return 0, err
	}
	var total int64
	for i := 1; i <= count; i++ {
		in, err := os.Open(filepath.Join(l.partsDir(job), strconv.Itoa(i)))
		if err != nil {
			out.Close()
			os.Remove(dst)
			return 0, err
		}
		n, err := io.Copy(out, in)
		in.Close()
		total += n
		if err != nil {
			out.Close()
			os.Remove(dst)
			return 0, err
		}
	}
	if err := out.Close(); err != nil {
		return 0, err
	}
	return total, os.RemoveAll(l.partsDir(job))
}
