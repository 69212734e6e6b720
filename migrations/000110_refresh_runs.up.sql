-- Refresh runs (issue 33): one row per refresh of a dataset from its source, manual or on the
-- record's update_frequency. A service dataset's run fetches the layer and hands the data to a
-- reupload job (ingest_job_id): while the run itself is running, its outcome is the job's
-- (RefreshRuns reads it through), and the job's commit completes the run in its own transaction.
-- A registered table's run only re-reads its statistics and has no job.
CREATE TABLE catalog.refresh_runs (
    id                   uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    dataset_id           uuid NOT NULL REFERENCES catalog.datasets (id) ON DELETE CASCADE,
    ingest_job_id        uuid REFERENCES catalog.ingest_jobs (id) ON DELETE SET NULL,
    origin_kind          text NOT NULL,
    trigger              text NOT NULL CHECK (trigger IN ('manual', 'schedule')),
    status               text NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'complete', 'failed')),
    triggered_by         uuid REFERENCES catalog.users (id) ON DELETE SET NULL,
    started_at           timestamptz NOT NULL DEFAULT now(),
    finished_at          timestamptz,
    feature_count_before bigint,
    feature_count_after  bigint,
    schema_diff          jsonb,
    dataset_version      integer, -- the data version the run's commit made
    error_code           text,
    error_message        text
);
CREATE INDEX refresh_runs_dataset_idx ON catalog.refresh_runs (dataset_id, started_at DESC);
CREATE INDEX refresh_runs_job_idx ON catalog.refresh_runs (ingest_job_id) WHERE ingest_job_id IS NOT NULL;
