-- name: CreateIngestJob :one
-- reupload_of, when given, makes the job a reupload of that dataset (migration 100).
INSERT INTO catalog.ingest_jobs (id, source_filename, staging_path, created_by, current_step, dataset_id, reupload)
VALUES (@id, @source_filename, @staging_path, @created_by, 'queued', sqlc.narg(reupload_of)::uuid, sqlc.narg(reupload_of)::uuid IS NOT NULL)
RETURNING *;

-- name: GetIngestJob :one
SELECT * FROM catalog.ingest_jobs WHERE id = @id;

-- name: CommitIngestJob :one
-- Only an uncommitted pending job can be committed, once.
UPDATE catalog.ingest_jobs SET committed = true, options = @options, updated_at = now()
WHERE id = @id AND status = 'pending' AND NOT committed
RETURNING *;

-- name: ClaimIngestJob :one
-- A committed pending job is taken by exactly one run; a run of a job that is already running,
-- failed or complete (a River job rescued hours later) claims nothing.
UPDATE catalog.ingest_jobs SET status = 'running', current_step = 'validating', progress = 0,
    attempts = attempts + 1, heartbeat_at = now(), alive_until = now() + make_interval(secs => @stall_seconds::float8),
    started_at = now(), completed_at = NULL, error_message = NULL, can_retry = false, retry_reason = NULL,
    updated_at = now()
WHERE id = @id AND status = 'pending' AND committed
RETURNING *;

-- name: BeatIngestJob :execrows
-- The run's sign of life; no row means the run lost its job (failed as stalled) and must stop.
UPDATE catalog.ingest_jobs SET heartbeat_at = now(), alive_until = now() + make_interval(secs => @stall_seconds::float8)
WHERE id = @id AND status = 'running' AND attempts = @attempt;

-- name: SetIngestJobStep :exec
UPDATE catalog.ingest_jobs SET current_step = @current_step, progress = @progress,
    rows_processed = coalesce(sqlc.narg(rows_processed), rows_processed), updated_at = now()
WHERE id = @id;

-- name: CompleteIngestJob :execrows
-- Runs in the transaction that creates the dataset record, and only for the run that holds the job.
UPDATE catalog.ingest_jobs SET status = 'complete', current_step = 'complete', progress = 1,
    dataset_id = @dataset_id, rows_processed = @rows_processed, rows_failed = @rows_failed,
    warnings = @warnings, temporal_parse_errors = @temporal_parse_errors, completed_at = now(), updated_at = now()
WHERE id = @id AND status = 'running' AND attempts = @attempt;

-- name: FailIngestJob :exec
-- A run's own failure; the staging file is kept so the job can be retried.
UPDATE catalog.ingest_jobs SET status = 'failed', error_message = @error_message, can_retry = @can_retry,
    retry_reason = @retry_reason, completed_at = now(), updated_at = now()
WHERE id = @id AND status = 'running' AND attempts = @attempt;

-- name: RefuseIngestJob :execrows
-- A pending job whose file was refused at commit: nothing a retry could change.
UPDATE catalog.ingest_jobs SET status = 'failed', error_message = @error_message, can_retry = false,
    retry_reason = NULL, completed_at = now(), updated_at = now()
WHERE id = @id AND status = 'pending';

-- name: RequeueIngestJob :one
-- A failed job whose staging was released (STAGING_TTL) has nothing to run again; an analysis
-- runs again from the spec in its options.
UPDATE catalog.ingest_jobs SET status = 'pending', current_step = 'queued', progress = NULL,
    error_message = NULL, can_retry = false, retry_reason = NULL, completed_at = NULL, updated_at = now()
WHERE id = @id AND status = 'failed' AND (staging_path IS NOT NULL OR options ? 'analysis')
RETURNING *;

-- name: PreviousSourceLayer :one
-- The layer the most recent completed job of the dataset (its import or a reupload) read.
SELECT (options->>'layer_name')::text FROM catalog.ingest_jobs
WHERE dataset_id = @dataset_id AND status = 'complete'
ORDER BY completed_at DESC NULLS LAST LIMIT 1;

-- name: LatestJobOfDataset :one
SELECT * FROM catalog.ingest_jobs WHERE dataset_id = @dataset_id ORDER BY created_at DESC LIMIT 1;

-- name: ListIngestJobs :many
SELECT sqlc.embed(j), u.username,
    count(*) OVER () AS total FROM catalog.ingest_jobs j LEFT JOIN catalog.users u ON u.id = j.created_by
