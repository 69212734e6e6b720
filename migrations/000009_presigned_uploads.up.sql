-- Presigned (direct) uploads: the job exists before its file does.
ALTER TABLE catalog.ingest_jobs
    ADD COLUMN presigned     boolean NOT NULL DEFAULT false,
    ADD COLUMN declared_size bigint,
    ADD COLUMN part_size     bigint,
    ADD COLUMN part_count    integer,
    ADD COLUMN expires_at    timestamptz;
