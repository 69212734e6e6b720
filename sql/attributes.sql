-- name: SyncDatasetAttributes :exec
-- Brings the attribute catalogue in line with the dataset's columns (column_info): new columns
-- get entries with their detected values, present ones their detected type, order and samples
-- (and role and domain unless a person set them), gone ones stay as not current.
WITH cols AS (
    SELECT c->>'name' AS field_name, c->>'type' AS data_type, nullif(c->>'semantic_role', '') AS semantic_role,
        CASE WHEN jsonb_typeof(c->'sample_values') = 'array' THEN c->'sample_values' END AS example_values, x.ord::int AS ordinal_position
    FROM catalog.datasets d,
        jsonb_array_elements(CASE WHEN jsonb_typeof(d.column_info) = 'array' THEN d.column_info ELSE '[]'::jsonb END) WITH ORDINALITY AS x(c, ord)
    WHERE d.id = @dataset_id AND c->>'name' IS NOT NULL
), kept AS (
    INSERT INTO catalog.dataset_attributes AS a (dataset_id, field_name, data_type, semantic_role, domain_type, example_values,
        ordinal_position, is_current, detected)
    SELECT @dataset_id, field_name, data_type, semantic_role, catalog.domain_of(data_type), example_values, ordinal_position, true,
        jsonb_build_object('semantic_role', semantic_role, 'domain_type', catalog.domain_of(data_type))
    FROM cols
    ON CONFLICT (dataset_id, field_name) DO UPDATE SET is_current = true, data_type = EXCLUDED.data_type,
        example_values = EXCLUDED.example_values, ordinal_position = EXCLUDED.ordinal_position, detected = EXCLUDED.detected,
        semantic_role = CASE WHEN 'semantic_role' = ANY(a.user_modified_fields) THEN a.semantic_role ELSE EXCLUDED.semantic_role END,
        domain_type = CASE WHEN 'domain_type' = ANY(a.user_modified_fields) THEN a.domain_type ELSE EXCLUDED.domain_type END
    RETURNING a.field_name
)
UPDATE catalog.dataset_attributes a SET is_current = false
WHERE a.dataset_id = @dataset_id AND a.is_current AND a.field_name NOT IN (SELECT field_name FROM cols);

-- name: ListDatasetAttributes :many
SELECT * FROM catalog.dataset_attributes
WHERE dataset_id = @dataset_id AND (is_current OR @include_removed::bool)
ORDER BY NOT is_current, ordinal_position NULLS LAST, field_name;

-- name: GetDatasetAttribute :one
SELECT * FROM catalog.dataset_attributes WHERE id = @id AND dataset_id = @dataset_id;

-- name: SetDatasetAttribute :one
-- The describing fields as they are to be, and which of them a person has set.
UPDATE catalog.dataset_attributes SET title = sqlc.narg(title), description = sqlc.narg(description), units = sqlc.narg(units),
    semantic_role = sqlc.narg(semantic_role), domain_type = sqlc.narg(domain_type), user_modified_fields = @user_modified_fields
WHERE id = @id AND dataset_id = @dataset_id
RETURNING *;
