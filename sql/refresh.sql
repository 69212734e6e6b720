-- name: CreateRefreshRun :one
-- A refresh run begins: the dataset's count now is its "before".
INSERT INTO catalog.refresh_runs (dataset_id, origin_kind, trigger, triggered_by, feature_count_before)
SELECT d.id, @origin_kind, @trigger, sqlc.narg(triggered_by), d.feature_count FROM catalog.datasets d WHERE d.id = @dataset_id
RETURNING *;

-- name: SetRefreshRunJob :exec
UPDATE catalog.refresh_runs SET ingest_job_id = @ingest_job_id WHERE id = @id;

-- name: FailRefreshRun :exec
-- A run that ended before its job could: the source failed, or the new data was refused.
UPDATE catalog.refresh_runs SET status = 'failed', finished_at = now(), error_code = @error_code, error_message = @error_message
WHERE id = @id AND status = 'running';

-- name: CompleteRefreshRun :exec
-- A run ends with the data it loaded (the job's commit, or a registered table's statistics).
UPDATE catalog.refresh_runs SET status = 'complete', finished_at = now(), feature_count_after = @feature_count_after,
    schema_diff = @schema_diff, dataset_version = sqlc.narg(dataset_version)
WHERE id = @id AND status = 'running';

-- name: RunningRefreshOfJob :one
-- The running refresh run whose data a reupload job loads, if any.
SELECT id FROM catalog.refresh_runs WHERE ingest_job_id = @ingest_job_id AND status = 'running';

-- name: MarkDatasetRefreshed :exec
-- A refresh committed: when, and whether the schema drifted (spec 3.3); the source answered.
UPDATE catalog.datasets SET last_refreshed_at = now(), schema_drift_status = @schema_drift_status,
    source_health = 'healthy', source_health_detail = 'refreshed from the source', last_checked_at = now()
WHERE id = @id;

-- name: SetDatasetSchemaDrift :exec
UPDATE catalog.datasets SET schema_drift_status = @schema_drift_status WHERE id = @id;

-- name: RefreshInProgress :one
-- Whether a run of the dataset is still going: fetching (no job yet) or its job not ended.
SELECT EXISTS (SELECT 1 FROM catalog.refresh_runs r LEFT JOIN catalog.ingest_jobs j ON j.id = r.ingest_job_id
    WHERE r.dataset_id = @dataset_id AND r.status = 'running'
      AND (r.ingest_job_id IS NULL OR j.status IN ('pending', 'running')))::bool;

-- name: ListRefreshRuns :many
-- A dataset's runs, newest first. A run handed to a job takes the job's outcome while its own
-- row still says running (a failed job fails the run; a run whose job was deleted stays as it is).
SELECT r.id, r.dataset_id, r.ingest_job_id, r.origin_kind, r.trigger, r.triggered_by, u.username AS triggered_by_username,
    r.started_at, j.started_at AS claimed_at, r.feature_count_before, r.feature_count_after, r.schema_diff, r.error_code,
    h.public_id AS dataset_version_id,
    (CASE WHEN r.status <> 'running' THEN r.status
          WHEN j.status = 'failed' OR j.status = 'cancelled' THEN 'failed'
          WHEN j.status = 'running' THEN 'running'
          WHEN j.status = 'pending' THEN 'pending'
          ELSE r.status END)::text AS status,
    COALESCE(r.finished_at, CASE WHEN j.status IN ('failed', 'cancelled') THEN j.updated_at END) AS finished_at,
    COALESCE(r.error_message, CASE WHEN j.status IN ('failed', 'cancelled') THEN j.error_message END) AS error_message,
    count(*) OVER () AS total
FROM catalog.refresh_runs r
LEFT JOIN catalog.ingest_jobs j ON j.id = r.ingest_job_id
LEFT JOIN catalog.users u ON u.id = r.triggered_by
LEFT JOIN catalog.dataset_history h ON h.dataset_id = r.dataset_id AND h.version = r.dataset_version AND r.dataset_version IS NOT NULL
    AND h.action = 'dataset.refresh'
WHERE r.dataset_id = @dataset_id
ORDER BY r.started_at DESC, r.id
OFFSET @off LIMIT @lim;

-- name: RefreshCandidates :many
-- Datasets a schedule may refresh: a service layer or a registered table with a declared
-- update_frequency, none of whose runs is going, and since when they count as refreshed (their
-- last refresh, else their creation; the last run tried, so a failing source is not retried on
-- every tick; a run whose job failed is over). The scheduler compares it with the frequency's period.
SELECT d.id, d.update_frequency::text AS update_frequency, d.created_by,
    GREATEST(COALESCE(d.last_refreshed_at, d.created_at), COALESCE(max(r.started_at), d.created_at))::timestamptz AS since
FROM catalog.datasets d
LEFT JOIN catalog.refresh_runs r ON r.dataset_id = d.id
LEFT JOIN catalog.ingest_jobs j ON j.id = r.ingest_job_id
WHERE d.origin IN ('service', 'registered') AND d.update_frequency IS NOT NULL AND d.created_by IS NOT NULL
GROUP BY d.id
HAVING NOT bool_or(COALESCE(r.status = 'running' AND (r.ingest_job_id IS NULL OR j.status IN ('pending', 'running')), false));

-- name: FailAbandonedRefreshRuns :many
-- Runs whose server stopped while it fetched the source (no job was ever made) are failed.
UPDATE catalog.refresh_runs SET status = 'failed', finished_at = now(), error_code = 'interrupted',
    error_message = 'the server stopped while the source was being fetched; refresh again'
WHERE status = 'running' AND ingest_job_id IS NULL AND started_at < @started_before::timestamptz
RETURNING id;

-- name: SetDatasetServiceSource :exec
-- A reupload or refresh fetched from a service layer: the dataset now comes from it.
UPDATE catalog.datasets SET origin = 'service', source_url = @source_url, origin_ref = @origin_ref WHERE id = @id;

-- name: RestatRegisteredDataset :one
-- A registered table's refresh: the record describes the table as it is now (no copy), a new
-- data version, refreshed now.
UPDATE catalog.datasets SET feature_count = @feature_count, extent_bbox = @extent_bbox, column_info = @column_info,
    schema_drift_status = @schema_drift_status, last_refreshed_at = now(), current_version = current_version + 1,
    source_health = 'healthy', source_health_detail = 'the registered table ' || table_schema || '.' || table_name || ' exists',
    last_checked_at = now(), updated_at = now()
WHERE id = @id AND registered
RETURNING current_version;

-- name: CreateFinishedRefreshJob :one
-- The job of a registered table's refresh, done as it is made: its statistics were read in the
-- request, and Get Job Status shows it like any other.
INSERT INTO catalog.ingest_jobs (status, current_step, progress, rows_processed, rows_failed, dataset_id, committed, created_by,
    started_at, completed_at)
VALUES ('complete', 'complete', 1, @rows_processed, 0, @dataset_id, true, sqlc.narg(created_by), now(), now())
RETURNING id;
