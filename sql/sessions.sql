-- name: CreateRefreshToken :one
INSERT INTO catalog.refresh_tokens (family_id, user_id, token_hash, expires_at, ip, user_agent)
VALUES (@family_id, @user_id, @token_hash, @expires_at, @ip, @user_agent)
RETURNING id;

-- name: GetRefreshTokenByHash :one
SELECT * FROM catalog.refresh_tokens WHERE token_hash = @token_hash;

-- name: RotateRefreshToken :execrows
-- Only the first of concurrent rotations wins; the others see 0 rows and take the grace path.
UPDATE catalog.refresh_tokens SET rotated_at = now()
WHERE id = @id AND rotated_at IS NULL AND revoked_at IS NULL;

-- name: UseRefreshTokenGrace :execrows
-- A just-rotated token works once more inside the grace window (several browser tabs refreshing).
UPDATE catalog.refresh_tokens SET grace_used = true
WHERE id = @id AND revoked_at IS NULL AND NOT grace_used
  AND rotated_at > now() - make_interval(secs => @grace_seconds::float8);

-- name: RevokeRefreshFamily :exec
UPDATE catalog.refresh_tokens SET revoked_at = now()
WHERE family_id = @family_id AND revoked_at IS NULL;

-- name: RevokeUserRefreshTokens :exec
UPDATE catalog.refresh_tokens SET revoked_at = now()
WHERE user_id = @user_id AND revoked_at IS NULL;
