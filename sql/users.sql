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
