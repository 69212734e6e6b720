-- Where a presigned upload lands in object storage, and its multipart upload id.
ALTER TABLE catalog.ingest_jobs ADD COLUMN object_key text, ADD COLUMN upload_id text;
