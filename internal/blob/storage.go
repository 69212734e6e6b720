package blob

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"

	"meridian/internal/publicurl"
)

// Storage is where presigned uploads go: the local backend, or S3-compatible object storage.
type Storage interface {
	// Start prepares an upload of count parts and returns one presigned PUT URL per part and,
	// for multipart uploads, the upload id.
	Start(ctx context.Context, job uuid.UUID, key string, count int, expires time.Time) (urls []string, uploadID string, err error)
	// Finish completes the upload with the part ETags the client reported, copies the file to
	// dst (the job's staging file) and removes it from storage. It returns the file's size.
	Finish(ctx context.Context, job uuid.UUID, key, uploadID string, parts []Part, count int, dst string) (int64, error)
	// Name says which backend this is ("local", "s3").
	Name() string
	// Probe tells whether uploads can be stored now.
	Probe(ctx context.Context) error
}

// Part is one uploaded part as the client reports it.
type Part struct {
	Number int
	ETag   string
}

// Errors Finish reports for the caller's mistakes (as opposed to storage failures).
var (
	ErrPartMissing  = errors.New("a part was never uploaded")
	ErrETagMismatch = errors.New("a part's ETag does not match the stored part")
)

// Start implements Storage for the local backend.
func (l *Local) Start(ctx context.Context, job uuid.UUID, _ string, count int, expires time.Time) ([]string, string, error) {
	urls := make([]string, count)
	base := publicurl.From(ctx, l.BaseURL)
	for i := range urls {
		urls[i] = l.PartURL(base, job, i+1, expires)
	}
	uploadID := ""
	if count > 1 {
		uploadID = job.String()
	}
	return urls, uploadID, nil
}

// Finish implements Storage for the local backend: every part must be there, with the ETag the
// client got for it (checked for multipart uploads, as S3 does).
func (l *Local) Finish(_ context.Context, job uuid.UUID, _, _ string, parts []Part, count int, dst string) (int64, error) {
	for i := 1; i <= count; i++ {
		etag, _, err := l.PartETag(job, i)
		if err != nil {
			return 0, err
		}
		if etag == "" {
			return 0, ErrPartMissing
		}
		if count > 1 && strings.Trim(parts[i-1].ETag, `"`) != etag {
			return 0, ErrETagMismatch
		}
	}
	return l.Assemble(job, count, dst)
}

// Name implements Storage.
func (l *Local) Name() string { return "local" }

// Probe implements Storage: a file can be written where parts and staged files go.
func (l *Local) Probe(context.Context) error {
	dir := filepath.Join(l.Dir, "staging")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".probe-*")
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(f.Name())
}
