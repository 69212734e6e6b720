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
