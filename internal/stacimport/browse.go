package stacimport

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"meridian/internal/apperr"
)

// Summary is what Connect tells of a remote catalog.
type Summary struct {
	URL, ID, Title, Description, Version string
	ConformsTo                           []string
	ItemSearch                           bool // POST /search is used for searches
	Static                               bool // a static catalog (walked), not an API
	Collections                          *int // how many collections, when the remote tells it
}

// CollectionSummary is one remote collection, for choosing what to import.
type CollectionSummary struct {
	ID, Title, Description     string
	License                    *string
	Keywords                   []string
	BBox                       []float64
	TemporalStart, TemporalEnd *string
	Href                       string
	providers                  []provider // what an item that names none takes
}

// ItemSummary is one remote item, for choosing what to import.
type ItemSummary struct {
	ID                                   string
	Collection, ItemHref                 *string
	Title                                string
	BBox                                 []float64
	Datetime, DatetimeStart, DatetimeEnd *string
	EPSG                                 *int
	GSD, CloudCover                      *float64
	DataAssetHref, DataAssetType         *string
	DataAssetKey                         *string
	DataAssetSize                        *int64
	ThumbnailHref                        *string
	AssetCount                           int
}

// SearchQuery is a search of a remote catalog; Next continues an earlier page.
type SearchQuery struct {
	URL         string
	Collections []string
	BBox        []float64
	Datetime    string
	Limit       int
	Next        string
	Credentials *Credentials // for the origin of URL only, the next pages' included
}

// SearchPage is one page of a remote search; Next is the cursor of the following page, if any.
type SearchPage struct {
	Items   []ItemSummary
	Matched *int
	Next    string
}

// landing reads the root of a remote catalog and refuses anything that is not STAC.
func (f fetcher) landing(ctx context.Context, raw string) (*object, error) {
	o, err := f.get(ctx, raw)
	if err != nil {
		return nil, err
	}
	if !o.isSTAC() {
		return nil, upstream("%s is not a STAC API or catalog (no stac_version, type or conformsTo)", redact(raw))
	}
	return o, nil
}

// conformance is the remote's conformance classes: the landing page's, else its conformance
// document's.
func (f fetcher) conformance(ctx context.Context, root *object) []string {
	if len(root.ConformsTo) > 0 {
		return root.ConformsTo
	}
	if l, ok := root.link("conformance"); ok {
		if c, err := f.get(ctx, l.Href); err == nil {
			return c.ConformsTo
		}
	}
	return nil
}

func conforms(classes []string, part string) bool {
	return slices.ContainsFunc(classes, func(c string) bool { return strings.Contains(c, part) })
}

// isAPI tells an API (collections endpoint, search) from a static catalog (child and item links).
func isAPI(root *object, classes []string) bool {
	_, data := root.link("data")
	return data || conforms(classes, "api.stacspec.org")
}

// Connect reads the landing page and conformance of a remote STAC API or static catalog.
func (s *Service) Connect(ctx context.Context, raw string, cred *Credentials) (Summary, error) {
	ctx, err := withCredentials(ctx, raw, cred)
	if err != nil {
		return Summary{}, err
	}
	f := s.fetcher()
	root, err := f.landing(ctx, raw)
	if err != nil {
		return Summary{}, err
	}
	classes := f.conformance(ctx, root)
	sum := Summary{URL: raw, ID: root.ID, Title: root.Title, Description: root.Description, Version: root.StacVersion,
		ConformsTo: classes, Static: !isAPI(root, classes)}
	if sum.ConformsTo == nil {
		sum.ConformsTo = []string{}
	}
	_, search := root.link("search")
	sum.ItemSearch = !sum.Static && search && conforms(classes, "/item-search")
	if sum.Static {
		n := len(root.links("child"))
		sum.Collections = &n
	}
	return sum, nil
}

// Collections lists the collections of a remote API (following next links) or of a static
// catalog (walking its child links), up to collectionsMax; truncated tells when more exist.
func (s *Service) Collections(ctx context.Context, raw string, cred *Credentials) ([]CollectionSummary, bool, error) {
	ctx, err := withCredentials(ctx, raw, cred)
	if err != nil {
		return nil, false, err
	}
	f := s.fetcher()
	root, err := f.landing(ctx, raw)
	if err != nil {
		return nil, false, err
	}
	var out []CollectionSummary
	if isAPI(root, f.conformance(ctx, root)) {
		cols, truncated, err := f.apiCollections(ctx, root)
		for _, c := range cols {
			out = append(out, collectionSummary(c))
		}
		return out, truncated, err
	}
	truncated := false
	err = f.walk(ctx, root, func(o *object) bool {
		if o.Type == "Collection" {
			if len(out) == collectionsMax {
				truncated = true
				return true
			}
			out = append(out, collectionSummary(o))
		}
		return false
	}, false)
	return out, truncated, err
}

