// Package stac serves the catalog as a STAC API 1.0.0: every dataset the caller may see is an
// item (its extent, its data vintage, its metadata and the ways to get its data), every catalog
// collection a STAC collection, plus one collection of all datasets. It builds the documents
// from catalog records and reads searches; HTTP and visibility stay with handlers and catalog.
// Documents are JSON objects (maps), but for items (ItemDoc), of which a page writes many.
package stac

import (
	"encoding/json"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"

	"meridian/internal/catalog"
	"meridian/internal/cql2"
	"meridian/internal/export"
)

// Version is the STAC version of every document served.
const Version = "1.0.0"

// AllDatasets is the id of the collection of every dataset the caller may see.
const AllDatasets = "datasets"

// Classes are the conformance classes the STAC API passes (the conformance suite checks each).
var Classes = append([]string{
	"https://api.stacspec.org/v1.0.0/core",
	"https://api.stacspec.org/v1.0.0/collections",
	"https://api.stacspec.org/v1.0.0/ogcapi-features",
	"https://api.stacspec.org/v1.0.0/item-search",
	"https://api.stacspec.org/v1.0.0/item-search#fields",
	"https://api.stacspec.org/v1.0.0/item-search#sort",
	"https://api.stacspec.org/v1.0.0-rc.2/item-search#filter",
	"http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/core",
	"http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/geojson",
	"http://www.opengis.net/spec/ogcapi-features-3/1.0/conf/filter",
}, cql2.Classes...)

// Media types of the documents and assets.
const (
	GeoJSON = "application/geo+json"
	JSON    = "application/json"
	COGType = "image/tiff; application=geotiff; profile=cloud-optimized"
)

// Link is a STAC link.
type Link = map[string]any

func link(rel, href, mediaType, title string) Link {
	l := Link{"rel": rel, "href": href, "type": mediaType}
	if title != "" {
		l["title"] = title
	}
	return l
}

