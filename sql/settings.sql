-- name: GetSettingsByKeys :many
SELECT key, value FROM catalog.settings WHERE key = ANY(@keys::text[]);

-- name: ListSettingKeysWithPrefix :many
-- Which keys under a prefix hold a value (never the values: used for secret presence checks).
SELECT key FROM catalog.settings WHERE starts_with(key, @prefix::text) AND value <> 'null'::jsonb ORDER BY key;

-- name: ListAllSettings :many
SELECT key, value, updated_at, updated_by FROM catalog.settings ORDER BY key;

-- name: PutSetting :exec
INSERT INTO catalog.settings (key, value, updated_by, updated_at) VALUES (@key, @value, @updated_by, now())
ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_by = excluded.updated_by, updated_at = now();

-- name: DeleteSetting :execrows
DELETE FROM catalog.settings WHERE key = @key;
