package blob

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3 is S3-compatible object storage (AWS S3, MinIO ...), reached with minio-go.
type S3 struct {
	core   minio.Core
	bucket string
}

// S3Config says where the bucket is.
type S3Config struct {
	Endpoint, Region, Bucket, AccessKey, SecretKey string
	UseSSL                                         bool
}

// NewS3 connects to the endpoint; the bucket must exist.
func NewS3(cfg S3Config) (*S3, error) {
	c, err := minio.NewCore(cfg.Endpoint, &minio.Options{
		Creds:  credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""),
		Secure: cfg.UseSSL, Region: cfg.Region,
	})
	if err != nil {
		return nil, err
	}
	return &S3{core: *c, bucket: cfg.Bucket}, nil
}

// Start implements Storage: a presigned PUT of the object, or a multipart upload with one
// presigned UploadPart URL per part.
func (s *S3) Start(ctx context.Context, _ uuid.UUID, key string, count int, expires time.Time) ([]string, string, error) {
	ttl := time.Until(expires)
	if count == 1 {
		u, err := s.core.PresignedPutObject(ctx, s.bucket, key, ttl)
		if err != nil {
			return nil, "", err
		}
		return []string{u.String()}, "", nil
	}
	uploadID, err := s.core.NewMultipartUpload(ctx, s.bucket, key, minio.PutObjectOptions{})
	if err != nil {
		return nil, "", err
	}
	urls := make([]string, count)
	for i := range urls {
		q := url.Values{"partNumber": {strconv.Itoa(i + 1)}, "uploadId": {uploadID}}
		u, err := s.core.Presign(ctx, "PUT", s.bucket, key, ttl, q)
		if err != nil {
			return nil, "", err
		}
		urls[i] = u.String()
	}
	return urls, uploadID, nil
}

// Finish implements Storage: completes a multipart upload with the client's ETags, downloads the
// object to dst and deletes it from the bucket.
func (s *S3) Finish(ctx context.Context, _ uuid.UUID, key, uploadID string, parts []Part, count int, dst string) (int64, error) {
	if count > 1 {
		cp := make([]minio.CompletePart, len(parts))
		for i, p := range parts {
			cp[i] = minio.CompletePart{PartNumber: p.Number, ETag: strings.Trim(p.ETag, `"`)}
		}
		if _, err := s.core.CompleteMultipartUpload(ctx, s.bucket, key, uploadID, cp, minio.PutObjectOptions{}); err != nil {
			switch minio.ToErrorResponse(err).Code {
			case "InvalidPart", "InvalidPartOrder", "EntityTooSmall":
				return 0, ErrETagMismatch
			case "NoSuchUpload":
				return 0, ErrPartMissing
			}
			return 0, fmt.Errorf("object storage: %w", err)
		}
	}
	info, err := s.core.StatObject(ctx, s.bucket, key, minio.StatObjectOptions{})
	if minio.ToErrorResponse(err).Code == "NoSuchKey" {
		return 0, ErrPartMissing
	}
	if err != nil {
		return 0, fmt.Errorf("object storage: %w", err)
	}
	if err := s.core.Client.FGetObject(ctx, s.bucket, key, dst, minio.GetObjectOptions{}); err != nil {
		return 0, fmt.Errorf("object storage: %w", err)
	}
	// The staging copy is what the import reads. A leftover object is only clutter (bucket
	// lifecycle rules collect it), so a failed delete does not fail the upload.
	_ = s.core.RemoveObject(ctx, s.bucket, key, minio.RemoveObjectOptions{})
	return info.Size, nil
}

// Name implements Storage.
func (s *S3) Name() string { return "s3" }

// Probe implements Storage: the bucket exists and the credentials may see it.
func (s *S3) Probe(ctx context.Context) error {
	ok, err := s.core.BucketExists(ctx, s.bucket)
	if err == nil && !ok {
		err = fmt.Errorf("bucket %s does not exist", s.bucket)
	}
	return err
}
