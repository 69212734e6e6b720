package sources

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/internal/ingest"
	"meridian/store"
)

// LayerSource is one layer of a remote source, as Probe reported it. Token is used for the
// fetch only and never stored.
type LayerSource struct {
	URL, ServiceType, LayerName string
	LayerID                     any
	ObjectIDField               string
	Token                       string
}

// Stager stages a file for a new pending import and previews it (ingest.Jobs).
type Stager interface {
	Upload(ctx context.Context, p auth.Principal, filename string, r io.Reader) (ingest.Job, error)
	Preview(ctx context.Context, p auth.Principal, id uuid.UUID, samples int) (ingest.Preview, error)
	// The reupload side, for refreshes and Reupload Service Preview.
	Reupload(ctx context.Context, p auth.Principal, dataset uuid.UUID, filename string, r io.Reader) (ingest.Job, error)
	PreviewReupload(ctx context.Context, p auth.Principal, dataset, id uuid.UUID, layerName string, samples int) (ingest.ReuploadPreview, error)
	CommitReupload(ctx context.Context, p auth.Principal, dataset, id uuid.UUID, c ingest.ReuploadChoice) (ingest.Job, error)
}

// pageSize is how many features one request for a page of a layer asks for; maxPages bounds a
// service that never stops paging (the staging size bound usually ends it first).
const (
	pageSize = 1000
	maxPages = 10000
)

// PreviewLayer fetches every feature of a remote layer (all pages) into the staging area as a
// pending import of the caller, remembers where it came from, and previews it like an
// uploaded file: Commit Import then creates a dataset whose source_url is the layer's service.
func (s *Service) PreviewLayer(ctx context.Context, p auth.Principal, src LayerSource, samples int) (ingest.Preview, error) {
	if !p.Can(auth.CapUpload) {
		return ingest.Preview{}, apperr.Forbidden("importing from services needs the upload capability")
	}
	if _, err := s.Remote.Check(src.URL); err != nil {
		return ingest.Preview{}, err
	}
	filename, fetch, err := s.layerFetch(src)
	if err != nil {
		return ingest.Preview{}, err
	}
	// The features stream into the staging file as they arrive: the staging limits bound the
	// whole layer, the remote policy each request.
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(fetch(ctx, pw)) }()
	job, err := s.Jobs.Upload(ctx, p, filename, pr)
	_ = pr.CloseWithError(errors.New("staging stopped"))
	if err != nil {
		return ingest.Preview{}, err
	}
	ref, _ := json.Marshal(map[string]any{"url": src.URL, "service_type": src.ServiceType, "layer_name": src.LayerName,
		"layer_id": src.LayerID, "object_id_field": src.ObjectIDField})
	if err := s.Q.SetIngestJobSource(ctx, store.SetIngestJobSourceParams{ID: job.ID, Source: ref}); err != nil {
		return ingest.Preview{}, err
	}
	return s.Jobs.Preview(ctx, p, job.ID, samples)
}

// layerFetch is how a layer of each kind of source is read: the staged file's name and the
// function writing its bytes.
func (s *Service) layerFetch(src LayerSource) (string, func(context.Context, io.Writer) error, error) {
	u, _ := url.Parse(src.URL)
	name := safeName(src.LayerName)
	header := http.Header{}
	if src.Token != "" && src.ServiceType != ArcGISFeature {
		header.Set("Authorization", "Bearer "+src.Token)
	}
	switch src.ServiceType {
	case OGCAPIFeatures:
		items := ogcItems(u, src.LayerName)
		return name + ".geojson", func(ctx context.Context, w io.Writer) error {
			return s.pages(ctx, w, header, func(_ int, last []byte) (string, bool) {
				if last == nil {
					return items, true
				}
				next := nextLink(last)
				if next == "" {
					return "", false
				}
				ref, err := url.Parse(items)
				if err != nil {
					return "", false
				}
				n, err := ref.Parse(next)
				return n.String(), err == nil
			})
		}, nil
	case WFS:
		return name + ".geojson", func(ctx context.Context, w io.Writer) error {
			return s.pages(ctx, w, header, func(page int, last []byte) (string, bool) {
				if last != nil && featureCount(last) < pageSize {
					return "", false
				}
				c := *u
				c.RawQuery = url.Values{"service": {"WFS"}, "version": {"2.0.0"}, "request": {"GetFeature"}, "typeNames": {src.LayerName},
					"outputFormat": {"application/json"}, "count": {strconv.Itoa(pageSize)}, "startIndex": {strconv.Itoa(page * pageSize)}}.Encode()
				return c.String(), true
			})
		}, nil
	case ArcGISFeature:
		id := fmt.Sprint(src.LayerID)
		if src.LayerID == nil {
			return "", nil, apperr.Unprocessable("layer_id is needed for an ArcGIS layer")
		}
		return name + ".geojson", func(ctx context.Context, w io.Writer) error {
			return s.pages(ctx, w, header, func(page int, last []byte) (string, bool) {
				if last != nil && !exceeded(last) && featureCount(last) < pageSize {
					return "", false
				}
				q := url.Values{"where": {"1=1"}, "outFields": {"*"}, "f": {"geojson"}, "outSR": {"4326"},
					"resultOffset": {strconv.Itoa(page * pageSize)}, "resultRecordCount": {strconv.Itoa(pageSize)}}
				if src.ObjectIDField != "" {
					q.Set("orderByFields", src.ObjectIDField)
				}
				if src.Token != "" {
					q.Set("token", src.Token)
				}
				c := *u
				if !strings.HasSuffix(strings.TrimSuffix(c.Path, "/"), "/"+id) {
					c.Path = strings.TrimSuffix(c.Path, "/") + "/" + id
				}
				c.Path += "/query"
				c.RawQuery = q.Encode()
				return c.String(), true
			})
		}, nil
	case GeoJSON, CSV, Zip:
		ext := map[string]string{GeoJSON: ".geojson", CSV: ".csv", Zip: ".zip"}[src.ServiceType]
		return name + ext, func(ctx context.Context, w io.Writer) error {
			body, _, err := s.fetch(ctx, src.URL, header)
			if err == nil {
				_, err = w.Write(body)
			}
			return err
		}, nil
	case WMS, WMTS, XYZ, ArcGISMap:
		return "", nil, apperr.Unprocessable("%s layers are drawn by their service: they can be shown on a map, not imported", src.ServiceType)
	case STAC:
		return "", nil, apperr.Unprocessable("STAC items are imported through STAC Import")
	}
	return "", nil, apperr.Unprocessable("service_type %q is not one Probe Service URL reports", src.ServiceType)
}

