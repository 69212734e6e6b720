-- The remote layer a job's file was fetched from (Preview Service Layer, issue 33): url,
-- service_type, layer_name, layer_id, object_id_field. The dataset it creates keeps the url as
-- its source_url and the rest as its origin_ref, so a refresh can fetch it again. Never a
-- credential.
ALTER TABLE catalog.ingest_jobs ADD COLUMN source jsonb
    CHECK (source IS NULL OR (jsonb_typeof(source) = 'object' AND source ? 'url' AND NOT source ? 'token'));
