-- Search Datasets: a ranked full-text document per record, kept by the database in the same
-- statement as every change of the record, and trigram matching for typos in titles and
-- keywords ("hydrografy" finds "hydrography"). pg_trgm is a trusted extension: the database
-- owner may create it. The documents live in a table of their own so that reading a record
-- (every dataset request) never carries them.
CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- The text search configuration of a record's language (BCP 47 primary subtag); records without
-- one, or in a language PostgreSQL has no stemmer for, are stemmed as english, which the query
-- side uses too. Every word is also indexed unstemmed ('simple'), so names, codes and words of
-- any language match as typed.
CREATE FUNCTION catalog.text_config(language text) RETURNS regconfig
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE lower(split_part(coalesce(language, ''), '-', 1))
        WHEN 'de' THEN 'german' WHEN 'fr' THEN 'french' WHEN 'nl' THEN 'dutch' WHEN 'es' THEN 'spanish'
        WHEN 'it' THEN 'italian' WHEN 'pt' THEN 'portuguese' WHEN 'da' THEN 'danish' WHEN 'sv' THEN 'swedish'
        WHEN 'no' THEN 'norwegian' WHEN 'nb' THEN 'norwegian' WHEN 'fi' THEN 'finnish' WHEN 'ru' THEN 'russian'
        WHEN 'hu' THEN 'hungarian' WHEN 'ro' THEN 'romanian' WHEN 'tr' THEN 'turkish'
        ELSE 'english' END::regconfig
$$;

CREATE TABLE catalog.dataset_search (
    dataset_id uuid PRIMARY KEY REFERENCES catalog.datasets (id) ON DELETE CASCADE,
    doc        tsvector NOT NULL, -- weights: A title and keywords, B summary, C organizations and lineage, D column names
    words      text NOT NULL      -- title and keywords, lower case, for trigram matching
);

CREATE FUNCTION catalog.index_dataset(d catalog.datasets) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    cfg regconfig := catalog.text_config(d.language);
    keywords text := coalesce(array_to_string(d.theme_category, ' '), '');
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

CREATE FUNCTION catalog.datasets_index() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM catalog.index_dataset(NEW);
    RETURN NULL;
END
$$;

CREATE TRIGGER datasets_index AFTER INSERT OR UPDATE OF title, summary, theme_category, source_organization,
    owner_org, attribution, lineage_summary, column_info, language ON catalog.datasets
    FOR EACH ROW EXECUTE FUNCTION catalog.datasets_index();

SELECT catalog.index_dataset(d) FROM catalog.datasets d;

CREATE INDEX dataset_search_doc_idx ON catalog.dataset_search USING gin (doc);
CREATE INDEX dataset_search_words_idx ON catalog.dataset_search USING gin (words gin_trgm_ops);
