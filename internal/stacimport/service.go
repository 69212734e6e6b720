package stacimport

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/internal/blob"
	"meridian/internal/gdalcmd"
	"meridian/internal/ingest"
	"meridian/internal/rangeproxy"
	"meridian/internal/remote"
	"meridian/internal/remoteraster"
	"meridian/internal/secretbox"
	"meridian/store"
)

// Service browses remote STAC catalogs and imports their items. Its fields are set once the
// server is wired (the River lane that runs the downloads is registered before the services
// exist).
type Service struct {
	Pool     *pgxpool.Pool
	Q        *store.Queries
	Remote   *remote.Client
	Jobs     *ingest.Jobs   // the upload path every downloaded file takes
	Queue    *ingest.Queue  // the River client the downloads are queued on
	Objects  blob.Objects   // where the COG a re-import replaces is removed from
	AssetMax int64          // the most bytes of one asset downloaded (REMOTE_ASSET_MAX_BYTES)
	Timeout  time.Duration  // the longest download (REMOTE_ASSET_TIMEOUT)
	Box      *secretbox.Box // seals an import's credential until its downloads ran
	Log      *slog.Logger
	// Registration (mode register): GDAL reads the remote file only through Proxy, confined
	// by GDAL, within the raster Bounds; ReadTimeout is one ranged read's (REMOTE_TIMEOUT).
	Proxy       *rangeproxy.Proxy
	GDAL        gdalcmd.Limits
	Bounds      ingest.RasterBounds
	ReadTimeout time.Duration
}

func (s *Service) fetcher() fetcher { return fetcher{client: s.Remote} }

// Credentials are what the caller gave to reach a remote that asks for them: a header (default
// Authorization) and its value.
type Credentials struct {
	Header string `json:"header"`
	Value  string `json:"value"`
}

// withCredentials is ctx whose fetches carry cred to the origin of raw, and to no other.
func withCredentials(ctx context.Context, raw string, cred *Credentials) (context.Context, error) {
	if cred == nil {
		return ctx, nil
	}
	header := cmpOr(cred.Header, "Authorization")
	if err := remote.CheckCredential(header, cred.Value); err != nil {
		return nil, err
	}
	return remote.WithCredential(ctx, remote.Credential{Origin: remote.OriginOf(raw), Header: header, Value: cred.Value}), nil
}

// ImportItem is one item chosen for import, as a search summarized it.
type ImportItem struct {
	ID, Title, DataAssetHref string
	Collection, ItemHref     *string
	DataAssetKey             *string
	DatetimeStart            *string
	DatetimeEnd              *string
	Keywords                 []string
}

// ImportRequest is what STAC Import asks for.
type ImportRequest struct {
	URL         string
	Items       []ImportItem
	Visibility  string
	Mode        string       // copy (the default) or register
	Credentials *Credentials // for the origin of URL only
}

// Result statuses of an item.
const (
	StatusCreated = "created" // queued for import into a new dataset or, Updated, into its earlier one
	StatusSkipped = "skipped" // unchanged since its earlier import: only the record's metadata was refreshed
	StatusError   = "error"
)

// Result is what became of one item of an import request.
type Result struct {
	ItemID    string
	DatasetID *uuid.UUID
	Status    string
	Updated   bool // an earlier import's dataset gets the new data (same id)
	Error     *string
}

// ImportResult is the answer of an import: the parent job and each item's result.
type ImportResult struct {
	JobID   uuid.UUID
	Results []Result
}

