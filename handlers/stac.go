package handlers

// Operations of the STAC tag: the catalog as a STAC API 1.0.0 (internal/stac builds the
// documents; the records query decides who sees what, counts included).

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"

	"github.com/google/uuid"

	"meridian/gen"
	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/internal/catalog"
	"meridian/internal/stac"
	"meridian/internal/web"
)

// stacRoot is the API root of the request's public address, under which STAC links point.
func (s *Server) stacRoot(ctx context.Context) string { return s.base(ctx) + "/api" }

// StacLandingPage: Landing Page (GET /stac/).
func (s *Server) StacLandingPage(ctx context.Context, request gen.StacLandingPageRequestObject) (gen.StacLandingPageResponseObject, error) {
	cols, err := s.stacCollections(ctx)
	if err != nil {
		return nil, err
	}
	return stacDoc{body: stac.Landing(s.stacRoot(ctx), cols)}, nil
}

// StacConformance: Conformance (GET /stac/conformance).
func (s *Server) StacConformance(ctx context.Context, request gen.StacConformanceRequestObject) (gen.StacConformanceResponseObject, error) {
	return stacDoc{body: map[string]any{"conformsTo": stac.Classes}}, nil
}

// stacCollections are the collection of every dataset, then the catalog collections by name.
func (s *Server) stacCollections(ctx context.Context) ([]map[string]any, error) {
	p, root := auth.From(ctx), s.stacRoot(ctx)
	sum, err := s.records.CatalogSummary(ctx, p)
	if err != nil {
		return nil, err
	}
	list, _, err := s.catalog.Collections(ctx, p, nil, nil, 0, 10000)
	out := []map[string]any{stac.Everything(sum, root)}
	for _, c := range list {
		out = append(out, stac.Collection(c, stacLicense(c.License), root))
	}
	return out, err
}

// stacLicense is a collection's licence: its members' when they share one, `various` otherwise.
func stacLicense(l *string) string {
	if l == nil {
		return "various"
	}
	return stac.License(l)
}

// StacGetCollections: Get Collections (GET /stac/collections).
func (s *Server) StacGetCollections(ctx context.Context, request gen.StacGetCollectionsRequestObject) (gen.StacGetCollectionsResponseObject, error) {
	cols, err := s.stacCollections(ctx)
	if err != nil {
		return nil, err
	}
	root := s.stacRoot(ctx)
	return stacDoc{body: map[string]any{"collections": cols, "links": []stac.Link{
		{"rel": "self", "href": root + "/stac/collections", "type": stac.JSON},
		{"rel": "root", "href": root + "/stac/", "type": stac.JSON},
	}}}, nil
}

// StacGetCollection: Get Collection (GET /stac/collections/{collection_id}).
func (s *Server) StacGetCollection(ctx context.Context, request gen.StacGetCollectionRequestObject) (gen.StacGetCollectionResponseObject, error) {
	p, root := auth.From(ctx), s.stacRoot(ctx)
	if request.CollectionId == stac.AllDatasets {
		sum, err := s.records.CatalogSummary(ctx, p)
		return stacDoc{body: stac.Everything(sum, root)}, err
	}
	id, err := stacCollectionID(request.CollectionId)
	if err != nil {
		return nil, err
	}
	c, err := s.catalog.Collection(ctx, p, id)
	if err != nil {
		return nil, err
	}
	return stacDoc{body: stac.Collection(c, stacLicense(c.License), root)}, nil
}

// stacCollectionID reads a catalog collection's id; anything else is no collection (404).
func stacCollectionID(v string) (uuid.UUID, error) {
	id, err := uuid.Parse(v)
	if err != nil {
		return id, apperr.NotFound("collection %q not found", v)
	}
	return id, nil
}