// apiCollections reads an API's collections endpoint and its next pages.
func (f fetcher) apiCollections(ctx context.Context, root *object) ([]*object, bool, error) {
	href := strings.TrimSuffix(root.self(), "/") + "/collections"
	if l, ok := root.link("data"); ok {
		href = l.Href
	}
	var out []*object
	for page := 0; href != "" && page < collectionPages; page++ {
		p, err := f.get(ctx, href)
		if err != nil {
			return out, false, err
		}
		for _, raw := range p.Collections {
			c, err := decodeAt(raw, p)
			if err != nil {
				continue
			}
			if len(out) == collectionsMax {
				return out, true, nil
			}
			out = append(out, c)
		}
		href = ""
		if l, ok := p.link("next"); ok && len(p.Collections) > 0 {
			href = l.Href
		}
	}
	return out, href != "", nil
}

// decodeAt decodes a document embedded in another (a collection of a list, an item of a page),
// whose relative links resolve against the page.
func decodeAt(raw json.RawMessage, page *object) (*object, error) {
	var o object
	if err := json.Unmarshal(raw, &o); err != nil {
		return nil, err
	}
	o.base = page.base
	if self := o.self(); self != "" {
		if u, err := url.Parse(self); err == nil {
			o.base = u
		}
	}
	return &o, nil
}

// walk visits a static catalog breadth first from root: root itself, then the documents of its
// child links (and, when items is set, of its item links), at most walkDepth levels down and
// walkDocuments documents in all. visit returns true to stop. A document that cannot be read is
// passed over; the walk fails only when the remote refuses the first.
func (f fetcher) walk(ctx context.Context, root *object, visit func(*object) bool, items bool) error {
	type entry struct {
		href  string
		depth int
	}
	seen := map[string]bool{root.self(): true}
	if visit(root) {
		return nil
	}
	var queue []entry
	push := func(o *object, depth int) {
		rels := []string{"child"}
		if items {
			rels = append(rels, "item")
		}
		for _, rel := range rels {
			for _, l := range o.links(rel) {
				if !seen[l.Href] && depth <= walkDepth {
					seen[l.Href] = true
					queue = append(queue, entry{l.Href, depth})
				}
			}
		}
	}
	push(root, 1)
	for fetched := 0; len(queue) > 0 && fetched < walkDocuments; fetched++ {
		e := queue[0]
		queue = queue[1:]
		o, err := f.get(ctx, e.href)
		if err != nil {
			if apperr.KindOf(err) == apperr.KindUnprocessable && fetched == 0 {
				return err
			}
			continue
		}
		if visit(o) {
			return nil
		}
		if o.Type != "Feature" {
			push(o, e.depth+1)
		}
	}
	return nil
}

func collectionSummary(c *object) CollectionSummary {
	out := CollectionSummary{ID: c.ID, Title: cmpOr(c.Title, c.ID), Description: c.Description, Keywords: c.Keywords, Href: c.self()}
	if out.Keywords == nil {
		out.Keywords = []string{}
	}
	if c.License != "" {
		out.License = &c.License
	}
	if c.Extent != nil {
		if b := c.Extent.Spatial.BBox; len(b) > 0 && (len(b[0]) == 4 || len(b[0]) == 6) {
			out.BBox = b[0]
		}
		if t := c.Extent.Temporal.Interval; len(t) > 0 && len(t[0]) == 2 {
			out.TemporalStart, out.TemporalEnd = t[0][0], t[0][1]
		}
	}
	return out
}

func cmpOr(a, b string) string {
	if strings.TrimSpace(a) != "" {
		return a
	}
	return b
}

// cursor is where the next page of a remote search is: the remote's next link, with the body a
// POST search sends.
type cursor struct {
	Href   string          `json:"h"`
	Method string          `json:"m,omitempty"`
	Body   json.RawMessage `json:"b,omitempty"`
}

func (c cursor) encode() string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string) (cursor, error) {
	var c cursor
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil || c.Href == "" {
		return c, apperr.Unprocessable("next: not a cursor of an earlier STAC Search page")
	}
	return c, nil
}

