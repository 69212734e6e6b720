-- An import proves it is alive by beating every few seconds; a running job whose heartbeat
-- stops (its server was killed) is failed and its partial table dropped within a minute or two,
-- not after River's hour-long rescue. attempts names each run's table (data.ds_<job>_<attempt>),
-- so a late-dying earlier run can never drop the table of the run that replaced it.
ALTER TABLE catalog.ingest_jobs
    ADD COLUMN heartbeat_at timestamptz,
    ADD COLUMN attempts integer NOT NULL DEFAULT 0;

CREATE INDEX ingest_jobs_running_heartbeat ON catalog.ingest_jobs (heartbeat_at) WHERE status = 'running';