// Metadata is what an item gives its dataset's record, kept on the import item until its data
// is in (stac_import_items.metadata) and on the record's origin_ref afterwards.
type Metadata struct {
	Title        string     `json:"title"`
	Summary      string     `json:"summary,omitempty"`
	License      string     `json:"license,omitempty"`
	Organization string     `json:"organization,omitempty"`
	Providers    []provider `json:"providers,omitempty"`
	Keywords     []string   `json:"keywords,omitempty"`
	Start        *time.Time `json:"start,omitempty"`
	End          *time.Time `json:"end,omitempty"`
	SelfHref     string     `json:"self"`
	ItemID       string     `json:"item_id"`
	Collection   string     `json:"collection,omitempty"`
	CatalogURL   string     `json:"catalog_url"`
	AssetHref    string     `json:"asset_href"`
	AssetKey     string     `json:"asset_key,omitempty"`
	Fingerprint  string     `json:"fingerprint,omitempty"`
	Visibility   string     `json:"visibility"`
}

// maxSourceURL is what a record's source_url holds.
const maxSourceURL = 2000

// prepared is an item of a request once its remote item was read.
type prepared struct {
	result     Result
	meta       Metadata
	filename   string
	collection *CollectionSummary // the remote collection, when the item names one
	existing   *uuid.UUID         // the dataset of an earlier import of the item
}

// Import reads each chosen item, and queues the download and ingest of the ones that are new or
// changed, under one parent job. One item that cannot be read, has no data file the ingest
// reads, or points outside what this server fetches, is an error of that item only.
func (s *Service) Import(ctx context.Context, p auth.Principal, req ImportRequest) (ImportResult, error) {
	if !p.Can(auth.CapUpload) {
		return ImportResult{}, apperr.Forbidden("importing from STAC needs the upload capability")
	}
	switch req.Mode {
	case "":
		req.Mode = "copy"
	case "copy", "register":
	default:
		return ImportResult{}, apperr.Unprocessable("mode %q: copy or register", req.Mode)
	}
	if req.Visibility == "" {
		req.Visibility = auth.VisibilityPrivate
	}
	if _, err := s.Remote.Check(req.URL); err != nil {
		return ImportResult{}, err
	}
	ctx, err := withCredentials(ctx, req.URL, req.Credentials)
	if err != nil {
		return ImportResult{}, err
	}
	sealed, err := s.seal(req.Credentials)
	if err != nil {
		return ImportResult{}, err
	}
	f := s.fetcher()
	root, err := f.landing(ctx, req.URL)
	if err != nil {
		return ImportResult{}, err
	}
	key := collectionsKey(req.Items)
	if running, err := s.Q.StacImportRunning(ctx, store.StacImportRunningParams{OwnerID: &p.UserID, Url: req.URL, Collection: key}); err != nil {
		return ImportResult{}, err
	} else if running {
		return ImportResult{}, apperr.Conflict("an import of %s from %s by you is still running; wait for its job to end", cmpOr(key, "these items"), redact(req.URL))
	}
	items := s.prepareAll(ctx, p, root, req)
	if err := s.checkQuota(ctx, p, items); err != nil {
		return ImportResult{}, err
	}
	collections := s.collections(ctx, p, items, req.Visibility)
	job := uuid.New()
	err = pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := s.Q.WithTx(tx)
		name := "STAC import: " + cmpOr(key, redact(req.URL))
		if len(name) > 255 {
			name = name[:255]
		}
		if _, err := q.CreateStacImportJob(ctx, store.CreateStacImportJobParams{ID: job, SourceFilename: &name, CreatedBy: &p.UserID}); err != nil {
			return err
		}
		if err := q.CreateStacImport(ctx, store.CreateStacImportParams{JobID: job, OwnerID: &p.UserID, Url: req.URL,
			Collection: key, Visibility: req.Visibility, Credential: sealed, Mode: req.Mode}); err != nil {
			return err
		}
		for i := range items {
			if err := s.record(ctx, q, tx, job, i, &items[i], collections); err != nil {
				return err
			}
		}
		// Nothing to download (every item skipped or failed): the credential is not kept at all.
		if err := q.DropStacImportCredential(ctx, job); err != nil {
			return err
		}
		return q.TallyStacImport(ctx, job)
	})
	if err != nil {
		return ImportResult{}, err
	}
	out := ImportResult{JobID: job}
	for _, it := range items {
		out.Results = append(out.Results, it.result)
	}
	return out, nil
}

