-- name: CreateCollection :one
INSERT INTO catalog.collections (name, description, visibility, created_by)
VALUES (@name, @description, @visibility, @created_by)
RETURNING *;

-- name: GetCollection :one
SELECT * FROM catalog.collections WHERE id = @id;

-- name: ListCollections :many
-- Collections the caller may see, with the number of member datasets the caller may read.
SELECT sqlc.embed(c),
    (SELECT count(*) FROM catalog.collection_datasets cd JOIN catalog.datasets d ON d.id = cd.dataset_id
      WHERE cd.collection_id = c.id
        AND catalog.dataset_visible(d.id, d.visibility, d.record_status, d.created_by, sqlc.narg(caller_id), sqlc.narg(caller_role), @is_admin::bool))::bigint AS dataset_count,
    count(*) OVER () AS total
FROM catalog.collections c
WHERE catalog.collection_visible(c.visibility, c.created_by, sqlc.narg(caller_id), @is_admin::bool)
  AND (sqlc.narg(q)::text IS NULL OR c.name ILIKE '%' || sqlc.narg(q) || '%')
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

-- name: AddCollectionDatasets :exec
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
-- The collections a dataset belongs to that the caller may see (DatasetResponse.collections).
SELECT c.id, c.name FROM catalog.collection_datasets cd JOIN catalog.collections c ON c.id = cd.collection_id
WHERE cd.dataset_id = @dataset_id
  AND catalog.collection_visible(c.visibility, c.created_by, sqlc.narg(caller_id), @is_admin::bool)
ORDER BY lower(c.name);
