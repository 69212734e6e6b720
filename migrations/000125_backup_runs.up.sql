-- Backups of this database: a row per backup `meridian backup` finished, and one for the backup a
-- restored database came from (`meridian restore`). The health report's backup age reads the
-- latest. It lives in the database, not on a replica's disk, so every replica reports the same
-- age, and a restored database reports the age of the backup it holds: that is how much of the
-- catalog a second loss would take back. taken_at is the moment of the database snapshot (what a
-- restore brings back), not the end of the copy.
CREATE TABLE catalog.backup_runs (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind        text NOT NULL CHECK (kind IN ('backup', 'restore')),
    taken_at    timestamptz NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now(),
    label       text NOT NULL DEFAULT ''
);
CREATE INDEX backup_runs_taken_at ON catalog.backup_runs (taken_at DESC);
