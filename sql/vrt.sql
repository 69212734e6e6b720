-- VRT datasets (migration 85): definitions, sources, generations.

-- name: InsertVRTDataset :exec
INSERT INTO catalog.vrt_datasets (dataset_id, vrt_type, resolution_strategy) VALUES (@dataset_id, @vrt_type, @resolution_strategy);

-- name: LockVRTDataset :one
-- A VRT's definition with its owner and audience, for a change of its sources or a new
-- generation: its record, then its definition, locked in the order every writer takes (migration
-- 85), so changes of one VRT run one after another.
WITH d AS (SELECT d.id, d.created_by, d.visibility, d.title FROM catalog.datasets d WHERE d.id = @dataset_id FOR UPDATE)
SELECT x.dataset_id, x.vrt_type, x.resolution_strategy, x.live_generation, d.created_by, d.visibility, d.title
FROM d JOIN catalog.vrt_datasets x ON x.dataset_id = d.id
FOR UPDATE OF x;

-- name: LockDatasetsForShare :many
-- Sources a change will refer to, locked first (the order of migration 85): their audience
-- cannot change until the transaction ends.
SELECT id FROM catalog.datasets WHERE id = ANY(@ids::uuid[]) ORDER BY id FOR SHARE;

-- name: GetVRTDataset :one
SELECT x.dataset_id, x.vrt_type, x.resolution_strategy, x.live_generation, x.wanted, d.created_by, d.visibility, d.title
FROM catalog.vrt_datasets x JOIN catalog.datasets d ON d.id = x.dataset_id
WHERE x.dataset_id = @dataset_id;

-- name: VRTSourceCandidates :many
-- The datasets a caller names as sources, in the caller's order: whether the caller may read each
-- (catalog.dataset_visible, as every read of a dataset), and why the VRT's owner may not include
-- it (catalog.vrt_refusal), null when it may.
SELECT u.id::uuid AS id, u.ord::integer AS ord,
    coalesce(d.id IS NOT NULL AND catalog.dataset_visible(d.id, d.visibility, d.record_status, d.created_by,
        sqlc.narg(caller_id)::uuid, sqlc.narg(caller_role)::text, @is_admin::bool), false)::bool AS visible,
    coalesce(d.title, '')::text AS title, coalesce(d.record_type, '')::text AS record_type,
    coalesce(d.raster, '{}'::jsonb)::jsonb AS raster,
    coalesce(catalog.vrt_refusal(d.record_type, d.raster, d.visibility, d.record_status, d.created_by, sqlc.narg(owner_id)::uuid,
        catalog.user_is_admin(sqlc.narg(owner_id)::uuid), @vrt_visibility::text), '')::text AS refusal
FROM unnest(@ids::uuid[]) WITH ORDINALITY AS u(id, ord)
LEFT JOIN catalog.datasets d ON d.id = u.id
ORDER BY u.ord;

-- name: VRTReachedFrom :many
-- The datasets among @ids from which the VRT @vrt_id can be reached through sources (listed ones,
-- or those of a served generation): adding one of them would close a cycle. A dataset reaches
-- itself.
WITH RECURSIVE edges AS (
    SELECT s.vrt_id AS a, s.source_id AS b FROM catalog.vrt_sources s
    UNION
    SELECT g.vrt_id, unnest(g.source_ids) FROM catalog.vrt_generations g WHERE g.live_from IS NOT NULL AND g.retired_at IS NULL
), reach(root, id) AS (
    SELECT r, r FROM unnest(@ids::uuid[]) AS r
    UNION
    SELECT reach.root, e.b FROM reach JOIN edges e ON e.a = reach.id
)
SELECT DISTINCT reach.root::uuid AS id FROM reach WHERE reach.id = @vrt_id::uuid;

-- name: AddVRTSources :many
-- Appends sources in the order given; those already listed stay where they are.
INSERT INTO catalog.vrt_sources (vrt_id, source_id, added_by)
SELECT @vrt_id, u.id, sqlc.narg(added_by)::uuid FROM unnest(@ids::uuid[]) WITH ORDINALITY AS u(id, ord) ORDER BY u.ord
ON CONFLICT (vrt_id, source_id) DO NOTHING
RETURNING source_id;

