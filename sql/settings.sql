-- name: GetSettingsByKeys :many
SELECT key, value FROM catalog.settings WHERE key = ANY(@keys::text[]);

-- name: ListSettingKeysWithPrefix :many
-- Which keys under a prefix hold a value (never the values: used for secret presence checks).
SELECT key FROM catalog.settings WHERE starts_with(key, @prefix::text) AND value <> 'null'::jsonb ORDER BY key;
