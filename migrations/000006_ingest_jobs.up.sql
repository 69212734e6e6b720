-- Ingestion jobs. The work itself runs on River (schema river, migrated at start-up), so any
-- replica can pick it up; this table is what callers see and what survives River's cleanup.
CREATE SCHEMA IF NOT EXISTS river;

CREATE TABLE catalog.ingest_jobs (
    id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    status          text NOT NULL DEFAULT 'pending'
                    CHECK (status IN ('pending', 'running', 'complete', 'failed', 'cancelled', 'fanned_out')),
    current_step    text CHECK (current_step IN ('queued', 'validating', 'ogr2ogr', 'finalize', 'complete',
                    'cog_convert', 'quicklook', 'analyzing', 'registering')),
    progress        double precision CHECK (progress BETWEEN 0 AND 1),
    rows_processed  bigint,
    rows_failed     bigint,
    dataset_id      uuid REFERENCES catalog.datasets (id) ON DELETE SET NULL,
    source_filename text,
    staging_path    text,
    error_message   text,
    can_retry       boolean NOT NULL DEFAULT false,
    retry_reason    text,
    warning_message text,
    warnings        jsonb NOT NULL DEFAULT '[]'::jsonb,
    options         jsonb NOT NULL DEFAULT '{}'::jsonb,
    committed       boolean NOT NULL DEFAULT false,
    created_by      uuid REFERENCES catalog.users (id) ON DELETE SET NULL,
    started_at      timestamptz,
    completed_at    timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ingest_jobs_created_by_idx ON catalog.ingest_jobs (created_by, created_at DESC);
CREATE INDEX ingest_jobs_dataset_idx ON catalog.ingest_jobs (dataset_id);
