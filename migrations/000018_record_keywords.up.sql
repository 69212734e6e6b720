-- Keywords of a catalog record (Records: keywords), optionally from a controlled vocabulary.
-- They feed search (as title-weight words and trigram words) and the keywords facet, so the
-- record's search document is rebuilt whenever they change.
CREATE TABLE catalog.record_keywords (
    id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    dataset_id     uuid NOT NULL REFERENCES catalog.datasets (id) ON DELETE CASCADE,
    keyword        text NOT NULL CHECK (char_length(keyword) BETWEEN 1 AND 500),
    vocabulary_uri text CHECK (char_length(vocabulary_uri) <= 2048),
    keyword_type   text NOT NULL DEFAULT 'theme' CHECK (char_length(keyword_type) BETWEEN 1 AND 20),
    created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX record_keywords_unique ON catalog.record_keywords (dataset_id, lower(keyword), coalesce(vocabulary_uri, ''));

-- The record's keywords, theme categories first, then its own by vocabulary and keyword, each
-- word once (case-insensitive).
CREATE FUNCTION catalog.record_keyword_list(dataset uuid, themes text[]) RETURNS text[]
LANGUAGE sql STABLE AS $$
    SELECT coalesce(themes, '{}') || ARRAY(
        SELECT k.keyword FROM (
            SELECT DISTINCT ON (lower(r.keyword)) r.keyword, r.vocabulary_uri FROM catalog.record_keywords r
            WHERE r.dataset_id = dataset AND lower(r.keyword) <> ALL (SELECT lower(t) FROM unnest(coalesce(themes, '{}')) t)
            ORDER BY lower(r.keyword), r.vocabulary_uri NULLS FIRST) k
        ORDER BY k.vocabulary_uri NULLS FIRST, lower(k.keyword))
$$;

CREATE OR REPLACE FUNCTION catalog.index_dataset(d catalog.datasets) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    cfg regconfig := catalog.text_config(d.language);
    keywords text := array_to_string(catalog.record_keyword_list(d.id, d.theme_category), ' ');
    orgs text := concat_ws(' ', d.source_organization, d.owner_org, d.attribution, d.lineage_summary);
    columns text := coalesce((SELECT string_agg(c->>'name', ' ') FROM jsonb_array_elements(
        CASE WHEN jsonb_typeof(d.column_info) = 'array' THEN d.column_info ELSE '[]'::jsonb END) c), '');
BEGIN
    INSERT INTO catalog.dataset_search (dataset_id, doc, words)
    VALUES (d.id,
        setweight(to_tsvector(cfg, d.title), 'A') || setweight(to_tsvector('simple', d.title), 'A') ||
        setweight(to_tsvector(cfg, keywords), 'A') || setweight(to_tsvector('simple', keywords), 'A') ||
        setweight(to_tsvector(cfg, coalesce(d.summary, '')), 'B') || setweight(to_tsvector('simple', coalesce(d.summary, '')), 'B') ||
        setweight(to_tsvector('simple', orgs), 'C') || setweight(to_tsvector('simple', replace(columns, '_', ' ')), 'D'),
        lower(concat_ws(' ', d.title, keywords)))
    ON CONFLICT (dataset_id) DO UPDATE SET doc = EXCLUDED.doc, words = EXCLUDED.words;
END
$$;

CREATE FUNCTION catalog.record_keywords_index() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM catalog.index_dataset(d) FROM catalog.datasets d
    WHERE d.id = CASE WHEN TG_OP = 'DELETE' THEN OLD.dataset_id ELSE NEW.dataset_id END;
    RETURN NULL;
END
$$;

CREATE TRIGGER record_keywords_index AFTER INSERT OR UPDATE OR DELETE ON catalog.record_keywords
    FOR EACH ROW EXECUTE FUNCTION catalog.record_keywords_index();
