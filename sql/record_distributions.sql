-- name: ListRecordDistributions :many
SELECT sqlc.embed(r), count(*) OVER () AS total FROM catalog.record_distributions r
WHERE r.dataset_id = @dataset_id
ORDER BY r.created_at, r.id
LIMIT @lim OFFSET @off;

-- name: CountRecordDistributions :one
SELECT count(*) FROM catalog.record_distributions WHERE dataset_id = @dataset_id;

-- name: ClearPrimaryDistribution :exec
-- A new primary distribution takes the place of the old one.
UPDATE catalog.record_distributions SET is_primary = false WHERE dataset_id = @dataset_id AND is_primary AND id <> @keep;

-- name: AddRecordDistribution :one
INSERT INTO catalog.record_distributions (dataset_id, distribution_type, format, url, title, description, protocol, media_type, is_primary)
VALUES (@dataset_id, @distribution_type, @format, @url, sqlc.narg(title), sqlc.narg(description), sqlc.narg(protocol),
    sqlc.narg(media_type), @is_primary)
RETURNING *;

-- name: GetRecordDistribution :one
SELECT * FROM catalog.record_distributions WHERE id = @id AND dataset_id = @dataset_id FOR UPDATE;

-- name: UpdateRecordDistribution :one
UPDATE catalog.record_distributions SET distribution_type = @distribution_type, format = @format, url = @url,
    title = sqlc.narg(title), description = sqlc.narg(description), protocol = sqlc.narg(protocol),
    media_type = sqlc.narg(media_type), is_primary = @is_primary
WHERE id = @id AND dataset_id = @dataset_id
RETURNING *;

-- name: DeleteRecordDistribution :one
DELETE FROM catalog.record_distributions WHERE id = @id AND dataset_id = @dataset_id
RETURNING url;
