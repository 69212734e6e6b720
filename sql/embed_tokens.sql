-- name: InsertEmbedToken :one
-- The scope is the datasets the map's layers show now that the creator may lend
-- (catalog.dataset_lendable: their own, or public and published; any for an admin): a grant or
-- internal visibility lets the creator read a dataset, not hand it to anonymous callers.
INSERT INTO catalog.embed_tokens (map_id, name, token_sha256, token_hint, scoped_dataset_ids, allowed_origins, expires_at, created_by)
VALUES (@map_id, @name, @token_sha256, @token_hint,
    ARRAY(SELECT DISTINCT l.dataset_id FROM catalog.map_layers l JOIN catalog.datasets d ON d.id = l.dataset_id
          WHERE l.map_id = @map_id
            AND catalog.dataset_lendable(d.visibility, d.record_status, d.created_by, sqlc.narg(created_by)::uuid, @creator_is_admin::bool)),
    @allowed_origins, @expires_at, sqlc.narg(created_by))
RETURNING *;

-- name: ListEmbedTokens :many
SELECT sqlc.embed(t), count(*) OVER () AS total FROM catalog.embed_tokens t
WHERE t.map_id = @map_id
ORDER BY t.created_at DESC, t.id
LIMIT @lim OFFSET @off;

-- name: SetEmbedTokenOrigins :one
UPDATE catalog.embed_tokens SET allowed_origins = @allowed_origins WHERE id = @id AND map_id = @map_id
RETURNING *;

-- name: GetEmbedToken :one
SELECT * FROM catalog.embed_tokens WHERE id = @id AND map_id = @map_id;

-- name: RevokeEmbedToken :one
UPDATE catalog.embed_tokens SET revoked_at = coalesce(revoked_at, now()) WHERE id = @id AND map_id = @map_id
RETURNING *;

-- name: UseEmbedToken :one
-- A request carrying the token from origin: counted when the token is live, allows the origin and
-- its creator may still read the map; nothing when not. It lends the datasets of its scope that
-- its creator may still lend (catalog.dataset_lendable: another owner may have made theirs
-- private since, the creator may have lost the admin role; a creator no longer active lends only
-- what is public and published).
WITH live AS (
    SELECT t.id, c.id AS creator, c.role AS creator_role
    FROM catalog.embed_tokens t
    JOIN catalog.maps m ON m.id = t.map_id
    LEFT JOIN catalog.users c ON c.id = t.created_by AND c.status = 'active'
    WHERE t.token_sha256 = @token_sha256 AND t.revoked_at IS NULL AND t.expires_at > now()
      AND (cardinality(t.allowed_origins) = 0 OR @origin::text = ANY(t.allowed_origins))
      AND catalog.map_visible(m.visibility, m.created_by, c.id, coalesce(c.role = 'admin', false))
)
UPDATE catalog.embed_tokens t SET use_count = t.use_count + 1, last_used_at = now()
FROM live
WHERE t.id = live.id
RETURNING t.map_id, ARRAY(SELECT d.id FROM catalog.datasets d WHERE d.id = ANY(t.scoped_dataset_ids)
    AND catalog.dataset_lendable(d.visibility, d.record_status, d.created_by, live.creator,
        coalesce(live.creator_role = 'admin', false)))::uuid[] AS scoped_dataset_ids,
    t.allowed_origins, t.expires_at;

-- name: ListAllEmbedTokens :many
SELECT sqlc.embed(t), m.name AS map_name, u.username AS created_by_username, count(*) OVER () AS total
FROM catalog.embed_tokens t JOIN catalog.maps m ON m.id = t.map_id LEFT JOIN catalog.users u ON u.id = t.created_by
WHERE (sqlc.narg(map_id)::uuid IS NULL OR t.map_id = sqlc.narg(map_id))
  AND (sqlc.narg(active)::bool IS NULL OR (t.revoked_at IS NULL AND t.expires_at > now()) = sqlc.narg(active))
  AND (sqlc.narg(map_search)::text IS NULL OR m.name ILIKE '%' || sqlc.narg(map_search) || '%')
ORDER BY t.created_at DESC, t.id
LIMIT @lim OFFSET @off;

-- name: BulkRevokeEmbedTokens :many
UPDATE catalog.embed_tokens SET revoked_at = now() WHERE id = ANY(@ids::uuid[]) AND revoked_at IS NULL RETURNING id, map_id;

-- name: RevokeMapEmbedTokens :many
-- A map that stops being public takes back its embed tokens.
UPDATE catalog.embed_tokens SET revoked_at = now() WHERE map_id = @map_id AND revoked_at IS NULL RETURNING id;
