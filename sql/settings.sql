-- name: GetSettingsByKeys :many
SELECT key, value FROM catalog.settings WHERE key = ANY(@keys::text[]);
