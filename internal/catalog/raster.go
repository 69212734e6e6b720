package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"meridian/internal/apperr"
	"meridian/internal/auth"
	"meridian/internal/blob"
	"meridian/store"
)

// Raster describes a raster dataset (catalog.datasets.raster, migration 70). Its data is one
// Cloud Optimized GeoTIFF in the object store (StorageKey), made by the ingest with
// `gdal_translate -of COG -co TILING_SCHEME=GoogleMapsCompatible -co BLOCKSIZE=256`: in EPSG:3857
// on the web-mercator tile grid, so one XYZ tile at a zoom the file has (MinZoom..MaxZoom) is one
// internal 256 x 256 tile. The description itself (EPSG, resolution, size, extent) is of the
// source as uploaded, in its native CRS, which is what people know their data by.
type Raster struct {
	EPSG            int     `json:"epsg,omitempty"` // the native CRS; 0 when it has no EPSG code
	CRSIsGeographic bool    `json:"crs_is_geographic"`
	ResX            float64 `json:"res_x"` // native pixel size, CRS units
	ResY            float64 `json:"res_y"`
	Width           int     `json:"width"` // native size, pixels
	Height          int     `json:"height"`
	BandCount       int     `json:"band_count"`
	// IsDEM is what clients see: IsDEMDetected (see the ingest's heuristic) unless Update
	// Dataset Metadata set it; a PATCH with null returns it to the detected value.
	IsDEM         bool         `json:"is_dem"`
	IsDEMDetected bool         `json:"is_dem_detected"`
	NoData        *string      `json:"nodata,omitempty"` // of the first band, as GDAL prints it
	Compression   string       `json:"compression"`      // of the stored COG
	SizeBytes     int64        `json:"size_bytes"`       // of the stored COG
	Bands         []RasterBand `json:"bands"`
	// Extent is the source's box in its native CRS (minx, miny, maxx, maxy).
	Extent []float64 `json:"extent,omitempty"`
	// StorageKey names the COG in the object store (internal/blob); never shown to clients.
	StorageKey string `json:"storage_key"`
	// COG is the stored file's grid, for the tile reader.
	COG        COGGrid `json:"cog"`
	Resampling string  `json:"resampling"` // used for the reprojection and the overviews
	// VRT is a VRT dataset's own part (nil for a raster), kept by the database (migration 85).
	VRT *VRTState `json:"vrt,omitempty"`
	// Remote is a registered raster's file (STAC Import mode register), nil for a stored one:
	// no file is stored (StorageKey is empty) and COG describes no stored grid but the zooms
	// its tiles are served at; SizeBytes and Compression are the remote file's.
	Remote *RemoteRaster `json:"remote,omitempty"`
}

// RemoteRaster is where a registered raster's GeoTIFF is read by byte range: Href, with the
// credential the STAC import CredentialImport was given (sealed on that import, sent to the
// origin of its catalog only) when it names one.
type RemoteRaster struct {
	Href             string     `json:"href"`
	CredentialImport *uuid.UUID `json:"credential_import,omitempty"`
}

// VRTState is how a VRT dataset combines its sources and how far its generations are: status
// pending (none served yet, or the served one was withdrawn, and one is on its way), ready,
// stale (a newer one is queued or running) or failed (the newest failed).
type VRTState struct {
	Type               string `json:"type"`                // mosaic or band_stack
	ResolutionStrategy string `json:"resolution_strategy"` // finest, coarsest or average
	SourceCount        int    `json:"source_count"`
	Status             string `json:"status"`
}

// COGGrid is the stored COG's place on the GoogleMapsCompatible grid: its full resolution is
// zoom MaxZoom (GDAL's TILING_SCHEME/ZOOM_LEVEL metadata) and each overview, in file order, one
// zoom less, down to MinZoom.
type COGGrid struct {
	Width   int       `json:"width"`
	Height  int       `json:"height"`
	MinZoom int       `json:"minzoom"`
	MaxZoom int       `json:"maxzoom"`
	Bounds  []float64 `json:"bounds_3857"` // minx, miny, maxx, maxy in EPSG:3857
	// Bands is the stored file's band count: the source's, plus an alpha band GDAL adds when
	// reprojecting data without nodata (Alpha; not with JPEG, which gets an internal mask
	// instead: Mask, whose IFDs follow each image IFD).
	Bands int  `json:"bands"`
	Alpha bool `json:"alpha,omitempty"`
	Mask  bool `json:"mask,omitempty"`
	// Direct: a registered raster that is itself a COG on this grid (the tile reader opened it
	// at registration), whose tiles are cut from the remote file by range as from a stored one,
	// without a warp.
	Direct bool `json:"direct,omitempty"`
}

// RasterBand is one band: the document's RasterBand plus the statistics the renderer stretches
// with (computed on an overview of about 1024 pixels; p2 and p98 are the 2nd and 98th
// percentiles from its histogram). Statistics are nil for a band with no valid pixel.
type RasterBand struct {
	Index       int      `json:"index"`
	DType       string   `json:"dtype"`
	NoData      *string  `json:"nodata,omitempty"`
	ColorInterp string   `json:"color_interp"`
	Min         *float64 `json:"min,omitempty"`
	Max         *float64 `json:"max,omitempty"`
	Mean        *float64 `json:"mean,omitempty"`
	StdDev      *float64 `json:"stddev,omitempty"`
	P2          *float64 `json:"p2,omitempty"`
	P98         *float64 `json:"p98,omitempty"`
	// Quantiles are a registered raster's percentiles 0..100 from its histogram, which its tiles
	// stretch other percentiles than p2 and p98 by (a stored raster's come from its COG's
	// coarsest overview); never shown to clients.
	Quantiles []float64 `json:"quantiles,omitempty"`
}