// instant writes t in UTC as STAC asks (RFC 3339 ending in Z).
func instant(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05Z") }

// Item is a record as a STAC item of collection, with its links and assets under root (the API
// root: "https://host/api").
func Item(r catalog.Record, root, collection string) ItemDoc {
	id := r.DatasetID.String()
	props := itemProps{Title: r.Title, Created: instant(r.Created), Updated: instant(r.Updated), License: License(r.License),
		RecordType: r.RecordType, RecordStatus: r.RecordStatus, FeatureCount: r.FeatureCount, GeometryType: r.GeometryType,
		Keywords: r.Keywords}
	props.datetimes(r)
	if r.Summary != nil && strings.TrimSpace(*r.Summary) != "" {
		props.Description = *r.Summary
	}
	if r.SourceOrganization != nil && *r.SourceOrganization != "" {
		props.Providers = []provider{{Name: *r.SourceOrganization, Roles: []string{"producer"}}}
	}
	links := []itemLink{
		{"self", root + "/stac/collections/" + collection + "/items/" + id, GeoJSON, ""},
		{"parent", root + "/stac/collections/" + collection, JSON, ""},
		{"collection", root + "/stac/collections/" + collection, JSON, ""},
		{"root", root + "/stac/", JSON, ""},
		{"describedby", root + "/collections/datasets/items/" + id, GeoJSON, "The catalog record"},
	}
	if props.License == "other" && r.License != nil {
		links = append(links, itemLink{"license", root + "/datasets/" + id, JSON, *r.License})
	}
	item := ItemDoc{Type: "Feature", StacVersion: Version, StacExtensions: []string{}, ID: id, Collection: collection,
		Geometry: json.RawMessage("null"), Properties: props, Assets: assets(r, root), Links: links}
	if r.Extent != nil {
		item.Geometry, item.BBox = r.Extent, r.BBox
	}
	return item
}

// ItemDoc is an item as it is written. It is typed, unlike the other documents: a page has up
// to 200 items, and writing them as maps spent most of a search's encoding time sorting keys and
// reflecting over values. The Fields extension works on the item's object form (Fields.Select).
type ItemDoc struct {
	Type           string           `json:"type"`
	StacVersion    string           `json:"stac_version"`
	StacExtensions []string         `json:"stac_extensions"`
	ID             string           `json:"id"`
	Collection     string           `json:"collection"`
	Geometry       json.RawMessage  `json:"geometry"`
	BBox           []float64        `json:"bbox,omitempty"`
	Properties     itemProps        `json:"properties"`
	Assets         map[string]asset `json:"assets"`
	Links          []itemLink       `json:"links"`
}

type itemProps struct {
	Title         string     `json:"title"`
	Description   string     `json:"description,omitempty"`
	Datetime      *string    `json:"datetime"` // null when the item has start and end
	StartDatetime string     `json:"start_datetime,omitempty"`
	EndDatetime   string     `json:"end_datetime,omitempty"`
	Created       string     `json:"created"`
	Updated       string     `json:"updated"`
	License       string     `json:"license"`
	Keywords      []string   `json:"keywords,omitempty"`
	Providers     []provider `json:"providers,omitempty"`
	RecordType    string     `json:"meridian:record_type"`
	RecordStatus  string     `json:"meridian:record_status"`
	FeatureCount  *int64     `json:"meridian:feature_count,omitempty"`
	GeometryType  *string    `json:"meridian:geometry_type,omitempty"`
}

type provider struct {
	Name  string   `json:"name"`
	Roles []string `json:"roles"`
}

// datetimes sets the item's time: its data vintage (one instant, or start and end with datetime
// null), else when the record was created.
func (p *itemProps) datetimes(r catalog.Record) {
	start, end := r.VintageStart, r.VintageEnd
	at := func(t time.Time) *string { s := instant(t); return &s }
	switch {
	case start.Valid && end.Valid && !start.Time.Equal(end.Time):
		p.StartDatetime, p.EndDatetime = instant(start.Time), instant(end.Time)
	case start.Valid:
		p.Datetime = at(start.Time)
	case end.Valid:
		p.Datetime = at(end.Time)
	default:
		p.Datetime = at(r.Created)
	}
}

// assets are the ways to get the dataset's data: its COG and quicklook for rasters; a download
// per export format, its OGC API Features items and its tile token for datasets with features.
func assets(r catalog.Record, root string) map[string]asset {
	base := root + "/datasets/" + r.DatasetID.String()
	out := map[string]asset{}
	switch r.RecordType {
	case "raster_dataset", "vrt_dataset":
		out["data"] = asset{base + "/download/cog", COGType, "Cloud Optimized GeoTIFF", roleData}
		out["thumbnail"] = asset{base + "/quicklook", "image/png", "Quicklook", []string{"thumbnail", "overview"}}
	case "vector_dataset", "table":
		for _, name := range export.FormatNames {
			f := export.Formats[name]
			out[name] = asset{base + "/export?format=" + name, f.MediaType, f.Title, roleData}
		}
		out["features"] = asset{root + "/collections/" + r.DatasetID.String() + "/items", GeoJSON, "OGC API Features items", roleData}
		if r.RecordType == "vector_dataset" {
			out["tiles"] = asset{root + "/tiles/token/" + r.DatasetID.String() + "/", JSON, "Vector tiles: the signed XYZ template", []string{"tiles"}}
		}
	}
	return out
}

var roleData = []string{"data"}

// asset and itemLink are typed, unlike the documents' other members: an item has a dozen of
// them, and a page of items spent most of its encoding time sorting and reflecting over maps.
type asset struct {
	Href  string   `json:"href"`
	Type  string   `json:"type"`
	Title string   `json:"title"`
	Roles []string `json:"roles"`
}

type itemLink struct {
	Rel   string `json:"rel"`
	Href  string `json:"href"`
	Type  string `json:"type"`
	Title string `json:"title,omitempty"`
}

// licenseID is what a STAC license may be (STAC 1.0.0 licensing.json).
var licenseID = regexp.MustCompile(`^[\w\-.+]+$`)

// spdx maps licence names as people write them to SPDX identifiers.
var spdx = map[string]string{"cc-by-4.0": "CC-BY-4.0", "cc-by-sa-4.0": "CC-BY-SA-4.0", "cc-by-nc-4.0": "CC-BY-NC-4.0",
	"cc0": "CC0-1.0", "cc0-1.0": "CC0-1.0", "cc-zero": "CC0-1.0", "odbl": "ODbL-1.0", "odbl-1.0": "ODbL-1.0",
	"odc-by": "ODC-By-1.0", "odc-by-1.0": "ODC-By-1.0", "pddl": "PDDL-1.0", "pddl-1.0": "PDDL-1.0", "mit": "MIT",
	"apache-2.0": "Apache-2.0", "ogl-uk-3.0": "OGL-UK-3.0", "etalab-2.0": "etalab-2.0", "dl-de-by-2.0": "DL-DE-BY-2.0"}

// License is a record's licence as STAC takes it: an SPDX identifier where one is known or the
// text already is one, `proprietary` without a licence, `other` otherwise (the item then links
// to the dataset, whose record states it).
func License(l *string) string {
	if l == nil || strings.TrimSpace(*l) == "" {
		return "proprietary"
	}
	key := strings.ToLower(strings.Join(strings.Fields(strings.NewReplacer("licence", "", "license", "").Replace(strings.ToLower(*l))), "-"))
	if id, ok := spdx[key]; ok {
		return id
	}
	if licenseID.MatchString(*l) {
		return *l
	}
	return "other"
}

// Collection is a catalog collection as a STAC collection.
func Collection(c catalog.Collection, license, root string) map[string]any {
	id := c.ID.String()
	description := c.Name // STAC asks for a description of at least one character
	if c.Description != nil && strings.TrimSpace(*c.Description) != "" {
		description = *c.Description
	}
	out := map[string]any{"type": "Collection", "stac_version": Version, "stac_extensions": []string{}, "id": id, "title": c.Name,
		"description": description, "license": license, "extent": Extent(c.Extent, c.Temporal[0], c.Temporal[1]),
		"links": collectionLinks(root, id), "meridian:dataset_count": c.DatasetCount}
	return out
}

// Everything is the collection of every dataset the caller may see, described by the catalog's
// summary for that caller.
func Everything(s catalog.Summary, root string) map[string]any {
	return map[string]any{"type": "Collection", "stac_version": Version, "stac_extensions": []string{}, "id": AllDatasets,
		"title": "All datasets", "description": "Every dataset of the catalog the caller may see.", "license": "various",
		"keywords": s.Keywords, "extent": Extent(s.BBox, s.Start, s.End), "links": collectionLinks(root, AllDatasets),
		"summaries": map[string]any{"meridian:record_type": s.RecordTypes, "meridian:geometry_type": s.GeometryTypes}}
}

func collectionLinks(root, id string) []Link {
	return []Link{
		link("self", root+"/stac/collections/"+id, JSON, ""),
		link("root", root+"/stac/", JSON, ""),
		link("parent", root+"/stac/", JSON, ""),
		link("items", root+"/stac/collections/"+id+"/items", GeoJSON, "Items"),
	}
}

// Extent is a STAC extent: the box (the whole world when unknown, as the schema needs one) and
// the interval (open ends null).
func Extent(bbox []float64, start, end *time.Time) map[string]any {
	if len(bbox) != 4 {
		bbox = []float64{-180, -90, 180, 90}
	}
	when := func(t *time.Time) any {
		if t == nil {
			return nil
		}
		return instant(*t)
	}
	return map[string]any{"spatial": map[string]any{"bbox": [][]float64{bbox}},
		"temporal": map[string]any{"interval": [][]any{{when(start), when(end)}}}}
}

// Landing is the root catalog: conformance, links to the collections, search and the document,
// and a child per collection the caller sees.
func Landing(root string, children []map[string]any) map[string]any {
	links := []Link{
		link("self", root+"/stac/", JSON, ""),
		link("root", root+"/stac/", JSON, ""),
		link("conformance", root+"/stac/conformance", JSON, "Conformance classes"),
		link("data", root+"/stac/collections", JSON, "Collections"),
		withMethod(link("search", root+"/stac/search", GeoJSON, "Item search"), "GET"),
		withMethod(link("search", root+"/stac/search", GeoJSON, "Item search"), "POST"),
		link("service-desc", root+"/openapi.json", "application/vnd.oai.openapi+json;version=3.0", "The API definition"),
		link("service-doc", root+"/docs", "text/html", "The API documentation"),
		// What filter may name (Filter extension): the catalog records' queryables.
		link("http://www.opengis.net/def/rel/ogc/1.0/queryables", root+"/collections/datasets/queryables", "application/schema+json", "Queryables"),
	}
	for _, c := range children {
		links = append(links, link("child", root+"/stac/collections/"+c["id"].(string), JSON, c["title"].(string)))
	}
	return map[string]any{"type": "Catalog", "stac_version": Version, "stac_extensions": []string{}, "id": "meridian",
		"title": "Meridian", "description": "The catalog's datasets as a STAC API.", "conformsTo": Classes, "links": links}
}

func withMethod(l Link, method string) Link {
	l["method"] = method
	return l
}

// collectionID reads a collection id of a search: the all-datasets collection or a uuid.
func collectionID(s string) (uuid.UUID, bool, error) {
	if s == AllDatasets {
		return uuid.Nil, true, nil
	}
	id, err := uuid.Parse(s)
	return id, false, err
}
