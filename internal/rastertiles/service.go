package rastertiles

import (
	"container/list"
	"context"
	"errors"
	"io"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/internal/blob"
	"meridian/internal/catalog"
	"meridian/internal/cog"
	"meridian/internal/remoteraster"
	"meridian/internal/tiles"
)

// Source is the seam to raster ingest: where a raster dataset's COG is and what the catalog
// records of it. Raster ingest implements it over catalog.datasets (the RasterMetadata and the
// storage key) and internal/blob (random access to a stored key: a local file, or ranged GETs on
// S3); Files stands in until then.
type Source interface {
	// Locate names dataset d's COG by its storage key, which must change whenever the file does
	// (rasters/<id>/v<version>.tif), and gives its metadata. A raster whose file is not ready
	// (its ingest runs) is an apperr.Conflict.
	Locate(ctx context.Context, d catalog.Dataset) (Located, error)
	// Open opens the COG stored under key for random access.
	Open(ctx context.Context, key string) (Object, error)
}

// Located is a raster dataset's COG and metadata.
type Located struct {
	Key  string
	Meta Meta
	// Remote is a registered raster's remote file, nil for a stored COG: its pictures are
	// warps of the remote (Service.Warper), at the zooms of Grid; or, when Grid.Direct (a COG
	// on the grid already), cut from the remote file read by range like a stored COG.
	Remote    *catalog.RemoteRaster
	Grid      catalog.COGGrid
	HasNoData bool
}

// warps tells a registered raster drawn by warps.
func (l Located) warps() bool { return l.Remote != nil && !l.Grid.Direct }

// Warper reads registered rasters (remoteraster.Reader): warps the part a picture shows, or
// opens the remote file for ranged reads.
type Warper interface {
	Warp(ctx context.Context, src catalog.RemoteRaster, hasNoData bool, w remoteraster.Window, out string) error
	OpenRemote(ctx context.Context, src catalog.RemoteRaster) (blob.Object, string, error)
}

// Object is a stored file open for random access.
type Object interface {
	io.ReaderAt
	io.Closer
	Size() int64
}

// Stored is the Source of raster ingest: the record's raster description (catalog.RasterOf) names
// the COG in the object store (local or S3) and carries the band statistics and the DEM flag.
type Stored struct{ Objects blob.Objects }

// Locate implements Source.
func (s Stored) Locate(_ context.Context, d catalog.Dataset) (Located, error) {
	r, ok, err := catalog.RasterOf(d.Entry)
	if err != nil {
		return Located{}, err
	}
	if ok && r.Remote != nil {
		// No file of ours: the key names the record's version, which a re-import moves on.
		loc := Located{Key: "remote/" + d.Entry.ID.String() + "/v" + strconv.Itoa(int(d.Entry.CurrentVersion)), Remote: r.Remote,
			Grid: r.COG, HasNoData: r.NoData != nil, Meta: metaOf(d, r)}
		return loc, nil
	}
	if !ok || r.StorageKey == "" {
		// A VRT between generations too: before its first, or withdrawn after a source narrowed.
		return Located{}, apperr.Conflict("dataset %s has no raster file yet: its ingest or its VRT generation has not finished", d.Entry.ID)
	}
	return Located{Key: r.StorageKey, Meta: metaOf(d, r)}, nil
}

// metaOf is what the record says of a raster beyond its file.
func metaOf(d catalog.Dataset, r catalog.Raster) Meta {
	// Ingest resamples classes (one band of bytes) by nearest neighbour: so do the tiles.
	m := Meta{IsDEM: r.IsDEM, Categorical: r.Resampling == "nearest"}
	if r.NoData != nil {
		if v, err := strconv.ParseFloat(*r.NoData, 64); err == nil {
			m.NoData = &v
		}
	}
	for _, b := range r.Bands {
		m.Bands = append(m.Bands, BandStats{Min: b.Min, Max: b.Max, Mean: b.Mean, StdDev: b.StdDev, P2: b.P2, P98: b.P98,
			ColorInterp: b.ColorInterp, Quantiles: b.Quantiles})
	}
	if b := d.Entry.ExtentBbox; len(b) == 4 {
		m.Bounds = &[4]float64{b[0], b[1], b[2], b[3]}
	}
	return m
}

// Open implements Source.
func (s Stored) Open(ctx context.Context, key string) (Object, error) {
	if s.Objects == nil {
		return nil, errors.New("rastertiles: no object store for raster files")
	}
	return s.Objects.Open(ctx, key)
}