// record writes one item of an import and, when it is to be downloaded, queues that.
func (s *Service) record(ctx context.Context, q *store.Queries, tx pgx.Tx, job uuid.UUID, pos int, it *prepared, collections map[string]uuid.UUID) error {
	state := "queued"
	switch it.result.Status {
	case StatusError:
		state = "failed"
	case StatusSkipped:
		state = "skipped"
	}
	var col *uuid.UUID
	if it.collection != nil {
		if id, ok := collections[it.collection.Href]; ok {
			col = &id
		}
	}
	meta, _ := json.Marshal(it.meta)
	id, err := q.CreateStacImportItem(ctx, store.CreateStacImportItemParams{ImportID: job, Position: int32(pos), ItemID: it.result.ItemID,
		SourceHref: it.meta.SelfHref, AssetHref: it.meta.AssetHref, Filename: cmpOr(it.filename, "-"), State: state,
		DatasetID: it.existing, CollectionID: col, Error: it.result.Error, Metadata: meta})
	if err != nil {
		return err
	}
	switch state {
	case "skipped":
		// Nothing to download: the record still takes the item's metadata as it is now.
		return s.describe(ctx, q, *it.existing, it.meta, col)
	case "queued":
		return s.Queue.InsertTx(ctx, tx, ItemArgs{Item: id})
	}
	return nil
}

// collectionsKey names the remote collections of a request (the one-at-a-time rule's key).
func collectionsKey(items []ImportItem) string {
	var cols []string
	for _, it := range items {
		if it.Collection != nil && *it.Collection != "" && !slices.Contains(cols, *it.Collection) {
			cols = append(cols, *it.Collection)
		}
	}
	sort.Strings(cols)
	return strings.Join(cols, ",")
}

// checkQuota refuses an import whose new datasets the owner's dataset quota cannot take.
func (s *Service) checkQuota(ctx context.Context, p auth.Principal, items []prepared) error {
	limits, err := s.Jobs.Limits(ctx, p)
	if err != nil || limits.RemainingDatasets == nil {
		return err
	}
	n := int64(0)
	for _, it := range items {
		if it.result.Status == StatusCreated && it.existing == nil {
			n++
		}
	}
	if n > *limits.RemainingDatasets {
		return apperr.Unprocessable("dataset quota exceeded: the import would create %d datasets and your quota leaves %d", n, *limits.RemainingDatasets)
	}
	return nil
}

// prepareAll reads the request's items, a few at a time.
func (s *Service) prepareAll(ctx context.Context, p auth.Principal, root *object, req ImportRequest) []prepared {
	out := make([]prepared, len(req.Items))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	cols := &collectionCache{docs: map[string]*CollectionSummary{}}
	for i, it := range req.Items {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			out[i] = s.prepare(ctx, p, root, req, it, cols)
		}()
	}
	wg.Wait()
	return out
}

