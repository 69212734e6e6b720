-- name: InsertDataset :one
INSERT INTO catalog.datasets (table_schema, table_name, title, summary, visibility, record_type, origin, source_format,
    source_filename, srid, original_srid, geometry_type, has_generic_geometry, is_3d, n_dims, z_min, z_max,
    feature_count, extent_bbox, column_info, created_by, updated_by, registered, id_column, geometry_column,
    data_vintage_start, data_vintage_end)
VALUES (@table_schema, @table_name, @title, @summary, @visibility, @record_type, @origin, @source_format,
    @source_filename, @srid, @original_srid, @geometry_type, @has_generic_geometry, @is_3d, @n_dims, @z_min, @z_max,
    @feature_count, @extent_bbox, @column_info, @created_by, @created_by, @registered,
    coalesce(sqlc.narg(id_column), 'gid'), coalesce(sqlc.narg(geometry_column), 'geom'),
    sqlc.narg(data_vintage_start), sqlc.narg(data_vintage_end))
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
  AND (sqlc.narg(q)::text IS NULL OR d.title ILIKE '%' || sqlc.narg(q) || '%' OR d.summary ILIKE '%' || sqlc.narg(q) || '%')
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
UPDATE catalog.datasets SET
    title = coalesce(sqlc.narg(title), title),
    summary = coalesce(sqlc.narg(summary), summary),
    visibility = coalesce(sqlc.narg(visibility), visibility),
    license = coalesce(sqlc.narg(license), license),
    attribution = coalesce(sqlc.narg(attribution), attribution),
    source_organization = coalesce(sqlc.narg(source_organization), source_organization),
    source_url = coalesce(sqlc.narg(source_url), source_url),
    quality_statement = coalesce(sqlc.narg(quality_statement), quality_statement),
    lineage_summary = coalesce(sqlc.narg(lineage_summary), lineage_summary),
    update_frequency = coalesce(sqlc.narg(update_frequency), update_frequency),
    usage_constraints = coalesce(sqlc.narg(usage_constraints), usage_constraints),
    access_constraints = coalesce(sqlc.narg(access_constraints), access_constraints),
    sensitivity_classification = coalesce(sqlc.narg(sensitivity_classification), sensitivity_classification),
    owner_org = coalesce(sqlc.narg(owner_org), owner_org),
    language = coalesce(sqlc.narg(language), language),
    theme_category = coalesce(sqlc.narg(theme_category), theme_category),
    tile_columns = coalesce(sqlc.narg(tile_columns), tile_columns),
    data_vintage_start = coalesce(sqlc.narg(data_vintage_start), data_vintage_start),
    data_vintage_end = coalesce(sqlc.narg(data_vintage_end), data_vintage_end),
    current_version = current_version + 1,
    updated_by = @updated_by,
    updated_at = now()
WHERE id = @id
RETURNING current_version;

-- name: SetDatasetStatus :one
UPDATE catalog.datasets SET record_status = @record_status, current_version = current_version + 1,
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
-- data_only keeps the entries that changed the data as a whole (the dataset's versions).
SELECT h.*, d.title AS dataset_title, count(*) OVER () AS total
FROM catalog.dataset_history h JOIN catalog.datasets d ON d.id = h.dataset_id
WHERE h.dataset_id = @dataset_id
  AND (NOT @data_only::bool OR h.action IN ('create', 'ingest', 'reupload', 'refresh', 'analysis', 'schema_change', 'regenerate'))
ORDER BY h.id DESC
LIMIT @lim OFFSET @off;

-- name: ListColumnChanges :many
-- The schema changes of a dataset's table from its history (column added, dropped, renamed,
-- retyped; and a refresh's or reupload's schema change), newest first.
SELECT h.action, h.actor_id, h.actor_display, h.changes, h.occurred_at, count(*) OVER () AS total
FROM catalog.dataset_history h
WHERE h.dataset_id = @dataset_id
  AND h.action IN ('schema_change', 'column_added', 'column_dropped', 'column_renamed', 'column_type_changed')
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
-- names) that the caller may read, and answers them with the columns of their table and of their
-- sandbox view (internal/sqlquery), so a missing or outdated view is seen in the same round trip.
WITH readable AS (
    SELECT d.id, d.table_name,
        coalesce((SELECT array_agg(a.attname::text ORDER BY a.attnum) FROM pg_catalog.pg_attribute a
            WHERE a.attrelid = to_regclass(format('data.%I', d.table_name)) AND a.attnum > 0 AND NOT a.attisdropped), '{}')::text[] AS table_columns,
        coalesce((SELECT array_agg(a.attname::text ORDER BY a.attnum) FROM pg_catalog.pg_attribute a
            WHERE a.attrelid = to_regclass(format('sql_sandbox.%I', d.table_name)) AND a.attnum > 0 AND NOT a.attisdropped), '{}')::text[] AS view_columns
    FROM catalog.datasets d
    WHERE d.table_schema = 'data' AND d.table_name = ANY(@names::text[]) AND d.record_type IN ('vector_dataset', 'table')
      AND catalog.dataset_visible(d.id, d.visibility, d.record_status, d.created_by, sqlc.narg(caller_id), sqlc.narg(caller_role), @is_admin::bool)
), granted AS (
    INSERT INTO catalog.sql_grants (token, dataset_id, expires_at)
    SELECT @token, r.id, now() + make_interval(secs => @ttl_seconds::float8) FROM readable r
)
SELECT r.id, r.table_name, r.table_columns, r.view_columns FROM readable r;

-- name: EndSQLGrant :exec
-- The request's grant, and any grant left by a request that never ended.
DELETE FROM catalog.sql_grants WHERE token = @token OR expires_at < now();