// Service serves raster tiles, tokens and quicklooks. The vector tile service authorizes,
// signs and keeps rendered tiles (one cache and one signing for both kinds of tiles).
type Service struct {
	Tiles  *tiles.Service
	Source Source
	// Warper draws registered rasters; nil serves none (their tiles answer 409).
	Warper Warper

	once    sync.Once
	decoded *TileCache
	renders chan struct{}

	mu    sync.Mutex
	open  map[string]*opened
	order *list.List // of *opened, most recent first
}

// Bounds of the kept state: open rasters (a file handle and their directories each), decoded
// internal tiles.
const (
	maxOpen         = 64
	decodedMaxBytes = 64 << 20
)

// opened is a raster opened once for every request that needs it.
type opened struct {
	key     string
	ready   chan struct{}
	obj     Object
	r       *Raster
	err     error
	refs    int
	evicted bool
	el      *list.Element
}

func (s *Service) init() {
	s.once.Do(func() {
		s.decoded = NewTileCache(decodedMaxBytes)
		s.renders = make(chan struct{}, 2*runtime.GOMAXPROCS(0))
		s.open = map[string]*opened{}
		s.order = list.New()
	})
}

// raster opens the COG under loc.Key (once, for every caller at once), and returns it with its
// release.
func (s *Service) raster(ctx context.Context, loc Located) (*Raster, func(), error) {
	s.init()
	s.mu.Lock()
	o, ok := s.open[loc.Key]
	if ok {
		s.order.MoveToFront(o.el)
	} else {
		o = &opened{key: loc.Key, ready: make(chan struct{})}
		o.el = s.order.PushFront(o)
		s.open[loc.Key] = o
		for s.order.Len() > maxOpen {
			old := s.order.Back().Value.(*opened)
			s.drop(old)
		}
		go s.load(context.WithoutCancel(ctx), o, loc)
	}
	o.refs++
	s.mu.Unlock()
	release := func() {
		s.mu.Lock()
		o.refs--
		closeNow := o.evicted && o.refs == 0
		s.mu.Unlock()
		if closeNow {
			o.close(s.decoded)
		}
	}
	select {
	case <-o.ready:
	case <-ctx.Done():
		release()
		return nil, nil, ctx.Err()
	}
	if o.err != nil {
		release()
		s.mu.Lock()
		s.drop(o) // the next request tries again
		s.mu.Unlock()
		return nil, nil, o.err
	}
	return o.r, release, nil
}

func (s *Service) load(ctx context.Context, o *opened, loc Located) {
	defer close(o.ready)
	obj, err := s.openFile(ctx, loc)
	if err != nil {
		o.err = err
		return
	}
	r, err := Open(obj, obj.Size(), loc.Meta, s.decoded)
	if err != nil {
		obj.Close()
		o.err = err
		return
	}
	o.obj, o.r = obj, r
}

// openFile opens a raster's COG: the stored one, or a registered raster's remote file.
func (s *Service) openFile(ctx context.Context, loc Located) (Object, error) {
	if loc.Remote == nil {
		return s.Source.Open(ctx, loc.Key)
	}
	if s.Warper == nil {
		return nil, apperr.Conflict("this server does not read registered rasters")
	}
	f, _, err := s.Warper.OpenRemote(ctx, *loc.Remote)
	return f, err
}

// drop forgets o (s.mu held); its file closes when its last user is done.
func (s *Service) drop(o *opened) {
	if s.open[o.key] != o {
		return
	}
	delete(s.open, o.key)
	s.order.Remove(o.el)
	o.evicted = true
	if o.refs == 0 {
		go func() {
			<-o.ready
			o.close(s.decoded)
		}()
	}
}

func (o *opened) close(c *TileCache) {
	if o.obj != nil {
		o.obj.Close()
	}
	if o.r != nil {
		c.forget(o.r)
	}
}

// TileRequest is one raster tile request.
type TileRequest struct {
	ID          uuid.UUID
	Z, X, Y     int
	Format      string // png, jpg, webp
	Params      Params
	IfNoneMatch string
}

