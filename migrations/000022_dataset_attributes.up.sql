-- The attribute catalogue: one entry per column a dataset has or had, its detected name, type,
-- role, domain and sample values (from the import's profile, kept in column_info), and the
-- describing fields people edit (title, description, units, role, domain). Entries follow the
-- columns (SyncDatasetAttributes): a column that goes away keeps its entry, not current.
CREATE TABLE catalog.dataset_attributes (
    id                   uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    dataset_id           uuid NOT NULL REFERENCES catalog.datasets (id) ON DELETE CASCADE,
    field_name           text NOT NULL,
    title                text CHECK (char_length(title) <= 500),
    description          text CHECK (char_length(description) <= 2000),
    units                text CHECK (char_length(units) <= 50),
    data_type            text,
    domain_type          text,
    semantic_role        text,
    example_values       jsonb,
    ordinal_position     integer,
    is_current           boolean NOT NULL DEFAULT true,
    detected             jsonb NOT NULL DEFAULT '{}'::jsonb, -- semantic_role and domain_type as detected, for reset
    user_modified_fields text[] NOT NULL DEFAULT '{}',
    UNIQUE (dataset_id, field_name)
);

-- The domain type a column's data type suggests.
CREATE FUNCTION catalog.domain_of(data_type text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN data_type IN ('integer', 'bigint', 'smallint') THEN 'discrete'
        WHEN data_type IN ('double precision', 'real', 'numeric') OR data_type LIKE 'numeric%' THEN 'continuous'
        WHEN data_type = 'boolean' THEN 'boolean'
        WHEN data_type = 'date' THEN 'date'
        WHEN data_type LIKE 'timestamp%' OR data_type LIKE 'time%' THEN 'temporal'
        WHEN data_type IS NULL THEN NULL
        ELSE 'text' END
$$;
