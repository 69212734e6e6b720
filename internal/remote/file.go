package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ErrChanged: the remote file is not the one opened any more (another length or ETag), so
// bytes read before and after do not belong together.
var ErrChanged = errors.New("remote: the file changed on its server while it was read")

// ErrNoRanges: the server answers the whole file where a byte range was asked for.
var ErrNoRanges = errors.New("remote: the server does not serve byte ranges")

// File is a remote file read by byte range (a registered raster's COG): every read is one ranged
// GET under the client's policy (the URL and every redirect checked, the addresses dialled
// checked, the credential sent to its origin only), never a download of the whole. It
// implements io.ReaderAt, and Range and Size like a stored object (internal/blob's Object).
type File struct {
	c    *Client
	href string
	cred *Credential
	size int64
	etag string
	mod  time.Time
}

// OpenFile learns the length of the remote file raw by a GET of its first byte, which a server
// that serves ranges answers 206 with the whole length (HEAD is not asked: presigned object
// URLs are often signed for GET only). cred, when not nil, goes with every read to its origin.
// A server that answers the whole file, an error status or nothing in time is the remote's
// failure (502); an address the policy refuses is the caller's (422).
func (c *Client) OpenFile(ctx context.Context, raw string, cred *Credential) (*File, error) {
	f := &File{c: c, href: raw, cred: cred}
	res, cancel, err := f.get(ctx, 0, 1, c.policy.Timeout, "REMOTE_TIMEOUT")
	if err != nil {
		return nil, err
	}
	defer cancel()
	defer res.Body.Close()
	switch {
	case res.StatusCode == http.StatusRequestedRangeNotSatisfiable:
		return nil, c.failure(raw, errors.New("the file is empty"))
	case res.StatusCode == http.StatusOK:
		return nil, c.failure(raw, ErrNoRanges)
	case res.StatusCode != http.StatusPartialContent:
		return nil, c.failure(raw, fmt.Errorf("the server answered HTTP %d", res.StatusCode))
	}
	_, _, total, err := contentRange(res.Header.Get("Content-Range"))
	if err != nil || total <= 0 {
		return nil, c.failure(raw, fmt.Errorf("%w: Content-Range %q", ErrNoRanges, res.Header.Get("Content-Range")))
	}
	f.size, f.etag = total, res.Header.Get("ETag")
	if t, err := http.ParseTime(res.Header.Get("Last-Modified")); err == nil {
		f.mod = t
	}
	return f, nil
}

// Href is the address the file is read at.
func (f *File) Href() string { return f.href }

// Size is the file's length when it was opened.
func (f *File) Size() int64 { return f.size }

// ETag is the server's entity tag of the file when it was opened, "" when it gave none.
func (f *File) ETag() string { return f.etag }

// ModTime is the server's Last-Modified of the file, zero when it gave none.
func (f *File) ModTime() time.Time { return f.mod }

// Close implements io.Closer: a File holds no connection between reads.
func (f *File) Close() error { return nil }

// ReadAt reads len(p) bytes at off in one ranged GET, within the policy's REMOTE_TIMEOUT.
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("remote: negative offset %d", off)
	}
	if off >= f.size {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	n := min(int64(len(p)), f.size-off)
	body, err := f.rangeBody(context.Background(), off, n, f.c.policy.Timeout, "REMOTE_TIMEOUT")
	if err != nil {
		return 0, err
	}
	defer body.Close()
	got, err := io.ReadFull(body, p[:n])
	if err != nil {
		return got, err // the body's errors say what failed already
	}
	if n < int64(len(p)) {
		return got, io.EOF
	}
	return got, nil
}

// Range streams bytes [off, off+n) of the file in one ranged GET, within the policy's
// REMOTE_ASSET_TIMEOUT (a whole file may be asked for); a body that ends short is an error.
func (f *File) Range(ctx context.Context, off, n int64) (io.ReadCloser, error) {
	if off < 0 || n < 0 || off+n > f.size {
		return nil, fmt.Errorf("remote: bytes %d+%d outside a file of %d", off, n, f.size)
	}
	if n == 0 {
		return io.NopCloser(strings.NewReader("")), nil
	}
	timeout, setting := f.c.policy.AssetTimeout, "REMOTE_ASSET_TIMEOUT"
	if timeout <= 0 {
		timeout, setting = f.c.policy.Timeout, "REMOTE_TIMEOUT"
	}
	return f.rangeBody(ctx, off, n, timeout, setting)
}

