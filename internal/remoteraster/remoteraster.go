// Package remoteraster reads registered rasters (STAC Import mode register): GeoTIFFs left at
// their remote address and read by byte range, never copied. Download COG streams the remote
// bytes (Open); a tile or quicklook is GDAL's warp of the part it shows (Warp), GDAL reading the
// remote file only through the loopback range proxy (internal/rangeproxy), whose every fetch
// passes the remote policy (internal/remote). A credential the import was given is kept sealed
// on that import and sent with these reads to the origin of its catalog only.
package remoteraster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"meridian/internal/apperr"
	"meridian/internal/blob"
	"meridian/internal/catalog"
	"meridian/internal/gdalcmd"
	"meridian/internal/rangeproxy"
	"meridian/internal/remote"
	"meridian/internal/secretbox"
	"meridian/store"
)

// Reader opens and warps registered rasters. Set its fields, then use it from any goroutine.
type Reader struct {
	Remote  *remote.Client
	Proxy   *rangeproxy.Proxy
	GDAL    gdalcmd.Limits
	Q       *store.Queries
	Box     *secretbox.Box
	Timeout time.Duration // REMOTE_TIMEOUT: one ranged read's bound, which GDAL's reads get too

	once  sync.Once
	warps chan struct{}
}

// Bounds of the work one tile or quicklook may cause.
const (
	// TileBudget is the most bytes of the remote file one warp reads: a COG read at the
	// overview a tile needs takes a few internal tiles; one without overviews seen whole at a
	// low zoom is refused (502) rather than downloaded.
	TileBudget = 32 << 20
	// warpTime bounds one warp (the remote's reads included): longer is 504.
	warpTime = 60 * time.Second
	// warpWait is how long a warp waits for one of the warp slots before 503.
	warpWait = 20 * time.Second
)

func (r *Reader) init() {
	r.once.Do(func() { r.warps = make(chan struct{}, max(2, runtime.GOMAXPROCS(0))) })
}

// Credential is the credential of import id as it goes with the reads of its registered rasters:
// header and value, to the origin of the import's catalog URL. nil when the import kept none.
func (r *Reader) Credential(ctx context.Context, id *uuid.UUID) (*remote.Credential, error) {
	if id == nil {
		return nil, nil
	}
	row, err := r.Q.StacImportCredential(ctx, *id)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && row.Credential == nil) {
		return nil, nil // the import (or its owner) is gone: reads go without, as anyone's would
	}
	if err != nil {
		return nil, err
	}
	return Unseal(r.Box, row.Url, row.Credential)
}

// sealed is the JSON a credential is sealed as (STAC Import's credentials).
type sealed struct {
	Header string `json:"header"`
	Value  string `json:"value"`
}

// Seal encrypts a credential (header and value) for keeping.
func Seal(box *secretbox.Box, header, value string) ([]byte, error) {
	b, err := json.Marshal(sealed{Header: header, Value: value})
	if err != nil {
		return nil, err
	}
	return box.Seal(b)
}

// Unseal opens a sealed credential as one that goes to the origin of catalogURL only.
func Unseal(box *secretbox.Box, catalogURL string, b []byte) (*remote.Credential, error) {
	plain, err := box.Open(b)
	if err != nil {
		return nil, fmt.Errorf("the import's credential cannot be read (was JWT_SECRET changed?): %w", err)
	}
	var c sealed
	if err := json.Unmarshal(plain, &c); err != nil {
		return nil, err
	}
	if err := remote.CheckCredential(c.Header, c.Value); err != nil {
		return nil, err
	}
	return &remote.Credential{Origin: remote.OriginOf(catalogURL), Header: c.Header, Value: c.Value}, nil
}

// File opens src's remote file for ranged reads, with its credential.
func (r *Reader) File(ctx context.Context, src catalog.RemoteRaster) (*remote.File, error) {
	cred, err := r.Credential(ctx, src.CredentialImport)
	if err != nil {
		return nil, err
	}
	f, err := r.Remote.OpenFile(ctx, src.Href, cred)
	return f, public(err, src.Href)
}

// public is err as anyone who may read the dataset sees it: the remote's address without its
// query, which may carry a signature the importer was given.
func public(err error, href string) error {
	var ae *apperr.Error
	if err == nil || !errors.As(err, &ae) || redact(href) == href {
		return err
	}
	out := *ae
	out.Detail = strings.ReplaceAll(ae.Detail, href, redact(href))
	return &out
}

// OpenRemote implements catalog.RemoteFiles (Download COG).
func (r *Reader) OpenRemote(ctx context.Context, src catalog.RemoteRaster) (blob.Object, string, error) {
	f, err := r.File(ctx, src)
	if err != nil {
		return nil, "", err
	}
	return f, tagOf(f), nil
}

// tagOf names a remote file's version by what its server says of it.
func tagOf(f *remote.File) string {
	tag := strings.Trim(strings.TrimPrefix(f.ETag(), "W/"), `"`)
	var b strings.Builder
	for _, c := range tag + "-" + strconv.FormatInt(f.Size(), 36) + "-" + strconv.FormatInt(f.ModTime().Unix(), 36) {
		// An ETag of ours is quoted: keep what may stand inside one.
		if c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
			b.WriteRune(c)
		}
	}
	return b.String()
}

