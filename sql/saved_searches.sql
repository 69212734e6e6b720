-- name: CreateSavedSearch :one
INSERT INTO catalog.saved_searches (user_id, name, params) VALUES (@user_id, @name, @params)
RETURNING *;

-- name: ListSavedSearches :many
-- A user's saved searches, most recently updated first, with how many there are in all.
SELECT sqlc.embed(s), count(*) OVER () AS total FROM catalog.saved_searches s
WHERE s.user_id = @user_id
ORDER BY s.updated_at DESC, s.id
LIMIT @lim OFFSET @off;

-- name: GetSavedSearch :one
SELECT * FROM catalog.saved_searches WHERE id = @id AND user_id = @user_id;

-- name: DeleteSavedSearch :execrows
DELETE FROM catalog.saved_searches WHERE id = @id AND user_id = @user_id;

-- name: CountSavedSearches :one
SELECT count(*) FROM catalog.saved_searches WHERE user_id = @user_id;

-- name: LockUserSavedSearches :exec
-- Saved searches of one user are created one at a time, so that the quota counts what is there
-- (until the transaction ends).
SELECT pg_advisory_xact_lock(hashtextextended('catalog.saved_searches:' || CAST(sqlc.arg(user_id) AS uuid)::text, 0));
