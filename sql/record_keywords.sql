-- name: ListRecordKeywords :many
SELECT sqlc.embed(k), count(*) OVER () AS total FROM catalog.record_keywords k
WHERE k.dataset_id = @dataset_id
ORDER BY k.vocabulary_uri NULLS FIRST, lower(k.keyword), k.id
LIMIT @lim OFFSET @off;

-- name: CountRecordKeywords :one
SELECT count(*) FROM catalog.record_keywords WHERE dataset_id = @dataset_id;

-- name: AddRecordKeyword :one
INSERT INTO catalog.record_keywords (dataset_id, keyword, vocabulary_uri, keyword_type)
VALUES (@dataset_id, @keyword, sqlc.narg(vocabulary_uri), @keyword_type)
RETURNING *;

-- name: DeleteRecordKeyword :one
DELETE FROM catalog.record_keywords WHERE id = @id AND dataset_id = @dataset_id
RETURNING keyword;

-- name: TouchDatasetRecord :one
-- A change of the record's own metadata that lives outside its row (keywords, contacts ...):
-- who and when; not a data version, so current_version stays (and is answered for the history).
UPDATE catalog.datasets SET updated_at = now(), updated_by = @updated_by
WHERE id = @id
RETURNING current_version;

-- name: DatasetOfRecord :one
-- The dataset a catalog record describes, by the record's id or the dataset's own.
SELECT id FROM catalog.datasets WHERE record_id = @id OR id = @id LIMIT 1;
