-- name: CountActiveAdmins :one
SELECT count(*) FROM catalog.users WHERE role = 'admin' AND status = 'active';

-- name: CreateUser :one
INSERT INTO catalog.users (username, email, password_hash, role, status, email_verified)
VALUES (@username, @email, @password_hash, @role, @status, @email_verified)
RETURNING *;

-- name: GetUserByLogin :one
-- Sign-in accepts the username or the email address, both compared without case.
SELECT * FROM catalog.users
WHERE lower(username) = lower(@login) OR lower(email) = lower(@login)
LIMIT 1;

-- name: GetUserByID :one
SELECT * FROM catalog.users WHERE id = @id;

-- name: RecordUserLogin :exec
UPDATE catalog.users SET last_login_at = now() WHERE id = @id;

-- name: SetUserPassword :one
-- A new password ends every session and key issued before it: the version bump makes old access
-- tokens and API keys fail their version check.
UPDATE catalog.users
SET password_hash = @password_hash, token_version = token_version + 1, updated_at = now()
WHERE id = @id
RETURNING token_version;

-- name: UpdateUser :one
-- Role, status and password changes bump token_version: the user's access tokens and API keys
-- stop working at once (spec 2.2: keys die with a password or role change; deactivation ends all).
UPDATE catalog.users SET
    username       = coalesce(sqlc.narg(username), username),
    email          = coalesce(sqlc.narg(email), email),
    role           = coalesce(sqlc.narg(role), role),
    status         = coalesce(sqlc.narg(status), status),
    email_verified = coalesce(sqlc.narg(email_verified), email_verified),
    password_hash  = coalesce(sqlc.narg(password_hash), password_hash),
    token_version  = token_version + CASE
        WHEN (sqlc.narg(role)::text IS NOT NULL AND sqlc.narg(role) <> role)
          OR (sqlc.narg(status)::text IS NOT NULL AND sqlc.narg(status) <> status)
          OR sqlc.narg(password_hash)::text IS NOT NULL THEN 1 ELSE 0 END,
    updated_at     = now()
WHERE id = @id
RETURNING *;

-- name: ListUsers :many
-- One page with the total in each row (one round trip); q matches username or email. @sort is
-- one of username, email, role, status (text) or created_at, last_login_at (time), @descending
-- reverses it; the username breaks ties.
SELECT u.*, count(*) OVER () AS total FROM catalog.users u
WHERE (sqlc.narg(role)::text IS NULL OR u.role = sqlc.narg(role))
  AND (sqlc.narg(status)::text IS NULL OR u.status = sqlc.narg(status))
  AND (sqlc.narg(q)::text IS NULL OR u.username ILIKE '%' || sqlc.narg(q) || '%' OR u.email ILIKE '%' || sqlc.narg(q) || '%')
ORDER BY
  CASE WHEN NOT @descending::bool THEN CASE @sort::text WHEN 'email' THEN lower(u.email) WHEN 'role' THEN u.role WHEN 'status' THEN u.status END END,
  CASE WHEN @descending::bool THEN CASE @sort::text WHEN 'email' THEN lower(u.email) WHEN 'role' THEN u.role WHEN 'status' THEN u.status END END DESC,
  CASE WHEN NOT @descending::bool THEN CASE @sort::text WHEN 'created_at' THEN u.created_at WHEN 'last_login_at' THEN u.last_login_at END END,
  CASE WHEN @descending::bool THEN CASE @sort::text WHEN 'created_at' THEN u.created_at WHEN 'last_login_at' THEN u.last_login_at END END DESC NULLS LAST,
  CASE WHEN @descending::bool AND @sort::text = 'username' THEN lower(u.username) END DESC,
  lower(u.username)
LIMIT @lim OFFSET @off;

-- name: ListUserNames :many
SELECT u.id, u.username FROM catalog.users u
WHERE (@include_inactive::bool OR u.status = 'active')
  AND (sqlc.narg(q)::text IS NULL OR u.username ILIKE '%' || sqlc.narg(q) || '%')
ORDER BY lower(u.username)
LIMIT @lim OFFSET @off;

-- name: DeleteUser :execrows
DELETE FROM catalog.users WHERE id = @id;

-- name: GetUserByEmail :one
SELECT * FROM catalog.users WHERE lower(email) = lower(@email);

-- name: CreateEmailVerification :exec
-- A new link replaces the user's earlier ones.
WITH gone AS (DELETE FROM catalog.email_verifications WHERE user_id = @user_id)
INSERT INTO catalog.email_verifications (token_hash, user_id, expires_at) VALUES (@token_hash, @user_id, @expires_at);

-- name: UseEmailVerification :one
UPDATE catalog.email_verifications SET used_at = now()
WHERE token_hash = @token_hash AND used_at IS NULL AND expires_at > now()
RETURNING user_id;

-- name: MarkEmailVerified :one
-- Verification activates the account unless an admin still has to approve it.
UPDATE catalog.users SET email_verified = true,
    status = CASE WHEN status = 'pending' AND NOT @needs_approval::bool THEN 'active' ELSE status END,
    updated_at = now()
WHERE id = @id
RETURNING *;

-- name: UsageOfUser :one
-- What a user owns: datasets, the bytes of their tables and rasters' stored files (registered
-- tables belong to the operator and are not counted) and active API keys.
SELECT
    (SELECT count(*) FROM catalog.datasets d WHERE d.created_by = @user_id)::bigint AS dataset_count,
    (SELECT coalesce(sum(coalesce(pg_total_relation_size(to_regclass(format('%I.%I', d.table_schema, d.table_name))),
        (d.raster->>'size_bytes')::bigint)), 0)
       FROM catalog.datasets d WHERE d.created_by = @user_id AND NOT d.registered)::bigint AS storage_bytes,
    (SELECT count(*) FROM catalog.api_keys k JOIN catalog.users u ON u.id = k.user_id
      WHERE k.user_id = @user_id AND k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now())
        AND k.token_version = u.token_version)::bigint AS api_key_count;
