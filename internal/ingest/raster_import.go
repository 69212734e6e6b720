package ingest

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"meridian/internal/auth"
	"meridian/internal/blob"
	"meridian/internal/catalog"
	"meridian/internal/gdalcmd"
	"meridian/store"
)

// bandStats are one band's statistics for display.
type bandStats struct {
	Min, Max, Mean, StdDev, P2, P98 *float64
}

// cogArgs are the gdal_translate arguments that make the stored COG (the contract between the
// ingest and the tile reader: web-mercator tiles of 256 pixels, one conversion).
func cogArgs(o RasterOptions, srid int, src, out string) []string {
	args := []string{"-of", "COG", "-co", "TILING_SCHEME=GoogleMapsCompatible", "-co", "BLOCKSIZE=256", "-co", "COMPRESS=" + o.Compression}
	switch o.Compression {
	case "DEFLATE", "LZW", "ZSTD":
		args = append(args, "-co", "PREDICTOR=YES")
	}
	args = append(args, "-co", "RESAMPLING="+o.Resampling, "-co", "OVERVIEWS=IGNORE_EXISTING", "-co", "NUM_THREADS=ALL_CPUS")
	if o.NoData != "" {
		args = append(args, "-a_nodata", o.NoData)
	}
	if srid > 0 {
		args = append(args, "-a_srs", "EPSG:"+strconv.Itoa(srid))
	}
	return append(args, src, out)
}

// rasterDatasetID is the id of the dataset a run of a raster job makes: known before the record
// exists, so its COG can be stored under its final key first, and found (and removed) from the
// job alone when the run dies before its record is written.
func rasterDatasetID(job uuid.UUID, attempt int32) uuid.UUID {
	return uuid.NewSHA1(job, []byte("raster-dataset/"+strconv.Itoa(int(attempt))))
}

// cogTemp is where a run writes its COG before it is stored: beside the staged file, so the
// local store moves it into place, and a run that dies leaves it where the staging goes.
func cogTemp(stagingPath string, attempt int32) string {
	return filepath.Join(filepath.Dir(stagingPath), fmt.Sprintf(".cog-%d.tif", attempt))
}

// loadRaster converts a staged raster into the dataset's COG, reads its statistics, stores it
// and, in one transaction, writes the record and completes the job. Whatever fails, nothing
// stays: the temporary COG is removed, and a stored one is deleted unless its record committed.
func (im *Importer) loadRaster(ctx context.Context, job store.CatalogIngestJob, opts Options, src Source,
	complete func(context.Context, pgx.Tx) error) (result, error) {
	info, err := InspectRaster(ctx, im.GDAL, src, im.Bounds.Raster)
	if err != nil {
		return result{}, err
	}
	srid, err := rasterSRID(opts, info)
	if err != nil {
		return result{}, &ImportError{Msg: err.Error()}
	}
	ro, err := CheckRasterOptions(opts.Raster, info)
	if err != nil {
		return result{}, &ImportError{Msg: err.Error()}
	}
	tmp := cogTemp(deref(job.StagingPath), job.Attempts)
	// A COG an earlier run left half-written when its server died goes first.
	if old, _ := filepath.Glob(filepath.Join(filepath.Dir(tmp), ".cog-*")); len(old) > 0 {
		for _, f := range old {
			_ = os.Remove(f)
		}
	}
	defer os.Remove(tmp)
	if err := im.convert(ctx, job, src, ro, srid, tmp); err != nil {
		return result{}, err
	}
	_ = im.Q.SetIngestJobStep(ctx, store.SetIngestJobStepParams{ID: job.ID, CurrentStep: ptr("analyzing"), Progress: ptr(0.85)})
	r, err := im.describeCOG(ctx, tmp, info, ro)
	if err != nil {
		return result{}, err
	}
	if srid > 0 {
		// An assigned CRS: the file's own (if any) and the box GDAL derived from it no longer hold.
		r.EPSG, r.CRSIsGeographic, info.WGS84 = srid, im.geographic(ctx, srid), nil
	}
	id := rasterDatasetID(job.ID, job.Attempts)
	r.StorageKey = blob.RasterKey(id, 1)
	if r.SizeBytes, err = im.Objects.PutFile(ctx, r.StorageKey, tmp); err != nil {
		return result{}, err
	}
	res, err := im.finishRaster(ctx, job, opts, src, info, r, id, complete)
	if err != nil {
		_ = im.Objects.Delete(context.WithoutCancel(ctx), r.StorageKey)
	}
	return res, err
}

