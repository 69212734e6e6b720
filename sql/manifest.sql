-- name: ManifestEntries :many
-- The entries of a user's earlier applies among keys, with the state of their last job.
SELECT m.key, m.dataset_id, m.job_id, m.source_digest, m.meta_digest, m.declared,
       (d.id IS NOT NULL)::bool AS dataset_exists, d.record_type AS record_type,
       j.status AS job_status, coalesce(j.committed, false)::bool AS job_committed
FROM catalog.manifest_entries m
LEFT JOIN catalog.datasets d ON d.id = m.dataset_id
LEFT JOIN catalog.ingest_jobs j ON j.id = m.job_id
WHERE m.owner_id = @owner_id AND m.key = ANY(@keys::text[]);

-- name: SaveManifestEntry :exec
INSERT INTO catalog.manifest_entries (owner_id, key, dataset_id, job_id, collection_id, source_digest, meta_digest, declared)
VALUES (@owner_id, @key, sqlc.narg(dataset_id), sqlc.narg(job_id), sqlc.narg(collection_id), @source_digest, @meta_digest, @declared)
ON CONFLICT (owner_id, key) DO UPDATE SET dataset_id = EXCLUDED.dataset_id, job_id = EXCLUDED.job_id,
    collection_id = EXCLUDED.collection_id, source_digest = EXCLUDED.source_digest, meta_digest = EXCLUDED.meta_digest,
    declared = EXCLUDED.declared, updated_at = now();

-- name: ManifestEntryOfJob :one
-- The entry whose creating job this is (locked: its completion names the dataset once).
SELECT owner_id, key, collection_id, declared FROM catalog.manifest_entries
WHERE job_id = @job_id AND dataset_id IS NULL
FOR UPDATE;

-- name: SetManifestEntryDataset :exec
UPDATE catalog.manifest_entries SET dataset_id = @dataset_id, updated_at = now()
WHERE owner_id = @owner_id AND key = @key;

-- name: SetManifestRecord :exec
-- What a manifest says of a record beyond the commit's title, summary and status.
UPDATE catalog.datasets SET license = sqlc.narg(license), attribution = sqlc.narg(attribution),
    source_organization = sqlc.narg(source_organization), updated_at = now()
WHERE id = @id;

-- name: DeleteManifestKeywords :exec
-- The keywords an earlier apply gave the record (those a curator added with a vocabulary stay).
DELETE FROM catalog.record_keywords
WHERE dataset_id = @dataset_id AND vocabulary_uri IS NULL AND lower(keyword) = ANY(@keywords::text[]);

-- name: AddManifestKeywords :exec
INSERT INTO catalog.record_keywords (dataset_id, keyword)
SELECT @dataset_id, k FROM unnest(@keywords::text[]) AS k
ON CONFLICT DO NOTHING;

-- name: CollectionByName :one
SELECT id, created_by FROM catalog.collections WHERE lower(name) = lower(@name);
