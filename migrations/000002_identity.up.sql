-- Identity and access: sessions (refresh tokens), API keys, OAuth providers and linked accounts,
-- email verification.

-- Refresh tokens are opaque; only their SHA-256 is stored. A family is one sign-in: every rotation
-- stays in the family, so presenting a rotated token again can revoke the whole chain.
CREATE TABLE catalog.refresh_tokens (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    family_id   uuid NOT NULL,
    user_id     uuid NOT NULL REFERENCES catalog.users (id) ON DELETE CASCADE,
    token_hash  bytea NOT NULL UNIQUE,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    rotated_at  timestamptz,
    grace_used  boolean NOT NULL DEFAULT false,
    revoked_at  timestamptz,
    ip          text NOT NULL DEFAULT '',
    user_agent  text NOT NULL DEFAULT ''
);
CREATE INDEX refresh_tokens_family_idx ON catalog.refresh_tokens (family_id);
CREATE INDEX refresh_tokens_user_idx ON catalog.refresh_tokens (user_id) WHERE revoked_at IS NULL;

-- API keys: the secret is shown once; only its SHA-256 is stored. token_version copies the owner's
-- version at creation, so a password or role change (which bumps the owner's version) invalidates it.
CREATE TABLE catalog.api_keys (
    id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id       uuid NOT NULL REFERENCES catalog.users (id) ON DELETE CASCADE,
    name          text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 255),
    key_hash      bytea NOT NULL UNIQUE,
    fingerprint   text NOT NULL,
    scope         text NOT NULL DEFAULT 'full' CHECK (scope IN ('full', 'read_only')),
    token_version integer NOT NULL,
    expires_at    timestamptz,
    created_at    timestamptz NOT NULL DEFAULT now(),
    created_by    uuid REFERENCES catalog.users (id) ON DELETE SET NULL,
    last_used_at  timestamptz,
    revoked_at    timestamptz
);
CREATE INDEX api_keys_user_idx ON catalog.api_keys (user_id);

CREATE TABLE catalog.oauth_providers (
    id                uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    slug              text NOT NULL UNIQUE,
    display_name      text NOT NULL,
    provider_type     text NOT NULL CHECK (provider_type IN ('google', 'github', 'microsoft', 'oidc')),
    client_id         text NOT NULL,
    -- AES-GCM ciphertext under a key derived from JWT_SECRET_KEY (internal/secretbox).
    client_secret_enc bytea,
    discovery_url     text,
    authorize_url     text,
    token_url         text,
    userinfo_url      text,
    scopes            text NOT NULL,
    default_role      text NOT NULL DEFAULT 'viewer' CHECK (default_role IN ('viewer', 'editor', 'admin')),
    enabled           boolean NOT NULL DEFAULT true,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now()
);

-- Deleting a provider deletes its links (spec 2.1).
CREATE TABLE catalog.oauth_accounts (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    provider_id uuid NOT NULL REFERENCES catalog.oauth_providers (id) ON DELETE CASCADE,
    subject     text NOT NULL,
    user_id     uuid NOT NULL REFERENCES catalog.users (id) ON DELETE CASCADE,
    email       text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (provider_id, subject)
);

CREATE TABLE catalog.email_verifications (
    token_hash bytea PRIMARY KEY,
    user_id    uuid NOT NULL REFERENCES catalog.users (id) ON DELETE CASCADE,
    expires_at timestamptz NOT NULL,
    used_at    timestamptz
);