// prepare reads one item and decides what becomes of it.
func (s *Service) prepare(ctx context.Context, p auth.Principal, root *object, req ImportRequest, in ImportItem, cols *collectionCache) prepared {
	out := prepared{result: Result{ItemID: in.ID, Status: StatusCreated}}
	fail := func(err error) prepared {
		msg := err.Error()
		var ae *apperr.Error
		if errors.As(err, &ae) {
			msg = ae.Detail
		}
		out.result.Status, out.result.Error = StatusError, &msg
		return out
	}
	f := s.fetcher()
	href, err := itemHref(root, req.URL, in)
	if err != nil {
		return fail(err)
	}
	it, err := f.get(ctx, href)
	if err != nil {
		return fail(err)
	}
	if it.Type != "Feature" {
		return fail(fmt.Errorf("%s is not a STAC item (type %q)", redact(href), it.Type))
	}
	key, a, err := chooseAsset(it, in)
	if err != nil {
		return fail(err)
	}
	kind, ext := assetKind(a)
	switch {
	case kind == "":
		return fail(fmt.Errorf("asset %q (%s) is not a file the import reads: Cloud Optimized GeoTIFF or GeoTIFF, GeoJSON, "+
			"GeoPackage, FlatGeobuf, zipped Shapefile or CSV", key, cmpOr(a.Type, "no media type")))
	case req.Mode == "register" && kind != kindRaster:
		return fail(fmt.Errorf("asset %q (%s) is not a GeoTIFF: mode register reads (Cloud Optimized) GeoTIFFs in place; "+
			"import the item with mode copy", key, cmpOr(a.Type, "no media type")))
	}
	assetHref := it.resolve(a.Href)
	// The asset's address passes the same rules as any fetch, before anything is queued.
	if _, err := s.Remote.Check(assetHref); err != nil {
		return fail(fmt.Errorf("asset %q: %w", key, err))
	}
	self := it.self()
	if len(self) > maxSourceURL {
		return fail(fmt.Errorf("the item's self link is longer than %d characters", maxSourceURL))
	}
	var col *CollectionSummary
	if l, ok := it.link("collection"); ok {
		col = cols.get(ctx, f, l.Href)
	}
	out.collection = col
	out.filename = fileName(in.ID, ext)
	out.meta = metadataOf(it, in, col, req)
	out.meta.AssetHref, out.meta.AssetKey = assetHref, key
	out.meta.Fingerprint = s.fingerprint(ctx, it, a, assetHref, req.Mode)
	prev, err := s.Q.StacDatasetOfItem(ctx, store.StacDatasetOfItemParams{OwnerID: &p.UserID, SourceUrl: &self})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		return fail(err)
	default:
		out.existing = &prev.ID
		out.result.DatasetID = &prev.ID
		out.result.Updated = true
		if out.meta.Fingerprint != "" && fingerprintOf(prev.OriginRef) == out.meta.Fingerprint {
			out.result.Status, out.result.Updated = StatusSkipped, false
		}
	}
	return out
}

// itemHref is where an item is read: the address the search gave, else the API's item endpoint.
func itemHref(root *object, catalogURL string, in ImportItem) (string, error) {
	if in.ItemHref != nil && *in.ItemHref != "" {
		return root.resolve(*in.ItemHref), nil
	}
	if in.Collection == nil || *in.Collection == "" {
		return "", apperr.Unprocessable("item %s: give its item_href, or its collection to find it in the API", in.ID)
	}
	base := strings.TrimSuffix(root.self(), "/") + "/collections"
	if l, ok := root.link("data"); ok {
		base = strings.TrimSuffix(l.Href, "/")
	}
	_ = catalogURL
	return base + "/" + pathEscape(*in.Collection) + "/items/" + pathEscape(in.ID), nil
}

func pathEscape(s string) string { return url.PathEscape(s) }

// hostOf is a URL's host, for telling collections of the same name apart.
func hostOf(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Host
	}
	return raw
}

