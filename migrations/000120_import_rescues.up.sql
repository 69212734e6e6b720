-- A run whose heartbeat went silent (its replica was killed) is handed back to the queue and run
-- again on whichever replica takes it, up to IMPORT_STALL_RESCUES times per job; rescues counts
-- them, so a file whose import takes its server down each time ends failed instead of taking
-- every replica down in turn.
--
-- alive_until is the deadline the running server itself sets at its claim and every beat (now
-- plus its own IMPORT_STALL_TIMEOUT): a sweeper configured with a shorter stall time (replicas
-- mid-way through a rolling change of the setting) never takes a run that is beating at its own,
-- slower, pace.
ALTER TABLE catalog.ingest_jobs
    ADD COLUMN rescues integer NOT NULL DEFAULT 0,
    ADD COLUMN alive_until timestamptz;