// RasterOf reads a dataset's raster description; ok is false for a dataset that has none.
func RasterOf(e Entry) (Raster, bool, error) {
	if len(e.Raster) == 0 {
		return Raster{}, false, nil
	}
	var r Raster
	if err := json.Unmarshal(e.Raster, &r); err != nil {
		return Raster{}, false, fmt.Errorf("dataset %s: raster description: %w", e.ID, err)
	}
	return r, true, nil
}

// IsRaster tells whether a record kind holds raster data (a COG) rather than a table.
func IsRaster(recordType string) bool {
	return recordType == "raster_dataset" || recordType == "vrt_dataset"
}

// removeCOG deletes a deleted raster dataset's COG. It runs after the record is gone: a COG
// whose delete fails is only clutter (logged), while one deleted before a rolled-back record
// would leave a dataset without data.
func (s *Service) removeCOG(ctx context.Context, row store.CatalogDataset) {
	r, ok, err := RasterOf(entryOf(row))
	if err != nil || !ok || r.StorageKey == "" || s.Objects == nil {
		return
	}
	if err := s.Objects.Delete(context.WithoutCancel(ctx), r.StorageKey); err != nil && s.Log != nil {
		s.Log.Warn("could not delete a deleted raster's COG", "dataset_id", row.ID, "key", r.StorageKey, "err", err)
	}
}

// SetDEM sets whether a raster dataset is an elevation model (Update Dataset Metadata's is_dem):
// a value overrides the ingest's detection, nil returns to it. Recorded in the history as a
// metadata edit; a dataset that is not a raster answers 422.
func (s *Service) SetDEM(ctx context.Context, p auth.Principal, id uuid.UUID, isDEM *bool) error {
	defer s.Forget(id)
	return pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		q := s.Q.WithTx(tx)
		before, err := s.writable(ctx, q, p, id)
		if err != nil {
			return err
		}
		old, ok, err := RasterOf(entryOf(before.row))
		if err != nil {
			return err
		}
		if !ok {
			return apperr.Unprocessable("is_dem applies to raster datasets; %s is a %s", id, before.row.RecordType)
		}
		row, err := q.SetRasterIsDEM(ctx, store.SetRasterIsDEMParams{ID: id, IsDem: isDEM, UpdatedBy: &p.UserID})
		if err != nil {
			return err
		}
		now, _, err := RasterOf(entryOf(row))
		if err != nil || now.IsDEM == old.IsDEM {
			return err
		}
		return history(ctx, q, id, row.CurrentVersion, ActionMetadataEdit, p, map[string]any{"is_dem": change(old.IsDEM, now.IsDEM)})
	})
}

// COG is a raster dataset's stored file opened for a download.
type COG struct {
	blob.Object
	Title string
	ETag  string // names the data version: a reupload (a new file) changes it
}

// OpenCOG opens the COG of a raster dataset p may read; a dataset of another kind answers 409.
// The caller closes it.
func (s *Service) OpenCOG(ctx context.Context, p auth.Principal, id uuid.UUID) (COG, error) {
	d, err := s.Get(ctx, p, id, false)
	if err != nil {
		return COG{}, err
	}
	r, ok, err := RasterOf(d.Entry)
	if err != nil {
		return COG{}, err
	}
	if !ok {
		return COG{}, apperr.Conflict("dataset %s is a %s, not a raster: use Export Dataset", id, d.Entry.RecordType)
	}
	if r.Remote != nil {
		return s.remoteCOG(ctx, d, *r.Remote)
	}
	if r.StorageKey == "" {
		return COG{}, apperr.Conflict("dataset %s has no raster file yet: its ingest or its VRT generation has not finished", id)
	}
	if s.Objects == nil {
		return COG{}, errors.New("catalog: no object store for raster files")
	}
	o, err := s.Objects.Open(ctx, r.StorageKey)
	if errors.Is(err, blob.ErrNoObject) {
		return COG{}, fmt.Errorf("dataset %s: its COG %s is missing from the object store", id, r.StorageKey)
	}
	if err != nil {
		return COG{}, err
	}
	return COG{Object: o, Title: d.Entry.Title, ETag: fmt.Sprintf(`"cog-%s-v%d"`, id, d.Entry.CurrentVersion)}, nil
}

// RemoteFiles opens registered rasters' remote files (remoteraster.Reader).
type RemoteFiles interface {
	// OpenRemote opens r for ranged reads; its tag names the remote file's version (its ETag,
	// length and modification time), "" when the server gives none.
	OpenRemote(ctx context.Context, r RemoteRaster) (blob.Object, string, error)
}

// remoteCOG opens a registered raster's remote file for a download: its bytes are the remote's
// as they are now, and the ETag names them (the dataset version and the remote's own tag), so
// If-Range never joins bytes of two versions.
func (s *Service) remoteCOG(ctx context.Context, d Dataset, r RemoteRaster) (COG, error) {
	if s.Remote == nil {
		return COG{}, errors.New("catalog: no reader of registered rasters")
	}
	o, tag, err := s.Remote.OpenRemote(ctx, r)
	if err != nil {
		return COG{}, err
	}
	etag := fmt.Sprintf(`"cog-%s-v%d-r%s"`, d.Entry.ID, d.Entry.CurrentVersion, tag)
	return COG{Object: o, Title: d.Entry.Title, ETag: etag}, nil
}

// ruleOfDatabase turns a rule the database enforces whatever path writes a record (SQLSTATE
// class MV: a VRT's visibility never wider than its sources', migration 85) into the 422 it is;
// any other error is returned as it is.
func ruleOfDatabase(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && strings.HasPrefix(pgErr.Code, "MV") {
		return apperr.Unprocessable("%s", pgErr.Message)
	}
	return err
}
