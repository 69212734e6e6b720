-- name: CreateAPIKey :one
INSERT INTO catalog.api_keys (user_id, name, key_hash, fingerprint, scope, token_version, expires_at, created_by)
SELECT u.id, @name, @key_hash, @fingerprint, @scope, u.token_version, @expires_at, @created_by
FROM catalog.users u WHERE u.id = @user_id
RETURNING *;

-- name: GetAPIKeyCredential :one
-- Everything the authentication middleware needs about a key and its owner, in one round trip;
-- last_used_at is refreshed in the same statement, at most once a minute per key, so heavy API
-- use does not turn every read into a write.
WITH k AS (
    SELECT k.id, k.user_id, k.scope, k.expires_at, k.revoked_at, k.token_version AS key_version,
           k.last_used_at, u.username, u.role, u.status, u.token_version AS user_version
    FROM catalog.api_keys k JOIN catalog.users u ON u.id = k.user_id
    WHERE k.key_hash = @key_hash
), touched AS (
    UPDATE catalog.api_keys SET last_used_at = now()
    WHERE id = (SELECT id FROM k WHERE revoked_at IS NULL)
      AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')
)
SELECT id, user_id, scope, expires_at, revoked_at, key_version, username, role, status, user_version FROM k;

-- name: ListAPIKeysOfUser :many
SELECT k.id, k.user_id, k.name, k.fingerprint, k.scope, k.expires_at, k.created_at, k.last_used_at,
       u.username,
       (k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now())
        AND k.token_version = u.token_version AND u.status = 'active')::bool AS is_active
FROM catalog.api_keys k JOIN catalog.users u ON u.id = k.user_id
WHERE k.user_id = @user_id ORDER BY k.created_at DESC;

-- name: ListAPIKeys :many
-- One page of every key, with the total in each row so the page costs one round trip.
WITH keys AS (
    SELECT k.id, k.user_id, k.name, k.fingerprint, k.scope, k.expires_at, k.created_at, k.last_used_at,
           u.username,
           (k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now())
            AND k.token_version = u.token_version AND u.status = 'active')::bool AS is_active
    FROM catalog.api_keys k JOIN catalog.users u ON u.id = k.user_id
)
SELECT keys.*, count(*) OVER () AS total FROM keys
WHERE (sqlc.narg(user_id)::uuid IS NULL OR keys.user_id = sqlc.narg(user_id))
  AND (sqlc.narg(is_active)::bool IS NULL OR keys.is_active = sqlc.narg(is_active))
  AND (sqlc.narg(scope)::text IS NULL OR keys.scope = sqlc.narg(scope))
ORDER BY keys.created_at DESC
LIMIT @lim OFFSET @off;

-- name: RevokeAPIKey :one
-- owner_id NULL means an admin revokes any key.
UPDATE catalog.api_keys SET revoked_at = coalesce(revoked_at, now())
WHERE id = @id AND (sqlc.narg(owner_id)::uuid IS NULL OR user_id = sqlc.narg(owner_id))
RETURNING id, user_id, name;
