-- name: CreateCollection :one
INSERT INTO catalog.collections (name, description, visibility, created_by)
VALUES (@name, @description, @visibility, @created_by)
RETURNING *;

-- name: GetCollection :one
SELECT * FROM catalog.collections WHERE id = @id;

-- name: ListCollections :many
-- Every collection (they have no visibility of their own: migration 51), with the number, the
-- WGS84 extent and the temporal extent of the member datasets the caller may read. A member box crossing the antimeridian (west > east)
-- widens the collection's box to all longitudes rather than guessing a smaller crossing one.
SELECT sqlc.embed(c), m.dataset_count, m.extent_bbox, m.temporal_start, m.temporal_end, m.license_count, m.license,
    count(*) OVER () AS total
FROM catalog.collections c
CROSS JOIN LATERAL (
    SELECT count(*)::bigint AS dataset_count,
        (CASE WHEN count(d.extent_bbox) > 0 THEN ARRAY[
            CASE WHEN bool_or(d.extent_bbox[1] > d.extent_bbox[3]) THEN -180 ELSE min(d.extent_bbox[1]) END,
            min(d.extent_bbox[2]),
            CASE WHEN bool_or(d.extent_bbox[1] > d.extent_bbox[3]) THEN 180 ELSE max(d.extent_bbox[3]) END,
            max(d.extent_bbox[4])] END)::float8[] AS extent_bbox,
        min(d.data_vintage_start)::date AS temporal_start,
        max(coalesce(d.data_vintage_end, d.data_vintage_start))::date AS temporal_end,
        -- how many licences the members have (no licence counts as one), and the first of them
        count(DISTINCT coalesce(d.license, ''))::bigint AS license_count, coalesce(min(coalesce(d.license, '')), '')::text AS license
    FROM catalog.collection_datasets cd JOIN catalog.datasets d ON d.id = cd.dataset_id
    WHERE cd.collection_id = c.id
      AND catalog.dataset_visible(d.id, d.visibility, d.record_status, d.created_by, sqlc.narg(caller_id), sqlc.narg(caller_role), @is_admin::bool)
) m
WHERE (sqlc.narg(q)::text IS NULL OR c.name ILIKE '%' || sqlc.narg(q) || '%' OR c.description ILIKE '%' || sqlc.narg(q) || '%')
  AND (sqlc.narg(only_id)::uuid IS NULL OR c.id = sqlc.narg(only_id))
ORDER BY lower(c.name), c.id
LIMIT @lim OFFSET @off;

-- name: UpdateCollection :one
UPDATE catalog.collections SET name = coalesce(sqlc.narg(name), name),
    description = coalesce(sqlc.narg(description), description),
    visibility = coalesce(sqlc.narg(visibility), visibility), updated_at = now()
WHERE id = @id
RETURNING *;

-- name: DeleteCollection :exec
DELETE FROM catalog.collections WHERE id = @id;

-- name: AddCollectionDatasets :execrows
INSERT INTO catalog.collection_datasets (collection_id, dataset_id)
SELECT @collection_id, unnest(@dataset_ids::uuid[])
ON CONFLICT DO NOTHING;

-- name: RemoveCollectionDataset :execrows
DELETE FROM catalog.collection_datasets WHERE collection_id = @collection_id AND dataset_id = @dataset_id;

-- name: ListCollectionDatasets :many
SELECT sqlc.embed(d), coalesce(cu.username, '')::text AS created_by_display, eu.username AS last_edited_by_display,
    count(*) OVER () AS total
FROM catalog.collection_datasets cd
JOIN catalog.datasets d ON d.id = cd.dataset_id
LEFT JOIN catalog.users cu ON cu.id = d.created_by
LEFT JOIN catalog.users eu ON eu.id = d.last_edited_by
WHERE cd.collection_id = @collection_id
  AND catalog.dataset_visible(d.id, d.visibility, d.record_status, d.created_by, sqlc.narg(caller_id), sqlc.narg(caller_role), @is_admin::bool)
ORDER BY lower(d.title), d.id
LIMIT @lim OFFSET @off;

-- name: CollectionsOfDataset :many
-- The collections a dataset belongs to (DatasetResponse.collections); every caller sees them all.
SELECT c.id, c.name FROM catalog.collection_datasets cd JOIN catalog.collections c ON c.id = cd.collection_id
WHERE cd.dataset_id = @dataset_id
ORDER BY lower(c.name);

-- name: SearchCollections :many
-- The collections a text search shows beside its datasets: name or description containing every
-- pattern (ILIKE patterns, one per word of the search), names matching first, with the number of
-- members the caller may read. Collections have no visibility of their own (every caller sees
-- every collection); their members are filtered.
SELECT c.id, c.name, c.description, c.updated_at, m.dataset_count
FROM catalog.collections c
CROSS JOIN LATERAL (
    SELECT count(*)::bigint AS dataset_count
    FROM catalog.collection_datasets cd JOIN catalog.datasets d ON d.id = cd.dataset_id
    WHERE cd.collection_id = c.id
      AND catalog.dataset_visible(d.id, d.visibility, d.record_status, d.created_by, sqlc.narg(caller_id), sqlc.narg(caller_role), @is_admin::bool)
) m
WHERE (SELECT bool_and(concat_ws(' ', c.name, c.description) ILIKE w) FROM unnest(@patterns::text[]) w)
ORDER BY (SELECT bool_and(c.name ILIKE w) FROM unnest(@patterns::text[]) w) DESC, lower(c.name), c.id
LIMIT @lim;

-- name: ListCollectionsForConfig :many
-- Every collection with its members, for a configuration document (by name: stable exports).
SELECT c.id, c.name, c.description, c.visibility,
    coalesce((SELECT array_agg(cd.dataset_id ORDER BY cd.dataset_id) FROM catalog.collection_datasets cd WHERE cd.collection_id = c.id),
        '{}')::uuid[] AS dataset_ids
FROM catalog.collections c
ORDER BY c.name, c.id;

-- name: ClearCollectionDatasets :exec
DELETE FROM catalog.collection_datasets WHERE collection_id = @collection_id;

-- name: ExistingDatasetIDs :many
SELECT id FROM catalog.datasets WHERE id = ANY(@ids::uuid[]) ORDER BY id;

-- name: ListCollectionTexts :many
-- What a text search matches of each collection (SearchCollections), for the searches kept in
-- memory to tell that none can match; at most lim.
SELECT concat_ws(' ', c.name, c.description)::text AS text FROM catalog.collections c LIMIT @lim::int;
