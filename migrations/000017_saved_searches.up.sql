-- Saved searches (spec 2.9): a user's named search filters, private to the user.
CREATE TABLE catalog.saved_searches (
    id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id    uuid NOT NULL REFERENCES catalog.users (id) ON DELETE CASCADE,
    name       text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 255),
    params     jsonb NOT NULL CHECK (jsonb_typeof(params) = 'object'),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX saved_searches_user_idx ON catalog.saved_searches (user_id, updated_at DESC);
