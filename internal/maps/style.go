package maps

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"

	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/internal/tiles"
)

// MapLibre styles (style specification version 8): a map goes out as a style whose sources are
// this service's tiles under signed templates, and comes back in as a map; the metadata members
// service:map_id, service:layer_id and service:dataset_id carry the round trip.

// styleLayer is what a style needs of a layer of the map document.
type styleLayer struct {
	ID           uuid.UUID       `json:"id"`
	DatasetID    uuid.UUID       `json:"dataset_id"`
	TableName    string          `json:"dataset_table_name"`
	GeometryType *string         `json:"dataset_geometry_type"`
	Visible      bool            `json:"visible"`
	Opacity      float64         `json:"opacity"`
	Paint        map[string]any  `json:"paint"`
	Layout       map[string]any  `json:"layout"`
	Filter       json.RawMessage `json:"filter"`
}

// styleType is the MapLibre layer type of a layer: what its paint properties are for, else what
// its geometry draws as.
func styleType(l styleLayer) string {
	for k := range l.Paint {
		for _, t := range []string{"fill-extrusion", "fill", "line", "circle", "symbol", "heatmap"} {
			if strings.HasPrefix(k, t+"-") {
				return t
			}
		}
	}
	g := strings.ToUpper(derefString(l.GeometryType))
	switch {
	case strings.Contains(g, "POLYGON"):
		return "fill"
	case strings.Contains(g, "LINE"):
		return "line"
	}
	return "circle"
}

func derefString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// ExportStyle answers map id, as p reads it, as a MapLibre style.
func (s *Service) ExportStyle(ctx context.Context, p auth.Principal, id uuid.UUID, now time.Time, sign *tiles.Service) (map[string]any, error) {
	doc, err := s.Get(ctx, p, id)
	if err != nil {
		return nil, err
	}
	var m struct {
		Name         string       `json:"name"`
		Lng          *float64     `json:"center_lng"`
		Lat          *float64     `json:"center_lat"`
		Zoom         *float64     `json:"zoom"`
		Bearing      float64      `json:"bearing"`
		Pitch        float64      `json:"pitch"`
		BasemapStyle string       `json:"basemap_style"`
		Projection   string       `json:"projection"`
		Layers       []styleLayer `json:"layers"`
	}
	if err := json.Unmarshal(doc, &m); err != nil {
		return nil, err
	}
	docs := make([]layerDoc, len(m.Layers))
	for i, l := range m.Layers {
		docs[i].DatasetID = l.DatasetID
	}
	scopes, err := s.scopes(ctx, docs)
	if err != nil {
		return nil, err
	}
	sources, layers := map[string]any{}, []any{}
	for _, l := range m.Layers {
		src := "dataset-" + l.DatasetID.String()
		t, err := sign.Sign(ctx, scopes[l.DatasetID], now)
		if err != nil {
			return nil, err
		}
		sources[src] = map[string]any{"type": "vector", "minzoom": 0, "maxzoom": 22, "tiles": []string{fmt.Sprintf(
			"%s/api/tiles/%s/{z}/{x}/{y}.pbf?sig=%s&exp=%d&scope=%s", s.base(ctx), l.DatasetID, t.Sig, t.Exp, url.QueryEscape(t.Scope))}}
		kind := styleType(l)
		layout := map[string]any{}
		for k, v := range l.Layout {
			layout[k] = v
		}
		if !l.Visible {
			layout["visibility"] = "none"
		}
		paint := map[string]any{}
		for k, v := range l.Paint {
			paint[k] = v
		}
		if _, set := paint[kind+"-opacity"]; !set && l.Opacity < 1 && kind != "symbol" && kind != "heatmap" {
			paint[kind+"-opacity"] = l.Opacity
		}
		sl := map[string]any{"id": "layer-" + l.ID.String(), "type": kind, "source": src, "source-layer": "data." + l.TableName,
			"paint": paint, "layout": layout, "metadata": map[string]any{"service:map_id": id, "service:layer_id": l.ID,
				"service:dataset_id": l.DatasetID}}
		if f := jsonOrNull(l.Filter); f != nil {
			sl["filter"] = json.RawMessage(f)
		}
		layers = append(layers, sl)
	}
	style := map[string]any{"version": 8, "name": m.Name, "sources": sources, "layers": layers,
		"sprite":   s.base(ctx) + "/api/maps/sprites/service",
		"metadata": map[string]any{"service:map_id": id, "service:basemap_style": m.BasemapStyle},
		"bearing":  m.Bearing, "pitch": m.Pitch, "projection": map[string]any{"type": m.Projection}}
	if m.Lng != nil && m.Lat != nil {
		style["center"] = []float64{*m.Lng, *m.Lat}
	}
	if m.Zoom != nil {
		style["zoom"] = *m.Zoom
	}
	return style, nil
}

