-- name: InsertDataset :one
-- A new record, draft unless record_status says otherwise (an ingest commit publishes); a record
-- born published is published now.
INSERT INTO catalog.datasets (id, table_schema, table_name, title, summary, visibility, record_type, origin, source_format,
    source_filename, srid, original_srid, geometry_type, has_generic_geometry, is_3d, n_dims, z_min, z_max,
    feature_count, extent_bbox, column_info, created_by, updated_by, registered, id_column, geometry_column,
    data_vintage_start, data_vintage_end, record_status, published_at, raster, derived_from, source_url, origin_ref)
VALUES (coalesce(sqlc.narg(id)::uuid, gen_random_uuid()), @table_schema, @table_name, @title, @summary, @visibility, @record_type, @origin, @source_format,
    @source_filename, @srid, @original_srid, @geometry_type, @has_generic_geometry, @is_3d, @n_dims, @z_min, @z_max,
    @feature_count, @extent_bbox, @column_info, @created_by, @created_by, @registered,
    coalesce(sqlc.narg(id_column), 'gid'), coalesce(sqlc.narg(geometry_column), 'geom'),
    sqlc.narg(data_vintage_start), sqlc.narg(data_vintage_end), coalesce(sqlc.narg(record_status)::text, 'draft'),
    CASE WHEN sqlc.narg(record_status)::text = 'published' THEN now() END, sqlc.narg(raster)::jsonb, sqlc.narg(derived_from)::jsonb,
    sqlc.narg(source_url), sqlc.narg(origin_ref)::jsonb)
RETURNING id;

-- name: GetDatasetRecord :one
-- The dataset with the display names its response needs, the strongest grant the caller holds
-- (by user or by role) and its table's columns, in one round trip; and the row's version (xmin),
-- which feature reads check the record against (internal/features.Guard).
SELECT sqlc.embed(d), coalesce(cu.username, '')::text AS created_by_display, eu.username AS last_edited_by_display,
    d.xmin::text::bigint AS version,
    coalesce((SELECT g.level FROM catalog.dataset_grants g
      WHERE g.dataset_id = d.id AND (g.user_id = sqlc.narg(caller_id) OR g.role = sqlc.narg(caller_role))
      ORDER BY (g.level = 'write') DESC LIMIT 1), '')::text AS caller_grant,
    -- The data table's columns as [name, type] pairs, so a feature request needs no second
    -- round trip to describe its table (format_type without a modifier, as features.Describe).
    (SELECT coalesce(jsonb_agg(jsonb_build_array(a.attname, format_type(a.atttypid, NULL)) ORDER BY a.attnum), '[]'::jsonb)
      FROM pg_catalog.pg_attribute a WHERE a.attrelid = to_regclass(format('%I.%I', d.table_schema, d.table_name))
        AND a.attnum > 0 AND NOT a.attisdropped)::jsonb AS table_columns
FROM catalog.datasets d
LEFT JOIN catalog.users cu ON cu.id = d.created_by
LEFT JOIN catalog.users eu ON eu.id = d.last_edited_by
WHERE d.id = @id;

-- name: ListVisibleDatasets :many
-- The visibility rule (catalog.dataset_visible, the SQL twin of internal/auth.CanRead) in the
-- query, so paging counts only what the caller may see.
SELECT sqlc.embed(d), coalesce(cu.username, '')::text AS created_by_display, eu.username AS last_edited_by_display,
    count(*) OVER () AS total
FROM catalog.datasets d
LEFT JOIN catalog.users cu ON cu.id = d.created_by
LEFT JOIN catalog.users eu ON eu.id = d.last_edited_by
WHERE catalog.dataset_visible(d.id, d.visibility, d.record_status, d.created_by, sqlc.narg(caller_id), sqlc.narg(caller_role), @is_admin::bool)
  -- q is a LIKE pattern of the caller's text (internal/catalog escapes its wildcards).
  AND (sqlc.narg(q)::text IS NULL OR d.title ILIKE sqlc.narg(q) OR d.summary ILIKE sqlc.narg(q)
       OR EXISTS (SELECT 1 FROM unnest(d.theme_category) th WHERE th ILIKE sqlc.narg(q))
       OR EXISTS (SELECT 1 FROM catalog.record_keywords k WHERE k.dataset_id = d.id AND k.keyword ILIKE sqlc.narg(q)))
  AND (sqlc.narg(collection_id)::uuid IS NULL OR EXISTS (
       SELECT 1 FROM catalog.collection_datasets cd WHERE cd.collection_id = sqlc.narg(collection_id) AND cd.dataset_id = d.id))
  AND (sqlc.narg(record_type)::text IS NULL OR d.record_type = sqlc.narg(record_type))
  AND (sqlc.narg(visibility)::text IS NULL OR d.visibility = sqlc.narg(visibility))
  AND (sqlc.narg(record_status)::text IS NULL OR d.record_status = sqlc.narg(record_status))