-- name: RemoveVRTSource :execrows
DELETE FROM catalog.vrt_sources WHERE vrt_id = @vrt_id AND source_id = @source_id;

-- name: CountVRTSources :one
SELECT count(*) FROM catalog.vrt_sources WHERE vrt_id = @vrt_id;

-- name: VRTSourceLayouts :many
-- The raster descriptions of a VRT's sources, in order (band counts and types).
SELECT vs.source_id, d.raster FROM catalog.vrt_sources vs JOIN catalog.datasets d ON d.id = vs.source_id
WHERE vs.vrt_id = @vrt_id ORDER BY vs.position;

-- name: ListVRTMembers :many
-- A VRT's sources in order: what the caller may read of each, why the VRT's owner may not include
-- it now (null: it may), and whether the served generation holds it.
SELECT vs.source_id, vs.added_at, d.title, d.record_type, coalesce(d.raster, '{}'::jsonb)::jsonb AS raster, d.extent_bbox,
    catalog.dataset_visible(d.id, d.visibility, d.record_status, d.created_by, sqlc.narg(caller_id)::uuid,
        sqlc.narg(caller_role)::text, @is_admin::bool)::bool AS visible,
    coalesce(catalog.vrt_refusal(d.record_type, d.raster, d.visibility, d.record_status, d.created_by, vd.created_by,
        catalog.user_is_admin(vd.created_by), vd.visibility), '')::text AS refusal,
    coalesce(g.sources, '[]'::jsonb)::jsonb AS served
FROM catalog.vrt_sources vs
JOIN catalog.datasets d ON d.id = vs.source_id
JOIN catalog.datasets vd ON vd.id = vs.vrt_id
JOIN catalog.vrt_datasets x ON x.dataset_id = vs.vrt_id
LEFT JOIN catalog.vrt_generations g ON g.id = x.live_generation
WHERE vs.vrt_id = @vrt_id
ORDER BY vs.position;

-- name: ActiveVRTGenerations :many
-- A VRT's generations still to run or running, oldest first.
SELECT g.id, j.status FROM catalog.vrt_generations g JOIN catalog.ingest_jobs j ON j.id = g.id
WHERE g.vrt_id = @vrt_id AND j.status IN ('pending', 'running')
ORDER BY g.generation;

-- name: LatestVRTGeneration :one
SELECT g.id FROM catalog.vrt_generations g WHERE g.vrt_id = @vrt_id ORDER BY g.generation DESC LIMIT 1;

-- name: NextVRTGeneration :one
UPDATE catalog.vrt_datasets SET next_generation = next_generation + 1 WHERE dataset_id = @dataset_id
RETURNING (next_generation - 1)::integer AS generation;

-- name: CreateVRTJob :one
-- A generation's ingest job: committed at once (nothing to preview), for the dataset it builds.
INSERT INTO catalog.ingest_jobs (id, created_by, dataset_id, current_step, committed)
VALUES (@id, sqlc.narg(created_by)::uuid, @dataset_id, 'queued', true)
RETURNING *;

-- name: InsertVRTGeneration :exec
INSERT INTO catalog.vrt_generations (id, vrt_id, generation, trigger, requested_by, storage_key)
VALUES (@id, @vrt_id, @generation, @trigger, sqlc.narg(requested_by)::uuid, @storage_key);

-- name: SetVRTStatus :exec
SELECT catalog.vrt_set_status(@dataset_id::uuid);

-- name: ListWantedVRTs :many
SELECT dataset_id FROM catalog.vrt_datasets WHERE wanted IS NOT NULL LIMIT 100;

-- name: TakeVRTWanted :one
-- Takes a wanted regeneration, once across servers: the VRT's record, then its definition,
-- locked in the order of migration 85.
WITH d AS (SELECT d.id, d.created_by FROM catalog.datasets d WHERE d.id = @dataset_id FOR UPDATE),
x AS (SELECT x.dataset_id, x.wanted FROM catalog.vrt_datasets x JOIN d ON d.id = x.dataset_id WHERE x.wanted IS NOT NULL FOR UPDATE OF x)
UPDATE catalog.vrt_datasets v SET wanted = NULL
FROM x, d
WHERE v.dataset_id = x.dataset_id
RETURNING x.wanted::text AS wanted, d.created_by; -- the value taken, not the NULL left

