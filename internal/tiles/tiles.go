package tiles

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/internal/catalog"
	"meridian/internal/cql2"
	"meridian/internal/features"
	"meridian/internal/settings"
)

// Catalog is what tiles need of the catalog.
type Catalog interface {
	Current(ctx context.Context, id uuid.UUID) (catalog.Dataset, error)
	Get(ctx context.Context, p auth.Principal, id uuid.UUID, write bool) (catalog.Dataset, error)
	DatasetOfTable(ctx context.Context, schema, name string) (uuid.UUID, error)
	Forget(id uuid.UUID)
}

// Service serves tiles and tile tokens.
type Service struct {
	Catalog  Catalog
	Reader   features.Reader
	Settings settings.Reader
	Signer   Signer
	Cache    *Cache

	conf   atomic.Pointer[loaded]
	reload sync.Mutex
	paths  sync.Map // table path → dataset id
}

// loaded is the tile configuration as last read, and the slots of the tile queries it allows.
type loaded struct {
	settings.TileConfig
	at    time.Time
	slots chan struct{}
}

// configAge is how long a read of the settings is used before the next request reads them again.
const configAge = 10 * time.Second

// Config is the tile configuration in use.
func (s *Service) Config(ctx context.Context) (settings.TileConfig, error) {
	c, err := s.config(ctx)
	if err != nil {
		return settings.TileConfig{}, err
	}
	return c.TileConfig, nil
}

func (s *Service) config(ctx context.Context) (*loaded, error) {
	c := s.conf.Load()
	if c != nil && time.Since(c.at) < configAge {
		return c, nil
	}
	if c != nil && !s.reload.TryLock() {
		return c, nil // someone is reading them: use the last ones meanwhile
	}
	if c == nil {
		s.reload.Lock()
	}
	defer s.reload.Unlock()
	if now := s.conf.Load(); now != c {
		return now, nil
	}
	tc, err := s.Settings.TileConfig(ctx)
	if err != nil {
		return nil, err
	}
	next := &loaded{TileConfig: tc, at: time.Now()}
	if c != nil && c.MaxConcurrent == tc.MaxConcurrent {
		next.slots = c.slots
	} else {
		next.slots = make(chan struct{}, tc.MaxConcurrent)
	}
	s.Cache.Resize(tc.CacheMaxBytes)
	s.conf.Store(next)
	return next, nil
}

// Scope is what a signed template of dataset d names: its table, schema-qualified unless it is
// in the data schema.
func Scope(d catalog.Dataset) string { return ScopeOf(d.Entry.TableSchema, d.Entry.TableName) }

// ScopeOf is the scope of the dataset whose table is schema.name.
func ScopeOf(schema, name string) string {
	if schema == "data" {
		return name
	}
	return schema + "." + name
}

// Request is one tile request.
type Request struct {
	Path        string // dataset id, or data.<table>, or <schema>.<table>
	Z, X, Y     int
	Cols        *string      // comma-separated properties; nil for the dataset's tile_columns
	Filter      *cql2.Filter // nil for all features
	FilterText  string       // the filter as sent, part of the cache key
	Cluster     *Cluster     // nil for a plain tile
	IfNoneMatch string
}

// Cluster asks for a cluster tile.
type Cluster struct{ Radius, MaxZoom int }

// Tile is an answer: a tile body (empty for an empty tile) or NotModified.
type Tile struct {
	Body         []byte
	ETag         string
	CacheControl string
	NotModified  bool
}

