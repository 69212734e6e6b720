-- name: CreateOAuthProvider :one
INSERT INTO catalog.oauth_providers (slug, display_name, provider_type, client_id, client_secret_enc,
    discovery_url, authorize_url, token_url, userinfo_url, scopes, default_role, enabled)
VALUES (@slug, @display_name, @provider_type, @client_id, @client_secret_enc,
    @discovery_url, @authorize_url, @token_url, @userinfo_url, @scopes, @default_role, @enabled)
RETURNING *;

-- name: ListOAuthProviders :many
SELECT * FROM catalog.oauth_providers ORDER BY lower(display_name), slug;

-- name: GetOAuthProvider :one
SELECT * FROM catalog.oauth_providers WHERE id = @id;

-- name: GetOAuthProviderBySlug :one
SELECT * FROM catalog.oauth_providers WHERE slug = @slug;

-- name: UpdateOAuthProvider :one
-- The caller sends the whole normalised record; client_secret_enc NULL keeps the stored secret.
UPDATE catalog.oauth_providers SET
    slug = @slug, display_name = @display_name, provider_type = @provider_type, client_id = @client_id,
    client_secret_enc = coalesce(sqlc.narg(client_secret_enc), client_secret_enc),
    discovery_url = @discovery_url, authorize_url = @authorize_url, token_url = @token_url,
    userinfo_url = @userinfo_url, scopes = @scopes, default_role = @default_role, enabled = @enabled,
    updated_at = now()
WHERE id = @id
RETURNING *;

-- name: DeleteOAuthProvider :one
DELETE FROM catalog.oauth_providers WHERE id = @id RETURNING slug;

-- name: GetLinkedUser :one
SELECT user_id FROM catalog.oauth_accounts WHERE provider_id = @provider_id AND subject = @subject;

-- name: LinkOAuthAccount :exec
INSERT INTO catalog.oauth_accounts (provider_id, subject, user_id, email)
VALUES (@provider_id, @subject, @user_id, @email)
ON CONFLICT (provider_id, subject) DO NOTHING;

-- name: UsernameTaken :one
SELECT EXISTS (SELECT 1 FROM catalog.users WHERE lower(username) = lower(@username))::bool;

-- name: LinkedProviderSlugs :many
SELECT p.slug FROM catalog.oauth_accounts a JOIN catalog.oauth_providers p ON p.id = a.provider_id
WHERE a.user_id = @user_id ORDER BY p.slug;

-- name: CountProviderAccounts :one
-- The accounts linked through a provider (deleted with it).
SELECT count(*) FROM catalog.oauth_accounts WHERE provider_id = @provider_id;
