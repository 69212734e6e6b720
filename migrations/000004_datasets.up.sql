-- The catalog record of a dataset, its access grants and its change history. The data itself
-- lives in its own table (data schema for ingested and created datasets; registered tables stay
-- where the operator put them).
CREATE TABLE catalog.datasets (
    id                         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    record_id                  uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
    table_schema               text NOT NULL DEFAULT 'data',
    table_name                 text NOT NULL,
    -- Registered tables belong to the operator: deleting the dataset only detaches them.
    registered                 boolean NOT NULL DEFAULT false,
    title                      text NOT NULL CHECK (char_length(title) BETWEEN 1 AND 500),
    summary                    text,
    record_type                text NOT NULL DEFAULT 'vector_dataset' CHECK (record_type IN
        ('vector_dataset', 'raster_dataset', 'vrt_dataset', 'table', 'map', 'service', 'collection')),
    visibility                 text NOT NULL DEFAULT 'private'
        CHECK (visibility IN ('private', 'restricted', 'internal', 'public')),
    record_status              text NOT NULL DEFAULT 'draft' CHECK (char_length(record_status) BETWEEN 1 AND 20),
    origin                     text,
    origin_uri                 text CHECK (char_length(origin_uri) <= 2000),
    origin_ref                 jsonb,
    source_format              text,
    source_filename            text,
    source_url                 text CHECK (char_length(source_url) <= 2000),
    srid                       integer,
    original_srid              integer,
    geometry_type              text,
    has_generic_geometry       boolean NOT NULL DEFAULT false,
    is_3d                      boolean,
    n_dims                     integer,
    z_min                      double precision,
    z_max                      double precision,
    feature_count              bigint,
    extent_bbox                double precision[],
    column_info                jsonb,
    tile_columns               text[],
    license                    text,
    attribution                text,
    source_organization        text,
    quality_statement          text,
    lineage_summary            text,
    update_frequency           text,
    usage_constraints          text,
    access_constraints         text,
    sensitivity_classification text,
    owner_org                  text,
    language                   text,
    theme_category             text[],
    data_vintage_start         date,
    data_vintage_end           date,
    current_version            integer NOT NULL DEFAULT 1,
    source_health              text NOT NULL DEFAULT 'unknown'
        CHECK (source_health IN ('healthy', 'missing', 'inaccessible', 'unknown')),
    source_health_detail       text,
    schema_drift_status        text NOT NULL DEFAULT 'unknown' CHECK (schema_drift_status IN ('none', 'drifted', 'unknown')),
    last_refreshed_at          timestamptz,
    last_checked_at            timestamptz,
    published_at               timestamptz,
    created_by                 uuid REFERENCES catalog.users (id) ON DELETE SET NULL,
    updated_by                 uuid REFERENCES catalog.users (id) ON DELETE SET NULL,
    last_edited_by             uuid REFERENCES catalog.users (id) ON DELETE SET NULL,
    last_edited_at             timestamptz,
    created_at                 timestamptz NOT NULL DEFAULT now(),
    updated_at                 timestamptz NOT NULL DEFAULT now(),
    UNIQUE (table_schema, table_name)
);
CREATE INDEX datasets_created_by_idx ON catalog.datasets (created_by);
CREATE INDEX datasets_listing_idx ON catalog.datasets (visibility, record_status, updated_at DESC);

-- Grants make restricted datasets readable (or writable) by a user or by everyone of a role.
CREATE TABLE catalog.dataset_grants (
    id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    dataset_id uuid NOT NULL REFERENCES catalog.datasets (id) ON DELETE CASCADE,
    user_id    uuid REFERENCES catalog.users (id) ON DELETE CASCADE,
    role       text CHECK (role IN ('viewer', 'editor', 'admin')),
    level      text NOT NULL DEFAULT 'read' CHECK (level IN ('read', 'write')),
    created_by uuid REFERENCES catalog.users (id) ON DELETE SET NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    CHECK ((user_id IS NULL) <> (role IS NULL))
);
CREATE UNIQUE INDEX dataset_grants_user_key ON catalog.dataset_grants (dataset_id, user_id) WHERE user_id IS NOT NULL;
CREATE UNIQUE INDEX dataset_grants_role_key ON catalog.dataset_grants (dataset_id, role) WHERE role IS NOT NULL;

-- Every change with who and when; version follows datasets.current_version, which only goes up.
CREATE TABLE catalog.dataset_history (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    dataset_id    uuid NOT NULL REFERENCES catalog.datasets (id) ON DELETE CASCADE,
    version       integer NOT NULL,
    action        text NOT NULL,
    actor_id      uuid REFERENCES catalog.users (id) ON DELETE SET NULL,
    actor_display text NOT NULL DEFAULT '',
    changes       jsonb NOT NULL DEFAULT '{}'::jsonb,
    occurred_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX dataset_history_dataset_idx ON catalog.dataset_history (dataset_id, id DESC);