// pages writes one GeoJSON FeatureCollection of the features of every page next names (given
// the page number and the previous page's body, nil at first) until it says stop.
func (s *Service) pages(ctx context.Context, w io.Writer, header http.Header, next func(int, []byte) (string, bool)) error {
	if _, err := io.WriteString(w, `{"type":"FeatureCollection","features":[`); err != nil {
		return err
	}
	first := true
	var last []byte
	for page := 0; page < maxPages; page++ {
		u, ok := next(page, last)
		if !ok {
			break
		}
		body, _, err := s.fetch(ctx, u, header)
		if err != nil {
			return err
		}
		var fc struct {
			Type     string            `json:"type"`
			Features []json.RawMessage `json:"features"`
		}
		if err := json.Unmarshal(body, &fc); err != nil || fc.Type != "FeatureCollection" {
			return apperr.Unprocessable("%s did not answer a GeoJSON FeatureCollection", redact(u))
		}
		for _, f := range fc.Features {
			if !first {
				if _, err := io.WriteString(w, ","); err != nil {
					return err
				}
			}
			first = false
			if _, err := w.Write(f); err != nil {
				return err
			}
		}
		if len(fc.Features) == 0 {
			break
		}
		last = body
	}
	_, err := io.WriteString(w, "]}")
	return err
}

func ogcItems(u *url.URL, layer string) string {
	p := strings.TrimSuffix(u.Path, "/")
	c := *u
	c.RawQuery = ""
	switch {
	case strings.HasSuffix(p, "/collections/"+layer):
		c.Path = p + "/items"
	case strings.HasSuffix(p, "/collections"):
		c.Path = p + "/" + url.PathEscape(layer) + "/items"
	default:
		c.Path = p + "/collections/" + url.PathEscape(layer) + "/items"
	}
	c.RawQuery = url.Values{"limit": {strconv.Itoa(pageSize)}, "f": {"json"}}.Encode()
	return c.String()
}

func nextLink(body []byte) string {
	var doc struct {
		Links []struct {
			Rel, Href, Type string
		} `json:"links"`
	}
	_ = json.Unmarshal(body, &doc)
	for _, l := range doc.Links {
		if l.Rel == "next" && (l.Type == "" || strings.Contains(l.Type, "json")) {
			return l.Href
		}
	}
	return ""
}

func featureCount(body []byte) int {
	var fc struct {
		Features []json.RawMessage `json:"features"`
	}
	_ = json.Unmarshal(body, &fc)
	return len(fc.Features)
}

// exceeded: ArcGIS says more features follow.
func exceeded(body []byte) bool {
	var doc struct {
		Exceeded   bool `json:"exceededTransferLimit"`
		Properties struct {
			Exceeded bool `json:"exceededTransferLimit"`
		} `json:"properties"`
	}
	_ = json.Unmarshal(body, &doc)
	return doc.Exceeded || doc.Properties.Exceeded
}

// safeName makes a layer name a file name (the staging rules refuse paths).
func safeName(layer string) string {
	n := strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == ':' || r < ' ' {
			return '_'
		}
		return r
	}, path.Base("/"+layer))
	if n == "" || n == "." || n == "/" {
		return "layer"
	}
	return n
}
