-- Contacts of a catalog record (ISO 19115 responsible parties, Records: contacts). Their names
-- and organizations are searchable with the record's organizations.
CREATE TABLE catalog.record_contacts (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    dataset_id   uuid NOT NULL REFERENCES catalog.datasets (id) ON DELETE CASCADE,
    role         text NOT NULL CHECK (char_length(role) BETWEEN 1 AND 30),
    name         text CHECK (char_length(name) <= 500),
    email        text CHECK (char_length(email) <= 320),
    organization text CHECK (char_length(organization) <= 500),
    phone        text CHECK (char_length(phone) <= 50),
    extra_json   jsonb CHECK (extra_json IS NULL OR jsonb_typeof(extra_json) = 'object'),
    sort_order   integer NOT NULL DEFAULT 0 CHECK (sort_order BETWEEN 0 AND 9999),
    created_at   timestamptz NOT NULL DEFAULT now(),
    CHECK (name IS NOT NULL OR organization IS NOT NULL)
);
CREATE INDEX record_contacts_dataset_idx ON catalog.record_contacts (dataset_id, sort_order, created_at);

CREATE OR REPLACE FUNCTION catalog.index_dataset(d catalog.datasets) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    cfg regconfig := catalog.text_config(d.language);
    keywords text := array_to_string(catalog.record_keyword_list(d.id, d.theme_category), ' ');
    orgs text := concat_ws(' ', d.source_organization, d.owner_org, d.attribution, d.lineage_summary,
        (SELECT string_agg(concat_ws(' ', c.organization, c.name), ' ') FROM catalog.record_contacts c WHERE c.dataset_id = d.id));
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

-- The trigger function of record keywords serves every table of record parts: it reindexes the
-- dataset of the changed row.
CREATE TRIGGER record_contacts_index AFTER INSERT OR UPDATE OR DELETE ON catalog.record_contacts
    FOR EACH ROW EXECUTE FUNCTION catalog.record_keywords_index();