-- name: GetVRTGeneration :one
SELECT sqlc.embed(g), sqlc.embed(j) FROM catalog.vrt_generations g JOIN catalog.ingest_jobs j ON j.id = g.id WHERE g.id = @id;

-- name: VRTBuildSources :many
-- What a generation may build from, in order: each source with why the VRT's owner may not
-- include it now (null: it may).
SELECT vs.source_id, d.title, d.raster,
    coalesce(catalog.vrt_refusal(d.record_type, d.raster, d.visibility, d.record_status, d.created_by, vd.created_by,
        catalog.user_is_admin(vd.created_by), vd.visibility), '')::text AS refusal
FROM catalog.vrt_sources vs
JOIN catalog.datasets d ON d.id = vs.source_id
JOIN catalog.datasets vd ON vd.id = vs.vrt_id
WHERE vs.vrt_id = @vrt_id
ORDER BY vs.position;

-- name: SnapshotVRTGeneration :exec
UPDATE catalog.vrt_generations SET sources = @sources, source_ids = @source_ids, skipped = @skipped WHERE id = @id;

-- name: LockVRTBuildSources :many
-- At the commit of a generation: its sources, locked against a change of their audience until the
-- commit, with why the VRT's owner may not include each now.
SELECT d.id, coalesce(d.raster->>'storage_key', '')::text AS storage_key,
    coalesce(catalog.vrt_refusal(d.record_type, d.raster, d.visibility, d.record_status, d.created_by, sqlc.narg(owner_id)::uuid,
        catalog.user_is_admin(sqlc.narg(owner_id)::uuid), @vrt_visibility::text), '')::text AS refusal
FROM catalog.datasets d WHERE d.id = ANY(@ids::uuid[]);

-- name: LockVRTRecord :one
-- The VRT's record and definition at the commit of a generation, locked in the order of
-- migration 85; with the number of the served generation (0: none) and whether any generation
-- was ever served.
WITH d AS (SELECT d.id, d.created_by, d.visibility FROM catalog.datasets d WHERE d.id = @dataset_id FOR UPDATE)
SELECT d.created_by, d.visibility, x.live_generation,
    coalesce((SELECT g.generation FROM catalog.vrt_generations g WHERE g.id = x.live_generation), 0)::integer AS live_number,
    EXISTS (SELECT 1 FROM catalog.vrt_generations g WHERE g.vrt_id = x.dataset_id AND g.live_from IS NOT NULL)::bool AS ever_served
FROM d JOIN catalog.vrt_datasets x ON x.dataset_id = d.id
FOR UPDATE OF x;

-- name: RetireServedVRTGeneration :exec
-- The generation served until now is retired (its COG goes after the grace).
UPDATE catalog.vrt_generations SET retired_at = now()
WHERE id = (SELECT x.live_generation FROM catalog.vrt_datasets x WHERE x.dataset_id = @vrt_id);

-- name: ServeVRTGeneration :exec
UPDATE catalog.vrt_datasets SET live_generation = @generation_id WHERE dataset_id = @vrt_id;

-- name: MarkVRTGenerationServed :exec
UPDATE catalog.vrt_generations SET live_from = now(), size_bytes = @size_bytes WHERE id = @id;

-- name: SetVRTRecordData :one
-- The record's description of the data of the generation now served (its VRT part kept); a new
-- data version unless it is the first generation, whose data version 1 (the creation) awaited it.
UPDATE catalog.datasets SET
    raster = @raster::jsonb || jsonb_build_object('vrt', coalesce(raster->'vrt', '{}'::jsonb)),
    extent_bbox = @extent_bbox, original_srid = @original_srid,
    current_version = current_version + CASE WHEN @new_version::bool THEN 1 ELSE 0 END,
    last_refreshed_at = now(), updated_at = now()
WHERE id = @id
RETURNING current_version;

-- name: CompleteVRTJob :execrows
-- Runs in the transaction that serves the generation, and only for the run that holds the job.
UPDATE catalog.ingest_jobs SET status = 'complete', current_step = 'complete', progress = 1,
    rows_processed = 0, rows_failed = 0, completed_at = now(), updated_at = now()
WHERE id = @id AND status = 'running' AND attempts = @attempt;

