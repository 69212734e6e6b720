-- STAC imports (issue 30). An import is a parent ingestion job (catalog.ingest_jobs, the row Get
-- Job Status reads) with one row here per remote item; each item's data file becomes an ordinary
-- upload job of its own (job_id), imported by the vector or raster ingest like any upload. The
-- parent's status, progress and per-item failures follow from its items (stac_import_tally), so
-- they hold whichever server ran which part.
CREATE TABLE catalog.stac_imports (
    job_id        uuid PRIMARY KEY REFERENCES catalog.ingest_jobs (id) ON DELETE CASCADE,
    owner_id      uuid REFERENCES catalog.users (id) ON DELETE CASCADE,
    url           text NOT NULL CHECK (char_length(url) <= 2048),
    collection    text NOT NULL DEFAULT '', -- the remote collection(s) imported from, for the one-at-a-time rule
    visibility    text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX stac_imports_owner ON catalog.stac_imports (owner_id, url, collection);

CREATE TABLE catalog.stac_import_items (
    id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    import_id     uuid NOT NULL REFERENCES catalog.stac_imports (job_id) ON DELETE CASCADE,
    position      integer NOT NULL,
    item_id       text NOT NULL,
    source_href   text NOT NULL,  -- the item's self link: with the owner, what a re-import is matched by
    asset_href    text NOT NULL,
    filename      text NOT NULL,  -- the name the asset is staged under (its extension picks the ingest)
    state         text NOT NULL DEFAULT 'queued'
                  CHECK (state IN ('queued', 'downloading', 'ingesting', 'complete', 'skipped', 'failed')),
    job_id        uuid REFERENCES catalog.ingest_jobs (id) ON DELETE SET NULL,
    -- The dataset the item updates (an earlier import of it), then the one that holds it.
    dataset_id    uuid REFERENCES catalog.datasets (id) ON DELETE SET NULL,
    collection_id uuid REFERENCES catalog.collections (id) ON DELETE SET NULL,
    error         text,
    metadata      jsonb NOT NULL, -- what the record gets from the item (stacimport.Metadata)
    updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX stac_import_items_import ON catalog.stac_import_items (import_id, position);
CREATE UNIQUE INDEX stac_import_items_job ON catalog.stac_import_items (job_id);

-- A remote collection becomes one catalog collection per importing user, made once and found
-- again by the collection's own link on the next import.
CREATE TABLE catalog.stac_collections (
    owner_id      uuid NOT NULL REFERENCES catalog.users (id) ON DELETE CASCADE,
    source_href   text NOT NULL,
    collection_id uuid NOT NULL REFERENCES catalog.collections (id) ON DELETE CASCADE,
    PRIMARY KEY (owner_id, source_href)
);

-- The dataset an item was imported into: origin 'stac', its self link as source_url, owned by
-- whoever imported it.
CREATE INDEX datasets_stac_source ON catalog.datasets (created_by, source_url) WHERE origin = 'stac';

-- The parent job from its items: running until every item ended, then complete when any item
-- was imported (or found unchanged), failed when none was; each failed item is a warning.
CREATE FUNCTION catalog.stac_import_tally(parent uuid) RETURNS void LANGUAGE sql AS $$
    WITH c AS (
        SELECT count(*) AS total,
               count(*) FILTER (WHERE state IN ('complete', 'skipped', 'failed')) AS done,
               count(*) FILTER (WHERE state IN ('complete', 'skipped')) AS ok,
               count(*) FILTER (WHERE state = 'failed') AS failed,
               coalesce(jsonb_agg(jsonb_build_object('kind', 'generic',
                   'message', 'item ' || item_id || ': ' || coalesce(error, 'failed')) ORDER BY position)
                   FILTER (WHERE state = 'failed'), '[]'::jsonb) AS warnings,
               min(error) FILTER (WHERE state = 'failed') AS first_error
        FROM catalog.stac_import_items WHERE import_id = parent)
    UPDATE catalog.ingest_jobs j SET
        status = CASE WHEN c.done < c.total THEN 'running' WHEN c.ok = 0 AND c.total > 0 THEN 'failed' ELSE 'complete' END,
        current_step = CASE WHEN c.done < c.total THEN 'registering' ELSE 'complete' END,
        progress = CASE WHEN c.total = 0 THEN 1 ELSE c.done::float8 / c.total END,
        rows_processed = c.ok, rows_failed = c.failed, warnings = c.warnings,
        warning_message = CASE WHEN c.failed > 0 THEN c.failed || ' of ' || c.total || ' items could not be imported' END,
        error_message = CASE WHEN c.done = c.total AND c.ok = 0 AND c.total > 0 THEN 'no item could be imported: ' || c.first_error END,
        completed_at = CASE WHEN c.done = c.total THEN coalesce(j.completed_at, now()) END,
        updated_at = now()
    FROM c WHERE j.id = parent
$$;

-- An item's upload job ended (or was retried to an end): the item and its import follow. An item
-- that updates an earlier import's dataset keeps naming that dataset (the new record's data moves
-- into it: stacimport.Service.Finish).
CREATE FUNCTION catalog.stac_item_job_ended() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    parent uuid;
BEGIN
    UPDATE catalog.stac_import_items i SET
        state = CASE WHEN NEW.status = 'complete' THEN 'complete' ELSE 'failed' END,
        error = CASE WHEN NEW.status = 'complete' THEN NULL ELSE coalesce(NEW.error_message, 'the import was ' || NEW.status) END,
        dataset_id = coalesce(i.dataset_id, NEW.dataset_id), updated_at = now()
    WHERE i.job_id = NEW.id
    RETURNING i.import_id INTO parent;
    IF parent IS NOT NULL THEN
        PERFORM catalog.stac_import_tally(parent);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER ingest_jobs_stac_item AFTER UPDATE OF status ON catalog.ingest_jobs FOR EACH ROW
WHEN (NEW.status IN ('complete', 'failed', 'cancelled') AND OLD.status IS DISTINCT FROM NEW.status)
EXECUTE FUNCTION catalog.stac_item_job_ended();