ORDER BY
  CASE WHEN @sort::text = 'title' THEN lower(d.title) END ASC,
  CASE WHEN @sort::text = '-title' THEN lower(d.title) END DESC,
  CASE WHEN @sort::text = 'created_at' THEN d.created_at END ASC,
  CASE WHEN @sort::text = '-created_at' THEN d.created_at END DESC,
  CASE WHEN @sort::text = 'feature_count' THEN d.feature_count END ASC NULLS FIRST,
  CASE WHEN @sort::text = '-feature_count' THEN d.feature_count END DESC NULLS LAST,
  CASE WHEN @sort::text = 'updated_at' THEN d.updated_at END ASC,
  d.updated_at DESC, d.id
LIMIT @lim OFFSET @off;

-- name: UpdateDatasetMetadata :one
-- A metadata edit: the fields given change, the fields named in cleared become null (a PATCH's
-- explicit nulls), the rest stay. Not a data version: current_version stays.
UPDATE catalog.datasets SET
    title = coalesce(sqlc.narg(title), title),
    visibility = coalesce(sqlc.narg(visibility), visibility),
    summary = CASE WHEN 'summary' = ANY(@cleared::text[]) THEN NULL ELSE coalesce(sqlc.narg(summary), summary) END,
    license = CASE WHEN 'license' = ANY(@cleared::text[]) THEN NULL ELSE coalesce(sqlc.narg(license), license) END,
    attribution = CASE WHEN 'attribution' = ANY(@cleared::text[]) THEN NULL ELSE coalesce(sqlc.narg(attribution), attribution) END,
    source_organization = CASE WHEN 'source_organization' = ANY(@cleared::text[]) THEN NULL ELSE coalesce(sqlc.narg(source_organization), source_organization) END,
    source_url = CASE WHEN 'source_url' = ANY(@cleared::text[]) THEN NULL ELSE coalesce(sqlc.narg(source_url), source_url) END,
    quality_statement = CASE WHEN 'quality_statement' = ANY(@cleared::text[]) THEN NULL ELSE coalesce(sqlc.narg(quality_statement), quality_statement) END,
    lineage_summary = CASE WHEN 'lineage_summary' = ANY(@cleared::text[]) THEN NULL ELSE coalesce(sqlc.narg(lineage_summary), lineage_summary) END,
    update_frequency = CASE WHEN 'update_frequency' = ANY(@cleared::text[]) THEN NULL ELSE coalesce(sqlc.narg(update_frequency), update_frequency) END,
    usage_constraints = CASE WHEN 'usage_constraints' = ANY(@cleared::text[]) THEN NULL ELSE coalesce(sqlc.narg(usage_constraints), usage_constraints) END,
    access_constraints = CASE WHEN 'access_constraints' = ANY(@cleared::text[]) THEN NULL ELSE coalesce(sqlc.narg(access_constraints), access_constraints) END,
    sensitivity_classification = CASE WHEN 'sensitivity_classification' = ANY(@cleared::text[]) THEN NULL ELSE coalesce(sqlc.narg(sensitivity_classification), sensitivity_classification) END,
    owner_org = CASE WHEN 'owner_org' = ANY(@cleared::text[]) THEN NULL ELSE coalesce(sqlc.narg(owner_org), owner_org) END,
    language = CASE WHEN 'language' = ANY(@cleared::text[]) THEN NULL ELSE coalesce(sqlc.narg(language), language) END,
    theme_category = CASE WHEN 'theme_category' = ANY(@cleared::text[]) THEN NULL ELSE coalesce(sqlc.narg(theme_category), theme_category) END,
    tile_columns = CASE WHEN 'tile_columns' = ANY(@cleared::text[]) THEN NULL ELSE coalesce(sqlc.narg(tile_columns), tile_columns) END,
    data_vintage_start = CASE WHEN 'data_vintage_start' = ANY(@cleared::text[]) THEN NULL ELSE coalesce(sqlc.narg(data_vintage_start), data_vintage_start) END,
    data_vintage_end = CASE WHEN 'data_vintage_end' = ANY(@cleared::text[]) THEN NULL ELSE coalesce(sqlc.narg(data_vintage_end), data_vintage_end) END,
    updated_by = @updated_by,
    updated_at = now()
WHERE id = @id
RETURNING *;

-- name: SetRasterIsDEM :one
-- PATCH is_dem of a raster dataset: a value overrides the detection, null returns to it. Not a
-- data version.
UPDATE catalog.datasets SET
    raster = jsonb_set(raster, '{is_dem}', to_jsonb(coalesce(sqlc.narg(is_dem)::boolean, (raster->>'is_dem_detected')::boolean, false))),
    updated_by = @updated_by, updated_at = now()
