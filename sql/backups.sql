-- name: RecordBackupRun :exec
INSERT INTO catalog.backup_runs (kind, taken_at, label) VALUES (@kind, @taken_at, @label);

-- name: LatestBackupRun :one
-- The newest snapshot a backup or a restore recorded.
SELECT taken_at FROM catalog.backup_runs ORDER BY taken_at DESC LIMIT 1;