// Tile answers one tile request of p.
func (s *Service) Tile(ctx context.Context, p auth.Principal, r Request, now time.Time) (Tile, error) {
	if max := 1 << r.Z; r.X >= max || r.Y >= max || r.X < 0 || r.Y < 0 {
		return Tile{}, apperr.Invalid("tile %d/%d/%d: x and y must be below 2^z = %d", r.Z, r.X, r.Y, max)
	}
	conf, err := s.config(ctx)
	if err != nil {
		return Tile{}, err
	}
	d, err := s.dataset(ctx, p, r.Path)
	if err != nil {
		return Tile{}, err
	}
	if err := tileable(d); err != nil {
		return Tile{}, err
	}
	t, err := d.Table()
	if err != nil {
		return Tile{}, err
	}
	q, err := s.query(d, t, r, conf)
	if err != nil {
		return Tile{}, err
	}
	key := cacheKey(d, q, r.FilterText)
	out := Tile{ETag: etag(key), CacheControl: cacheControl(p, d, now)}
	if matches(r.IfNoneMatch, out.ETag) {
		out.NotModified = true
		return out, nil
	}
	out.Body, err = s.Cache.Fill(ctx, key, func(ctx context.Context) ([]byte, error) {
		select {
		case conf.slots <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		defer func() { <-conf.slots }()
		return s.Reader.Tile(ctx, t, q)
	})
	if err != nil {
		s.Catalog.Forget(d.Entry.ID) // a table changed behind the record's back reads anew
	}
	return out, err
}

// dataset resolves a tile path to a dataset p may tile: a signed template for the dataset's
// scope issued since its audience last narrowed, or read access (the kept record decides, the
// database only for restricted records).
func (s *Service) dataset(ctx context.Context, p auth.Principal, path string) (catalog.Dataset, error) {
	id, err := s.resolve(ctx, path)
	if err != nil {
		return catalog.Dataset{}, err
	}
	d, err := s.Catalog.Current(ctx, id)
	if apperr.KindOf(err) == apperr.KindNotFound {
		s.paths.Delete(path) // the table may now belong to another dataset
	}
	if err != nil {
		return d, hidden(path, err)
	}
	if p.Via == auth.ViaTileSignature && (p.Scope != Scope(d) || p.Exp <= d.SignedTilesFloor()) {
		// A template of another dataset authorizes nothing here, nor one issued before the
		// dataset's audience narrowed (a grant removed, a lower visibility: migration 66): the
		// request is anonymous (its credential, if any, was never read).
		p = auth.Principal{}
	}
	switch {
	case p.Via == auth.ViaTileSignature:
	case auth.CanRead(p, d.Resource()):
	default:
		// A grant may open a restricted dataset, and a change announced a moment ago may not
		// have reached the kept record yet: a refusal is decided by the database.
		if d, err = s.Catalog.Get(ctx, p, id, false); err != nil {
			return d, hidden(path, err)
		}
	}
	return d, nil
}

// Readable resolves a tile path to a dataset p may read by a tile request (a signed template of
// its scope issued since its audience last narrowed, or read access), of any kind: the raster
// tile proxy's authorization, the same as Tile's.
func (s *Service) Readable(ctx context.Context, p auth.Principal, path string) (catalog.Dataset, error) {
	return s.dataset(ctx, p, path)
}

// hidden answers a missing dataset in the words of the path asked for.
func hidden(path string, err error) error {
	if apperr.KindOf(err) == apperr.KindNotFound {
		return apperr.NotFound("dataset %s not found", path)
	}
	return err
}

// tileable refuses records without vector features: rasters (409: the raster tile proxy serves
// them), and anything else that has no geometry (422).
func tileable(d catalog.Dataset) error {
	switch d.Entry.RecordType {
	case "vector_dataset":
		return nil
	case "raster_dataset", "vrt_dataset":
		return apperr.Conflict("dataset %s is a raster: its tiles are served by the raster tile proxy", d.Entry.ID)
	}
	return apperr.Unprocessable("dataset %s is a %s, which has no vector tiles", d.Entry.ID, d.Entry.RecordType)
}

// IsRaster tells the records the raster tile proxy serves.
func IsRaster(d catalog.Dataset) bool {
	return d.Entry.RecordType == "raster_dataset" || d.Entry.RecordType == "vrt_dataset"
}

// tokenable refuses tile tokens to records that have no tiles of either kind (422).
func tokenable(d catalog.Dataset) error {
	if IsRaster(d) {
		return nil
	}
	return tileable(d)
}

// resolve turns a path into a dataset id: a uuid is one; data.<table> and <schema>.<table> are
// looked up once and remembered.
func (s *Service) resolve(ctx context.Context, path string) (uuid.UUID, error) {
	if id, err := uuid.Parse(path); err == nil {
		return id, nil
	}
	if id, ok := s.paths.Load(path); ok {
		return id.(uuid.UUID), nil
	}
	schema, name, ok := strings.Cut(path, ".")
	if !ok || name == "" {
		return uuid.Nil, apperr.NotFound("dataset %s not found: a tile path is a dataset id or schema.table", path)
	}
	if schema == "data" && strings.Contains(name, ".") {
		// A template built as data.{scope} around a schema-qualified scope.
		schema, name, _ = strings.Cut(name, ".")
	}
	id, err := s.Catalog.DatasetOfTable(ctx, schema, name)
	if err != nil {
		return id, hidden(path, err)
	}
	s.paths.Store(path, id)
	return id, nil
}

// query plans the tile: its properties, filter, cap and clustering.
func (s *Service) query(d catalog.Dataset, t features.Table, r Request, conf *loaded) (features.TileQuery, error) {
	q := features.TileQuery{Z: r.Z, X: r.X, Y: r.Y, Layer: conf.LayerPrefix + "." + d.Entry.TableName, Filter: r.Filter,
		MaxFeatures: conf.MaxFeaturesPerTile, Simplify: conf.SimplifyTolerance}
	if d.Entry.Srid != nil {
		q.StorageSRID = int(*d.Entry.Srid)
	}
	if d.Entry.GeometryType != nil {
		q.Points = strings.HasSuffix(strings.TrimRight(strings.ToUpper(*d.Entry.GeometryType), "ZM"), "POINT")
	}
	cols, err := columns(d, t, r.Z, r.Cols)
	if err != nil {
		return q, err
	}
	q.Columns = cols
	if r.Cluster != nil && r.Z <= r.Cluster.MaxZoom {
		// Cells of about the radius, a whole number of them per 256-pixel tile.
		q.ClusterCells = max(1, (256+r.Cluster.Radius/2)/r.Cluster.Radius)
		q.MaxFeatures = 0 // every point counts
	}
	return q, nil
}

// AttributesFromZoom is the zoom from which a tile carries its features' attributes unasked:
// map popups read them there, while the tiles of a wider view, with many more features each,
// stay geometry only and small.
const AttributesFromZoom = 10

// columns are the properties asked for: cols as sent (an unknown column is a 400); unasked, from
// AttributesFromZoom up the dataset's tile_columns that still exist, or all its attribute
// columns when it names none; below that none.
func columns(d catalog.Dataset, t features.Table, z int, cols *string) ([]features.Column, error) {
	if cols == nil {
		if z < AttributesFromZoom {
			return nil, nil
		}
		if len(d.Entry.TileColumns) == 0 {
			return t.Columns, nil
		}
		var out []features.Column
		for _, name := range d.Entry.TileColumns {
			if c, err := t.Column(name); err == nil {
				out = append(out, c)
			}
		}
		return out, nil
	}
	var out []features.Column
	for _, name := range strings.Split(*cols, ",") {
		if name = strings.TrimSpace(name); name == "" || slices.ContainsFunc(out, func(c features.Column) bool { return c.Name == name }) {
			continue
		}
		c, err := t.Column(name)
		if err != nil {
			return nil, apperr.Invalid("cols: the dataset has no column %q", name)
		}
		out = append(out, c)
	}
	return out, nil
}

// cacheKey names the tile's content: the dataset at its tile version and everything the query
// adds.
func cacheKey(d catalog.Dataset, q features.TileQuery, filter string) string {
	var b strings.Builder
	b.WriteString(d.Entry.ID.String() + "@" + strconv.FormatInt(d.Entry.TileVersion, 10))
	b.WriteString("/" + strconv.Itoa(q.Z) + "/" + strconv.Itoa(q.X) + "/" + strconv.Itoa(q.Y))
	b.WriteString("|" + q.Layer + "|c" + strconv.Itoa(q.ClusterCells) + "|m" + strconv.Itoa(q.MaxFeatures))
	b.WriteString("|s" + strconv.FormatFloat(q.Simplify, 'g', -1, 64))
	for _, c := range q.Columns {
		b.WriteString("|" + strconv.Quote(c.Name))
	}
	b.WriteString("|f" + filter)
	return b.String()
}

// ETag names a tile's content by its cache key.
func ETag(key string) string { return etag(key) }

// Matches reports whether an If-None-Match header names tag (or is *).
func Matches(header, tag string) bool { return matches(header, tag) }

// CacheControl is the Cache-Control of a tile of d that p asked for (see cacheControl).
func CacheControl(p auth.Principal, d catalog.Dataset, now time.Time) string {
	return cacheControl(p, d, now)
}

func etag(key string) string {
	sum := sha256.Sum256([]byte(key))
	return `"` + hex.EncodeToString(sum[:12]) + `"`
}

// matches reports whether an If-None-Match header names tag (or is *).
func matches(header, tag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == tag || t == "*" {
			return true
		}
	}
	return false
}

// cacheControl lets caches keep a signed tile until its template expires (the URL names the scope
// and expiry; add the layer's tile version as v to see edits sooner): shared caches those of
// public datasets, only the browser's own those of any other, which a shared cache would hand to
// whoever asks for the URL. Public tiles revalidate; a tile read with a credential stays in the
// caller's own cache.
func cacheControl(p auth.Principal, d catalog.Dataset, now time.Time) string {
	public := auth.CanRead(auth.Principal{}, d.Resource())
	switch {
	case p.Via == auth.ViaTileSignature && p.Exp > now.Unix() && public:
		return "public, max-age=" + strconv.FormatInt(p.Exp-now.Unix(), 10)
	case p.Via == auth.ViaTileSignature && p.Exp > now.Unix():
		return "private, max-age=" + strconv.FormatInt(p.Exp-now.Unix(), 10)
	case public:
		return "public, no-cache"
	}
	return "private, no-cache"
}