WHERE id = @id AND raster IS NOT NULL
RETURNING *;

-- name: SetDatasetStatus :one
-- A status move: not a data version (current_version stays, and is answered for the history).
UPDATE catalog.datasets SET record_status = @record_status,
    published_at = CASE WHEN @record_status = 'published' THEN now() ELSE published_at END,
    updated_by = @updated_by, updated_at = now()
WHERE id = @id
RETURNING current_version;

-- name: DeleteDatasetRecord :exec
DELETE FROM catalog.datasets WHERE id = @id;

-- name: RecordDatasetHistory :exec
INSERT INTO catalog.dataset_history (dataset_id, version, action, actor_id, actor_display, changes)
VALUES (@dataset_id, @version, @action, @actor_id, @actor_display, @changes);

-- name: ListDatasetGrants :many
SELECT g.*, u.username FROM catalog.dataset_grants g LEFT JOIN catalog.users u ON u.id = g.user_id
WHERE g.dataset_id = @dataset_id ORDER BY g.created_at;

-- name: UpsertDatasetGrant :one
INSERT INTO catalog.dataset_grants (dataset_id, user_id, role, level, created_by)
VALUES (@dataset_id, sqlc.narg(user_id), sqlc.narg(role), @level, @created_by)
ON CONFLICT (dataset_id, user_id) WHERE user_id IS NOT NULL DO UPDATE SET level = excluded.level
RETURNING id;

-- name: DeleteDatasetGrant :execrows
DELETE FROM catalog.dataset_grants WHERE id = @id AND dataset_id = @dataset_id;

-- name: CountOwnedDatasets :one
SELECT count(*) FROM catalog.datasets WHERE created_by = @user_id;

-- name: SetDatasetQuality :exec
-- Derived data: no version bump, no history entry.
UPDATE catalog.datasets SET quality_detail = @quality_detail WHERE id = @id;

-- name: ListDatasetHistory :many
-- data_actions, when given, keeps the entries of those actions (the dataset's data versions,
-- internal/catalog.dataActions).
SELECT h.*, d.title AS dataset_title, count(*) OVER () AS total
FROM catalog.dataset_history h JOIN catalog.datasets d ON d.id = h.dataset_id
WHERE h.dataset_id = @dataset_id
  AND (sqlc.narg(data_actions)::text[] IS NULL OR h.action = ANY(sqlc.narg(data_actions)::text[]))
ORDER BY h.id DESC
LIMIT @lim OFFSET @off;

-- name: ListColumnChanges :many
-- The schema changes of a dataset's table from its history (column added, dropped, renamed,
-- retyped: internal/catalog.columnActions), newest first.
SELECT h.action, h.actor_id, h.actor_display, h.changes, h.occurred_at, count(*) OVER () AS total
FROM catalog.dataset_history h
WHERE h.dataset_id = @dataset_id
  AND h.action = ANY(@actions::text[])
  AND (sqlc.narg(since)::timestamptz IS NULL OR h.occurred_at > sqlc.narg(since))
ORDER BY h.id DESC
LIMIT @lim OFFSET @off;

-- name: FindDatasetByTable :one
-- The dataset whose data is the table schema.name (tile addresses name datasets so).
SELECT id FROM catalog.datasets WHERE table_schema = @table_schema AND table_name = @table_name;

-- name: SetDatasetColumns :one
-- A schema change of the dataset's table: its column list and tile columns, a new version.
UPDATE catalog.datasets SET column_info = @column_info, tile_columns = @tile_columns,
    current_version = current_version + 1, updated_by = @updated_by, updated_at = now()
WHERE id = @id
RETURNING current_version;

-- name: CatalogStats :one
-- The admin dashboard's counts in one statement (one snapshot) and one pass over the records
-- (grouping sets). Storage is PostgreSQL's own estimate (pages of the data schema's tables,
-- indexes and TOAST), which costs no file system calls on a hundred thousand tables.
WITH g AS (
    SELECT geometry_type, visibility, GROUPING(geometry_type) AS by_g, GROUPING(visibility) AS by_v, count(*) AS n,
        count(*) FILTER (WHERE created_at > now() - interval '7 days') AS recent
    FROM catalog.datasets
    GROUP BY GROUPING SETS ((geometry_type), (visibility), ())
)
SELECT
    (SELECT n FROM g WHERE by_g = 1 AND by_v = 1)::bigint AS total_datasets,
    (SELECT recent FROM g WHERE by_g = 1 AND by_v = 1)::bigint AS recent_additions,
    (SELECT coalesce(sum(c.relpages), 0) * current_setting('block_size')::bigint FROM pg_catalog.pg_class c
        JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'data')::bigint AS storage_bytes,
    (SELECT coalesce(jsonb_object_agg(coalesce(geometry_type, 'none'), n), '{}') FROM g WHERE by_g = 0)::jsonb AS by_geometry_type,
    (SELECT coalesce(jsonb_object_agg(visibility, n), '{}') FROM g WHERE by_v = 0)::jsonb AS by_visibility,
    (SELECT coalesce(jsonb_object_agg(status, n), '{}') FROM (SELECT status, count(*) AS n FROM catalog.users GROUP BY 1) s)::jsonb AS users_by_status,
    (SELECT count(*) FROM catalog.users)::bigint AS total_users;