WHERE (sqlc.narg(status)::text IS NULL OR j.status = sqlc.narg(status))
  AND (sqlc.narg(created_by)::uuid IS NULL OR j.created_by = sqlc.narg(created_by))
  AND (sqlc.narg(dataset_id)::uuid IS NULL OR j.dataset_id = sqlc.narg(dataset_id))
  AND (sqlc.narg(since)::timestamptz IS NULL OR j.created_at >= sqlc.narg(since))
  AND (sqlc.narg(search)::text IS NULL OR j.source_filename ILIKE '%' || sqlc.narg(search) || '%'
       OR j.error_message ILIKE '%' || sqlc.narg(search) || '%')
-- @sort: created_at (default), source_filename, status, username, duration; @descending for desc.
ORDER BY
  CASE WHEN NOT @descending::bool THEN CASE @sort::text WHEN 'status' THEN j.status WHEN 'source_filename' THEN j.source_filename
    WHEN 'username' THEN u.username END END,
  CASE WHEN @descending::bool THEN CASE @sort::text WHEN 'status' THEN j.status WHEN 'source_filename' THEN j.source_filename
    WHEN 'username' THEN u.username END END DESC,
  CASE WHEN @sort::text = 'duration' AND NOT @descending::bool THEN j.completed_at - j.started_at END,
  CASE WHEN @sort::text = 'duration' AND @descending::bool THEN j.completed_at - j.started_at END DESC NULLS LAST,
  CASE WHEN NOT @descending::bool AND @sort::text = 'created_at' THEN j.created_at END,
  j.created_at DESC, j.id
LIMIT @lim OFFSET @off;

-- name: ListStalledIngestJobs :many
-- Running jobs whose run has given no sign of life for @silence_seconds (its server died or hangs).
SELECT id FROM catalog.ingest_jobs
WHERE status = 'running' AND coalesce(heartbeat_at, updated_at) < now() - make_interval(secs => @silence_seconds::float8)
    AND coalesce(alive_until, '-infinity') < now() -- never before the deadline the run set itself
    -- a STAC import's parent runs no import of its own: its items' jobs are watched instead
    AND NOT EXISTS (SELECT 1 FROM catalog.stac_imports s WHERE s.job_id = ingest_jobs.id);

-- name: FailStalledIngestJobs :many
UPDATE catalog.ingest_jobs SET status = 'failed', can_retry = true,
    error_message = 'the import stopped without finishing (the server running it went away)',
    retry_reason = 'retry to run the import again from the kept staging file', completed_at = now(), updated_at = now()
WHERE status = 'running' AND coalesce(heartbeat_at, updated_at) < now() - make_interval(secs => @silence_seconds::float8)
    AND coalesce(alive_until, '-infinity') < now() -- never before the deadline the run set itself
    -- a STAC import's parent runs no import of its own: its items' jobs are watched instead
    AND NOT EXISTS (SELECT 1 FROM catalog.stac_imports s WHERE s.job_id = ingest_jobs.id)
RETURNING id, attempts;

-- name: RescueStalledIngestJobs :many
-- Running jobs silent for @silence_seconds that have been rescued fewer than @max_rescues times go
-- back to pending for any replica's worker (the caller queues them in the same transaction). The
-- next claim counts a new attempt, so the silent run, should it wake, can neither beat, complete
-- nor fail the job again. vrt says which worker runs it.
UPDATE catalog.ingest_jobs SET status = 'pending', current_step = 'queued', progress = NULL, heartbeat_at = NULL, alive_until = NULL,
    rescues = rescues + 1, updated_at = now()
WHERE status = 'running' AND coalesce(heartbeat_at, updated_at) < now() - make_interval(secs => @silence_seconds::float8)
    AND coalesce(alive_until, '-infinity') < now() -- never before the deadline the run set itself
    AND rescues < @max_rescues::int
    AND NOT EXISTS (SELECT 1 FROM catalog.stac_imports s WHERE s.job_id = ingest_jobs.id)
RETURNING id, attempts, EXISTS (SELECT 1 FROM catalog.vrt_generations g WHERE g.id = ingest_jobs.id)::bool AS vrt;

-- name: HandBackIngestJob :execrows
-- A run interrupted because its server is stopping gives its job back to the queue (the caller
-- queues it in the same transaction), as the stall sweep would later, while rescues remain.
UPDATE catalog.ingest_jobs SET status = 'pending', current_step = 'queued', progress = NULL, heartbeat_at = NULL, alive_until = NULL,
    rescues = rescues + 1, updated_at = now()
WHERE id = @id AND status = 'running' AND attempts = @attempt AND rescues < @max_rescues::int;

-- name: FanOutIngestJob :execrows
UPDATE catalog.ingest_jobs SET status = 'fanned_out', committed = true, current_step = 'complete',
    completed_at = now(), updated_at = now()
WHERE id = @id AND status = 'pending' AND NOT committed;

