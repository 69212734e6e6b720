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

-- name: GetUserForAccessToken :one
-- Every bearer request reads this one row: the user (status, role and token version may have
-- changed since the token was issued) and whether the token's session is still open. Logout,
-- refresh-token reuse and password change revoke every token of the family, so a family with no
-- unrevoked token is over and its access tokens die with it on every replica at once.
SELECT sqlc.embed(u), EXISTS (
    SELECT 1 FROM catalog.refresh_tokens r
    WHERE r.family_id = @session_id AND r.user_id = u.id AND r.revoked_at IS NULL
) AS session_open
FROM catalog.users u
WHERE u.id = @id;