// Tile answers one raster tile request of p: a body (empty for a tile without data), or
// NotModified.
func (s *Service) Tile(ctx context.Context, p auth.Principal, r TileRequest, now time.Time) (tiles.Tile, error) {
	if n := 1 << r.Z; r.Z < 0 || r.Z > MaxZoom || r.X < 0 || r.Y < 0 || r.X >= n || r.Y >= n {
		return tiles.Tile{}, apperr.Invalid("tile %d/%d/%d: z is 0..%d, x and y below 2^z", r.Z, r.X, r.Y, MaxZoom)
	}
	if err := format(r.Format); err != nil {
		return tiles.Tile{}, err
	}
	params, err := r.Params.Check()
	if err != nil {
		return tiles.Tile{}, apperr.Invalid("%s", strings.TrimPrefix(err.Error(), ErrParams.Error()+": "))
	}
	if params.Encoding != "" && r.Format != "png" {
		return tiles.Tile{}, apperr.Unprocessable("encoding %s needs exact values: ask for png", params.Encoding)
	}
	d, loc, err := s.locate(ctx, p, r.ID)
	if err != nil {
		return tiles.Tile{}, err
	}
	key := "raster/" + d.Entry.ID.String() + "@" + loc.Key + "/" + strconv.Itoa(r.Z) + "/" + strconv.Itoa(r.X) + "/" +
		strconv.Itoa(r.Y) + "." + r.Format + "|" + params.Key()
	out := tiles.Tile{ETag: tiles.ETag(key), CacheControl: tiles.CacheControl(p, d, now)}
	if tiles.Matches(r.IfNoneMatch, out.ETag) {
		out.NotModified = true
		return out, nil
	}
	draw := func(rs *Raster) ([]byte, error) {
		img, err := rs.Tile(r.Z, r.X, r.Y, params)
		if err != nil || img == nil {
			return []byte{}, err
		}
		return Encode(img, r.Format)
	}
	out.Body, err = s.Tiles.Cache.Fill(ctx, key, func(ctx context.Context) ([]byte, error) {
		switch {
		case loc.warps():
			return s.remoteTile(ctx, loc, r.Z, r.X, r.Y, draw)
		case loc.Remote != nil && !remoteCovers(loc, r.Z, r.X, r.Y):
			return []byte{}, nil // not even the remote file's directories are read for it
		}
		return s.render(ctx, loc, draw)
	})
	return out, problem(d.Entry.ID, err)
}

// format refuses formats not served.
func format(f string) error {
	switch f {
	case "png", "jpg":
		return nil
	case "webp":
		// A pure-Go WEBP encoder (WASM libwebp) took 10x PNG's time per tile: see the README.
		return apperr.Unprocessable("webp tiles are not served: ask for png (with transparency) or jpg")
	}
	return apperr.Invalid("format %q: png or jpg", f)
}

// locate finds the raster dataset id for p: 404 when p may not read it, 422 when it is no
// raster, 409 when its file is not ready.
func (s *Service) locate(ctx context.Context, p auth.Principal, id uuid.UUID) (catalog.Dataset, Located, error) {
	d, err := s.Tiles.Readable(ctx, p, id.String())
	if err != nil {
		return d, Located{}, err
	}
	if !tiles.IsRaster(d) {
		return d, Located{}, apperr.Unprocessable("dataset %s is a %s, not a raster: use its vector tiles", id, d.Entry.RecordType)
	}
	loc, err := s.Source.Locate(ctx, d)
	return d, loc, err
}