-- name: FailVRTJob :exec
-- A generation that failed, or one that found nothing to do once claimed (its VRT was deleted).
UPDATE catalog.ingest_jobs SET status = 'failed', error_message = @error_message, can_retry = false,
    retry_reason = NULL, completed_at = now(), updated_at = now()
WHERE id = @id AND status = 'running' AND attempts = @attempt;

-- name: ListVRTGenerations :many
SELECT sqlc.embed(g), sqlc.embed(j), (g.id = x.live_generation)::bool AS served, count(*) OVER () AS total
FROM catalog.vrt_generations g
JOIN catalog.ingest_jobs j ON j.id = g.id
JOIN catalog.vrt_datasets x ON x.dataset_id = g.vrt_id
WHERE g.vrt_id = @vrt_id
ORDER BY g.generation DESC
LIMIT @lim OFFSET @off;

-- name: VRTStatusOf :one
-- A VRT's state for Get VRT Status: the served generation, the newest one and the one running.
SELECT x.live_generation, x.wanted,
    (SELECT j.completed_at FROM catalog.ingest_jobs j WHERE j.id = x.live_generation) AS served_at,
    coalesce(n.status, '')::text AS newest_status, n.error_message AS newest_error,
    coalesce(r.id, '00000000-0000-0000-0000-000000000000'::uuid)::uuid AS running_id, r.started_at AS running_started_at,
    r.current_step AS running_step, r.progress AS running_progress,
    EXISTS (SELECT 1 FROM catalog.vrt_generations g JOIN catalog.ingest_jobs j ON j.id = g.id
            WHERE g.vrt_id = x.dataset_id AND j.status = 'pending')::bool AS queued
FROM catalog.vrt_datasets x
LEFT JOIN LATERAL (SELECT j.* FROM catalog.vrt_generations g JOIN catalog.ingest_jobs j ON j.id = g.id
                   WHERE g.vrt_id = x.dataset_id ORDER BY g.generation DESC LIMIT 1) n ON true
LEFT JOIN LATERAL (SELECT j.* FROM catalog.vrt_generations g JOIN catalog.ingest_jobs j ON j.id = g.id
                   WHERE g.vrt_id = x.dataset_id AND j.status = 'running' ORDER BY g.generation DESC LIMIT 1) r ON true
WHERE x.dataset_id = @dataset_id;

-- name: VRTCOGsToRemove :many
-- Generation COGs nobody serves any more: retired over @grace_seconds ago, never served by a
-- generation that failed, or left by a deleted VRT (once no run of it goes on).
SELECT g.id, g.vrt_id, g.storage_key, (d.id IS NULL)::bool AS vrt_gone
FROM catalog.vrt_generations g
JOIN catalog.ingest_jobs j ON j.id = g.id
LEFT JOIN catalog.datasets d ON d.id = g.vrt_id
WHERE g.cog_removed_at IS NULL
  AND ((g.retired_at IS NOT NULL AND g.retired_at < now() - make_interval(secs => @grace_seconds::float8))
       OR (g.live_from IS NULL AND j.status IN ('failed', 'cancelled'))
       OR (d.id IS NULL AND j.status NOT IN ('pending', 'running')))
LIMIT 200;

-- name: MarkVRTCOGRemoved :exec
UPDATE catalog.vrt_generations SET cog_removed_at = now() WHERE id = @id;

-- name: UnsettledVRTs :many
-- VRTs whose record says a generation is on its way while none is queued, running or wanted (its
-- run was failed as stalled): their status is set again.
SELECT x.dataset_id FROM catalog.vrt_datasets x JOIN catalog.datasets d ON d.id = x.dataset_id
WHERE d.raster->'vrt'->>'status' IN ('pending', 'stale') AND x.wanted IS NULL
  AND NOT EXISTS (SELECT 1 FROM catalog.vrt_generations g JOIN catalog.ingest_jobs j ON j.id = g.id
                  WHERE g.vrt_id = x.dataset_id AND j.status IN ('pending', 'running'))
LIMIT 100;

-- name: RunningVRTJobs :many
-- The generations running now (their work directories are in use).
SELECT g.id FROM catalog.vrt_generations g JOIN catalog.ingest_jobs j ON j.id = g.id WHERE j.status = 'running';