// rasterSRID is the CRS assigned to the source (-a_srs), 0 to keep the file's: srid_override
// always assigns, source_srid only to a file that declares none. A raster without a CRS and none
// given, or without a geotransform, cannot be placed on the map.
func rasterSRID(opts Options, info RasterInfo) (int, error) {
	switch {
	case !info.Georeferenced:
		return 0, fmt.Errorf("the raster is not georeferenced (no geotransform and no ground control points): it cannot be placed on the map")
	case opts.SourceSRID > 0 && (opts.Raster.ForceSRID || info.WKT == ""):
		return opts.SourceSRID, nil
	case info.WKT == "":
		return 0, fmt.Errorf("the raster declares no CRS: commit it again with srid_override (or source_srid) naming its EPSG code")
	}
	return 0, nil
}

// convert runs gdal_translate to the COG, forwarding its progress to the job (0 to 0.8).
func (im *Importer) convert(ctx context.Context, job store.CatalogIngestJob, src Source, o RasterOptions, srid int, out string) error {
	_ = im.Q.SetIngestJobStep(ctx, store.SetIngestJobStepParams{ID: job.ID, CurrentStep: ptr("cog_convert"), Progress: ptr(0.0)})
	runCtx, cancel := context.WithTimeout(ctx, importTime)
	defer cancel()
	cmd, err := gdalcmd.Command(runCtx, im.GDAL, cogDrivers(src, o), rasterEnv, "gdal_translate", cogArgs(o, srid, src.Path, out)...)
	if err != nil {
		return err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	sc := bufio.NewScanner(stdout)
	sc.Split(scanDots)
	for sc.Scan() {
		if m := progressMark.FindStringSubmatch(sc.Text() + "..."); m != nil {
			pct, _ := strconv.Atoi(m[1])
			_ = im.Q.SetIngestJobStep(ctx, store.SetIngestJobStepParams{ID: job.ID, CurrentStep: ptr("cog_convert"), Progress: ptr(float64(pct) / 100 * 0.8)})
		}
	}
	if err := cmd.Wait(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		im.Log.Warn("gdal_translate failed", "job_id", job.ID, "source", src.String(), "stderr", lastLines(stderr.String(), 20))
		if limit := im.GDAL.Exceeded(err, stderr.String()); limit != "" {
			return &ImportError{Msg: fmt.Sprintf("the conversion of %s to a Cloud Optimized GeoTIFF was stopped: it reached %s", src.Name, limit)}
		}
		return &ImportError{Msg: fmt.Sprintf("%s could not be converted to a Cloud Optimized GeoTIFF: %s", src.Name,
			gdalMessage(stderr.String(), "GDAL could not read its pixels"))}
	}
	// GDAL reports unreadable tiles as errors but may still finish: a COG with holes is not kept.
	if strings.Contains(stderr.String(), "ERROR") {
		return &ImportError{Msg: fmt.Sprintf("%s could not be converted to a Cloud Optimized GeoTIFF: %s", src.Name,
			gdalMessage(stderr.String(), "GDAL reported read errors"))}
	}
	return nil
}

// cogDrivers are the drivers registered while the COG is made: the source's, GTiff and COG; and
// for JPEG also VRT, through which GDAL's COG driver turns the alpha of the reprojection into the
// JPEG's mask (without it that conversion fails). The upload still cannot be read as a VRT: GDAL
// recognises one only by "<VRTDataset" in the text of its first bytes, and the source's
// signature, checked before (TIFF, BigTIFF or JPEG 2000), puts a NUL byte within its first five
// that ends that text; no sidecar is ever looked for (rasterEnv) and no path of the command is a
// client's.
func cogDrivers(src Source, o RasterOptions) []string {
	drivers := []string{src.Driver, "GTiff", "COG"}
	if o.Compression == "JPEG" {
		drivers = append(drivers, "VRT")
	}
	return drivers
}

// statsPixels is about how large the overview statistics are computed on.
const statsPixels = 1024

// describeCOG reads the stored COG's grid and each band's statistics, the latter from the
// smallest overview at least statsPixels wide or high (the full resolution of a small raster).
func (im *Importer) describeCOG(ctx context.Context, cog string, info RasterInfo, o RasterOptions) (catalog.Raster, error) {
	j, err := gdalinfo(ctx, im.GDAL, "GTiff", cog)
	if err != nil {
		return catalog.Raster{}, err
	}
	r := catalog.Raster{EPSG: info.EPSG, CRSIsGeographic: info.Geographic, ResX: info.ResX, ResY: info.ResY, Width: info.Width,
		Height: info.Height, BandCount: len(info.Bands), Compression: o.Compression, Extent: info.Extent, Resampling: o.Resampling}
	zoom, _ := strconv.Atoi(j.Metadata["TILING_SCHEME"]["ZOOM_LEVEL"])
	levels := 0
	if len(j.Bands) > 0 {
		levels = len(j.Bands[0].Overviews)
	}
	r.COG = catalog.COGGrid{Width: j.Size[0], Height: j.Size[1], MaxZoom: zoom, MinZoom: zoom - levels, Bands: len(j.Bands)}
	if n := len(j.Bands); n > 0 {
		r.COG.Alpha = n > len(info.Bands) && strings.EqualFold(j.Bands[n-1].ColorInterp, "alpha")
		if m := j.Bands[0].Mask; m != nil && slices.Contains(m.Flags, "PER_DATASET") && !slices.Contains(m.Flags, "ALPHA") {
			r.COG.Mask = true
		}
	}
	if gt := j.GeoTransform; len(gt) == 6 {
		r.COG.Bounds = []float64{gt[0], gt[3] + float64(j.Size[1])*gt[5], gt[0] + float64(j.Size[0])*gt[1], gt[3]}
	}
	var extra []string
	level := -1
	for i, ov := range j.Bands[0].Overviews {
		if len(ov.Size) == 2 && max(ov.Size[0], ov.Size[1]) >= statsPixels {
			level = i
		}
	}
	if level >= 0 {
		extra = append(extra, "-oo", "OVERVIEW_LEVEL="+strconv.Itoa(level))
	}
	sj, err := gdalinfo(ctx, im.GDAL, "GTiff", cog, append(extra, "-stats", "-hist")...)
	if err != nil {
		return r, err
	}
	stats := make([]bandStats, len(sj.Bands))
	for i, b := range sj.Bands {
		st := bandStats{Min: b.Minimum, Max: b.Maximum, Mean: b.Mean, StdDev: b.StdDev}
		if h := b.Histogram; h != nil {
			st.P2, st.P98 = percentile(h.Min, h.Max, h.Buckets, 0.02), percentile(h.Min, h.Max, h.Buckets, 0.98)
		} else if b.Minimum != nil && b.Maximum != nil && *b.Minimum == *b.Maximum {
			st.P2, st.P98 = b.Minimum, b.Maximum // a constant band has no histogram
		}
		stats[i] = st
	}
	for i, b := range info.Bands {
		band := catalog.RasterBand{Index: b.Index, DType: b.DType, NoData: b.NoData, ColorInterp: b.ColorInterp}
		if o.NoData != "" {
			band.NoData = &o.NoData
			if o.NoData == "none" {
				band.NoData = nil
			}
		}
		if i < len(stats) {
			band.Min, band.Max, band.Mean, band.StdDev, band.P2, band.P98 = stats[i].Min, stats[i].Max, stats[i].Mean, stats[i].StdDev, stats[i].P2, stats[i].P98
		}
		r.Bands = append(r.Bands, band)
	}
	r.NoData = r.Bands[0].NoData
	r.IsDEMDetected = detectDEM(info.Bands, stats)
	r.IsDEM = r.IsDEMDetected
	return r, nil
}

// percentile is the value below which the share q of a histogram's counts falls, interpolated
// within its bucket; nil for an empty histogram.
func percentile(lo, hi float64, buckets []int64, q float64) *float64 {
	var total int64
	for _, n := range buckets {
		total += n
	}
	if total == 0 || len(buckets) == 0 {
		return nil
	}
	width := (hi - lo) / float64(len(buckets))
	target := q * float64(total)
	var seen float64
	for i, n := range buckets {
		if n > 0 && seen+float64(n) >= target {
			v := lo + width*(float64(i)+(target-seen)/float64(n))
			v = math.Round(v*1e6) / 1e6
			return &v
		}
		seen += float64(n)
	}
	return &hi
}

// finishRaster writes the raster dataset's record and completes the job in one transaction.
func (im *Importer) finishRaster(ctx context.Context, job store.CatalogIngestJob, opts Options, src Source, info RasterInfo,
	r catalog.Raster, id uuid.UUID, complete func(context.Context, pgx.Tx) error) (result, error) {
	raw, err := json.Marshal(r)
	if err != nil {
		return result{}, err
	}
	visibility := cmp.Or(opts.Visibility, auth.VisibilityPrivate)
	status := cmp.Or(opts.RecordStatus, catalog.StatusPublished)
	empty := ""
	prm := store.InsertDatasetParams{ID: &id, TableSchema: "data", TableName: "raster_" + strings.ReplaceAll(id.String(), "-", ""),
		Title: fileTitle(opts.Title, deref(job.SourceFilename)), Visibility: visibility, RecordStatus: &status, RecordType: "raster_dataset",
		Origin: ptr("upload"), SourceFormat: ptr(src.Format), SourceFilename: job.SourceFilename, Srid: ptr(int32(3857)),
		ColumnInfo: []byte("[]"), CreatedBy: job.CreatedBy, GeometryColumn: &empty, Raster: raw}
	if r.EPSG > 0 {
		prm.OriginalSrid = ptr(int32(r.EPSG))
	}
	if opts.Summary != "" {
		prm.Summary = &opts.Summary
	}
	prm.DataVintageStart, prm.DataVintageEnd = dateOf(opts.VintageStart), dateOf(opts.VintageEnd)
	prm.ExtentBbox = info.WGS84
	if prm.ExtentBbox == nil && len(r.COG.Bounds) == 4 {
		prm.ExtentBbox = mercatorToLonLat(r.COG.Bounds)
	}
	var after func(context.Context)
	err = pgx.BeginFunc(ctx, im.Pool, func(tx pgx.Tx) error {
		actor := auth.Principal{}
		if job.CreatedBy != nil {
			actor.UserID = *job.CreatedBy
		}
		q := store.New(tx)
		if _, err := catalog.AddRecord(ctx, q, prm, actor); err != nil {
			return err
		}
		n, err := q.CompleteIngestJob(ctx, store.CompleteIngestJobParams{ID: job.ID, Attempt: job.Attempts, DatasetID: &id,
			RowsProcessed: ptr(int64(0)), RowsFailed: ptr(int64(0)), Warnings: []byte("[]"), TemporalParseErrors: []byte("{}")})
		if err == nil && n == 0 {
			err = errLostJob
		}
		if err == nil {
			err = im.finish(ctx, tx, job.ID, id, &after)
		}
		if err == nil && complete != nil {
			err = complete(ctx, tx)
		}
		return err
	})
	if err == nil && after != nil {
		after(ctx)
	}
	return result{DatasetID: id}, err
}

// geographic tells whether an EPSG code is a longitude/latitude CRS, by PostGIS's definitions.
func (im *Importer) geographic(ctx context.Context, srid int) bool {
	var geo bool
	_ = im.Pool.QueryRow(ctx, `SELECT proj4text LIKE '%+proj=longlat%' FROM spatial_ref_sys WHERE srid = $1`, srid).Scan(&geo)
	return geo
}

// mercatorToLonLat is a web-mercator box in longitudes and latitudes (when the source's own
// extent could not be given in WGS 84: a CRS assigned at commit).
func mercatorToLonLat(b []float64) []float64 {
	const r = 6378137.0
	lon := func(x float64) float64 { return x / r * 180 / math.Pi }
	lat := func(y float64) float64 { return (2*math.Atan(math.Exp(y/r)) - math.Pi/2) * 180 / math.Pi }
	return []float64{lon(b[0]), lat(b[1]), lon(b[2]), lat(b[3])}
}