-- name: GrantSQLDatasets :many
-- Grants the request (its token, until its time is up) the datasets named (data schema table
-- names) that the caller may read, and answers whether the sandbox role can already read each
-- table (internal/sqlquery.prepare): row security on, the sandbox's policy in place, SELECT
-- granted. All in one round trip.
WITH readable AS (
    SELECT d.id, d.table_name,
        coalesce((SELECT c.relrowsecurity
                AND EXISTS (SELECT 1 FROM pg_catalog.pg_policy pol WHERE pol.polrelid = c.oid AND pol.polname = 'meridian_sql')
                AND has_table_privilege(@role::text, c.oid, 'SELECT')
            FROM pg_catalog.pg_class c WHERE c.oid = to_regclass(format('data.%I', d.table_name))), false)::bool AS ready
    FROM catalog.datasets d
    WHERE d.table_schema = 'data' AND d.table_name = ANY(@names::text[]) AND d.record_type IN ('vector_dataset', 'table')
      AND catalog.dataset_visible(d.id, d.visibility, d.record_status, d.created_by, sqlc.narg(caller_id), sqlc.narg(caller_role), @is_admin::bool)
), granted AS (
    INSERT INTO catalog.sql_grants (token, dataset_id, expires_at)
    SELECT @token, r.id, now() + make_interval(secs => @ttl_seconds::float8) FROM readable r
)
SELECT r.id, r.table_name, r.ready FROM readable r;

-- name: EndSQLGrant :exec
-- The request's grant, and any grant left by a request that never ended.
DELETE FROM catalog.sql_grants WHERE token = @token OR expires_at < now();

-- name: RecordDatasetEvent :exec
-- A view or an export in the dataset's history, carrying the data version it saw. A view is
-- written only when its caller (anonymous callers together) has none of the dataset within the
-- hour: every server of the database may write one, and this check keeps them to one.
INSERT INTO catalog.dataset_history (dataset_id, version, action, actor_id, actor_display, changes)
SELECT d.id, d.current_version, @action::text, sqlc.narg(actor_id)::uuid, @actor_display, @changes
FROM catalog.datasets d
WHERE d.id = @dataset_id
  AND (@action::text <> 'dataset.view' OR NOT EXISTS (
      SELECT 1 FROM catalog.dataset_history h
      WHERE h.dataset_id = d.id AND h.action = 'dataset.view' AND h.actor_id IS NOT DISTINCT FROM sqlc.narg(actor_id)::uuid
        AND h.occurred_at > now() - interval '1 hour'));

-- name: SetDatasetSourceHealth :one
-- The outcome of Check Source Health; the check's time is the database's.
UPDATE catalog.datasets SET source_health = @source_health, source_health_detail = @source_health_detail, last_checked_at = now()
WHERE id = @id
RETURNING last_checked_at;

-- name: LockDatasetForReplace :one
-- A reupload's swap holds the record while it replaces the table, so feature edits and column
-- changes (which lock it too) come before or after, never in between.
SELECT * FROM catalog.datasets WHERE id = @id FOR UPDATE;

-- name: ReplaceDatasetData :one
-- A reupload: the record describes the new table (same id, same table name), a new data version.
-- last_edited_at moves tile_version on (migration 24) even when nothing else described changed.
UPDATE catalog.datasets SET
    source_format = @source_format, source_filename = @source_filename,
    srid = @srid, original_srid = sqlc.narg(original_srid),
    geometry_type = sqlc.narg(geometry_type), has_generic_geometry = @has_generic_geometry,
    is_3d = sqlc.narg(is_3d), n_dims = sqlc.narg(n_dims), z_min = sqlc.narg(z_min), z_max = sqlc.narg(z_max),
    feature_count = @feature_count, extent_bbox = @extent_bbox, column_info = @column_info, tile_columns = @tile_columns,
    id_column = 'gid', geometry_column = @geometry_column,
    current_version = current_version + 1,
    last_edited_by = sqlc.narg(edited_by), last_edited_at = now(), updated_by = sqlc.narg(edited_by), updated_at = now()
WHERE id = @id
RETURNING current_version;