// ImportSummary says what an import made of a style.
type ImportSummary struct {
	SourcesMatched     int             `json:"sources_matched"`
	SourcesUnsupported int             `json:"sources_unsupported"`
	LayersImported     int             `json:"layers_imported"`
	LayersSkipped      int             `json:"layers_skipped"`
	Warnings           []ImportWarning `json:"warnings"`
}

// ImportWarning is one thing an import left out, and why.
type ImportWarning struct {
	Code     string  `json:"code"`
	Message  string  `json:"message"`
	SourceID *string `json:"source_id"`
	LayerID  *string `json:"layer_id"`
}

// Style is an incoming MapLibre style.
type Style struct {
	Version    int                        `json:"version"`
	Name       *string                    `json:"name"`
	Center     []float64                  `json:"center"`
	Zoom       *float64                   `json:"zoom"`
	Bearing    *float64                   `json:"bearing"`
	Pitch      *float64                   `json:"pitch"`
	Sources    map[string]json.RawMessage `json:"sources"`
	Layers     []json.RawMessage          `json:"layers"`
	Projection *struct {
		Type string `json:"type"`
	} `json:"projection"`
}

// maxStyleLayers bounds the style layers an import reads: a map holds at most maxLayers.
const maxStyleLayers = 1000

// tilePath finds the tile path in a tile URL of this service.
var tilePath = regexp.MustCompile(`/tiles/(?:clusters/)?([^/?#]+)/\{z\}/\{x\}/\{y\}\.pbf`)

// ImportStyle makes a map of p's from a style: its view, and a layer for each style layer whose
// source is a dataset of this service p may read. Everything else is reported, not dropped in
// silence.
func (s *Service) ImportStyle(ctx context.Context, p auth.Principal, st Style, name, visibility *string) (Doc, ImportSummary, error) {
	sum := ImportSummary{Warnings: []ImportWarning{}}
	if st.Version != 8 {
		return nil, sum, apperr.Unprocessable("not a MapLibre style: version must be 8")
	}
	if len(st.Layers) > maxStyleLayers {
		return nil, sum, apperr.Unprocessable("the style has %d layers; at most %d are read", len(st.Layers), maxStyleLayers)
	}
	datasets := s.styleSources(ctx, p, st.Sources, &sum)
	in := Settings{Name: name, Bearing: st.Bearing, Pitch: st.Pitch, Visibility: visibility, Layers: &[]LayerInput{}}
	if st.Zoom != nil {
		in.Zoom.Set(*st.Zoom)
	}
	if in.Name == nil {
		in.Name = st.Name
	}
	if in.Name == nil || *in.Name == "" {
		in.Name = ptr("Imported map")
	}
	if len(st.Center) == 2 {
		in.CenterLng.Set(st.Center[0])
		in.CenterLat.Set(st.Center[1])
	}
	for _, raw := range st.Layers {
		l, ok := s.styleLayerInput(raw, datasets, &sum)
		if !ok {
			continue
		}
		*in.Layers = append(*in.Layers, l)
	}
	if len(*in.Layers) > maxLayers {
		return nil, sum, apperr.Unprocessable("the style has %d layers of this service's datasets; a map holds at most %d", len(*in.Layers), maxLayers)
	}
	sum.LayersImported = len(*in.Layers)
	doc, err := s.create(ctx, p, in, AuditMapImportStyle, map[string]any{"layers_imported": sum.LayersImported,
		"layers_skipped": sum.LayersSkipped})
	return doc, sum, err
}