// Search answers one page of a remote search: through the API's item search when it conforms to
// it, else through each collection's items; a static catalog is walked (at most walkDocuments
// documents) and filtered here.
func (s *Service) Search(ctx context.Context, q SearchQuery) (SearchPage, error) {
	q.Limit = min(max(q.Limit, 1), 100)
	if len(q.BBox) != 0 && len(q.BBox) != 4 {
		return SearchPage{}, apperr.Unprocessable("bbox: four numbers, west, south, east, north")
	}
	window, err := parseInterval(q.Datetime)
	if err != nil {
		return SearchPage{}, err
	}
	ctx, err = withCredentials(ctx, q.URL, q.Credentials)
	if err != nil {
		return SearchPage{}, err
	}
	f := s.fetcher()
	if q.Next != "" {
		c, err := decodeCursor(q.Next)
		if err != nil {
			return SearchPage{}, err
		}
		return f.searchPage(ctx, c, q.Limit)
	}
	root, err := f.landing(ctx, q.URL)
	if err != nil {
		return SearchPage{}, err
	}
	classes := f.conformance(ctx, root)
	if !isAPI(root, classes) {
		return f.searchStatic(ctx, root, q, window)
	}
	if l, ok := root.link("search"); ok && conforms(classes, "/item-search") {
		return f.searchPage(ctx, searchRequest(l, q), q.Limit)
	}
	return f.searchCollections(ctx, root, q)
}

// searchRequest is the first page of an item search: POST with a JSON body unless the search
// link offers only GET.
func searchRequest(l link, q SearchQuery) cursor {
	body := map[string]any{"limit": q.Limit}
	if len(q.Collections) > 0 {
		body["collections"] = q.Collections
	}
	if len(q.BBox) == 4 {
		body["bbox"] = q.BBox
	}
	if q.Datetime != "" {
		body["datetime"] = q.Datetime
	}
	if strings.EqualFold(l.Method, "GET") {
		return cursor{Href: withQuery(l.Href, queryOf(q))}
	}
	b, _ := json.Marshal(body)
	return cursor{Href: l.Href, Method: "POST", Body: b}
}

// queryOf is a search as query parameters (GET item search, collection items).
func queryOf(q SearchQuery) url.Values {
	v := url.Values{"limit": {strconv.Itoa(q.Limit)}}
	if len(q.Collections) > 0 {
		v.Set("collections", strings.Join(q.Collections, ","))
	}
	if len(q.BBox) == 4 {
		parts := make([]string, 4)
		for i, n := range q.BBox {
			parts[i] = strconv.FormatFloat(n, 'f', -1, 64)
		}
		v.Set("bbox", strings.Join(parts, ","))
	}
	if q.Datetime != "" {
		v.Set("datetime", q.Datetime)
	}
	return v
}

func withQuery(href string, v url.Values) string {
	u, err := url.Parse(href)
	if err != nil {
		return href
	}
	cur := u.Query()
	for k, vs := range v {
		cur[k] = vs
	}
	u.RawQuery = cur.Encode()
	return u.String()
}

// searchPage reads one page of items (an item search or a collection's items) and its next link.
func (f fetcher) searchPage(ctx context.Context, c cursor, limit int) (SearchPage, error) {
	method := "GET"
	var body []byte
	if strings.EqualFold(c.Method, "POST") {
		method, body = "POST", c.Body
		if body == nil {
			body = []byte("{}")
		}
	}
	p, err := f.do(ctx, method, c.Href, body)
	if err != nil {
		return SearchPage{}, err
	}
	page := SearchPage{Items: []ItemSummary{}, Matched: p.NumberMatched}
	if page.Matched == nil && p.Context != nil {
		page.Matched = p.Context.Matched
	}
	for _, raw := range p.Features {
		if len(page.Items) == limit {
			break
		}
		if it, err := decodeAt(raw, p); err == nil && it.Type == "Feature" {
			page.Items = append(page.Items, itemSummary(it))
		}
	}
	if l, ok := p.link("next"); ok && len(p.Features) > 0 {
		next := cursor{Href: l.Href, Method: l.Method, Body: l.Body}
		if strings.EqualFold(l.Method, "POST") && l.Body == nil {
			next.Body = c.Body // a next link without a body repeats the search's (STAC API: merge)
		}
		page.Next = next.encode()
	}
	return page, nil
}

