package handlers

// Operations of the STAC Import tag: internal/stacimport reads the remote catalogs and runs the
// imports; these map requests and answers.

import (
	"context"

	"meridian/gen"
	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/internal/stacimport"
)

// stacBrowse refuses a caller who may not import before anything remote is fetched.
func stacBrowse(ctx context.Context) error {
	if !auth.From(ctx).Can(auth.CapUpload) {
		return apperr.Forbidden("browsing remote STAC catalogs needs the upload capability")
	}
	return nil
}

// StacImportStacCollections: STAC Collections (POST /services/stac/collections).
func (s *Server) StacImportStacCollections(ctx context.Context, request gen.StacImportStacCollectionsRequestObject) (gen.StacImportStacCollectionsResponseObject, error) {
	if err := stacBrowse(ctx); err != nil {
		return nil, err
	}
	cols, truncated, err := s.stacImport.Collections(ctx, request.Body.Url, stacCredentials(request.Body.Credentials))
	if err != nil {
		return nil, err
	}
	out := gen.StacImportStacCollections200JSONResponse{Url: request.Body.Url, Collections: make([]gen.StacCollectionSummary, len(cols)),
		Truncated: &truncated}
	for i, c := range cols {
		out.Collections[i] = gen.StacCollectionSummary{Id: c.ID, Title: c.Title, Description: c.Description, License: c.License,
			Keywords: &c.Keywords, Bbox: float32s(c.BBox), TemporalStart: c.TemporalStart, TemporalEnd: c.TemporalEnd, Href: &c.Href}
	}
	return out, nil
}

// StacImportStacConnect: STAC Connect (POST /services/stac/connect).
func (s *Server) StacImportStacConnect(ctx context.Context, request gen.StacImportStacConnectRequestObject) (gen.StacImportStacConnectResponseObject, error) {
	if err := stacBrowse(ctx); err != nil {
		return nil, err
	}
	sum, err := s.stacImport.Connect(ctx, request.Body.Url, stacCredentials(request.Body.Credentials))
	if err != nil {
		return nil, err
	}
	return gen.StacImportStacConnect200JSONResponse{Url: sum.URL, CatalogId: sum.ID, Title: sum.Title, Description: sum.Description,
		StacVersion: sum.Version, ConformsTo: &sum.ConformsTo, ItemSearch: &sum.ItemSearch, Static: &sum.Static,
		CollectionCount: sum.Collections}, nil
}

// StacImport: STAC Import (POST /services/stac/import).
func (s *Server) StacImport(ctx context.Context, request gen.StacImportRequestObject) (gen.StacImportResponseObject, error) {
	b := request.Body
	req := stacimport.ImportRequest{URL: b.Url, Items: make([]stacimport.ImportItem, len(b.Items)), Credentials: stacCredentials(b.Credentials)}
	if b.Visibility != nil {
		req.Visibility = string(*b.Visibility)
	}
	if b.Mode != nil {
		req.Mode = string(*b.Mode)
	}
	for i, it := range b.Items {
		req.Items[i] = stacimport.ImportItem{ID: it.Id, Title: it.Title, DataAssetHref: it.DataAssetHref, Collection: it.Collection,
			ItemHref: it.ItemHref, DataAssetKey: it.DataAssetKey, DatetimeStart: it.DatetimeStart, DatetimeEnd: it.DatetimeEnd, Keywords: val(it.Keywords)}
	}
	res, err := s.stacImport.Import(ctx, auth.From(ctx), req)
	if err != nil {
		return nil, err
	}
	out := gen.StacImport200JSONResponse{JobId: &res.JobID, Results: make([]gen.StacImportResult, len(res.Results))}
	for i, r := range res.Results {
		out.Results[i] = gen.StacImportResult{ItemId: r.ItemID, DatasetId: r.DatasetID, Status: gen.StacImportResultStatus(r.Status),
			Error: r.Error, Updated: &r.Updated}
		switch r.Status {
		case stacimport.StatusCreated:
			out.Created++
		case stacimport.StatusSkipped:
			out.Skipped++
		default:
			out.Errors++
		}
	}
	return out, nil
}

// StacImportStacSearch: STAC Search (POST /services/stac/search).
func (s *Server) StacImportStacSearch(ctx context.Context, request gen.StacImportStacSearchRequestObject) (gen.StacImportStacSearchResponseObject, error) {
	if err := stacBrowse(ctx); err != nil {
		return nil, err
	}
	b := request.Body
	page, err := s.stacImport.Search(ctx, stacimport.SearchQuery{URL: b.Url, Collections: val(b.Collections), BBox: float64s(b.Bbox),
		Datetime: val(b.DatetimeRange), Limit: valOr(b.Limit, 20), Next: val(b.Next), Credentials: stacCredentials(b.Credentials)})
	if err != nil {
		return nil, err
	}
	out := gen.StacImportStacSearch200JSONResponse{Items: make([]gen.StacItemSummary, len(page.Items)), Returned: len(page.Items),
		Matched: page.Matched}
	if page.Next != "" {
		out.Next = &page.Next
	}
	for i, it := range page.Items {
		out.Items[i] = gen.StacItemSummary{Id: it.ID, Collection: it.Collection, ItemHref: it.ItemHref, Title: it.Title,
			Bbox: float32s(it.BBox), Datetime: it.Datetime, DatetimeStart: it.DatetimeStart, DatetimeEnd: it.DatetimeEnd, Epsg: it.EPSG,
			Gsd: float32p(it.GSD), CloudCover: float32p(it.CloudCover), DataAssetHref: it.DataAssetHref, DataAssetType: it.DataAssetType,
			DataAssetKey: it.DataAssetKey, ThumbnailHref: it.ThumbnailHref, AssetCount: it.AssetCount}
		if it.DataAssetSize != nil {
			n := int(*it.DataAssetSize)
			out.Items[i].DataAssetSizeBytes = &n
		}
	}
	return out, nil
}

// stacCredentials is the remote's credential a request gave, if any.
func stacCredentials(c *gen.StacCredentials) *stacimport.Credentials {
	if c == nil {
		return nil
	}
	return &stacimport.Credentials{Header: val(c.Header), Value: val(c.Value)}
}

func float32s(v []float64) *[]float32 {
	if v == nil {
		return nil
	}
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return &out
}

func float64s(v *[]float32) []float64 {
	if v == nil {
		return nil
	}
	out := make([]float64, len(*v))
	for i, x := range *v {
		out[i] = float64(x)
	}
	return out
}

func float32p(v *float64) *float32 {
	if v == nil {
		return nil
	}
	f := float32(*v)
	return &f
}
