-- Semantic search: an embedding of each record's text (title, summary, keywords and column
-- names), kept current the way the search documents are. Every rewrite of a record's search
-- document (catalog.index_dataset, run by the triggers of the record and of its keywords)
-- recomputes the hash of the record's embedding text; an embedding made of another text is
-- stale, and a job embeds it again (internal/ai). No pgvector here: vectors are real[] unit
-- vectors, compared by the server (exact cosine over all of them, in memory).

-- The text a record is embedded from; its md5 says whether an embedding is still current.
CREATE FUNCTION catalog.embedding_text(d catalog.datasets) RETURNS text LANGUAGE sql STABLE AS $$
    SELECT concat_ws(E'\n', d.title, nullif(d.summary, ''),
        nullif(array_to_string(catalog.record_keyword_list(d.id, d.theme_category), ', '), ''),
        nullif((SELECT string_agg(replace(c->>'name', '_', ' '), ', ') FROM jsonb_array_elements(
            CASE WHEN jsonb_typeof(d.column_info) = 'array' THEN d.column_info ELSE '[]'::jsonb END) c), ''))
$$;

-- version moves on with every embedding written, so servers read only what changed since they
-- last looked.
CREATE SEQUENCE catalog.dataset_embeddings_version;

CREATE TABLE catalog.dataset_embeddings (
    dataset_id    uuid PRIMARY KEY REFERENCES catalog.datasets (id) ON DELETE CASCADE,
    text_hash     text NOT NULL,   -- md5 of the record's embedding text now
    embedding     real[],          -- a unit vector; null: never embedded
    embedded_hash text,            -- text_hash of the text the embedding was made of
    model         text,            -- the model and dimensions it was made with
    dims          integer,
    embedded_at   timestamptz,
    error         text,            -- why the last attempt failed, until one succeeds
    failed_at     timestamptz,
    version       bigint NOT NULL DEFAULT nextval('catalog.dataset_embeddings_version')
);
CREATE INDEX dataset_embeddings_version_idx ON catalog.dataset_embeddings (version);

CREATE FUNCTION catalog.dataset_search_embedding() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    h text;
BEGIN
    SELECT md5(catalog.embedding_text(d)) INTO h FROM catalog.datasets d WHERE d.id = NEW.dataset_id;
    IF h IS NULL THEN
        RETURN NULL;
    END IF;
    INSERT INTO catalog.dataset_embeddings (dataset_id, text_hash) VALUES (NEW.dataset_id, h)
    ON CONFLICT (dataset_id) DO UPDATE SET text_hash = EXCLUDED.text_hash
        WHERE catalog.dataset_embeddings.text_hash IS DISTINCT FROM EXCLUDED.text_hash;
    RETURN NULL;
END
$$;

CREATE TRIGGER dataset_search_embedding AFTER INSERT OR UPDATE OF doc ON catalog.dataset_search
    FOR EACH ROW EXECUTE FUNCTION catalog.dataset_search_embedding();

INSERT INTO catalog.dataset_embeddings (dataset_id, text_hash)
SELECT d.id, md5(catalog.embedding_text(d)) FROM catalog.datasets d;

-- Backfills: one at a time (the partial unique index), with their progress. A run whose server
-- stopped beats no more and is failed by the next request for one.
CREATE TABLE catalog.embedding_backfills (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    mode         text NOT NULL CHECK (mode IN ('missing', 'stale', 'all')),
    dataset_ids  uuid[],
    status       text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'running', 'complete', 'failed')),
    total        integer NOT NULL DEFAULT 0,
    processed    integer NOT NULL DEFAULT 0,
    failed       integer NOT NULL DEFAULT 0,
    error        text,
    requested_by uuid REFERENCES catalog.users (id) ON DELETE SET NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    started_at   timestamptz,
    finished_at  timestamptz,
    beat_at      timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX embedding_backfills_one_active ON catalog.embedding_backfills ((true))
    WHERE status IN ('queued', 'running');
