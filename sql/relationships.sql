-- name: AddDatasetRelationship :one
INSERT INTO catalog.dataset_relationships (source_dataset_id, target_dataset_id, source_column, target_column, label, created_by)
VALUES (@source_dataset_id, @target_dataset_id, @source_column, @target_column, sqlc.narg(label), @created_by)
RETURNING *;

-- name: ListDatasetRelationships :many
-- A dataset's relationships in the asked direction whose other dataset the caller may read, with
-- that dataset's title.
SELECT r.*, t.title AS target_title, count(*) OVER () AS total
FROM catalog.dataset_relationships r
JOIN catalog.datasets s ON s.id = r.source_dataset_id
JOIN catalog.datasets t ON t.id = r.target_dataset_id
WHERE ((@outgoing::bool AND r.source_dataset_id = @dataset_id) OR (@incoming::bool AND r.target_dataset_id = @dataset_id))
  AND catalog.dataset_visible(s.id, s.visibility, s.record_status, s.created_by, sqlc.narg(caller_id), sqlc.narg(caller_role), @is_admin::bool)
  AND catalog.dataset_visible(t.id, t.visibility, t.record_status, t.created_by, sqlc.narg(caller_id), sqlc.narg(caller_role), @is_admin::bool)
ORDER BY r.created_at, r.id
LIMIT @lim OFFSET @off;

-- name: GetDatasetRelationship :one
SELECT * FROM catalog.dataset_relationships WHERE id = @id;

-- name: DeleteDatasetRelationship :execrows
DELETE FROM catalog.dataset_relationships WHERE id = @id;

-- name: ListRelatedDatasets :many
-- The datasets linked to one, readable by the caller: declared relationships either way first,
-- then datasets sharing a catalog collection; at most 200.
WITH links AS (
    SELECT CASE WHEN r.source_dataset_id = @dataset_id THEN r.target_dataset_id ELSE r.source_dataset_id END AS id, 1.0::float8 AS similarity
    FROM catalog.dataset_relationships r WHERE @dataset_id IN (r.source_dataset_id, r.target_dataset_id)
    UNION ALL
    SELECT o.dataset_id, 0.5::float8 FROM catalog.collection_datasets m
    JOIN catalog.collection_datasets o ON o.collection_id = m.collection_id AND o.dataset_id <> m.dataset_id
    WHERE m.dataset_id = @dataset_id
), best AS (
    SELECT id, max(similarity) AS similarity FROM links WHERE id <> @dataset_id GROUP BY id
)
SELECT d.id, d.title, d.geometry_type, d.record_type, d.feature_count, b.similarity::float8 AS similarity
FROM best b JOIN catalog.datasets d ON d.id = b.id
WHERE catalog.dataset_visible(d.id, d.visibility, d.record_status, d.created_by, sqlc.narg(caller_id), sqlc.narg(caller_role), @is_admin::bool)
ORDER BY b.similarity DESC, lower(d.title), d.id
LIMIT 200;

-- name: DropRelationshipsOnColumns :execrows
-- A reupload removed these columns of the dataset: the relationships joining on them go with them.
DELETE FROM catalog.dataset_relationships
WHERE (source_dataset_id = @dataset_id AND source_column = ANY(@columns::text[]))
   OR (target_dataset_id = @dataset_id AND target_column = ANY(@columns::text[]));
