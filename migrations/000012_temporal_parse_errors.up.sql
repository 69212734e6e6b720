-- Columns whose values looked temporal but did not parse as dates, per job (JobStatusResponse).
ALTER TABLE catalog.ingest_jobs ADD COLUMN temporal_parse_errors jsonb NOT NULL DEFAULT '{}'::jsonb;
