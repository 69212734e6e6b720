-- name: LockDatasetForFeatureEdit :one
-- Serializes the feature edits of one dataset: the count and extent recomputed after an edit must
-- see every edit committed before it. Answers the count before the edit.
SELECT feature_count FROM catalog.datasets WHERE id = @id FOR UPDATE;

-- name: DatasetImportRunning :one
-- Whether an ingestion, reupload or refresh of the dataset is queued or running.
SELECT EXISTS (SELECT 1 FROM catalog.ingest_jobs
    WHERE dataset_id = @dataset_id AND committed AND status IN ('pending', 'running'))::bool;

-- name: RecordFeatureEdit :one
-- One feature edit on the record: the recomputed count and extent, a new content version (tiles
-- and caches keyed by it refresh) and who edited last.
UPDATE catalog.datasets SET
    feature_count = @feature_count,
    extent_bbox = @extent_bbox,
    z_min = CASE WHEN @set_z::bool THEN sqlc.narg(z_min)::double precision ELSE z_min END,
    z_max = CASE WHEN @set_z::bool THEN sqlc.narg(z_max)::double precision ELSE z_max END,
    current_version = current_version + 1,
    last_edited_by = sqlc.narg(edited_by),
    last_edited_at = now(),
    updated_at = now()
WHERE id = @id
RETURNING current_version;