// Window is a warp's output: a box in EPSG:3857 (west, south, east, north) at Width x Height
// pixels, and the resampling (nearest for classes, bilinear otherwise).
type Window struct {
	Box           [4]float64
	Width, Height int
	Resampling    string
}

// Warp writes src's pixels in w to out, a tiled (256) uncompressed GeoTIFF in EPSG:3857:
// gdalwarp, reading the overview it needs, through a grant of the range proxy of TileBudget
// bytes. Pixels without data are nodata when the source has a nodata value, transparent (an
// alpha band) otherwise. A remote that fails is 502, one slower than the warp's time 504, no
// free warp slot in time 503.
func (r *Reader) Warp(ctx context.Context, src catalog.RemoteRaster, hasNoData bool, w Window, out string) error {
	r.init()
	wait, cancel := context.WithTimeout(ctx, warpWait)
	defer cancel()
	select {
	case r.warps <- struct{}{}:
	case <-wait.Done():
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &apperr.Error{Kind: apperr.KindUnavailable, Title: "Service Unavailable", RetryAfter: 5 * time.Second,
			Detail: "the server is warping as many registered rasters as it does at once; retry in a few seconds"}
	}
	defer func() { <-r.warps }()
	f, err := r.File(ctx, src)
	if err != nil {
		return err
	}
	g, err := r.Proxy.Issue(f, TileBudget, warpTime+time.Minute)
	if err != nil {
		return err
	}
	defer g.Close()
	return r.gdalwarp(ctx, g, src, hasNoData, w, out)
}

// gdalwarp runs the warp of grant g and says what failed: the remote (what the grant saw) before
// GDAL's words.
func (r *Reader) gdalwarp(ctx context.Context, g *rangeproxy.Grant, src catalog.RemoteRaster, hasNoData bool, w Window, out string) error {
	ctx, cancel := context.WithTimeout(ctx, warpTime)
	defer cancel()
	num := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	args := []string{"-q", "-overwrite", "-of", "GTiff", "-t_srs", "EPSG:3857", "-r", w.Resampling,
		"-te", num(w.Box[0]), num(w.Box[1]), num(w.Box[2]), num(w.Box[3]), "-ts", strconv.Itoa(w.Width), strconv.Itoa(w.Height),
		"-co", "TILED=YES", "-co", "BLOCKXSIZE=256", "-co", "BLOCKYSIZE=256", "-co", "COMPRESS=NONE"}
	if !hasNoData {
		args = append(args, "-dstalpha")
	}
	cmd, err := gdalcmd.Command(ctx, r.GDAL, []string{"GTiff"}, Env(r.Timeout), "gdalwarp", append(args, g.VSIPath(), out)...)
	if err != nil {
		return err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	if err == nil && !strings.Contains(stderr.String(), "ERROR") {
		return nil
	}
	return failure(ctx, g, src, err, r.GDAL.Exceeded(err, stderr.String()), stderr.String())
}

// failure is a failed warp's problem.
func failure(ctx context.Context, g *rangeproxy.Grant, src catalog.RemoteRaster, err error, limit, stderr string) error {
	href := redact(src.Href)
	switch cause := g.Err(); {
	case errors.Is(cause, rangeproxy.ErrBudget):
		return apperr.Wrap(apperr.KindUpstream, cause, fmt.Sprintf("the registered raster %s would have to be read beyond %d MB for this "+
			"picture: it has no overview at this scale; zoom in", href, TileBudget>>20))
	case cause != nil && apperr.KindOf(cause) != apperr.KindInternal:
		return public(cause, src.Href)
	case cause != nil:
		return apperr.Wrap(apperr.KindUpstream, cause, "the registered raster "+href+" could not be read: "+cause.Error())
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return &apperr.Error{Kind: apperr.KindTimeout, Title: "Gateway Timeout",
			Detail: fmt.Sprintf("the registered raster %s was not read within %s", href, warpTime)}
	case limit != "":
		return apperr.New(apperr.KindUpstream, "the warp of the registered raster %s was stopped: it reached %s", href, limit)
	}
	return apperr.Wrap(apperr.KindUpstream, err, "the registered raster "+href+" could not be read: "+gdalMessage(stderr))
}

// Env are the settings of a GDAL tool that reads a grant of the range proxy.
func Env(timeout time.Duration) []string {
	return append([]string{"GDAL_PAM_ENABLED=NO", "GDAL_GEOREF_SOURCES=INTERNAL"}, rangeproxy.Env(timeout)...)
}

// gdalMessage is the first ERROR line of a tool, without the proxy's address.
func gdalMessage(stderr string) string {
	for _, line := range strings.Split(stderr, "\n") {
		if _, msg, ok := strings.Cut(line, "ERROR"); ok {
			_, msg, _ = strings.Cut(msg, ":")
			if i := strings.Index(msg, "/vsicurl/"); i >= 0 {
				msg = msg[:i] + "the file"
			}
			msg = strings.TrimSpace(msg)
			if len(msg) > 300 {
				msg = msg[:300]
			}
			return msg
		}
	}
	return "GDAL could not read it"
}

// redact is an address without its query (a presigned URL's signature) or user.
func redact(raw string) string {
	u, _, _ := strings.Cut(raw, "?")
	u, _, _ = strings.Cut(u, "#")
	return u
}

var _ catalog.RemoteFiles = (*Reader)(nil)
