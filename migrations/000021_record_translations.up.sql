-- Translations of a catalog record's title and summary, one per language (BCP 47 tag in canonical
-- case). They are searchable, stemmed in their own language.
CREATE TABLE catalog.record_translations (
    dataset_id uuid NOT NULL REFERENCES catalog.datasets (id) ON DELETE CASCADE,
    language   text NOT NULL CHECK (language ~ '^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$' AND char_length(language) <= 35),
    title      text NOT NULL CHECK (char_length(title) BETWEEN 1 AND 500),
    summary    text CHECK (char_length(summary) <= 5000),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (dataset_id, language)
);

CREATE OR REPLACE FUNCTION catalog.index_dataset(d catalog.datasets) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    cfg regconfig := catalog.text_config(d.language);
    keywords text := array_to_string(catalog.record_keyword_list(d.id, d.theme_category), ' ');
    orgs text := concat_ws(' ', d.source_organization, d.owner_org, d.attribution, d.lineage_summary,
        (SELECT string_agg(concat_ws(' ', c.organization, c.name), ' ') FROM catalog.record_contacts c WHERE c.dataset_id = d.id));
    columns text := coalesce((SELECT string_agg(c->>'name', ' ') FROM jsonb_array_elements(
        CASE WHEN jsonb_typeof(d.column_info) = 'array' THEN d.column_info ELSE '[]'::jsonb END) c), '');
    translated tsvector := ''::tsvector;
    tr catalog.record_translations;
BEGIN
    FOR tr IN SELECT * FROM catalog.record_translations x WHERE x.dataset_id = d.id LOOP
        translated := translated || setweight(to_tsvector(catalog.text_config(tr.language), tr.title), 'A') ||
            setweight(to_tsvector('simple', tr.title), 'A') ||
            setweight(to_tsvector(catalog.text_config(tr.language), coalesce(tr.summary, '')), 'B');
    END LOOP;
    INSERT INTO catalog.dataset_search (dataset_id, doc, words)
    VALUES (d.id,
        setweight(to_tsvector(cfg, d.title), 'A') || setweight(to_tsvector('simple', d.title), 'A') ||
        setweight(to_tsvector(cfg, keywords), 'A') || setweight(to_tsvector('simple', keywords), 'A') ||
        setweight(to_tsvector(cfg, coalesce(d.summary, '')), 'B') || setweight(to_tsvector('simple', coalesce(d.summary, '')), 'B') ||
        setweight(to_tsvector('simple', orgs), 'C') || setweight(to_tsvector('simple', replace(columns, '_', ' ')), 'D') ||
        translated,
        lower(concat_ws(' ', d.title, keywords, (SELECT string_agg(t.title, ' ') FROM catalog.record_translations t WHERE t.dataset_id = d.id))))
    ON CONFLICT (dataset_id) DO UPDATE SET doc = EXCLUDED.doc, words = EXCLUDED.words;
END
$$;

CREATE TRIGGER record_translations_index AFTER INSERT OR UPDATE OR DELETE ON catalog.record_translations
    FOR EACH ROW EXECUTE FUNCTION catalog.record_keywords_index();
