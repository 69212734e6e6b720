-- name: AITokensOn :one
-- The tokens a user spent on a day.
SELECT coalesce((SELECT tokens FROM catalog.ai_token_usage WHERE user_id = @user_id AND day = @day), 0)::bigint;

-- name: AddAITokens :one
-- Adds tokens to a user's day and answers the day's total.
INSERT INTO catalog.ai_token_usage (user_id, day, tokens, requests) VALUES (@user_id, @day, @tokens, 1)
ON CONFLICT (user_id, day) DO UPDATE SET tokens = catalog.ai_token_usage.tokens + EXCLUDED.tokens,
    requests = catalog.ai_token_usage.requests + 1
RETURNING tokens;

-- name: EmbeddingCounts :one
-- Coverage of the records' embeddings for a model and dimension count: current (made of the
-- record's text now with that model), stale (made of another text or with another model), failed
-- (the last attempt failed and nothing current exists).
SELECT count(*)::bigint AS total,
    count(*) FILTER (WHERE e.embedding IS NOT NULL AND e.embedded_hash = e.text_hash
        AND e.model = @model::text AND e.dims = @dims::int)::bigint AS current,
    count(*) FILTER (WHERE e.embedding IS NOT NULL AND (e.embedded_hash IS DISTINCT FROM e.text_hash
        OR e.model IS DISTINCT FROM @model::text OR e.dims IS DISTINCT FROM @dims::int))::bigint AS stale,
    count(*) FILTER (WHERE e.embedding IS NULL AND e.error IS NOT NULL)::bigint AS failed
FROM catalog.datasets d LEFT JOIN catalog.dataset_embeddings e ON e.dataset_id = d.id;

-- name: EmbeddingsToDo :many
-- Records to embed, by id after @after: missing (never embedded, or with another model or
-- dimension count), stale (also those made of an older text), or all; only @dataset_ids when
-- given. Each with its text and the hash of that text.
SELECT d.id, catalog.embedding_text(d)::text AS text, md5(catalog.embedding_text(d))::text AS hash
FROM catalog.datasets d LEFT JOIN catalog.dataset_embeddings e ON e.dataset_id = d.id
WHERE d.id > @after::uuid
    AND (cardinality(@dataset_ids::uuid[]) = 0 OR d.id = ANY(@dataset_ids::uuid[]))
    AND (@mode::text = 'all' OR e.embedding IS NULL OR e.model IS DISTINCT FROM @model::text OR e.dims IS DISTINCT FROM @dims::int
        OR (@mode::text = 'stale' AND e.embedded_hash IS DISTINCT FROM e.text_hash))
ORDER BY d.id
LIMIT @max_rows;

-- name: CountEmbeddingsToDo :one
SELECT count(*)::bigint
FROM catalog.datasets d LEFT JOIN catalog.dataset_embeddings e ON e.dataset_id = d.id
WHERE (cardinality(@dataset_ids::uuid[]) = 0 OR d.id = ANY(@dataset_ids::uuid[]))
    AND (@mode::text = 'all' OR e.embedding IS NULL OR e.model IS DISTINCT FROM @model::text OR e.dims IS DISTINCT FROM @dims::int
        OR (@mode::text = 'stale' AND e.embedded_hash IS DISTINCT FROM e.text_hash));

-- name: PutEmbedding :exec
-- Stores a record's embedding of the text whose hash is @hash.
INSERT INTO catalog.dataset_embeddings (dataset_id, text_hash, embedding, embedded_hash, model, dims, embedded_at)
VALUES (@dataset_id, @hash, @embedding::real[], @hash, @model, @dims, now())
ON CONFLICT (dataset_id) DO UPDATE SET embedding = EXCLUDED.embedding, embedded_hash = EXCLUDED.embedded_hash,
    model = EXCLUDED.model, dims = EXCLUDED.dims, embedded_at = now(), error = NULL, failed_at = NULL,
    version = nextval('catalog.dataset_embeddings_version');

-- name: PutEmbeddingError :exec
UPDATE catalog.dataset_embeddings SET error = @error, failed_at = now() WHERE dataset_id = @dataset_id;

-- name: EmbeddingsSince :many
-- The embeddings of a model written after version @after, oldest first.
SELECT dataset_id, embedding::real[] AS embedding, version FROM catalog.dataset_embeddings
WHERE version > @after AND embedding IS NOT NULL AND model = @model::text AND dims = @dims::int
ORDER BY version
LIMIT @max_rows;

-- name: EmbeddingsVersion :one
-- The newest version and how many embeddings of a model exist (a smaller count than a server
-- holds means some went with their records).
SELECT coalesce(max(version), 0)::bigint AS version, count(*)::bigint AS count FROM catalog.dataset_embeddings
WHERE embedding IS NOT NULL AND model = @model::text AND dims = @dims::int;

-- name: FailSilentBackfills :exec
-- A queued or running backfill that has not beaten for @silent_seconds lost its server.
UPDATE catalog.embedding_backfills SET status = 'failed', error = 'its server stopped before it ended', finished_at = now()
WHERE status IN ('queued', 'running') AND beat_at < now() - make_interval(secs => @silent_seconds::float8);

-- name: InsertBackfill :one
INSERT INTO catalog.embedding_backfills (mode, dataset_ids, requested_by, total)
VALUES (@mode, @dataset_ids, @requested_by, @total)
RETURNING id;

-- name: StartBackfill :exec
UPDATE catalog.embedding_backfills SET status = 'running', started_at = coalesce(started_at, now()), beat_at = now()
WHERE id = @id;

-- name: BackfillProgress :exec
UPDATE catalog.embedding_backfills SET processed = @processed, failed = @failed, beat_at = now() WHERE id = @id;

-- name: EndBackfill :exec
UPDATE catalog.embedding_backfills SET status = @status, error = @error, finished_at = now(), beat_at = now() WHERE id = @id;

-- name: GetBackfill :one
SELECT * FROM catalog.embedding_backfills WHERE id = @id;

-- name: LatestBackfill :one
SELECT * FROM catalog.embedding_backfills ORDER BY created_at DESC LIMIT 1;
