-- name: CreateStacImportJob :one
-- The parent job of a STAC import: running from the start (its items are queued with it), with
-- nothing staged of its own.
INSERT INTO catalog.ingest_jobs (id, source_filename, created_by, status, current_step, progress, committed, started_at)
VALUES (@id, @source_filename, @created_by, 'running', 'registering', 0, true, now())
RETURNING *;

-- name: CreateStacImport :exec
INSERT INTO catalog.stac_imports (job_id, owner_id, url, collection, visibility, credential, mode)
VALUES (@job_id, @owner_id, @url, @collection, @visibility, sqlc.narg(credential), @mode);

-- name: DropStacImportCredential :exec
-- The import's credential goes once nothing needs it (migration 144 says when).
SELECT catalog.drop_stac_credential_if_unread(@job_id::uuid);

-- name: StacImportCredential :one
-- The sealed credential a registered raster's reads send, with the catalog whose origin it is for.
SELECT url, credential FROM catalog.stac_imports WHERE job_id = @job_id;

-- name: CompleteStacItem :execrows
-- A registered item's dataset is written: the item is done (in the same transaction).
UPDATE catalog.stac_import_items SET state = 'complete', error = NULL, dataset_id = @dataset_id, updated_at = now()
WHERE id = @id AND state = 'downloading';

-- name: StacImportRunning :one
-- Whether the owner already runs an import of the same remote collection.
SELECT EXISTS (SELECT 1 FROM catalog.stac_imports s JOIN catalog.ingest_jobs j ON j.id = s.job_id
               WHERE s.owner_id = @owner_id AND s.url = @url AND s.collection = @collection AND j.status = 'running')::bool;

-- name: CreateStacImportItem :one
INSERT INTO catalog.stac_import_items (import_id, position, item_id, source_href, asset_href, filename, state, dataset_id,
    collection_id, error, metadata)
VALUES (@import_id, @position, @item_id, @source_href, @asset_href, @filename, @state, sqlc.narg(dataset_id),
    sqlc.narg(collection_id), sqlc.narg(error), @metadata)
RETURNING id;

-- name: TallyStacImport :exec
SELECT catalog.stac_import_tally(@job_id::uuid);

-- name: GetStacImportItem :one
SELECT sqlc.embed(i), s.owner_id, s.visibility, s.url, s.credential, s.mode FROM catalog.stac_import_items i
JOIN catalog.stac_imports s ON s.job_id = i.import_id
WHERE i.id = @id;

-- name: StacImportItemOfJob :one
-- The item whose data an upload job imports, if any.
SELECT sqlc.embed(i), s.owner_id FROM catalog.stac_import_items i
JOIN catalog.stac_imports s ON s.job_id = i.import_id
WHERE i.job_id = @job_id;

-- name: StartStacItemDownload :execrows
-- A queued item is taken by one run; a run of an item already past its download does nothing.
UPDATE catalog.stac_import_items SET state = 'downloading', updated_at = now()
WHERE id = @id AND state IN ('queued', 'downloading');

-- name: SetStacItemJob :exec
UPDATE catalog.stac_import_items SET state = 'ingesting', job_id = @job_id, updated_at = now() WHERE id = @id;

-- name: FailStacItem :exec
UPDATE catalog.stac_import_items SET state = 'failed', error = @error, updated_at = now()
WHERE id = @id AND state IN ('queued', 'downloading', 'ingesting');

-- name: SetStacItemDataset :exec
UPDATE catalog.stac_import_items SET dataset_id = @dataset_id, updated_at = now() WHERE id = @id;

-- name: StacDatasetOfItem :one
-- The dataset an earlier import of the item by the owner made.
SELECT id, origin_ref, record_type FROM catalog.datasets
WHERE origin = 'stac' AND created_by = @owner_id AND source_url = @source_url
ORDER BY created_at LIMIT 1;

-- name: StacCollectionOf :one
SELECT collection_id FROM catalog.stac_collections WHERE owner_id = @owner_id AND source_href = @source_href;

-- name: AddStacCollection :exec
INSERT INTO catalog.stac_collections (owner_id, source_href, collection_id) VALUES (@owner_id, @source_href, @collection_id)
ON CONFLICT (owner_id, source_href) DO UPDATE SET collection_id = EXCLUDED.collection_id;

-- name: LockStacTarget :one
-- The dataset a re-import moves new data into, locked, with what its old data was.
SELECT table_schema, table_name, registered, record_type, raster, current_version FROM catalog.datasets WHERE id = @id FOR UPDATE;

-- name: MoveStacData :execrows
-- The data of the dataset a new import made (@source) replaces the data of the dataset an earlier
-- import of the same item made (@target), which keeps its id, record, grants and links; the new
-- record goes. One statement: the new record's table name is free for the target once deleted.
WITH gone AS (DELETE FROM catalog.datasets x WHERE x.id = @source RETURNING x.*)
UPDATE catalog.datasets t SET table_schema = g.table_schema, table_name = g.table_name, record_type = g.record_type,
    source_format = g.source_format, source_filename = g.source_filename, srid = g.srid, original_srid = g.original_srid,
    geometry_type = g.geometry_type, has_generic_geometry = g.has_generic_geometry, is_3d = g.is_3d, n_dims = g.n_dims,
    z_min = g.z_min, z_max = g.z_max, feature_count = g.feature_count, extent_bbox = g.extent_bbox, column_info = g.column_info,
    id_column = g.id_column, geometry_column = g.geometry_column, raster = g.raster, quality_detail = g.quality_detail,
    tile_columns = NULL, current_version = t.current_version + 1, last_refreshed_at = now(), updated_at = now()
FROM gone g
WHERE t.id = @target;

-- name: PointJobAtDataset :exec
UPDATE catalog.ingest_jobs SET dataset_id = @dataset_id WHERE id = @id;

-- name: SetStacRecord :exec
-- The record's fields an item describes; a field the item leaves out keeps what the record has.
UPDATE catalog.datasets SET title = @title, summary = coalesce(sqlc.narg(summary), summary),
    license = coalesce(sqlc.narg(license), license), source_organization = coalesce(sqlc.narg(source_organization), source_organization),
    data_vintage_start = coalesce(sqlc.narg(data_vintage_start), data_vintage_start),
    data_vintage_end = coalesce(sqlc.narg(data_vintage_end), data_vintage_end),
    origin = 'stac', origin_uri = @source_url, source_url = @source_url, origin_ref = @origin_ref, updated_at = now()
WHERE id = @id;

-- name: DeleteStacKeywords :exec
-- The keywords an earlier import of the item gave the record, as its origin_ref lists them (a
-- re-import replaces them; the ones a curator added stay).
DELETE FROM catalog.record_keywords k USING catalog.datasets d
WHERE k.dataset_id = @dataset_id AND d.id = k.dataset_id AND k.vocabulary_uri IS NULL
  AND lower(k.keyword) IN (SELECT lower(x) FROM jsonb_array_elements_text(coalesce(d.origin_ref->'stac'->'keywords', '[]'::jsonb)) AS x);

-- name: AddStacKeywords :exec
INSERT INTO catalog.record_keywords (dataset_id, keyword)
SELECT @dataset_id, k FROM unnest(@keywords::text[]) AS k
ON CONFLICT DO NOTHING;

-- name: DeleteStacContacts :exec
-- The contacts an earlier import of the item made of its providers.
DELETE FROM catalog.record_contacts WHERE dataset_id = @dataset_id AND extra_json ? 'stac_provider';