// StacGetCollectionItems: Get Collection Items (GET /stac/collections/{collection_id}/items).
func (s *Server) StacGetCollectionItems(ctx context.Context, request gen.StacGetCollectionItemsRequestObject) (gen.StacGetCollectionItemsResponseObject, error) {
	p, cid := request.Params, request.CollectionId
	if cid != stac.AllDatasets {
		id, err := stacCollectionID(cid)
		if err != nil {
			return nil, err
		}
		if _, err := s.catalog.Collection(ctx, auth.From(ctx), id); err != nil {
			return nil, err
		}
	}
	in := stac.Search{Collections: []string{cid}, Datetime: val(p.Datetime), Limit: val(p.Limit), Offset: val(p.Offset),
		Token: val(p.Token)}
	if p.Bbox != nil {
		in.BBox = *p.Bbox
	}
	return s.stacSearch(ctx, in, cid, "/stac/collections/"+cid+"/items", false)
}

// StacGetCollectionItem: Get Collection Item (GET /stac/collections/{collection_id}/items/{item_id}).
func (s *Server) StacGetCollectionItem(ctx context.Context, request gen.StacGetCollectionItemRequestObject) (gen.StacGetCollectionItemResponseObject, error) {
	return s.stacItem(ctx, request.CollectionId, request.ItemId)
}

// StacGetItem: Get Item (GET /stac/items/{item_id}).
func (s *Server) StacGetItem(ctx context.Context, request gen.StacGetItemRequestObject) (gen.StacGetItemResponseObject, error) {
	return s.stacItem(ctx, stac.AllDatasets, request.ItemId)
}

// stacItem is one visible dataset of a collection as an item; 404 otherwise.
func (s *Server) stacItem(ctx context.Context, collection string, id uuid.UUID) (stacDoc, error) {
	q := catalog.RecordQuery{RecordID: &id, Limit: 1}
	if collection != stac.AllDatasets {
		cid, err := stacCollectionID(collection)
		if err != nil {
			return stacDoc{}, err
		}
		q.CollectionIDs = []uuid.UUID{cid}
	}
	records, _, err := s.records.Records(ctx, auth.From(ctx), q)
	if err != nil {
		return stacDoc{}, err
	}
	if len(records) == 0 {
		return stacDoc{}, apperr.NotFound("item %s not found in collection %s", id, collection)
	}
	return stacDoc{body: stac.Item(records[0], s.stacRoot(ctx), collection), mediaType: stac.GeoJSON}, nil
}

// StacSearchGet: Search Get (GET /stac/search).
func (s *Server) StacSearchGet(ctx context.Context, request gen.StacSearchGetRequestObject) (gen.StacSearchGetResponseObject, error) {
	p := request.Params
	in := stac.Search{Datetime: val(p.Datetime), IDs: val(p.Ids), Collections: val(p.Collections), Limit: val(p.Limit),
		Offset: val(p.Offset), Token: val(p.Token), Filter: val(p.Filter), FilterLang: string(val(p.FilterLang)),
		SortBy: stac.ParseSortBy(val(p.Sortby)), Fields: stac.ParseFields(val(p.Fields))}
	if p.Bbox != nil {
		in.BBox = *p.Bbox
	}
	if p.Intersects != nil {
		in.Intersects = json.RawMessage(*p.Intersects)
	}
	return s.stacSearch(ctx, in, stac.AllDatasets, "/stac/search", false)
}

// StacSearchPost: Search Post (POST /stac/search).
func (s *Server) StacSearchPost(ctx context.Context, request gen.StacSearchPostRequestObject) (gen.StacSearchPostResponseObject, error) {
	in, err := stacSearchOf(request.Body)
	if err != nil {
		return nil, err
	}
	return s.stacSearch(ctx, in, stac.AllDatasets, "/stac/search", true)
}

// stacSearchOf reads a POST search body.
func stacSearchOf(b *gen.StacSearchBody) (stac.Search, error) {
	var in stac.Search
	if b == nil {
		return in, nil
	}
	in = stac.Search{BBox: val(b.Bbox), Datetime: val(b.Datetime), Collections: val(b.Collections), IDs: val(b.Ids),
		Limit: val(b.Limit), Offset: val(b.Offset), Token: val(b.Token)}
	if b.Intersects != nil {
		in.Intersects, _ = json.Marshal(*b.Intersects)
	}
	if b.Filter != nil {
		raw, _ := json.Marshal(*b.Filter)
		in.Filter, in.FilterLang = string(raw), "cql2-json"
	}
	for _, k := range val(b.Sortby) {
		in.SortBy = append(in.SortBy, stac.Sort{Field: k.Field, Desc: k.Direction != nil && *k.Direction == gen.StacSearchBodySortbyDirectionDesc})
	}
	if b.Fields != nil {
		in.Fields = stac.Fields{Include: val(b.Fields.Include), Exclude: val(b.Fields.Exclude)}
	}
	return in, nil
}

