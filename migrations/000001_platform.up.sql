-- Platform baseline: the two schemas, PostGIS, users, settings and the audit trail.
-- Service tables live in "catalog"; one table per dataset lives in "data".
CREATE EXTENSION IF NOT EXISTS postgis;

CREATE SCHEMA IF NOT EXISTS catalog;
CREATE SCHEMA IF NOT EXISTS data;

CREATE TABLE catalog.users (
    id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    username       text NOT NULL CHECK (char_length(username) BETWEEN 3 AND 150),
    email          text NOT NULL CHECK (char_length(email) <= 255),
    password_hash  text,
    role           text NOT NULL DEFAULT 'viewer' CHECK (role IN ('viewer', 'editor', 'admin')),
    status         text NOT NULL DEFAULT 'active'
                   CHECK (status IN ('active', 'pending', 'suspended', 'deactivated')),
    email_verified boolean NOT NULL DEFAULT false,
    -- Bumped on password, role or status changes: JWTs carrying an older version stop working.
    token_version  integer NOT NULL DEFAULT 1,
    last_login_at  timestamptz,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now()
);
-- Usernames and emails are unique without regard to case (account linking matches emails that way).
CREATE UNIQUE INDEX users_username_lower_key ON catalog.users (lower(username));
CREATE UNIQUE INDEX users_email_lower_key ON catalog.users (lower(email));

-- Runtime settings an admin can change without a restart (feature flags, registration mode ...).
CREATE TABLE catalog.settings (
    key        text PRIMARY KEY,
    value      jsonb NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    updated_by uuid REFERENCES catalog.users (id) ON DELETE SET NULL
);

CREATE TABLE catalog.audit_log (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    occurred_at   timestamptz NOT NULL DEFAULT now(),
    actor_id      uuid REFERENCES catalog.users (id) ON DELETE SET NULL,
    actor_display text NOT NULL DEFAULT '',
    action        text NOT NULL,
    resource_type text NOT NULL DEFAULT '',
    resource_id   text NOT NULL DEFAULT '',
    outcome       text NOT NULL DEFAULT 'success' CHECK (outcome IN ('success', 'failure')),
    ip            text NOT NULL DEFAULT '',
    user_agent    text NOT NULL DEFAULT '',
    detail        jsonb NOT NULL DEFAULT '{}'::jsonb
);
CREATE INDEX audit_log_occurred_at_idx ON catalog.audit_log (occurred_at DESC);
CREATE INDEX audit_log_action_idx ON catalog.audit_log (action, occurred_at DESC);
