-- A registered raster (STAC Import mode register, raster->'remote') has no stored file for a VRT
-- generation to read: it is refused as a VRT source, saying so rather than "no raster file yet".
CREATE OR REPLACE FUNCTION catalog.vrt_refusal(record_type text, raster jsonb, visibility text, record_status text, created_by uuid,
                                               owner uuid, owner_admin boolean, vrt_visibility text)
RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN record_type NOT IN ('raster_dataset', 'vrt_dataset') THEN 'not_raster'
        WHEN NOT (owner_admin OR (owner IS NOT NULL AND created_by = owner)
                  OR (visibility = 'public' AND record_status = 'published')) THEN 'not_lendable'
        WHEN catalog.vrt_audience(visibility, record_status) < catalog.visibility_rank(vrt_visibility) THEN 'narrower'
        WHEN raster ? 'remote' THEN 'registered'
        WHEN coalesce(raster->>'storage_key', '') = '' THEN 'no_data'
    END
$$;
