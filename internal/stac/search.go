package stac

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"meridian/internal/apperr"
	"meridian/internal/catalog"
	"meridian/internal/cql2"
)

// MaxLimit is the largest page of items; a larger limit is clamped, as STAC API asks.
const MaxLimit = 200

// Search is an item search, from GET parameters or a POST body.
type Search struct {
	BBox        []float64
	Intersects  json.RawMessage // a GeoJSON geometry
	Datetime    string
	IDs         []string
	Collections []string
	Limit       int
	Offset      int    // for clients that page by offset; next links carry a token instead
	Token       string // where the page starts: the previous page's next link
	Filter      string
	FilterLang  string // cql2-text or cql2-json
	SortBy      []Sort
	Fields      Fields
}

// Sort is one sortby field, as STAC names it.
type Sort struct {
	Field string
	Desc  bool
}

// Fields says which members of items to include and exclude (Fields extension).
type Fields struct {
	Include, Exclude []string
}

// sortables map the fields of STAC items a search may sort by onto record fields.
var sortables = map[string]string{"datetime": "datetime", "properties.datetime": "datetime", "start_datetime": "datetime",
	"properties.start_datetime": "datetime", "title": "title", "properties.title": "title", "created": "created",
	"properties.created": "created", "updated": "updated", "properties.updated": "updated"}

// Query is the search as the catalog's records query. Items are paged by keyset (the token):
// pages stay the same while records are added or changed elsewhere in the order.
func (s Search) Query(limits cql2.Limits) (catalog.RecordQuery, error) {
	q := catalog.RecordQuery{Limit: min(max(s.Limit, 1), MaxLimit), Offset: s.Offset, TimeOrCreated: true, Keyed: true}
	if s.Limit == 0 {
		q.Limit = 10
	}
	if s.BBox != nil && s.Intersects != nil {
		return q, apperr.Invalid("bbox and intersects: send one")
	}
	steps := []func() error{
		func() error { return s.spatial(&q) },
		func() error { return s.temporal(&q) },
		func() error { return s.members(&q) },
		func() error { return s.filter(&q, limits) },
		func() error { return s.order(&q) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return q, err
		}
	}
	if s.Token != "" {
		after, err := decodeToken(s.Token, s.Digest())
		if err != nil {
			return q, err
		}
		q.After, q.Offset = after, 0
	}
	return q, nil
}

func (s Search) spatial(q *catalog.RecordQuery) error {
	if s.BBox != nil {
		b := s.BBox
		if len(b) == 6 {
			b = []float64{b[0], b[1], b[3], b[4]}
		}
		if len(b) != 4 || b[1] > b[3] {
			return apperr.Invalid("bbox: 4 (or 6) numbers, west, south, east, north; south not above north")
		}
		q.BBox = b
	}
	if s.Intersects != nil {
		src := `{"op":"s_intersects","args":[{"property":"geometry"},` + string(s.Intersects) + `]}`
		if err := q.AddFilter("cql2-json", src); err != nil {
			return apperr.Invalid("intersects: give one GeoJSON geometry (%s)", err)
		}
	}
	return nil
}

// temporal reads datetime: an instant or an interval with open ends (`..` or empty).
func (s Search) temporal(q *catalog.RecordQuery) error {
	if s.Datetime == "" {
		return nil
	}
	parse := func(v string) (*time.Time, error) {
		if v == "" || v == ".." {
			return nil, nil
		}
		for _, layout := range []string{time.RFC3339Nano, time.DateOnly} {
			if t, err := time.Parse(layout, v); err == nil {
				return &t, nil
			}
		}
		return nil, apperr.Invalid("datetime: %q is neither an RFC 3339 date-time nor a date", v)
	}
	a, b, interval := strings.Cut(s.Datetime, "/")
	start, err := parse(a)
	if err != nil {
		return err
	}
	end := start
	if interval {
		if end, err = parse(b); err != nil {
			return err
		}
	}
	if start == nil && end == nil {
		return apperr.Invalid("datetime: an instant or an interval, not %q", s.Datetime)
	}
	if start != nil && end != nil && end.Before(*start) {
		return apperr.Invalid("datetime: the interval ends before it starts")
	}
	q.Start, q.End = start, end
	return nil
}

// members reads ids (dataset ids) and collections (the all-datasets collection, or catalog
// collections: items in any of them).
func (s Search) members(q *catalog.RecordQuery) error {
	for _, id := range s.IDs {
		u, err := uuid.Parse(id)
		if err != nil {
			return apperr.Invalid("ids: %q is not an item id", id)
		}
		q.IDs = append(q.IDs, u)
	}
	narrowed := len(s.Collections) > 0
	for _, c := range s.Collections {
		id, all, err := collectionID(c)
		if err != nil {
			return apperr.Invalid("collections: %q is not a collection id", c)
		}
		if all {
			narrowed = false // every item is in it
			break
		}
		q.CollectionIDs = append(q.CollectionIDs, id)
	}
	if !narrowed {
		q.CollectionIDs = nil
	}
	return nil
}

func (s Search) filter(q *catalog.RecordQuery, limits cql2.Limits) error {
	if s.Filter == "" {
		return nil
	}
	f, err := cql2.ParseFilterWithin(cmpOr(s.FilterLang, "cql2-text"), s.Filter, 4326, false, limits)
	if err == nil {
		q.Filters = append(q.Filters, f)
	}
	return err
}