// chooseAsset is the item's asset the request names (by href, else key), or else the one a
// search would offer.
func chooseAsset(it *object, in ImportItem) (string, asset, error) {
	if in.DataAssetHref != "" {
		for _, key := range sortedKeys(it.Assets) {
			if it.resolve(it.Assets[key].Href) == it.resolve(in.DataAssetHref) {
				return key, it.Assets[key], nil
			}
		}
	}
	if in.DataAssetKey != nil {
		if a, ok := it.Assets[*in.DataAssetKey]; ok {
			return *in.DataAssetKey, a, nil
		}
	}
	if in.DataAssetHref != "" || in.DataAssetKey != nil {
		return "", asset{}, fmt.Errorf("data_asset_href %q is not an asset of item %s", in.DataAssetHref, it.ID)
	}
	key, a, ok := dataAsset(it)
	if !ok {
		return "", asset{}, fmt.Errorf("item %s has no asset the import reads", it.ID)
	}
	return key, a, nil
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// fileName is the staged name of an item's asset: the item's id made a plain file name.
func fileName(id, ext string) string {
	name := strings.Trim(unsafeName.ReplaceAllString(id, "_"), "_")
	if len(name) > 100 {
		name = name[:100]
	}
	return cmpOr(name, "item") + ext
}

// metadataOf is what the item (and its collection, for what the item leaves out) gives the record.
func metadataOf(it *object, in ImportItem, col *CollectionSummary, req ImportRequest) Metadata {
	pr := it.Properties
	m := Metadata{Title: cmpOr(pr.Title, cmpOr(in.Title, it.ID)), Summary: pr.Description, License: pr.License,
		SelfHref: it.self(), ItemID: it.ID, Collection: it.Collection, CatalogURL: req.URL, Visibility: req.Visibility,
		Providers: pr.Providers}
	if len([]rune(m.Title)) > 500 {
		m.Title = string([]rune(m.Title)[:500])
	}
	if col != nil {
		m.License = cmpOr(m.License, deref(col.License))
		if len(m.Providers) == 0 {
			m.Providers = col.providers
		}
	}
	for _, k := range slices.Concat(pr.Keywords, in.Keywords) {
		k = strings.TrimSpace(k)
		if k != "" && len(k) <= 500 && !slices.ContainsFunc(m.Keywords, func(x string) bool { return strings.EqualFold(x, k) }) && len(m.Keywords) < 100 {
			m.Keywords = append(m.Keywords, k)
		}
	}
	for _, pv := range m.Providers {
		if slices.Contains(pv.Roles, "producer") || slices.Contains(pv.Roles, "licensor") {
			m.Organization = pv.Name
			break
		}
	}
	if m.Organization == "" && len(m.Providers) > 0 {
		m.Organization = m.Providers[0].Name
	}
	start, end := itemTimes(it)
	if start == nil && in.DatetimeStart != nil {
		if t, ok := parseTime(*in.DatetimeStart); ok {
			start = &t
		}
	}
	if end == nil && in.DatetimeEnd != nil {
		if t, ok := parseTime(*in.DatetimeEnd); ok {
			end = &t
		}
	}
	m.Start, m.End = start, end
	if m.End == nil {
		m.End = m.Start
	}
	return m
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// fingerprint tells whether an item's data changed since its last import: the item's updated
// time, the asset's address, checksum and size as the item gives them, the mode (register or
// copy), and the ETag, length and modification time the asset's server answers to HEAD. Empty when none of them is known: such
// an item is always imported again.
func (s *Service) fingerprint(ctx context.Context, it *object, a asset, href, mode string) string {
	parts := []string{href, it.Properties.Updated, a.Checksum}
	if mode == "register" {
		parts = append(parts, mode) // a copy registered again, or a registration copied, is not unchanged
	}
	if a.Size != nil {
		parts = append(parts, fmt.Sprint(*a.Size))
	}
	known := it.Properties.Updated != "" || a.Checksum != "" || a.Size != nil
	if res, err := s.Remote.Do(ctx, http.MethodHead, href, nil, nil); err == nil && res.Status == http.StatusOK {
		for _, h := range []string{"ETag", "Content-Length", "Last-Modified"} {
			v := res.Header.Get(h)
			parts = append(parts, v)
			known = known || (v != "" && h != "Content-Length")
		}
	}
	if !known {
		return ""
	}
	sum := sha256.Sum256([]byte(strings.Join(parts, "\n")))
	return hex.EncodeToString(sum[:])
}

// fingerprintOf reads the fingerprint an earlier import kept on the record.
func fingerprintOf(ref []byte) string {
	var r struct {
		STAC Metadata `json:"stac"`
	}
	_ = json.Unmarshal(ref, &r)
	return r.STAC.Fingerprint
}

// collectionCache reads each remote collection once per request.
type collectionCache struct {
	mu   sync.Mutex
	docs map[string]*CollectionSummary
}

func (c *collectionCache) get(ctx context.Context, f fetcher, href string) *CollectionSummary {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d, ok := c.docs[href]; ok {
		return d
	}
	var out *CollectionSummary
	if o, err := f.get(ctx, href); err == nil && o.Type == "Collection" {
		sum := collectionSummary(o)
		sum.Href = href // the link items point at: the same for every item, whatever the document says of itself
		sum.providers = o.Providers
		out = &sum
	}
	c.docs[href] = out
	return out
}

// collections finds or makes the catalog collection of each remote collection of the items:
// one per remote collection and owner, made on the first import and found again on the next.
func (s *Service) collections(ctx context.Context, p auth.Principal, items []prepared, visibility string) map[string]uuid.UUID {
	out := map[string]uuid.UUID{}
	for _, it := range items {
		c := it.collection
		if c == nil || it.result.Status == StatusError {
			continue
		}
		if _, ok := out[c.Href]; ok {
			continue
		}
		id, err := s.Q.StacCollectionOf(ctx, store.StacCollectionOfParams{OwnerID: p.UserID, SourceHref: c.Href})
		if errors.Is(err, pgx.ErrNoRows) {
			id, err = s.newCollection(ctx, p, *c, visibility)
		}
		if err != nil {
			s.Log.Warn("STAC import: no catalog collection for a remote one", "collection", c.Href, "err", err)
			continue
		}
		out[c.Href] = id
	}
	return out
}

// newCollection makes a catalog collection for a remote one, under its title, or, when another
// collection has that name, under the title with the remote's host or a number.
func (s *Service) newCollection(ctx context.Context, p auth.Principal, c CollectionSummary, visibility string) (uuid.UUID, error) {
	if visibility == auth.VisibilityRestricted {
		visibility = auth.VisibilityPrivate // collections know no grants
	}
	desc := c.Description
	title := cmpOr(c.Title, c.ID)
	names := []string{title, title + " (STAC " + hostOf(c.Href) + ")"}
	for i := 2; i <= 5; i++ {
		names = append(names, fmt.Sprintf("%s (STAC %d)", title, i))
	}
	var err error
	for _, name := range names {
		if len(name) > 255 {
			name = name[:255]
		}
		var row store.CatalogCollection
		row, err = s.Q.CreateCollection(ctx, store.CreateCollectionParams{Name: name, Description: &desc, Visibility: visibility, CreatedBy: &p.UserID})
		if err == nil {
			return row.ID, s.Q.AddStacCollection(ctx, store.AddStacCollectionParams{OwnerID: p.UserID, SourceHref: c.Href, CollectionID: row.ID})
		}
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "23505" {
			return uuid.Nil, err
		}
	}
	return uuid.Nil, err
}

// seal is the credential as an import keeps it for its downloads and registered rasters:
// encrypted, or nothing.
func (s *Service) seal(cred *Credentials) ([]byte, error) {
	if cred == nil {
		return nil, nil
	}
	return remoteraster.Seal(s.Box, cmpOr(cred.Header, "Authorization"), cred.Value)
}

// credential is the credential an import keeps for the origin of its catalog, nil for none.
func (s *Service) credential(catalogURL string, sealed []byte) (*remote.Credential, error) {
	if sealed == nil {
		return nil, nil
	}
	return remoteraster.Unseal(s.Box, catalogURL, sealed)
}

// unseal is ctx carrying the credential an import keeps for its remote, if any.
func (s *Service) unseal(ctx context.Context, catalogURL string, sealed []byte) (context.Context, error) {
	cred, err := s.credential(catalogURL, sealed)
	if err != nil || cred == nil {
		return ctx, err
	}
	return remote.WithCredential(ctx, *cred), nil
}
