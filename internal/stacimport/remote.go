// Package stacimport reads remote STAC APIs and static catalogs (connect, list collections,
// search) and imports their items as datasets: each item's data file is downloaded into staging
// like an upload and imported by the vector or raster ingest, and the item's metadata goes onto
// the record. Everything remote is fetched through internal/remote, whose policy (hosts,
// private addresses, redirects, sizes, time) every URL of a remote document passes too.
package stacimport

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"meridian/internal/apperr"
	"meridian/internal/remote"
)

// Bounds of a walk through a static catalog (child and item links, breadth first) and of the
// collection pages of an API.
const (
	walkDepth       = 6    // levels of child links below the root
	walkDocuments   = 300  // documents fetched by one walk
	collectionsMax  = 1000 // collections listed
	collectionPages = 50   // pages of collections followed
)

// object is any STAC document as far as the import reads it: catalog, collection, item, item
// collection or collection list.
type object struct {
	Type          string                  `json:"type"`
	StacVersion   string                  `json:"stac_version"`
	ID            string                  `json:"id"`
	Title         string                  `json:"title"`
	Description   string                  `json:"description"`
	ConformsTo    []string                `json:"conformsTo"`
	Links         []link                  `json:"links"`
	License       string                  `json:"license"`
	Keywords      []string                `json:"keywords"`
	Providers     []provider              `json:"providers"`
	Extent        *extent                 `json:"extent"`
	Collection    string                  `json:"collection"`
	BBox          []float64               `json:"bbox"`
	Properties    properties              `json:"properties"`
	Assets        map[string]asset        `json:"assets"`
	Features      []json.RawMessage       `json:"features"`
	Collections   []json.RawMessage       `json:"collections"`
	NumberMatched *int                    `json:"numberMatched"`
	Context       *struct{ Matched *int } `json:"context"`

	base *url.URL // where the document came from: relative links resolve against it
}

type link struct {
	Rel    string          `json:"rel"`
	Href   string          `json:"href"`
	Type   string          `json:"type"`
	Method string          `json:"method"`
	Body   json.RawMessage `json:"body"`
}

type provider struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Roles       []string `json:"roles"`
	URL         string   `json:"url"`
}

type extent struct {
	Spatial struct {
		BBox [][]float64 `json:"bbox"`
	} `json:"spatial"`
	Temporal struct {
		Interval [][]*string `json:"interval"`
	} `json:"temporal"`
}

type asset struct {
	Href     string   `json:"href"`
	Type     string   `json:"type"`
	Title    string   `json:"title"`
	Roles    []string `json:"roles"`
	Size     *int64   `json:"file:size"`
	Checksum string   `json:"file:checksum"`
}

// properties are the item properties the import reads.
type properties struct {
	Title       string     `json:"title"`
	Description string     `json:"description"`
	Datetime    *string    `json:"datetime"`
	Start       *string    `json:"start_datetime"`
	End         *string    `json:"end_datetime"`
	Updated     string     `json:"updated"`
	License     string     `json:"license"`
	Keywords    []string   `json:"keywords"`
	Providers   []provider `json:"providers"`
	EPSG        *int       `json:"proj:epsg"`
	GSD         *float64   `json:"gsd"`
	CloudCover  *float64   `json:"eo:cloud_cover"`
}

// resolve is href made absolute against the document it appears in.
func (o *object) resolve(href string) string {
	if o.base == nil || href == "" {
		return href
	}
	u, err := o.base.Parse(href)
	if err != nil {
		return href
	}
	return u.String()
}

// link finds the first link of rel (and, when given, of one of the media types).
func (o *object) link(rel string, types ...string) (link, bool) {
	for _, l := range o.Links {
		if !strings.EqualFold(l.Rel, rel) {
			continue
		}
		if len(types) > 0 && l.Type != "" && !matchesType(l.Type, types) {
			continue
		}
		l.Href = o.resolve(l.Href)
		return l, true
	}
	return link{}, false
}

func (o *object) links(rel string) []link {
	var out []link
	for _, l := range o.Links {
		if strings.EqualFold(l.Rel, rel) {
			l.Href = o.resolve(l.Href)
			out = append(out, l)
		}
	}
	return out
}

func matchesType(t string, types []string) bool {
	for _, want := range types {
		if strings.HasPrefix(strings.ToLower(t), want) {
			return true
		}
	}
	return false
}

// self is the document's own address: its self link, else where it was fetched from.
func (o *object) self() string {
	if l, ok := o.link("self"); ok && l.Href != "" {
		return l.Href
	}
	if o.base != nil {
		return o.base.String()
	}
	return ""
}

// fetcher reads STAC documents under the remote policy.
type fetcher struct {
	client *remote.Client
}

var jsonAccept = http.Header{"Accept": {"application/geo+json, application/json;q=0.9, */*;q=0.1"}}

// get fetches a STAC document. An answer that is not a JSON object, or an HTTP error, is the
// remote's failure (502); a URL the policy refuses is the caller's (422).
func (f fetcher) get(ctx context.Context, raw string) (*object, error) {
	return f.do(ctx, http.MethodGet, raw, nil)
}

func (f fetcher) do(ctx context.Context, method, raw string, body []byte) (*object, error) {
	h := jsonAccept.Clone()
	if body != nil {
		h.Set("Content-Type", "application/json")
	}
	res, err := f.client.Do(ctx, method, raw, h, body)
	if err != nil {
		return nil, err
	}
	if res.Status < 200 || res.Status > 299 {
		return nil, upstream("%s answered HTTP %d", redact(raw), res.Status)
	}
	var o object
	if err := json.Unmarshal(res.Body, &o); err != nil {
		return nil, upstream("%s did not answer a STAC JSON document: %v", redact(raw), err)
	}
	o.base = res.URL
	return &o, nil
}

func upstream(format string, args ...any) error {
	return &apperr.Error{Kind: apperr.KindUpstream, Title: "Bad Gateway", Detail: fmt.Sprintf(format, args...)}
}

// redact shows a URL without its query (which may carry a token of the remote's).
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	u.RawQuery, u.Fragment, u.User = "", "", nil
	return u.String()
}

// isSTAC tells a STAC landing page, catalog or collection from any other JSON.
func (o *object) isSTAC() bool {
	switch o.Type {
	case "Catalog", "Collection":
		return true
	}
	return o.StacVersion != "" || len(o.ConformsTo) > 0
}
