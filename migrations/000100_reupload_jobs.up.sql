-- Reupload jobs (issue 33): a job that replaces the data of an existing dataset instead of
-- creating one. Its dataset_id names that dataset from the upload on (an import's is set only
-- when it completes), so DatasetImportRunning holds the dataset's edits once it is committed,
-- and a deleted dataset leaves the job without one (ON DELETE SET NULL): its run then fails.
ALTER TABLE catalog.ingest_jobs ADD COLUMN reupload boolean NOT NULL DEFAULT false;
