package analysis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/internal/catalog"
	"meridian/internal/features"
)

// PreviewLimit is how many result features a preview returns.
const PreviewLimit = 500

// Request is an analysis as the caller asks for it.
type Request struct {
	Operation      string
	DistanceMeters *float64
	Mask           map[string]any // a GeoJSON geometry, or a Feature holding one
	MaskDatasetID  *uuid.UUID
	JoinDatasetID  *uuid.UUID
	JoinFields     []string
	ByField        string
	BBox           []float64
	Title          string // materialize: the new dataset's title
}

// Materializer creates the job that writes an analysis into a new dataset (ingest.Jobs).
type Materializer interface {
	Materialize(ctx context.Context, p auth.Principal, spec Spec, title string, derivedFrom []byte) (uuid.UUID, string, error)
}

// Service previews analyses and hands materializations to the ingest jobs.
type Service struct {
	Pool    *pgxpool.Pool
	Catalog *catalog.Service
	Jobs    Materializer
	// MaxFeatures bounds the features of each dataset an analysis reads (ANALYSIS_MAX_FEATURES).
	MaxFeatures int64
}

// Result is a preview's answer.
type Result struct {
	Features    json.RawMessage // the first PreviewLimit result features, GeoJSON, WGS 84
	Total       int64           // result features in all
	Returned    int
	BBox        []float64 // of the returned features; nil when none
	SourceCount int64
	Matched     *int64
}

// Preview runs the analysis of dataset id over at most PreviewLimit result features, storing
// nothing; the pool's statement timeout bounds it.
func (s *Service) Preview(ctx context.Context, p auth.Principal, id uuid.UUID, r Request) (Result, error) {
	spec, err := s.resolve(ctx, p, id, r)
	if err != nil {
		return Result{}, err
	}
	ctes, body, args, err := spec.build()
	if err != nil {
		return Result{}, apperr.Unprocessable("%v", err)
	}
	// r is inlined wherever it is read: the count drops the geometry work it does not need,
	// and the page computes only its own features.
	stmt := "WITH " + ctes + ", r AS NOT MATERIALIZED (" + body + ") SELECT (SELECT count(*) FROM src), (SELECT count(*) FROM r), " + spec.matched() +
		`, count(x.*)::int, coalesce(jsonb_agg(jsonb_build_object('type', 'Feature', 'geometry', ST_AsGeoJSON(x.geom, 7)::jsonb,
		  'properties', to_jsonb(x) - 'geom')), '[]'::jsonb), ST_XMin(ST_Extent(x.geom)), ST_YMin(ST_Extent(x.geom)),
		  ST_XMax(ST_Extent(x.geom)), ST_YMax(ST_Extent(x.geom))
		FROM (SELECT * FROM r LIMIT ` + fmt.Sprint(PreviewLimit) + `) x`
	var res Result
	var x0, y0, x1, y1 *float64
	err = s.Pool.QueryRow(ctx, stmt, args...).Scan(&res.SourceCount, &res.Total, &res.Matched, &res.Returned, &res.Features, &x0, &y0, &x1, &y1)
	if err != nil {
		return Result{}, queryError(err)
	}
	if x0 != nil {
		res.BBox = []float64{*x0, *y0, *x1, *y1}
	}
	return res, nil
}

// Materialize checks the analysis as Preview does and starts the job that writes its whole
// result into a new dataset owned by the caller; it answers the job's id and status.
func (s *Service) Materialize(ctx context.Context, p auth.Principal, id uuid.UUID, r Request) (uuid.UUID, string, error) {
	if !p.Can(auth.CapUpload) {
		return uuid.Nil, "", apperr.Forbidden("materializing an analysis needs the upload capability")
	}
	spec, err := s.resolve(ctx, p, id, r)
	if err != nil {
		return uuid.Nil, "", err
	}
	if _, _, err := spec.Select(); err != nil {
		return uuid.Nil, "", apperr.Unprocessable("%v", err)
	}
	derived, _ := json.Marshal(map[string]any{"dataset_id": id, "operation": spec.Operation, "params": spec.Params(),
		"created_at": time.Now().UTC()})
	return s.Jobs.Materialize(ctx, p, spec, r.Title, derived)
}

