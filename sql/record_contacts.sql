-- name: ListRecordContacts :many
SELECT sqlc.embed(c), count(*) OVER () AS total FROM catalog.record_contacts c
WHERE c.dataset_id = @dataset_id
ORDER BY c.sort_order, c.created_at, c.id
LIMIT @lim OFFSET @off;

-- name: CountRecordContacts :one
SELECT count(*) FROM catalog.record_contacts WHERE dataset_id = @dataset_id;

-- name: AddRecordContact :one
INSERT INTO catalog.record_contacts (dataset_id, role, name, email, organization, phone, extra_json, sort_order)
VALUES (@dataset_id, @role, sqlc.narg(name), sqlc.narg(email), sqlc.narg(organization), sqlc.narg(phone), sqlc.narg(extra_json), @sort_order)
RETURNING *;

-- name: GetRecordContact :one
SELECT * FROM catalog.record_contacts WHERE id = @id AND dataset_id = @dataset_id FOR UPDATE;

-- name: UpdateRecordContact :one
-- The whole contact as it is to be (the domain merges a partial change into the current one).
UPDATE catalog.record_contacts SET role = @role, name = sqlc.narg(name), email = sqlc.narg(email),
    organization = sqlc.narg(organization), phone = sqlc.narg(phone), extra_json = sqlc.narg(extra_json), sort_order = @sort_order
WHERE id = @id AND dataset_id = @dataset_id
RETURNING *;

-- name: DeleteRecordContact :one
DELETE FROM catalog.record_contacts WHERE id = @id AND dataset_id = @dataset_id
RETURNING coalesce(name, organization)::text;