// slot takes one of the places of renders at once, waiting while ctx lasts; release gives it back.
func (s *Service) slot(ctx context.Context) (release func(), err error) {
	s.init()
	select {
	case s.renders <- struct{}{}:
		return func() { <-s.renders }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// render runs draw on the opened raster, within the bound of renders at once.
func (s *Service) render(ctx context.Context, loc Located, draw func(*Raster) ([]byte, error)) ([]byte, error) {
	release, err := s.slot(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	rs, done, err := s.raster(ctx, loc)
	if err != nil {
		return nil, err
	}
	defer done()
	return draw(rs)
}

// problem maps what reading a COG may fail with: the file's content (a corrupt tile, a file not
// on the grid) is the raster tile server failing, 502 naming the dataset; parameters the raster
// cannot honour are 422.
func problem(id uuid.UUID, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrParams):
		return apperr.Unprocessable("%s", strings.TrimPrefix(err.Error(), ErrParams.Error()+": "))
	case errors.Is(err, cog.ErrFormat), errors.Is(err, ErrUnservable):
		return apperr.Wrap(apperr.KindUpstream, err, "the raster file of dataset "+id.String()+" cannot be read: "+err.Error())
	}
	return err
}

// RasterToken is a raster dataset's signed tile template.
type RasterToken struct {
	tiles.Token
	TileURL          string
	Bounds           [4]float64
	MinZoom, MaxZoom int
	TileSize         int
	Format           string
}

// Token signs dataset id's tile template for p: a vector token (raster nil) or a raster one.
// base is the public base URL the tile URL starts with.
func (s *Service) Token(ctx context.Context, p auth.Principal, id uuid.UUID, fmt, base string, now time.Time) (tiles.Token, *RasterToken, error) {
	t, d, err := s.Tiles.TokenOf(ctx, p, id, now)
	if err != nil || !tiles.IsRaster(d) {
		return t, nil, err
	}
	rt, err := s.rasterToken(ctx, d, t, fmt, base)
	return t, rt, err
}

func (s *Service) rasterToken(ctx context.Context, d catalog.Dataset, t tiles.Token, fmt, base string) (*RasterToken, error) {
	if err := format(fmt); err != nil {
		return nil, err
	}
	loc, err := s.Source.Locate(ctx, d)
	if err != nil {
		return nil, err
	}
	// sig, exp, scope in the order the document shows them (a signed vector tile URL's order).
	q := "sig=" + t.Sig + "&exp=" + strconv.FormatInt(t.Exp, 10) + "&scope=" + url.QueryEscape(t.Scope)
	rt := &RasterToken{Token: t, TileSize: TileSize, Format: fmt,
		TileURL: base + "/api/tiles/raster-proxy/" + d.Entry.ID.String() + "/{z}/{x}/{y}." + fmt + "?" + q}
	if loc.warps() {
		// A registered raster's zooms and box are the record's: no read of the remote.
		rt.Bounds, rt.MinZoom, rt.MaxZoom = remoteBounds(loc), loc.Grid.MinZoom, min(loc.Grid.MaxZoom, MaxZoom)
		return rt, nil
	}
	_, err = s.render(ctx, loc, func(rs *Raster) ([]byte, error) {
		rt.Bounds, rt.MinZoom, rt.MaxZoom = rs.Bounds(), rs.MinZoom, min(rs.MaxZoom, MaxZoom)
		return nil, nil
	})
	if err != nil {
		return nil, problem(d.Entry.ID, err)
	}
	return rt, nil
}

// Issued is one dataset's answer in a batch: its token (Raster set for a raster), or why none.
type Issued struct {
	Token  tiles.Token
	Raster *RasterToken
	Err    *apperr.Error
}

// Tokens signs several datasets' templates (rasters' in png); each id answered once, a failure
// of one in its own entry.
func (s *Service) Tokens(ctx context.Context, p auth.Principal, ids []uuid.UUID, base string, now time.Time) (map[uuid.UUID]Issued, error) {
	issued, err := s.Tiles.Tokens(ctx, p, ids, now)
	if err != nil {
		return nil, err
	}
	out := make(map[uuid.UUID]Issued, len(issued))
	for id, is := range issued {
		o := Issued{Token: is.Token, Err: is.Err}
		if is.Err == nil && tiles.IsRaster(is.Dataset) {
			rt, err := s.rasterToken(ctx, is.Dataset, is.Token, "png", base)
			var e *apperr.Error
			switch {
			case errors.As(err, &e):
				o.Err = e
			case err != nil:
				return nil, err
			}
			o.Raster = rt
		}
		out[id] = o
	}
	return out, nil
}

// Quicklook is a dataset's quicklook image, or NotModified.
type Quicklook struct {
	PNG          []byte
	ETag         string
	CacheControl string
	NotModified  bool
}

// Quicklook draws dataset id's quicklook for p with its longer side size pixels (1..512): 404
// for a dataset p may not read or that has none.
func (s *Service) Quicklook(ctx context.Context, p auth.Principal, id uuid.UUID, size int, ifNoneMatch string, now time.Time) (Quicklook, error) {
	if size < 1 || size > MaxQuicklookSide {
		return Quicklook{}, apperr.Invalid("size %d: 1..%d", size, MaxQuicklookSide)
	}
	d, err := s.Tiles.Catalog.Get(ctx, p, id, false)
	if err != nil {
		return Quicklook{}, err
	}
	if !tiles.IsRaster(d) {
		return Quicklook{}, apperr.NotFound("dataset %s has no quicklook: only rasters have one yet", id)
	}
	loc, err := s.Source.Locate(ctx, d)
	if apperr.KindOf(err) == apperr.KindConflict {
		return Quicklook{}, apperr.NotFound("dataset %s has no quicklook yet: its raster file is not ready", id)
	}
	if err != nil {
		return Quicklook{}, err
	}
	key := "quicklook/" + id.String() + "@" + loc.Key + "/" + strconv.Itoa(size)
	out := Quicklook{ETag: tiles.ETag(key), CacheControl: tiles.CacheControl(p, d, now)}
	if tiles.Matches(ifNoneMatch, out.ETag) {
		out.NotModified = true
		return out, nil
	}
	draw := func(rs *Raster) ([]byte, error) {
		params, _ := Params{}.Check()
		img, err := rs.Quicklook(size, params)
		if err != nil || img == nil {
			return []byte{}, err
		}
		return EncodePNG(img)
	}
	out.PNG, err = s.Tiles.Cache.Fill(ctx, key, func(ctx context.Context) ([]byte, error) {
		if loc.warps() {
			return s.remoteQuicklook(ctx, loc, size, draw)
		}
		return s.render(ctx, loc, draw)
	})
	if err == nil && len(out.PNG) == 0 {
		return Quicklook{}, apperr.NotFound("dataset %s has no quicklook: its raster holds no data", id)
	}
	return out, problem(id, err)
}