// order reads sortby; without it items come most recently updated first. The dataset id breaks
// ties either way (the catalog adds it).
func (s Search) order(q *catalog.RecordQuery) error {
	for _, k := range s.SortBy {
		field, ok := sortables[k.Field]
		if !ok {
			return apperr.Invalid("sortby: %q is not sortable; sort by datetime, title, created or updated (or properties.<name>)", k.Field)
		}
		q.Sort = append(q.Sort, catalog.SortKey{Field: field, Desc: k.Desc})
	}
	if len(q.Sort) == 0 {
		q.Sort = []catalog.SortKey{{Field: "updated", Desc: true}}
	}
	return nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Digest names what a search selects and how it orders, so a token is only taken by the search
// that made it.
func (s Search) Digest() string {
	t := s
	t.Token, t.Limit, t.Offset, t.Fields = "", 0, 0, Fields{}
	raw, _ := json.Marshal(t)
	sum := sha256.Sum256(raw)
	return base64.RawURLEncoding.EncodeToString(sum[:9])
}

// token is where a page starts: the last item's sort values and id, and the search's digest.
type token struct {
	Values []any     `json:"v"`
	ID     uuid.UUID `json:"i"`
	Digest string    `json:"d"`
}

// NextToken is the token of the page after the one that ended with r.
func NextToken(s Search, r catalog.Record) string {
	raw, _ := json.Marshal(token{Values: r.SortValues, ID: r.DatasetID, Digest: s.Digest()})
	return base64.RawURLEncoding.EncodeToString(raw)
}

func decodeToken(t, digest string) (*catalog.RecordAfter, error) {
	raw, err := base64.RawURLEncoding.DecodeString(t)
	var tok token
	if err == nil {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		err = dec.Decode(&tok)
	}
	if err != nil || tok.Digest != digest {
		return nil, apperr.Invalid("token: not a token of this search; follow the next link of its previous page")
	}
	return &catalog.RecordAfter{Values: tok.Values, ID: tok.ID}, nil
}

// Select is item as the Fields extension asks: the item itself without include or exclude
// lists, else its object form less the members left out (Apply).
func (f Fields) Select(item ItemDoc) any {
	if len(f.Include) == 0 && len(f.Exclude) == 0 {
		return item
	}
	raw, err := json.Marshal(item)
	if err != nil {
		return item
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return item
	}
	f.Apply(obj)
	return obj
}

// Apply keeps the members of an item the Fields extension asks for. The members STAC requires
// of an item (type, stac_version, id, geometry, bbox, links, assets, properties.datetime) always
// stay, so every answer is still a valid item; a dotted name selects inside properties.
func (f Fields) Apply(item map[string]any) {
	if len(f.Include) == 0 && len(f.Exclude) == 0 {
		return
	}
	required := []string{"type", "stac_version", "id", "geometry", "bbox", "links", "assets", "properties", "collection"}
	props, _ := item["properties"].(map[string]any)
	if len(f.Include) > 0 {
		keepTop, keepProps := map[string]bool{}, map[string]bool{"datetime": true, "start_datetime": true, "end_datetime": true}
		for _, name := range f.Include {
			if p, ok := strings.CutPrefix(name, "properties."); ok {
				keepProps[p] = true
			} else if name == "properties" {
				keepProps = nil
			} else {
				keepTop[name] = true
			}
		}
		for k := range item {
			if !keepTop[k] && !slices.Contains(required, k) {
				delete(item, k)
			}
		}
		for k := range props {
			if keepProps != nil && !keepProps[k] {
				delete(props, k)
			}
		}
	}
	for _, name := range f.Exclude {
		if p, ok := strings.CutPrefix(name, "properties."); ok && p != "datetime" {
			delete(props, p)
		} else if !slices.Contains(required, name) {
			delete(item, name)
		}
	}
}

// ParseFields reads the GET form: a comma list, each name `-` prefixed to exclude.
func ParseFields(v string) Fields {
	var f Fields
	for _, name := range strings.Split(v, ",") {
		name = strings.TrimSpace(name)
		switch {
		case name == "":
		case strings.HasPrefix(name, "-"):
			f.Exclude = append(f.Exclude, name[1:])
		default:
			f.Include = append(f.Include, strings.TrimPrefix(name, "+"))
		}
	}
	return f
}

// ParseSortBy reads the GET form: a comma list, each field with an optional `+` or `-`.
func ParseSortBy(v string) []Sort {
	var out []Sort
	for _, name := range strings.Split(v, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		out = append(out, Sort{Field: strings.TrimLeft(name, "+- "), Desc: strings.HasPrefix(name, "-")})
	}
	return out
}

// ParseBBox reads the GET form of bbox.
func ParseBBox(v string) ([]float64, error) {
	var out []float64
	for _, part := range strings.Split(v, ",") {
		var f float64
		if _, err := fmt.Sscan(strings.TrimSpace(part), &f); err != nil {
			return nil, apperr.Invalid("bbox: %q is not a number", part)
		}
		out = append(out, f)
	}
	return out, nil
}
