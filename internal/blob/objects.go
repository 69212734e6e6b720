package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
)

// Objects keeps finished files that the service serves by byte range (a raster dataset's Cloud
// Optimized GeoTIFF, under rasters/<dataset_id>/v<version>.tif): on the local disk under
// DATA_DIR, or in the S3 bucket when one is configured. Keys are this service's own, never a
// client's.
type Objects interface {
	// PutFile stores the file at src under key and returns its size. The local backend moves the
	// file (no second copy); S3 uploads it and leaves src to the caller.
	PutFile(ctx context.Context, key, src string) (int64, error)
	// Delete removes key; a key that does not exist is no error.
	Delete(ctx context.Context, key string) error
	// Open opens key for random access; ErrNoObject when it does not exist.
	Open(ctx context.Context, key string) (Object, error)
}

// Object is one stored file opened for reading: ReadAt for random access (a tile read is one
// call, on S3 one ranged GET), Range for streaming one span (one ranged GET on S3).
type Object interface {
	io.ReaderAt
	io.Closer
	Size() int64
	ModTime() time.Time
	// Range streams bytes [off, off+n) of the object.
	Range(ctx context.Context, off, n int64) (io.ReadCloser, error)
}

// ErrNoObject: the key names nothing stored.
var ErrNoObject = errors.New("blob: no such object")

// RasterKey is where version v of a raster dataset's COG is stored.
func RasterKey(dataset fmt.Stringer, version int) string {
	return fmt.Sprintf("rasters/%s/v%d.tif", dataset, version)
}

// checkKey refuses keys that could leave the store's directory.
func checkKey(key string) error {
	if key == "" || strings.HasPrefix(key, "/") || path.Clean(key) != key || strings.Contains(key, "..") {
		return fmt.Errorf("blob: invalid key %q", key)
	}
	return nil
}

// LocalObjects stores objects as files under Dir (DATA_DIR).
type LocalObjects struct{ Dir string }

func (l LocalObjects) path(key string) (string, error) {
	if err := checkKey(key); err != nil {
		return "", err
	}
	return filepath.Join(l.Dir, filepath.FromSlash(key)), nil
}

// LocalPath is the file that holds key, for a reader on this disk (a VRT build links it rather
// than copying it).
func (l LocalObjects) LocalPath(key string) (string, error) { return l.path(key) }

// PutFile implements Objects: the file is renamed into place (it is written on the same disk,
// under DATA_DIR), or copied and then renamed when it lives elsewhere; either way a reader sees
// the whole file or none.
func (l LocalObjects) PutFile(_ context.Context, key, src string) (int64, error) {
	dst, err := l.path(key)
	if err != nil {
		return 0, err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o750); err != nil {
		return 0, err
	}
	st, err := os.Stat(src)
	if err != nil {
		return 0, err
	}
	if err := os.Rename(src, dst); err == nil {
		return st.Size(), nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".put-*")
	if err != nil {
		return 0, err
	}
	in, err := os.Open(src)
	if err == nil {
		_, err = io.Copy(tmp, in)
		in.Close()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), dst)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return 0, err
	}
	return st.Size(), nil
}

// Delete implements Objects; the dataset's directory goes when it is empty.
func (l LocalObjects) Delete(_ context.Context, key string) error {
	p, err := l.path(key)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	_ = os.Remove(filepath.Dir(p)) // fails, harmlessly, while another version is there
	return nil
}

// Open implements Objects.
func (l LocalObjects) Open(_ context.Context, key string) (Object, error) {
	p, err := l.path(key)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNoObject
	}
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return localObject{File: f, size: st.Size(), mod: st.ModTime()}, nil
}

type localObject struct {
	*os.File
	size int64
	mod  time.Time
}

func (o localObject) Size() int64        { return o.size }
func (o localObject) ModTime() time.Time { return o.mod }

// Range implements Object: a section of the open file (closing it leaves the file open).
func (o localObject) Range(_ context.Context, off, n int64) (io.ReadCloser, error) {
	return io.NopCloser(io.NewSectionReader(o.File, off, n)), nil
}

// PutFile implements Objects for S3.
func (s *S3) PutFile(ctx context.Context, key, src string) (int64, error) {
	info, err := s.core.Client.FPutObject(ctx, s.bucket, key, src, minio.PutObjectOptions{ContentType: "image/tiff"})
	if err != nil {
		return 0, fmt.Errorf("object storage: %w", err)
	}
	return info.Size, nil
}

// Delete implements Objects for S3.
func (s *S3) Delete(ctx context.Context, key string) error {
	err := s.core.RemoveObject(ctx, s.bucket, key, minio.RemoveObjectOptions{})
	if err != nil && minio.ToErrorResponse(err).Code != "NoSuchKey" {
		return fmt.Errorf("object storage: %w", err)
	}
	return nil
}

// Open implements Objects for S3: the object's size and date from one HEAD; reads are ranged GETs.
func (s *S3) Open(ctx context.Context, key string) (Object, error) {
	info, err := s.core.StatObject(ctx, s.bucket, key, minio.StatObjectOptions{})
	if minio.ToErrorResponse(err).Code == "NoSuchKey" {
		return nil, ErrNoObject
	}
	if err != nil {
		return nil, fmt.Errorf("object storage: %w", err)
	}
	return &s3Object{s: s, key: key, size: info.Size, mod: info.LastModified, etag: info.ETag}, nil
}

type s3Object struct {
	s         *S3
	key, etag string
	size      int64
	mod       time.Time
}

func (o *s3Object) Size() int64        { return o.size }
func (o *s3Object) ModTime() time.Time { return o.mod }
func (o *s3Object) Close() error       { return nil }

// Range implements Object: one GET of exactly that span, of the version Open saw.
func (o *s3Object) Range(ctx context.Context, off, n int64) (io.ReadCloser, error) {
	if n <= 0 || off >= o.size {
		return io.NopCloser(strings.NewReader("")), nil
	}
	opts := minio.GetObjectOptions{}
	if err := opts.SetRange(off, min(off+n, o.size)-1); err != nil {
		return nil, err
	}
	if o.etag != "" {
		_ = opts.SetMatchETag(o.etag)
	}
	body, _, _, err := o.s.core.GetObject(ctx, o.s.bucket, o.key, opts)
	if err != nil {
		return nil, fmt.Errorf("object storage: %w", err)
	}
	return body, nil
}

// ReadAt implements io.ReaderAt with one ranged GET per call.
func (o *s3Object) ReadAt(p []byte, off int64) (int, error) {
	if off >= o.size {
		return 0, io.EOF
	}
	body, err := o.Range(context.Background(), off, int64(len(p)))
	if err != nil {
		return 0, err
	}
	defer body.Close()
	n, err := io.ReadFull(body, p[:min(int64(len(p)), o.size-off)])
	if err == nil && n < len(p) {
		err = io.EOF
	}
	return n, err
}
