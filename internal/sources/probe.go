package sources

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strings"

	"meridian/internal/apperr"
	"meridian/internal/auth"
)

// The kinds of source Probe recognises (service_type).
const (
	OGCAPIFeatures = "ogc_api_features"
	WFS            = "wfs"
	ArcGISFeature  = "arcgis_feature_server"
	ArcGISMap      = "arcgis_map_server"
	WMS            = "wms"
	WMTS           = "wmts"
	XYZ            = "xyz"
	STAC           = "stac"
	GeoJSON        = "geojson"
	CSV            = "csv"
	Zip            = "zip"
)

// Layer is one layer a source offers. ID is the service's own key when it has one (an ArcGIS
// layer number, an OGC collection id), else nil.
type Layer struct {
	Name, Title   string
	GeometryType  string
	FeatureCount  *int
	LayerType     string // "layer", "table" (ArcGIS tables) or "tiles"
	ID            any    // int or string
	ObjectIDField string
	Raster        bool // display-only (WMS, WMTS, XYZ, ArcGIS MapServer images)
}

// Probe is what a source is and what it offers.
type Probe struct {
	ServiceType string
	URL         string
	Layers      []Layer
	Selected    any // the layer the URL itself names, if any
}

// Probe fetches raw (under the remote policy) and says what it is: an OGC API Features landing
// page, collection list or collection; a WFS, WMS or WMTS capabilities document (asked for when
// the address answers with neither JSON nor XML); an ArcGIS FeatureServer or MapServer (or one
// of its layers); a STAC catalog; a GeoJSON, CSV or zip file; or an XYZ template (not fetched).
// token is sent as a bearer credential, or as ArcGIS's token parameter to ArcGIS REST services;
// the remote client never forwards it to another host.
func (s *Service) Probe(ctx context.Context, p auth.Principal, raw, token string) (Probe, error) {
	if !p.Can(auth.CapUpload) {
		return Probe{}, apperr.Forbidden("probing services needs the upload capability")
	}
	u, err := s.Remote.Check(raw)
	if err != nil {
		return Probe{}, err
	}
	if t, _ := url.PathUnescape(u.Path); strings.Contains(t, "{z}") && strings.Contains(t, "{x}") && strings.Contains(t, "{y}") {
		return Probe{ServiceType: XYZ, URL: raw, Layers: []Layer{{Name: "tiles", LayerType: "tiles", Raster: true}}}, nil
	}
	arcgis := strings.Contains(strings.ToLower(u.Path), "/rest/services")
	header := http.Header{"Accept": {"application/json, application/xml;q=0.9, */*;q=0.8"}}
	if arcgis {
		q := u.Query()
		q.Set("f", "json")
		if token != "" {
			q.Set("token", token)
		}
		u.RawQuery = q.Encode()
	} else if token != "" {
		header.Set("Authorization", "Bearer "+token)
	}
	body, ctype, err := s.fetch(ctx, u.String(), header)
	if err != nil {
		return Probe{}, err
	}
	pr := Probe{URL: raw}
	switch {
	case isJSON(body):
		err = s.probeJSON(ctx, &pr, u, body, header)
	case isXML(body):
		if err = probeXML(&pr, body); err != nil && u.RawQuery == "" {
			// A bare OGC web service address may answer an exception until asked for capabilities.
			if s.probeCapabilities(ctx, &pr, u, header) == nil {
				err = nil
			}
		}
	case strings.HasSuffix(strings.ToLower(u.Path), ".csv") || strings.Contains(ctype, "csv"):
		pr.ServiceType, pr.Layers = CSV, []Layer{{Name: base(u), LayerType: "layer"}}
	case strings.HasSuffix(strings.ToLower(u.Path), ".zip") || strings.Contains(ctype, "zip"):
		pr.ServiceType, pr.Layers = Zip, []Layer{{Name: base(u), LayerType: "layer"}}
	case u.RawQuery == "":
		// A bare OGC web service address answers its capabilities only when asked for them.
		err = s.probeCapabilities(ctx, &pr, u, header)
	default:
		err = notAService(raw)
	}
	return pr, err
}

func notAService(raw string) error {
	return apperr.Unprocessable("%s answers, but not as a service or file this server reads (OGC API Features, WFS, WMS, WMTS, ArcGIS REST, STAC, GeoJSON, CSV, zip)", raw)
}

// fetch GETs raw; an error status is the remote's failure (502).
func (s *Service) fetch(ctx context.Context, raw string, header http.Header) ([]byte, string, error) {
	res, err := s.Remote.Get(ctx, raw, header)
	if err != nil {
		return nil, "", err
	}
	if res.Status >= 300 {
		return nil, "", &apperr.Error{Kind: apperr.KindUpstream, Title: "Bad Gateway", Detail: fmt.Sprintf("%s answered %d %s", redact(raw), res.Status, http.StatusText(res.Status))}
	}
	return res.Body, res.Header.Get("Content-Type"), nil
}