// searchCollections browses an API without item search through its collections' items
// endpoints, the chosen collections or all of them, until the page is full.
func (f fetcher) searchCollections(ctx context.Context, root *object, q SearchQuery) (SearchPage, error) {
	cols, _, err := f.apiCollections(ctx, root)
	if err != nil {
		return SearchPage{}, err
	}
	page := SearchPage{Items: []ItemSummary{}}
	for _, c := range cols {
		if len(q.Collections) > 0 && !slices.Contains(q.Collections, c.ID) {
			continue
		}
		href := strings.TrimSuffix(c.self(), "/") + "/items"
		if l, ok := c.link("items"); ok {
			href = l.Href
		}
		sub := q
		sub.Collections, sub.Limit = nil, q.Limit-len(page.Items)
		p, err := f.searchPage(ctx, cursor{Href: withQuery(href, queryOf(sub))}, sub.Limit)
		if err != nil {
			return page, err
		}
		page.Items = append(page.Items, p.Items...)
		if len(page.Items) >= q.Limit {
			break
		}
	}
	return page, nil
}

// searchStatic walks a static catalog for the items that match, the first q.Limit of them.
func (f fetcher) searchStatic(ctx context.Context, root *object, q SearchQuery, window interval) (SearchPage, error) {
	page := SearchPage{Items: []ItemSummary{}}
	err := f.walk(ctx, root, func(o *object) bool {
		if o.Type != "Feature" || !matches(o, q, window) {
			return false
		}
		page.Items = append(page.Items, itemSummary(o))
		return len(page.Items) >= q.Limit
	}, true)
	return page, err
}

// matches filters an item of a static catalog by collection, box and time.
func matches(it *object, q SearchQuery, window interval) bool {
	if len(q.Collections) > 0 && !slices.Contains(q.Collections, it.Collection) {
		return false
	}
	if len(q.BBox) == 4 && len(it.BBox) >= 4 {
		w, s, e, n := it.BBox[0], it.BBox[1], it.BBox[2], it.BBox[3]
		if len(it.BBox) == 6 {
			e, n = it.BBox[3], it.BBox[4]
		}
		if w > q.BBox[2] || e < q.BBox[0] || s > q.BBox[3] || n < q.BBox[1] {
			return false
		}
	}
	if window.set {
		start, end := itemTimes(it)
		if start == nil && end == nil {
			return false
		}
		if start == nil {
			start = end
		}
		if end == nil {
			end = start
		}
		if (window.end != nil && start.After(*window.end)) || (window.start != nil && end.Before(*window.start)) {
			return false
		}
	}
	return true
}

// interval is a datetime query: an instant or a range, either end open.
type interval struct {
	set        bool
	start, end *time.Time
}

func parseInterval(s string) (interval, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return interval{}, nil
	}
	parts := strings.Split(s, "/")
	if len(parts) > 2 {
		return interval{}, apperr.Unprocessable("datetime_range %q: an instant or start/end (RFC 3339, .. for open)", s)
	}
	var out interval
	out.set = true
	for i, p := range parts {
		if p == ".." || p == "" {
			continue
		}
		t, ok := parseTime(p)
		if !ok {
			return interval{}, apperr.Unprocessable("datetime_range %q: %q is not an RFC 3339 date-time", s, p)
		}
		if i == 0 {
			out.start = &t
		}
		if i == len(parts)-1 {
			out.end = &t
		}
	}
	return out, nil
}

func parseTime(s string) (time.Time, bool) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02"} {
		if t, err := time.Parse(layout, strings.TrimSpace(s)); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

// itemTimes is an item's time: its datetime, or its start and end.
func itemTimes(it *object) (start, end *time.Time) {
	at := func(s *string) *time.Time {
		if s == nil {
			return nil
		}
		if t, ok := parseTime(*s); ok {
			return &t
		}
		return nil
	}
	if t := at(it.Properties.Datetime); t != nil {
		return t, t
	}
	return at(it.Properties.Start), at(it.Properties.End)
}

