-- The bytes each staging directory holds (an upload and the members unpacked from it), so the
-- staging quotas (STAGING_QUOTA_PER_USER, STAGING_QUOTA_TOTAL) are one sum away. A row is made
-- when an upload starts and goes with its directory; job_id names the directory
-- (staging/<job_id>), which fan-out children share with the job that uploaded the file.
CREATE TABLE catalog.staging_areas (
    job_id     uuid PRIMARY KEY,
    owner_id   uuid REFERENCES catalog.users (id) ON DELETE SET NULL,
    bytes      bigint NOT NULL DEFAULT 0 CHECK (bytes >= 0),
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX staging_areas_owner ON catalog.staging_areas (owner_id);

-- The expiry of staging (STAGING_TTL) looks for uncommitted pending jobs and failed jobs by age.
CREATE INDEX ingest_jobs_staging_expiry ON catalog.ingest_jobs (status, updated_at)
    WHERE staging_path IS NOT NULL AND status IN ('pending', 'failed');