-- name: OtherJobsNeedStaging :one
-- Whether another job may still read this staging file (fan-out children share their parent's).
SELECT EXISTS (SELECT 1 FROM catalog.ingest_jobs
               WHERE staging_path = @staging_path AND id <> @id AND status IN ('pending', 'running', 'failed'))::bool;

-- name: CreatePresignedJob :one
INSERT INTO catalog.ingest_jobs (id, source_filename, created_by, current_step, presigned, declared_size, part_size, part_count,
    expires_at, object_key, upload_id, dataset_id, reupload)
VALUES (@id, @source_filename, @created_by, 'queued', true, @declared_size, @part_size, @part_count, @expires_at, @object_key, @upload_id,
    sqlc.narg(reupload_of)::uuid, sqlc.narg(reupload_of)::uuid IS NOT NULL)
RETURNING *;

-- name: AttachStagedFile :execrows
-- Completes a presigned upload: the assembled file becomes the job's staging file, once.
UPDATE catalog.ingest_jobs SET staging_path = @staging_path, updated_at = now()
WHERE id = @id AND presigned AND staging_path IS NULL AND status = 'pending';

-- name: ExpiredPresignedJobs :many
SELECT id FROM catalog.ingest_jobs
WHERE presigned AND status = 'pending' AND staging_path IS NULL AND expires_at < now();

-- name: CancelExpiredPresignedJobs :exec
-- A presigned upload never completed within its hour: the job is cancelled.
UPDATE catalog.ingest_jobs SET status = 'cancelled', error_message = 'the upload was never completed before its URLs expired',
    completed_at = now(), updated_at = now()
WHERE id = ANY(@ids::uuid[]) AND presigned AND status = 'pending' AND staging_path IS NULL;

-- name: OpenStagingArea :exec
-- An upload starts: its directory is accounted from now on.
INSERT INTO catalog.staging_areas (job_id, owner_id) VALUES (@job_id, @owner_id)
ON CONFLICT (job_id) DO NOTHING;

-- name: AddStagedBytes :exec
-- Bytes written into a staging directory (an upload, an unpacked archive); a directory staged
-- before the accounting existed is adopted.
INSERT INTO catalog.staging_areas (job_id, owner_id, bytes) VALUES (@job_id, @owner_id, @bytes)
ON CONFLICT (job_id) DO UPDATE SET bytes = catalog.staging_areas.bytes + excluded.bytes;

-- name: CloseStagingArea :exec
DELETE FROM catalog.staging_areas WHERE job_id = @job_id;

-- name: StagingUsage :one
-- The bytes staged by one owner and by everyone.
SELECT coalesce(sum(bytes) FILTER (WHERE owner_id = @owner_id), 0)::bigint AS mine,
    coalesce(sum(bytes), 0)::bigint AS total
FROM catalog.staging_areas;

-- name: ListStagingAreas :many
SELECT job_id, created_at FROM catalog.staging_areas;

-- name: ExpireUncommittedJobs :many
-- Uploads never committed within the staging TTL end, with the reason; their staging goes.
UPDATE catalog.ingest_jobs SET status = 'failed', error_message = @error_message, can_retry = false,
    retry_reason = NULL, staging_path = NULL, completed_at = now(), updated_at = now()
WHERE status = 'pending' AND NOT committed AND staging_path IS NOT NULL
  AND updated_at < now() - make_interval(secs => @ttl_seconds::float8)
RETURNING id;

-- name: ReleaseStaleFailedJobs :many
-- Failed jobs not retried within the staging TTL give up their staging file (and their retry).
UPDATE catalog.ingest_jobs SET staging_path = NULL, can_retry = false, retry_reason = NULL, updated_at = now()
WHERE status = 'failed' AND staging_path IS NOT NULL
  AND coalesce(completed_at, updated_at) < now() - make_interval(secs => @ttl_seconds::float8)
RETURNING id;

-- name: StagingInUse :one
-- Whether a staging directory (named by the job that uploaded into it) is still needed: a job
-- reading its file is pending, running, or failed and still retryable; or it is a presigned
-- upload's, not yet completed (its parts, or the file its completion is writing there, before
-- the job names it; an expired one is cancelled first). known says whether the uploading job
-- exists at all (an upload in progress has no job yet).
SELECT (EXISTS (SELECT 1 FROM catalog.ingest_jobs j, catalog.ingest_jobs u
                WHERE u.id = @job_id AND j.staging_path = u.staging_path
                  AND j.status IN ('pending', 'running', 'failed'))
        OR EXISTS (SELECT 1 FROM catalog.ingest_jobs u
                   WHERE u.id = @job_id AND u.presigned AND u.status = 'pending' AND u.staging_path IS NULL))::bool AS in_use,
    EXISTS (SELECT 1 FROM catalog.ingest_jobs WHERE id = @job_id)::bool AS known;

-- name: SetIngestJobSource :exec
-- Where a pending job's file was fetched from (a remote service's layer).
UPDATE catalog.ingest_jobs SET source = @source WHERE id = @id AND status = 'pending';