// resolve checks the request against the operation and the caller's access to every dataset
// it names, and describes those datasets' tables.
func (s *Service) resolve(ctx context.Context, p auth.Principal, id uuid.UUID, r Request) (Spec, error) {
	src, err := s.layer(ctx, p, id, "the dataset")
	if err != nil {
		return Spec{}, err
	}
	spec := Spec{Operation: r.Operation, Source: src, JoinFields: r.JoinFields, ByField: r.ByField}
	if r.DistanceMeters != nil {
		spec.DistanceMeters = *r.DistanceMeters
	}
	if r.BBox != nil {
		if err := checkBBox(r.BBox); err != nil {
			return Spec{}, err
		}
		spec.BBox = r.BBox
	}
	uses := map[string]bool{}
	switch r.Operation {
	case OpBuffer:
		if r.DistanceMeters == nil {
			return Spec{}, apperr.Unprocessable("buffer needs distance_meters")
		}
		uses["distance_meters"] = true
	case OpCentroid, OpMeasure:
	case OpDissolve:
		uses["by_field"] = true
		if r.ByField != "" && !hasColumn(src, r.ByField) {
			return Spec{}, apperr.Unprocessable("by_field %q is not a column of the dataset", r.ByField)
		}
	case OpClip, OpIntersect, OpSelectByLocation:
		uses["mask"], uses["mask_dataset_id"] = true, true
		uses["distance_meters"] = r.Operation == OpSelectByLocation
		if (r.Mask == nil) == (r.MaskDatasetID == nil) {
			return Spec{}, apperr.Unprocessable("%s needs exactly one of mask (a GeoJSON geometry) and mask_dataset_id", r.Operation)
		}
		if r.Mask != nil {
			if spec.Mask, err = s.mask(ctx, r.Mask); err != nil {
				return Spec{}, err
			}
		} else if spec.Overlay, err = s.overlay(ctx, p, *r.MaskDatasetID, "mask_dataset_id"); err != nil {
			return Spec{}, err
		}
	case OpSpatialJoin:
		uses["join_dataset_id"], uses["join_fields"] = true, true
		if r.JoinDatasetID == nil || len(r.JoinFields) == 0 {
			return Spec{}, apperr.Unprocessable("spatial_join needs join_dataset_id and the join_fields to copy from it")
		}
		if spec.Overlay, err = s.overlay(ctx, p, *r.JoinDatasetID, "join_dataset_id"); err != nil {
			return Spec{}, err
		}
		for _, f := range r.JoinFields {
			if !hasColumn(*spec.Overlay, f) {
				return Spec{}, apperr.Unprocessable("join field %q is not a column of the join dataset", f)
			}
			if len("join_"+f) > 63 {
				return Spec{}, apperr.Unprocessable("join field %q is too long to be copied as join_%s (63 bytes at most)", f, f)
			}
		}
	default:
		return Spec{}, apperr.Unprocessable("unknown operation %q", r.Operation)
	}
	for name, given := range map[string]bool{"distance_meters": r.DistanceMeters != nil, "mask": r.Mask != nil,
		"mask_dataset_id": r.MaskDatasetID != nil, "join_dataset_id": r.JoinDatasetID != nil, "join_fields": len(r.JoinFields) > 0,
		"by_field": r.ByField != ""} {
		if given && !uses[name] {
			return Spec{}, apperr.Unprocessable("%s does not apply to %s", name, r.Operation)
		}
	}
	return spec, nil
}

// layer is dataset id as an analysis input, when the caller may read it and it has features
// with geometry within the size bound.
func (s *Service) layer(ctx context.Context, p auth.Principal, id uuid.UUID, what string) (Layer, error) {
	d, err := s.Catalog.Get(ctx, p, id, false)
	if err != nil {
		return Layer{}, err
	}
	e := d.Entry
	if e.GeometryColumn == "" || e.RecordType == "raster_dataset" {
		return Layer{}, apperr.Conflict("%s (%s) has no vector geometry to analyse", what, id)
	}
	if e.FeatureCount != nil && *e.FeatureCount > s.MaxFeatures {
		return Layer{}, apperr.Unprocessable("%s has %d features; analyses read at most %d (ANALYSIS_MAX_FEATURES)", what, *e.FeatureCount, s.MaxFeatures)
	}
	t, err := d.Table()
	if err != nil {
		return Layer{}, err
	}
	l := Layer{DatasetID: id, Schema: t.Schema, Table: t.Name, ID: t.ID, Geom: t.Geom, Columns: t.Columns}
	if e.Srid != nil {
		l.SRID = int(*e.Srid)
	}
	return l, nil
}

// overlay is the mask or join dataset; one without geometry is a parameter that does not fit.
func (s *Service) overlay(ctx context.Context, p auth.Principal, id uuid.UUID, param string) (*Layer, error) {
	l, err := s.layer(ctx, p, id, param)
	var ae *apperr.Error
	if errors.As(err, &ae) && ae.Kind == apperr.KindConflict {
		return nil, apperr.Unprocessable("%s %s has no vector geometry", param, id)
	}
	return &l, err
}

// mask checks the mask is a GeoJSON geometry PostGIS reads (a Feature gives its geometry).
func (s *Service) mask(ctx context.Context, m map[string]any) ([]byte, error) {
	if m["type"] == "Feature" {
		g, ok := m["geometry"].(map[string]any)
		if !ok {
			return nil, apperr.Unprocessable("mask is a Feature without a geometry")
		}
		m = g
	}
	raw, _ := json.Marshal(m)
	var ok bool
	if err := s.Pool.QueryRow(ctx, `SELECT ST_GeomFromGeoJSON($1::text) IS NOT NULL`, string(raw)).Scan(&ok); err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			return nil, apperr.Unprocessable("mask is not a GeoJSON geometry: %s", pe.Message)
		}
		return nil, err
	}
	return raw, nil
}

func checkBBox(b []float64) error {
	if len(b) != 4 || slices.ContainsFunc(b, func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }) ||
		b[0] > b[2] || b[1] > b[3] || b[1] < -90 || b[3] > 90 {
		return apperr.Unprocessable("bbox must be [west, south, east, north] in WGS 84 with west <= east and south <= north")
	}
	return nil
}

func hasColumn(l Layer, name string) bool {
	return slices.ContainsFunc(l.Columns, func(c features.Column) bool { return c.Name == name })
}

// queryError maps what PostGIS refuses in an analysis (a geometry it cannot process, the time
// limit) to answers the caller can act on.
func queryError(err error) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return err
	}
	switch pe.Code {
	case "57014":
		return apperr.Unprocessable("the analysis took longer than the time limit; narrow it with bbox or a smaller mask")
	case "XX000", "22023", "22P02":
		return apperr.Unprocessable("PostGIS could not compute the analysis: %s", pe.Message)
	}
	return err
}