// itemSummary describes an item for choosing: its data asset is the one the import would take.
func itemSummary(it *object) ItemSummary {
	sum := ItemSummary{ID: it.ID, Title: cmpOr(it.Properties.Title, it.ID), AssetCount: len(it.Assets),
		Datetime: it.Properties.Datetime, DatetimeStart: it.Properties.Start, DatetimeEnd: it.Properties.End,
		EPSG: it.Properties.EPSG, GSD: it.Properties.GSD, CloudCover: it.Properties.CloudCover}
	if it.Collection != "" {
		sum.Collection = &it.Collection
	}
	if self := it.self(); self != "" {
		sum.ItemHref = &self
	}
	if len(it.BBox) == 4 || len(it.BBox) == 6 {
		sum.BBox = it.BBox
	}
	if key, a, ok := dataAsset(it); ok {
		href, t := it.resolve(a.Href), a.Type
		sum.DataAssetHref, sum.DataAssetKey, sum.DataAssetSize = &href, &key, a.Size
		if t != "" {
			sum.DataAssetType = &t
		}
	}
	for _, key := range sortedKeys(it.Assets) {
		if a := it.Assets[key]; slices.Contains(a.Roles, "thumbnail") {
			href := it.resolve(a.Href)
			sum.ThumbnailHref = &href
			break
		}
	}
	return sum
}

func sortedKeys(m map[string]asset) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Kinds of data file an asset may hold, by the ingest that reads it.
const (
	kindRaster = "raster"
	kindVector = "vector"
)

// assetKind is what an asset holds and the file extension it is staged under ("" for a kind
// the import does not read): COGs and GeoTIFFs for the raster ingest; GeoJSON, GeoPackage,
// FlatGeobuf, zipped Shapefiles and CSV for the vector ingest. The href's extension decides
// when it is a known one, else the media type.
func assetKind(a asset) (kind, ext string) {
	u, _ := url.Parse(a.Href)
	name := a.Href
	if u != nil {
		name = u.Path
	}
	switch strings.ToLower(path.Ext(name)) {
	case ".tif", ".tiff":
		return kindRaster, ".tif"
	case ".geojson":
		return kindVector, ".geojson"
	case ".gpkg":
		return kindVector, ".gpkg"
	case ".fgb":
		return kindVector, ".fgb"
	case ".zip":
		return kindVector, ".zip"
	case ".csv":
		return kindVector, ".csv"
	}
	t := strings.ToLower(strings.ReplaceAll(a.Type, " ", ""))
	switch {
	case strings.HasPrefix(t, "image/tiff"), strings.Contains(t, "application=geotiff"):
		return kindRaster, ".tif"
	case strings.HasPrefix(t, "application/geo+json"):
		return kindVector, ".geojson"
	case strings.HasPrefix(t, "application/geopackage+sqlite3"):
		return kindVector, ".gpkg"
	case strings.HasPrefix(t, "application/vnd.flatgeobuf"), strings.HasPrefix(t, "application/flatgeobuf"):
		return kindVector, ".fgb"
	case strings.HasPrefix(t, "application/x-zipped-shp"), strings.HasPrefix(t, "application/zip"),
		strings.HasPrefix(t, "application/x-shapefile"):
		return kindVector, ".zip"
	case strings.HasPrefix(t, "text/csv"):
		return kindVector, ".csv"
	}
	return "", ""
}

// formatRank orders the vector formats an item may offer its data in (a catalog like this one
// offers several of the same data): the ones that keep types and geometry whole first.
var formatRank = map[string]int{".tif": 3, ".gpkg": 3, ".fgb": 2, ".geojson": 2, ".zip": 1, ".csv": 0}

// dataAsset is the asset an import takes: of those the import reads, one with the data role
// first, a Cloud Optimized GeoTIFF before another raster, GeoPackage or FlatGeobuf before
// GeoJSON, Shapefile and CSV, then by key.
func dataAsset(it *object) (string, asset, bool) {
	best, bestRank := "", -1
	for _, key := range sortedKeys(it.Assets) {
		a := it.Assets[key]
		kind, _ := assetKind(a)
		if kind == "" || slices.Contains(a.Roles, "thumbnail") || slices.Contains(a.Roles, "overview") {
			continue
		}
		_, ext := assetKind(a)
		rank := formatRank[ext]
		if slices.Contains(a.Roles, "data") {
			rank += 10
		}
		if strings.Contains(strings.ToLower(a.Type), "cloud-optimized") {
			rank += 5
		}
		if u, err := url.Parse(a.Href); err == nil && strings.HasSuffix(u.Path, "/items") {
			rank -= 5 // an OGC API Features items endpoint answers one page, not the data
		}
		if rank > bestRank {
			best, bestRank = key, rank
		}
	}
	if bestRank < 0 {
		return "", asset{}, false
	}
	return best, it.Assets[best], true
}