// redact drops a token parameter from an address shown in a message.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	q := u.Query()
	if q.Has("token") {
		q.Set("token", "REDACTED")
		u.RawQuery = q.Encode()
	}
	return u.String()
}

func (s *Service) probeCapabilities(ctx context.Context, pr *Probe, u *url.URL, header http.Header) error {
	for _, svc := range []string{"WFS", "WMS"} {
		c := *u
		c.RawQuery = url.Values{"service": {svc}, "request": {"GetCapabilities"}}.Encode()
		body, _, err := s.fetch(ctx, c.String(), header)
		if err == nil && isXML(body) && probeXML(pr, body) == nil {
			return nil
		}
	}
	return notAService(u.String())
}

func isJSON(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && (b[0] == '{' || b[0] == '[') && json.Valid(b)
}

func isXML(b []byte) bool { return bytes.HasPrefix(bytes.TrimSpace(b), []byte("<")) }

func base(u *url.URL) string {
	b := strings.TrimSuffix(path.Base(u.Path), path.Ext(u.Path))
	if b == "" || b == "." || b == "/" {
		return u.Hostname()
	}
	return b
}

// probeJSON recognises the JSON answers.
func (s *Service) probeJSON(ctx context.Context, pr *Probe, u *url.URL, body []byte, header http.Header) error {
	var doc struct {
		Type           string            `json:"type"`
		ID             json.RawMessage   `json:"id"`
		Name           string            `json:"name"`
		Title          string            `json:"title"`
		STACVersion    string            `json:"stac_version"`
		Collections    []ogcCollection   `json:"collections"`
		Links          []link            `json:"links"`
		Features       []json.RawMessage `json:"features"`
		CurrentVersion any               `json:"currentVersion"`
		Layers         []arcgisLayer     `json:"layers"`
		Tables         []arcgisLayer     `json:"tables"`
		GeometryType   string            `json:"geometryType"`
		ObjectIDField  string            `json:"objectIdField"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return notAService(u.String())
	}
	switch {
	case doc.CurrentVersion != nil:
		pr.ServiceType = ArcGISFeature
		if strings.Contains(strings.ToLower(u.Path), "/mapserver") {
			pr.ServiceType = ArcGISMap
		}
		if doc.Type != "" { // the URL names one layer of the service
			var id int
			_ = json.Unmarshal(doc.ID, &id)
			l := arcgisLayer{ID: id, Name: doc.Name, GeometryType: doc.GeometryType, Type: doc.Type}
			pr.Layers, pr.Selected = []Layer{l.layer(pr.ServiceType)}, id
			pr.Layers[0].ObjectIDField = doc.ObjectIDField
			return nil
		}
		for _, l := range doc.Layers {
			pr.Layers = append(pr.Layers, l.layer(pr.ServiceType))
		}
		for _, l := range doc.Tables {
			t := l.layer(pr.ServiceType)
			t.LayerType, t.Raster = "table", false
			pr.Layers = append(pr.Layers, t)
		}
	case doc.Type == "FeatureCollection":
		n := len(doc.Features)
		l := Layer{Name: base(u), LayerType: "layer", FeatureCount: &n}
		if n > 0 {
			var f struct {
				Geometry struct{ Type string } `json:"geometry"`
			}
			_ = json.Unmarshal(doc.Features[0], &f)
			l.GeometryType = f.Geometry.Type
		}
		pr.ServiceType, pr.Layers = GeoJSON, []Layer{l}
	case doc.Collections != nil:
		pr.ServiceType = OGCAPIFeatures
		if doc.STACVersion != "" || anySTAC(doc.Collections) {
			pr.ServiceType = STAC
		}
		for _, c := range doc.Collections {
			pr.Layers = append(pr.Layers, c.layer())
		}
	case doc.STACVersion != "" && doc.Type != "Collection":
		// A STAC catalog or API landing page: its collections are where the data is.
		pr.ServiceType = STAC
		return s.followData(ctx, pr, u, doc.Links, header)
	case hasRel(doc.Links, "items"):
		var id string
		_ = json.Unmarshal(doc.ID, &id)
		c := ogcCollection{ID: id, Title: doc.Title}
		pr.ServiceType, pr.Layers, pr.Selected = OGCAPIFeatures, []Layer{c.layer()}, id
		if doc.STACVersion != "" {
			pr.ServiceType = STAC
		}
	case hasRel(doc.Links, "data") || hasRel(doc.Links, "conformance"):
		pr.ServiceType = OGCAPIFeatures
		return s.followData(ctx, pr, u, doc.Links, header)
	default:
		return notAService(u.String())
	}
	return nil
}

// followData reads the collections a landing page links to (rel data), or {landing}/collections.
func (s *Service) followData(ctx context.Context, pr *Probe, u *url.URL, links []link, header http.Header) error {
	target := u.JoinPath("collections")
	for _, l := range links {
		if l.Rel == "data" {
			ref, err := u.Parse(l.Href)
			if err != nil {
				return notAService(u.String())
			}
			target = ref
			break
		}
	}
	body, _, err := s.fetch(ctx, target.String(), header)
	if err != nil {
		return err
	}
	var list struct {
		Collections []ogcCollection `json:"collections"`
	}
	if err := json.Unmarshal(body, &list); err != nil || list.Collections == nil {
		return apperr.Unprocessable("%s links its collections at %s, which does not list any", u, target)
	}
	for _, c := range list.Collections {
		pr.Layers = append(pr.Layers, c.layer())
	}
	return nil
}

type link struct {
	Rel  string `json:"rel"`
	Href string `json:"href"`
}

func hasRel(links []link, rel string) bool {
	for _, l := range links {
		if l.Rel == rel {
			return true
		}
	}
	return false
}

type ogcCollection struct {
	ID          string `json:"id"`
	Title       string `json:"title"`
	ItemType    string `json:"itemType"`
	STACVersion string `json:"stac_version"`
}

func (c ogcCollection) layer() Layer {
	return Layer{Name: c.ID, Title: c.Title, LayerType: "layer", ID: c.ID}
}

func anySTAC(cs []ogcCollection) bool {
	for _, c := range cs {
		if c.STACVersion != "" {
			return true
		}
	}
	return false
}

type arcgisLayer struct {
	ID           int    `json:"id"`
	Name         string `json:"name"`
	GeometryType string `json:"geometryType"`
	Type         string `json:"type"`
}

// esriGeometry names ArcGIS geometry types as the rest of the API does.
var esriGeometry = map[string]string{"esriGeometryPoint": "Point", "esriGeometryMultipoint": "MultiPoint",
	"esriGeometryPolyline": "MultiLineString", "esriGeometryPolygon": "MultiPolygon", "esriGeometryEnvelope": "Polygon"}

func (l arcgisLayer) layer(service string) Layer {
	out := Layer{Name: l.Name, Title: l.Name, GeometryType: esriGeometry[l.GeometryType], LayerType: "layer", ID: l.ID}
	// A MapServer's layers are drawn by the server; only a FeatureServer hands out features.
	out.Raster = service == ArcGISMap || strings.Contains(l.Type, "Raster")
	return out
}

// probeXML recognises OGC capabilities documents by their root element.
func probeXML(pr *Probe, body []byte) error {
	var root struct {
		XMLName  xml.Name
		Features []struct {
			Name  string `xml:"Name"`
			Title string `xml:"Title"`
		} `xml:"FeatureTypeList>FeatureType"`
		Layers   []wmsLayer `xml:"Capability>Layer"`
		Contents []struct {
			Identifier string `xml:"Identifier"`
			Title      string `xml:"Title"`
		} `xml:"Contents>Layer"`
	}
	if err := xml.Unmarshal(body, &root); err != nil {
		return apperr.Unprocessable("the answer is XML this server cannot read: %v", err)
	}
	switch root.XMLName.Local {
	case "WFS_Capabilities":
		pr.ServiceType = WFS
		for _, f := range root.Features {
			pr.Layers = append(pr.Layers, Layer{Name: f.Name, Title: f.Title, LayerType: "layer", ID: f.Name})
		}
	case "WMS_Capabilities", "WMT_MS_Capabilities":
		pr.ServiceType = WMS
		var walk func([]wmsLayer)
		walk = func(ls []wmsLayer) {
			for _, l := range ls {
				if l.Name != "" {
					pr.Layers = append(pr.Layers, Layer{Name: l.Name, Title: l.Title, LayerType: "layer", ID: l.Name, Raster: true})
				}
				walk(l.Layers)
			}
		}
		walk(root.Layers)
	case "Capabilities":
		pr.ServiceType = WMTS
		for _, l := range root.Contents {
			pr.Layers = append(pr.Layers, Layer{Name: l.Identifier, Title: l.Title, LayerType: "layer", ID: l.Identifier, Raster: true})
		}
	case "ExceptionReport", "ServiceExceptionReport":
		return &apperr.Error{Kind: apperr.KindUpstream, Title: "Bad Gateway", Detail: "the service answered with an exception report"}
	default:
		return apperr.Unprocessable("the answer is an XML document (%s) that is not OGC capabilities", root.XMLName.Local)
	}
	return nil
}

type wmsLayer struct {
	Name   string     `xml:"Name"`
	Title  string     `xml:"Title"`
	Layers []wmsLayer `xml:"Layer"`
}
