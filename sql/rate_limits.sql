-- name: TakeRateToken :one
-- Refills the bucket of (scope, key) for the time since its last use and takes one token when a
-- whole one is there; the row lock of the upsert orders concurrent takes from every replica.
-- granted says whether it was taken; tokens is what is left (or, refused, what there is).
INSERT INTO catalog.rate_buckets AS b (scope, key, tokens, granted, at)
VALUES (@scope, @key, (@burst::float8) - 1, true, now())
ON CONFLICT (scope, key) DO UPDATE SET
    granted = least(@burst::float8, b.tokens + extract(epoch FROM now() - b.at)::float8 * @per_second::float8) >= 1,
    tokens = least(@burst::float8, b.tokens + extract(epoch FROM now() - b.at)::float8 * @per_second::float8)
        - CASE WHEN least(@burst::float8, b.tokens + extract(epoch FROM now() - b.at)::float8 * @per_second::float8) >= 1 THEN 1 ELSE 0 END,
    at = now()
RETURNING tokens, granted;

-- name: SweepRateBuckets :exec
-- Buckets unused for longer than they take to fill again are as good as absent.
DELETE FROM catalog.rate_buckets WHERE at < now() - make_interval(secs => @idle_seconds::float8);
