-- Catalog collections: named groups of datasets.
CREATE TABLE catalog.collections (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name        text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 255),
    description text,
    visibility  text NOT NULL DEFAULT 'private' CHECK (visibility IN ('private', 'internal', 'public')),
    created_by  uuid REFERENCES catalog.users (id) ON DELETE SET NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX collections_name_lower_key ON catalog.collections (lower(name));

CREATE TABLE catalog.collection_datasets (
    collection_id uuid NOT NULL REFERENCES catalog.collections (id) ON DELETE CASCADE,
    dataset_id    uuid NOT NULL REFERENCES catalog.datasets (id) ON DELETE CASCADE,
    added_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (collection_id, dataset_id)
);
CREATE INDEX collection_datasets_dataset_idx ON catalog.collection_datasets (dataset_id);

-- The dataset read rule of internal/auth.CanRead, once, for every query that lists datasets:
-- admins see all; owners see theirs; otherwise only published records, public to everyone,
-- internal to signed-in users, restricted to holders of a grant (by user or role).
CREATE FUNCTION catalog.dataset_visible(dataset_id uuid, visibility text, record_status text, created_by uuid,
                                        caller uuid, caller_role text, is_admin boolean)
RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT is_admin
        OR (caller IS NOT NULL AND created_by = caller)
        OR (record_status = 'published' AND (
               visibility = 'public'
            OR (caller IS NOT NULL AND visibility = 'internal')
            OR (caller IS NOT NULL AND visibility = 'restricted' AND EXISTS (
                   SELECT 1 FROM catalog.dataset_grants g
                   WHERE g.dataset_id = dataset_visible.dataset_id AND (g.user_id = caller OR g.role = caller_role)))))
$$;

-- Collections have no workflow: public to everyone, internal to signed-in users, private to the owner.
CREATE FUNCTION catalog.collection_visible(visibility text, created_by uuid, caller uuid, is_admin boolean)
RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
    SELECT is_admin OR visibility = 'public'
        OR (caller IS NOT NULL AND (visibility = 'internal' OR created_by = caller))
$$;