// stacSearch answers a page of the search as an ItemCollection of items of collection, with a
// next link (a token) when more follow: a GET link with the query, or for POST the body to send.
func (s *Server) stacSearch(ctx context.Context, in stac.Search, collection, path string, post bool) (stacDoc, error) {
	q, err := in.Query(s.filterLimits())
	if err != nil {
		return stacDoc{}, err
	}
	q.Limit++ // one more tells whether a next page exists
	records, total, err := s.records.Records(ctx, auth.From(ctx), q)
	if err != nil {
		return stacDoc{}, err
	}
	more := len(records) == q.Limit
	if more {
		records = records[:q.Limit-1]
	}
	root := s.stacRoot(ctx)
	features := make([]any, len(records))
	for i, r := range records {
		features[i] = in.Fields.Select(stac.Item(r, root, collection))
	}
	links := []stac.Link{{"rel": "root", "href": root + "/stac/", "type": stac.JSON}}
	if more {
		links = append(links, s.stacNext(ctx, in, records[len(records)-1], path, post))
	}
	return stacDoc{mediaType: stac.GeoJSON, body: map[string]any{"type": "FeatureCollection", "features": features, "links": links,
		"numberMatched": total, "numberReturned": len(features),
		"context": map[string]any{"limit": q.Limit - 1, "matched": total, "returned": len(features)}}}, nil
}

// stacNext is the link to the page after the one that ended with last.
func (s *Server) stacNext(ctx context.Context, in stac.Search, last catalog.Record, path string, post bool) stac.Link {
	tok := stac.NextToken(in, last)
	href := s.stacRoot(ctx) + path
	if post {
		return stac.Link{"rel": "next", "href": href, "type": stac.GeoJSON, "method": "POST", "merge": true, "body": map[string]any{"token": tok}}
	}
	q, _ := url.ParseQuery(web.MetaFrom(ctx).RawQuery)
	q.Del("offset")
	q.Set("token", tok)
	return stac.Link{"rel": "next", "href": href + "?" + q.Encode(), "type": stac.GeoJSON, "method": "GET"}
}

// stacDoc is a STAC document written as it was built (the Fields extension may leave out any
// member a typed response would write).
type stacDoc struct {
	body      any
	mediaType string // default application/json
}

func (d stacDoc) write(w http.ResponseWriter) error {
	raw, err := json.Marshal(d.body)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", cmp.Or(d.mediaType, stac.JSON))
	w.Header().Set("Content-Length", strconv.Itoa(len(raw)))
	w.WriteHeader(http.StatusOK)
	_, err = w.Write(raw)
	return err
}

func (d stacDoc) VisitStacLandingPageResponse(w http.ResponseWriter) error    { return d.write(w) }
func (d stacDoc) VisitStacConformanceResponse(w http.ResponseWriter) error    { return d.write(w) }
func (d stacDoc) VisitStacGetCollectionsResponse(w http.ResponseWriter) error { return d.write(w) }
func (d stacDoc) VisitStacGetCollectionResponse(w http.ResponseWriter) error  { return d.write(w) }
func (d stacDoc) VisitStacGetCollectionItemsResponse(w http.ResponseWriter) error {
	return d.write(w)
}
func (d stacDoc) VisitStacGetCollectionItemResponse(w http.ResponseWriter) error { return d.write(w) }
func (d stacDoc) VisitStacGetItemResponse(w http.ResponseWriter) error           { return d.write(w) }
func (d stacDoc) VisitStacSearchGetResponse(w http.ResponseWriter) error         { return d.write(w) }
func (d stacDoc) VisitStacSearchPostResponse(w http.ResponseWriter) error        { return d.write(w) }
