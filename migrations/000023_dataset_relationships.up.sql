-- Key relationships between datasets: a column of the source holds values of a column of the
-- target, like a foreign key (without the constraint: the tables may be registered ones).
-- Deleting either dataset removes its relationships.
CREATE TABLE catalog.dataset_relationships (
    id                uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    source_dataset_id uuid NOT NULL REFERENCES catalog.datasets (id) ON DELETE CASCADE,
    target_dataset_id uuid NOT NULL REFERENCES catalog.datasets (id) ON DELETE CASCADE,
    source_column     text NOT NULL CHECK (char_length(source_column) BETWEEN 1 AND 63),
    target_column     text NOT NULL CHECK (char_length(target_column) BETWEEN 1 AND 63),
    relationship_type text NOT NULL DEFAULT 'many_to_one',
    label             text CHECK (char_length(label) <= 500),
    created_by        uuid REFERENCES catalog.users (id) ON DELETE SET NULL,
    created_at        timestamptz NOT NULL DEFAULT now(),
    UNIQUE (source_dataset_id, source_column, target_dataset_id, target_column)
);
CREATE INDEX dataset_relationships_target_idx ON catalog.dataset_relationships (target_dataset_id);
