// Package rangeproxy lets GDAL read a remote file without reaching the network itself: a small
// HTTP server inside the serving process, bound to 127.0.0.1 on a port of its own (no part of
// the API), answers HEAD and ranged GETs of short-lived paths it handed out, /r/<token>.tif,
// each the grant of one remote file, by fetching those bytes through internal/remote (its
// policy: private addresses, allow and deny lists, redirects checked again, credentials kept to
// their origin, time bounds). A grant reads at most its byte budget, so a tile cannot pull a
// whole remote file. GDAL is only ever given /vsicurl/ of a URL built here, never one a user
// wrote, and Env keeps it from reaching anything else.
package rangeproxy

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"meridian/internal/remote"
)

// ErrBudget: a grant was asked for more bytes than its budget left.
var ErrBudget = errors.New("rangeproxy: the read needs more of the remote file than one request may fetch")

// File is what a grant reads: a remote file opened for ranged reads (remote.File).
type File interface {
	Size() int64
	Range(ctx context.Context, off, n int64) (io.ReadCloser, error)
}

// Proxy is the loopback server. Its zero value is not usable: Start it.
type Proxy struct {
	ln  net.Listener
	srv *http.Server

	mu     sync.Mutex
	grants map[string]*Grant
}

// Start listens on 127.0.0.1 on a free port and serves the grants until Close.
func Start() (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("rangeproxy: %w", err)
	}
	p := &Proxy{ln: ln, grants: map[string]*Grant{}}
	p.srv = &http.Server{Handler: http.HandlerFunc(p.serve), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 30 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// Close stops the server; every grant ends.
func (p *Proxy) Close() error { return p.srv.Close() }

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Grant is one remote file handed to GDAL: its URL works until Close or its time ends, and
// reads at most its budget.
type Grant struct {
	p       *Proxy
	token   string
	file    File
	expires time.Time

	mu       sync.Mutex
	left     int64 // bytes of the budget not yet read
	err      error // the first failure of a read, for the caller to report
	requests int
}

// Issue hands out file under a new unguessable path for ttl, reading at most budget bytes.
func (p *Proxy) Issue(file File, budget int64, ttl time.Duration) (*Grant, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	g := &Grant{p: p, token: base64.RawURLEncoding.EncodeToString(b), file: file, expires: time.Now().Add(ttl), left: budget}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	for k, old := range p.grants { // grants whose holder forgot them end with their time
		if now.After(old.expires) {
			delete(p.grants, k)
		}
	}
	p.grants[g.token] = g
	return g, nil
}

// URL is the grant's address on the proxy. The .tif extension is the only one GDAL may fetch
// (Env), so no sidecar (.ovr, .msk, .aux.xml) is ever asked for.
func (g *Grant) URL() string { return "http://" + g.p.Addr() + "/r/" + g.token + ".tif" }

// VSIPath is what GDAL opens.
func (g *Grant) VSIPath() string { return "/vsicurl/" + g.URL() }

// Close ends the grant: its URL answers 404 from now on.
func (g *Grant) Close() {
	g.p.mu.Lock()
	defer g.p.mu.Unlock()
	delete(g.p.grants, g.token)
}

// Err is the first failure of a read through the grant (the remote's, or ErrBudget), nil when
// every read succeeded: what to report when GDAL fails, rather than GDAL's own words.
func (g *Grant) Err() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}

// Requests is how many reads the grant answered.
func (g *Grant) Requests() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.requests
}

// fail keeps the first failure.
func (g *Grant) fail(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err == nil {
		g.err = err
	}
}

// take reserves n bytes of the budget, false when they are not left (the grant fails then).
func (g *Grant) take(n int64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.requests++
	if n > g.left {
		if g.err == nil {
			g.err = ErrBudget
		}
		return false
	}
	g.left -= n
	return true
}

