-- Raster datasets (issue 29): the description of a raster dataset's data, kept with its record.
-- Its pixels are one Cloud Optimized GeoTIFF in the object store (internal/blob), named by
-- raster->>'storage_key'; the record's table_name names no table for it. The field's keys are
-- catalog.Raster's (internal/catalog/raster.go): what the document's RasterMetadata shows, the
-- per-band statistics the tile renderer stretches with, and the internal storage key.
ALTER TABLE catalog.datasets ADD COLUMN raster jsonb
    CHECK (raster IS NULL OR jsonb_typeof(raster) = 'object');
