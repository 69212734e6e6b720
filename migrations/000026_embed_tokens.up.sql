-- Embed tokens: a page that embeds a map sends one as X-Embed-Token. It lends read access to its
-- map and to the datasets the map's layers showed when it was made (scoped_dataset_ids: a layer
-- added later needs a new token), from its allowed origins (empty: any), until it expires. Only
-- the SHA-256 of the secret is kept; token_hint shows its last characters.
CREATE TABLE catalog.embed_tokens (
    id                 uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    map_id             uuid NOT NULL REFERENCES catalog.maps (id) ON DELETE CASCADE,
    name               text CHECK (char_length(name) BETWEEN 1 AND 255),
    token_sha256       bytea NOT NULL UNIQUE,
    token_hint         text NOT NULL,
    scoped_dataset_ids uuid[] NOT NULL,
    allowed_origins    text[] NOT NULL DEFAULT '{}' CHECK (cardinality(allowed_origins) <= 50),
    expires_at         timestamptz NOT NULL,
    revoked_at         timestamptz,
    use_count          bigint NOT NULL DEFAULT 0,
    last_used_at       timestamptz,
    created_by         uuid REFERENCES catalog.users (id) ON DELETE SET NULL,
    created_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX embed_tokens_map_idx ON catalog.embed_tokens (map_id, created_at DESC);
