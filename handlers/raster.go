package handlers

// Raster datasets as the contract shows them: Preview File's raster description, Commit Import's
// raster options, a dataset's RasterMetadata.

import (
	"encoding/json"
	"strings"

	"meridian/gen"
	"meridian/internal/apperr"
	"meridian/internal/catalog"
	"meridian/internal/ingest"
)

// rasterPreview is a raster file's description, at the top level and under raster.
func rasterPreview(out *gen.PreviewFile200JSONResponse, info *ingest.RasterInfo) {
	r := gen.IngestRasterPreview{BandCount: len(info.Bands), Width: info.Width, Height: info.Height, Dtype: info.Bands[0].DType,
		Nodata: info.Bands[0].NoData, ResX: info.ResX, ResY: info.ResY, IsCogCompliant: info.IsCOG,
		Bands: make([]gen.RasterBand, len(info.Bands)), FileSizeBytes: &info.FileSize}
	if info.EPSG > 0 {
		r.CrsEpsg = &info.EPSG
	}
	if info.WKT != "" {
		r.CrsWkt = &info.WKT
	}
	if info.Compression != "" {
		r.Compression = &info.Compression
	}
	if info.Extent != nil {
		r.Extent = &info.Extent
	}
	if info.WGS84 != nil {
		r.Wgs84Bbox = &info.WGS84
	}
	r.ComplianceReason = "not a Cloud Optimized GeoTIFF: it is converted to one at commit"
	if info.IsCOG {
		r.ComplianceReason = "a Cloud Optimized GeoTIFF; it is still converted at commit, to the web-mercator tile grid"
	}
	for i, b := range info.Bands {
		r.Bands[i] = gen.RasterBand{Index: b.Index, Dtype: b.DType, Nodata: b.NoData, ColorInterp: &b.ColorInterp}
	}
	out.Raster = &r
	out.CrsEpsg, out.CrsWkt, out.BandCount, out.Width, out.Height = r.CrsEpsg, r.CrsWkt, &r.BandCount, &r.Width, &r.Height
	out.Dtype, out.Nodata, out.ResX, out.ResY, out.Compression = &r.Dtype, r.Nodata, &r.ResX, &r.ResY, r.Compression
	out.FileSizeBytes, out.IsCogCompliant, out.ComplianceReason = r.FileSizeBytes, &r.IsCogCompliant, &r.ComplianceReason
}

// rasterOptions reads Commit Import's raster members; srid_override assigns a CRS whatever the
// file declares, source_srid only to a file without one.
func rasterOptions(b *gen.IngestCommitRequest) (ingest.RasterOptions, error) {
	o := ingest.RasterOptions{Compression: val(b.Compression), Resampling: val(b.Resampling), ForceSRID: b.SridOverride != nil}
	if b.NodataOverride != nil {
		raw, err := b.NodataOverride.MarshalJSON()
		if err != nil {
			return o, err
		}
		var text string
		if json.Unmarshal(raw, &text) != nil {
			text = string(raw) // a JSON number, kept as written (a float32 would round large integers)
		}
		if strings.TrimSpace(text) == "" || text == "null" {
			return o, apperr.Unprocessable("nodata_override is empty: send a number, nan, inf, -inf or none")
		}
		o.NoData = text
	}
	return o, nil
}

// rasterOut is a raster dataset's RasterMetadata: the description clients see (never its
// storage key or grid).
func rasterOut(e catalog.Entry) *gen.RasterMetadata {
	r, ok, err := catalog.RasterOf(e)
	if err != nil || !ok {
		return nil
	}
	out := gen.RasterMetadata{CrsIsGeographic: &r.CRSIsGeographic, ResX: &r.ResX, ResY: &r.ResY, BandCount: &r.BandCount,
		IsDem: &r.IsDEM, Nodata: r.NoData, Compression: &r.Compression, Width: &r.Width, Height: &r.Height, SizeBytes: &r.SizeBytes}
	if r.EPSG > 0 {
		out.Epsg = &r.EPSG
	}
	bands := make([]gen.RasterBand, len(r.Bands))
	for i, b := range r.Bands {
		bands[i] = gen.RasterBand{Index: b.Index, Dtype: b.DType, Nodata: b.NoData, ColorInterp: &b.ColorInterp,
			Min: b.Min, Max: b.Max, Mean: b.Mean, Stddev: b.StdDev, P2: b.P2, P98: b.P98}
	}
	out.Bands = &bands
	if v := r.VRT; v != nil {
		out.Status, out.VrtType, out.SourceCount, out.ResolutionStrategy = &v.Status, &v.Type, &v.SourceCount, &v.ResolutionStrategy
	}
	return &out
}