func (p *Proxy) grant(path string) *Grant {
	name, ok := strings.CutPrefix(path, "/r/")
	token, ok2 := strings.CutSuffix(name, ".tif")
	if !ok || !ok2 {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	g := p.grants[token]
	if g == nil || time.Now().After(g.expires) {
		return nil
	}
	return g
}

// serve answers HEAD (the length) and GET of one byte range (or, within the budget, of the
// whole file) of a granted file.
func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	g := p.grant(r.URL.Path)
	if g == nil {
		http.NotFound(w, r)
		return
	}
	size := g.file.Size()
	h := w.Header()
	h.Set("Accept-Ranges", "bytes")
	h.Set("Content-Type", "image/tiff")
	switch r.Method {
	case http.MethodHead:
		h.Set("Content-Length", strconv.FormatInt(size, 10))
		w.WriteHeader(http.StatusOK)
		return
	case http.MethodGet:
	default:
		http.Error(w, "GET or HEAD", http.StatusMethodNotAllowed)
		return
	}
	off, n, status := span(r.Header.Get("Range"), size)
	switch status {
	case http.StatusRequestedRangeNotSatisfiable:
		h.Set("Content-Range", "bytes */"+strconv.FormatInt(size, 10))
		w.WriteHeader(status)
		return
	case http.StatusBadRequest:
		http.Error(w, "one byte range", status)
		return
	}
	if !g.take(n) {
		http.Error(w, ErrBudget.Error(), http.StatusForbidden)
		return
	}
	g.copy(w, r, off, n, status)
}

// copy sends bytes [off, off+n) of the grant's file. A remote that fails before the first byte
// answers 502; one that fails later breaks the connection, so GDAL never takes a short read for
// the file's bytes.
func (g *Grant) copy(w http.ResponseWriter, r *http.Request, off, n int64, status int) {
	body, err := g.file.Range(r.Context(), off, n)
	if err != nil {
		g.fail(err)
		http.Error(w, "the remote file could not be read", http.StatusBadGateway)
		return
	}
	defer body.Close()
	h := w.Header()
	h.Set("Content-Length", strconv.FormatInt(n, 10))
	if status == http.StatusPartialContent {
		h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", off, off+n-1, g.file.Size()))
	}
	w.WriteHeader(status)
	if _, err := io.Copy(w, body); err != nil {
		if r.Context().Err() == nil {
			g.fail(err)
		}
		panic(http.ErrAbortHandler)
	}
}

// span reads a Range header of one span against a file of size bytes: its start and length and
// the status to answer (206; 200 for no header, the whole file; 416 past the end; 400 for
// several spans or a malformed one).
func span(header string, size int64) (off, n int64, status int) {
	if header == "" {
		return 0, size, http.StatusOK
	}
	spec, ok := strings.CutPrefix(strings.TrimSpace(header), "bytes=")
	if !ok || strings.Contains(spec, ",") {
		return 0, 0, http.StatusBadRequest
	}
	first, last, ok := strings.Cut(strings.TrimSpace(spec), "-")
	if !ok {
		return 0, 0, http.StatusBadRequest
	}
	if first == "" { // the last `last` bytes
		k, err := strconv.ParseInt(last, 10, 64)
		if err != nil || k <= 0 {
			return 0, 0, http.StatusBadRequest
		}
		k = min(k, size)
		return size - k, k, http.StatusPartialContent
	}
	a, err := strconv.ParseInt(first, 10, 64)
	if err != nil || a < 0 {
		return 0, 0, http.StatusBadRequest
	}
	if a >= size {
		return 0, 0, http.StatusRequestedRangeNotSatisfiable
	}
	b := size - 1
	if last != "" {
		if b, err = strconv.ParseInt(last, 10, 64); err != nil || b < a {
			return 0, 0, http.StatusBadRequest
		}
		b = min(b, size-1)
	}
	return a, b - a + 1, http.StatusPartialContent
}

// Env are the GDAL settings of a tool that reads a grant: HTTP goes straight to 127.0.0.1 (the
// proxy; the offline settings of internal/gdalcmd send every other address to the discard
// port), only .tif paths are fetched, no directory is listed and no sidecar looked for, no
// retry, and a read waits at most timeout (the remote's own bound, with a margin).
func Env(timeout time.Duration) []string {
	secs := strconv.Itoa(int(timeout/time.Second) + 5)
	return []string{
		"no_proxy=127.0.0.1", "NO_PROXY=127.0.0.1",
		"CPL_VSIL_CURL_ALLOWED_EXTENSIONS=.tif", "GDAL_DISABLE_READDIR_ON_OPEN=EMPTY_DIR",
		"GDAL_HTTP_TIMEOUT=" + secs, "GDAL_HTTP_CONNECTTIMEOUT=5", "GDAL_HTTP_MAX_RETRY=0",
		"CPL_VSIL_CURL_USE_HEAD=YES", "CPL_VSIL_CURL_CACHE_SIZE=16777216",
	}
}

var _ File = (*remote.File)(nil)