// rangeBody sends the GET of [off, off+n) and checks that the answer is that span of the file
// opened: 206, the Content-Range asked for, the same length and ETag.
func (f *File) rangeBody(ctx context.Context, off, n int64, timeout time.Duration, setting string) (io.ReadCloser, error) {
	res, cancel, err := f.get(ctx, off, n, timeout, setting)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (io.ReadCloser, error) {
		res.Body.Close()
		cancel()
		return nil, f.c.failure(f.href, err)
	}
	switch {
	case res.StatusCode == http.StatusOK:
		return fail(ErrNoRanges)
	case res.StatusCode == http.StatusRequestedRangeNotSatisfiable:
		return fail(fmt.Errorf("%w: bytes from %d are past its end", ErrChanged, off))
	case res.StatusCode != http.StatusPartialContent:
		return fail(fmt.Errorf("the server answered HTTP %d", res.StatusCode))
	}
	first, last, total, err := contentRange(res.Header.Get("Content-Range"))
	switch {
	case err != nil:
		return fail(fmt.Errorf("%w: Content-Range %q", ErrNoRanges, res.Header.Get("Content-Range")))
	case total != f.size, f.etag != "" && res.Header.Get("ETag") != "" && res.Header.Get("ETag") != f.etag:
		return fail(ErrChanged)
	case first != off || last != off+n-1:
		return fail(fmt.Errorf("%w: bytes %d-%d came for %d-%d", ErrNoRanges, first, last, off, off+n-1))
	}
	return &spanBody{r: io.LimitReader(res.Body, n), c: res.Body, cancel: cancel, left: n, f: f}, nil
}

// get sends a GET of bytes [off, off+n) with the file's credential, bounded by timeout.
func (f *File) get(ctx context.Context, off, n int64, timeout time.Duration, setting string) (*http.Response, context.CancelFunc, error) {
	u, err := f.c.Check(f.href)
	if err != nil {
		return nil, nil, err
	}
	if f.cred != nil {
		ctx = WithCredential(ctx, *f.cred)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	req, err := request(ctx, http.MethodGet, u, f.href, http.Header{"Range": {fmt.Sprintf("bytes=%d-%d", off, off+n-1)}}, nil)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	// No transparent gzip: a compressed answer's length is not the span's.
	req.Header.Set("Accept-Encoding", "identity")
	res, err := f.c.http.Do(req)
	if err != nil {
		err = timedOut(ctx, err, timeout, setting)
		cancel()
		return nil, nil, f.c.failure(f.href, err)
	}
	return res, cancel, nil
}

// spanBody is a span's body: it fails (rather than ends) when the server sends fewer bytes.
type spanBody struct {
	r      io.Reader
	c      io.Closer
	cancel context.CancelFunc
	left   int64
	f      *File
}

func (b *spanBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.left -= int64(n)
	if err == io.EOF && b.left > 0 {
		return n, b.f.c.failure(b.f.href, io.ErrUnexpectedEOF)
	}
	if err != nil && err != io.EOF {
		return n, b.f.c.failure(b.f.href, err)
	}
	return n, err
}

func (b *spanBody) Close() error {
	err := b.c.Close()
	b.cancel()
	return err
}

// contentRange reads "bytes first-last/total" (total "*" is unknown: an error here).
func contentRange(h string) (first, last, total int64, err error) {
	spec, ok := strings.CutPrefix(strings.TrimSpace(h), "bytes ")
	if !ok {
		return 0, 0, 0, errors.New("not a byte range")
	}
	span, size, ok := strings.Cut(spec, "/")
	a, b, ok2 := strings.Cut(span, "-")
	if !ok || !ok2 {
		return 0, 0, 0, errors.New("malformed")
	}
	if first, err = strconv.ParseInt(a, 10, 64); err != nil {
		return
	}
	if last, err = strconv.ParseInt(b, 10, 64); err != nil {
		return
	}
	if total, err = strconv.ParseInt(size, 10, 64); err != nil {
		return
	}
	if first < 0 || last < first || last >= total {
		return 0, 0, 0, errors.New("inconsistent")
	}
	return first, last, total, nil
}
