-- Apply Manifest (issue 33): which dataset each manifest key of a user stands for, and what
-- the last apply of the entry declared (its source and its metadata, each as a digest), so a
-- later apply creates, updates or skips it. job_id is the last ingest job the entry started:
-- its completion (ingest.Importer.Finish) names the dataset and applies the metadata of
-- declared (the entry as last applied). A deleted dataset leaves the key without one: the next
-- apply creates it again.
CREATE TABLE catalog.manifest_entries (
    owner_id      uuid NOT NULL REFERENCES catalog.users (id) ON DELETE CASCADE,
    key           text NOT NULL CHECK (key ~ '^[a-z0-9][a-z0-9._-]{0,127}$'),
    dataset_id    uuid REFERENCES catalog.datasets (id) ON DELETE SET NULL,
    job_id        uuid REFERENCES catalog.ingest_jobs (id) ON DELETE SET NULL,
    collection_id uuid REFERENCES catalog.collections (id) ON DELETE SET NULL,
    source_digest text NOT NULL,
    meta_digest   text NOT NULL,
    declared      jsonb NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(declared) = 'object'),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (owner_id, key)
);
CREATE INDEX manifest_entries_job ON catalog.manifest_entries (job_id) WHERE job_id IS NOT NULL;
