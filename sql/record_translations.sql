-- name: ListRecordTranslations :many
SELECT sqlc.embed(t), count(*) OVER () AS total FROM catalog.record_translations t
WHERE t.dataset_id = @dataset_id
ORDER BY t.language
LIMIT @lim OFFSET @off;

-- name: CountRecordTranslations :one
SELECT count(*) FROM catalog.record_translations WHERE dataset_id = @dataset_id;

-- name: UpsertRecordTranslation :one
INSERT INTO catalog.record_translations (dataset_id, language, title, summary)
VALUES (@dataset_id, @language, @title, sqlc.narg(summary))
ON CONFLICT (dataset_id, language) DO UPDATE SET title = EXCLUDED.title, summary = EXCLUDED.summary, updated_at = now()
RETURNING *;

-- name: DeleteRecordTranslation :execrows
DELETE FROM catalog.record_translations WHERE dataset_id = @dataset_id AND language = @language;
