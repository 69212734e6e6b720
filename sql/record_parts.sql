-- The parts of a page of records the open-data feeds describe besides the record itself: keywords
-- with their vocabularies, and translations. The ids come from a records query, which applied
-- the caller's visibility.

-- name: ListKeywordsOfDatasets :many
SELECT k.* FROM catalog.record_keywords k
WHERE k.dataset_id = ANY(@ids::uuid[])
ORDER BY k.dataset_id, k.vocabulary_uri NULLS FIRST, lower(k.keyword), k.id;

-- name: ListTranslationsOfDatasets :many
SELECT t.dataset_id, t.language, t.title, t.summary FROM catalog.record_translations t
WHERE t.dataset_id = ANY(@ids::uuid[])
ORDER BY t.dataset_id, t.language;