func ptr[T any](v T) *T { return &v }

// styleSources resolves the style's sources to datasets p may read.
func (s *Service) styleSources(ctx context.Context, p auth.Principal, sources map[string]json.RawMessage, sum *ImportSummary) map[string]uuid.UUID {
	out := map[string]uuid.UUID{}
	for id, raw := range sources {
		var src struct {
			Type  string   `json:"type"`
			Tiles []string `json:"tiles"`
		}
		_ = json.Unmarshal(raw, &src)
		var dataset uuid.UUID
		for _, t := range src.Tiles {
			if m := tilePath.FindStringSubmatch(t); m != nil && (strings.HasPrefix(t, s.BaseURL+"/") || strings.HasPrefix(t, s.base(ctx)+"/")) {
				dataset = s.resolvePath(ctx, m[1])
			}
		}
		if dataset == uuid.Nil || !s.readable(ctx, p, dataset) {
			sum.SourcesUnsupported++
			sum.Warnings = append(sum.Warnings, ImportWarning{Code: "source_unsupported", SourceID: ptr(id),
				Message: "the source is not a dataset of this service that you can read; its layers are skipped"})
			continue
		}
		sum.SourcesMatched++
		out[id] = dataset
	}
	return out
}

// resolvePath turns a tile path (dataset id or schema.table) into a dataset id; uuid.Nil when
// it names none.
func (s *Service) resolvePath(ctx context.Context, path string) uuid.UUID {
	if id, err := uuid.Parse(path); err == nil {
		return id
	}
	schema, name, ok := strings.Cut(path, ".")
	if !ok {
		return uuid.Nil
	}
	id, err := s.Catalog.DatasetOfTable(ctx, schema, name)
	if err != nil {
		return uuid.Nil
	}
	return id
}

// readable reports whether p may read dataset id.
func (s *Service) readable(ctx context.Context, p auth.Principal, id uuid.UUID) bool {
	_, err := s.Catalog.Get(ctx, p, id, false)
	return err == nil
}

// styleLayerInput makes a map layer of a style layer, or reports why it cannot.
func (s *Service) styleLayerInput(raw json.RawMessage, datasets map[string]uuid.UUID, sum *ImportSummary) (LayerInput, bool) {
	var sl struct {
		ID       string          `json:"id"`
		Source   string          `json:"source"`
		Paint    json.RawMessage `json:"paint"`
		Layout   json.RawMessage `json:"layout"`
		Filter   json.RawMessage `json:"filter"`
		Metadata map[string]any  `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &sl); err != nil {
		sum.LayersSkipped++
		sum.Warnings = append(sum.Warnings, ImportWarning{Code: "layer_invalid", Message: "a style layer is not an object: " + err.Error()})
		return LayerInput{}, false
	}
	dataset, ok := datasets[sl.Source]
	if meta, _ := sl.Metadata["service:dataset_id"].(string); !ok && meta != "" {
		// An export's layer keeps its dataset even when its signed source has expired; it
		// still needs a source this import resolved to that dataset.
		if id, err := uuid.Parse(meta); err == nil {
			for _, d := range datasets {
				if d == id {
					dataset, ok = id, true
				}
			}
		}
	}
	if !ok {
		sum.LayersSkipped++
		sum.Warnings = append(sum.Warnings, ImportWarning{Code: "layer_skipped", LayerID: ptr(sl.ID), SourceID: ptr(sl.Source),
			Message: "the layer's source is not a dataset of this service that you can read"})
		return LayerInput{}, false
	}
	in := LayerInput{DatasetID: dataset, Paint: sl.Paint, Layout: sl.Layout, Filter: sl.Filter}
	var layout map[string]any
	if json.Unmarshal(sl.Layout, &layout) == nil && layout["visibility"] == "none" {
		in.Visible = ptr(false)
	}
	return in, true
}
