-- VRT datasets (issue 29): mosaics and band stacks of raster datasets. A VRT dataset is a record
-- of record_type vrt_dataset whose data, like a raster's, is one Cloud Optimized GeoTIFF in the
-- object store named by raster->>'storage_key'. Each generation (a build, run as an ingest job on
-- River) mosaics or stacks the COGs of the sources it may use and converts the result with the
-- raster ingest's conversion; the record points at the newest generation that finished.
--
-- Who may see what. A VRT is its owner's dataset, which the owner may publish, share by link and
-- embed, so it may only hold data its owner could publish: the owner's own rasters, public and
-- published ones, and any for an admin (the rule of catalog.dataset_lendable, migration 65: a grant
-- or internal visibility lets a user read a dataset, never widen its audience). And its audience
-- is never wider than any source's: a public VRT holds public sources only, an internal or
-- restricted one public or internal sources, a private one any the owner may include
-- (vrt_refusal). A source that stops qualifying (made private, unpublished, handed to another
-- owner, deleted) is withdrawn from every VRT whose served generation holds its data, in the same
-- transaction as the change (vrt_source_changed): the record then names no file, so no reader sees
-- one more pixel of it, and a regeneration without it is asked for (wanted), which the server
-- queues within a second or two (internal/ingest, vrt_sweep.go).

CREATE TABLE catalog.vrt_datasets (
    dataset_id          uuid PRIMARY KEY REFERENCES catalog.datasets (id) ON DELETE CASCADE,
    vrt_type            text NOT NULL CHECK (vrt_type IN ('mosaic', 'band_stack')),
    resolution_strategy text NOT NULL CHECK (resolution_strategy IN ('finest', 'coarsest', 'average')),
    -- The generation whose COG the record names; null before the first one and after a withdrawal.
    live_generation     uuid,
    -- A regeneration asked for by a change of a source (why), not queued yet.
    wanted              text CHECK (wanted IN ('source_removed', 'source_updated')),
    next_generation     integer NOT NULL DEFAULT 1
);
CREATE INDEX vrt_datasets_wanted ON catalog.vrt_datasets (dataset_id) WHERE wanted IS NOT NULL;

-- The sources in mosaic order (later ones are drawn over earlier ones; a stack's bands in order).
CREATE TABLE catalog.vrt_sources (
    vrt_id    uuid NOT NULL REFERENCES catalog.vrt_datasets (dataset_id) ON DELETE CASCADE,
    source_id uuid NOT NULL REFERENCES catalog.datasets (id) ON DELETE CASCADE,
    position  bigint GENERATED ALWAYS AS IDENTITY,
    added_by  uuid REFERENCES catalog.users (id) ON DELETE SET NULL,
    added_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (vrt_id, source_id)
);
CREATE INDEX vrt_sources_source ON catalog.vrt_sources (source_id);

-- One row per generation; its status, step, progress, timing and error are its ingest job's
-- (same id), so Get Job Status follows a generation like any import and the sweep of silent runs
-- fails one whose server died. vrt_id has no reference: a generation's COG outlives a deleted VRT
-- until the sweep has removed it.
CREATE TABLE catalog.vrt_generations (
    id             uuid PRIMARY KEY REFERENCES catalog.ingest_jobs (id) ON DELETE CASCADE,
    vrt_id         uuid NOT NULL,
    generation     integer NOT NULL,
    trigger        text NOT NULL CHECK (trigger IN ('create', 'source_added', 'source_removed', 'source_updated', 'manual')),
    requested_by   uuid,
    -- Where its COG goes, fixed before it is written, so the COG of a run that died is found.
    storage_key    text NOT NULL,
    -- What it was built from (set when the build starts): [{id, key}] in order, the same ids for
    -- the index, and the members left out with why ([{id, reason}]).
    sources        jsonb NOT NULL DEFAULT '[]'::jsonb,
    source_ids     uuid[] NOT NULL DEFAULT '{}',
    skipped        jsonb NOT NULL DEFAULT '[]'::jsonb,
    size_bytes     bigint,
    live_from      timestamptz, -- when the record started serving it
    retired_at     timestamptz, -- when it stopped (replaced or withdrawn); its COG goes after a grace
    cog_removed_at timestamptz,
    created_at     timestamptz NOT NULL DEFAULT now(),
    UNIQUE (vrt_id, generation)
);
CREATE INDEX vrt_generations_served ON catalog.vrt_generations USING gin (source_ids)
    WHERE live_from IS NOT NULL AND retired_at IS NULL;
CREATE INDEX vrt_generations_cogs ON catalog.vrt_generations (vrt_id) WHERE cog_removed_at IS NULL;

-- Who may read a dataset: 3 anyone (public and published), 2 every signed-in user (internal and
-- published), 0 fewer (private, restricted to grantees, or unpublished). Restricted counts as
-- private: its grantees need not be the VRT's.
CREATE FUNCTION catalog.vrt_audience(visibility text, record_status text) RETURNS integer LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN record_status IS DISTINCT FROM 'published' THEN 0
                WHEN visibility = 'public' THEN 3 WHEN visibility = 'internal' THEN 2 ELSE 0 END
$$;

CREATE FUNCTION catalog.user_is_admin(id uuid) RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT coalesce((SELECT u.role = 'admin' AND u.status = 'active' FROM catalog.users u WHERE u.id = user_is_admin.id), false)
$$;

-- Why a dataset may not be a source of a VRT of owner (an admin or not) with visibility
-- vrt_visibility, or null when it may: not_raster, not_lendable (the owner could not publish it),
-- narrower (fewer people may read it than the VRT), no_data (a VRT without a generation yet).
CREATE FUNCTION catalog.vrt_refusal(record_type text, raster jsonb, visibility text, record_status text, created_by uuid,
                                    owner uuid, owner_admin boolean, vrt_visibility text)
RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN record_type NOT IN ('raster_dataset', 'vrt_dataset') THEN 'not_raster'
        WHEN NOT (owner_admin OR (owner IS NOT NULL AND created_by = owner)
                  OR (visibility = 'public' AND record_status = 'published')) THEN 'not_lendable'
        WHEN catalog.vrt_audience(visibility, record_status) < catalog.visibility_rank(vrt_visibility) THEN 'narrower'
        WHEN coalesce(raster->>'storage_key', '') = '' THEN 'no_data'
    END
$$;

-- The state a VRT's record shows (raster.vrt.status, with source_count): pending (no generation
-- served yet, or withdrawn, and one is queued or running), ready, stale (one is served and a newer
-- one is queued or running), failed (the newest generation failed; any served one still is).
CREATE FUNCTION catalog.vrt_set_status(v uuid) RETURNS void LANGUAGE sql AS $$
    WITH x AS (
        SELECT x.live_generation, x.wanted IS NOT NULL OR EXISTS (
                   SELECT 1 FROM catalog.vrt_generations g JOIN catalog.ingest_jobs j ON j.id = g.id
                   WHERE g.vrt_id = x.dataset_id AND j.status IN ('pending', 'running')) AS busy,
               (SELECT j.status FROM catalog.vrt_generations g JOIN catalog.ingest_jobs j ON j.id = g.id
                WHERE g.vrt_id = x.dataset_id ORDER BY g.generation DESC LIMIT 1) AS newest,
               (SELECT count(*) FROM catalog.vrt_sources s WHERE s.vrt_id = x.dataset_id) AS sources
        FROM catalog.vrt_datasets x WHERE x.dataset_id = v
    ), s AS (
        SELECT jsonb_build_object('status', CASE
                   WHEN busy AND live_generation IS NULL THEN 'pending'
                   WHEN busy THEN 'stale'
                   WHEN newest = 'failed' THEN 'failed'
                   WHEN live_generation IS NULL THEN 'pending'
                   ELSE 'ready' END,
               'source_count', sources) AS vrt
        FROM x
    )
    UPDATE catalog.datasets d SET raster = jsonb_set(d.raster, '{vrt}', coalesce(d.raster->'vrt', '{}'::jsonb) || s.vrt)
    FROM s
    WHERE d.id = v AND (d.raster->'vrt'->>'status' IS DISTINCT FROM s.vrt->>'status'
                        OR (d.raster->'vrt'->'source_count') IS DISTINCT FROM s.vrt->'source_count')
$$;

-- Every writer locks in one order, so that they wait for one another instead of deadlocking: the
-- sources' records, the VRT's record, its vrt_datasets row, its generations.

-- Withdraws VRT v's served COG: the record names no file (tiles, quicklook and download say none
-- is ready), the generation is retired (its COG goes after the grace) and a regeneration is wanted.
-- The record's change is a change of a source for the VRTs holding v in turn.
CREATE FUNCTION catalog.vrt_withdraw(v uuid, reason text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    served uuid;
BEGIN
    PERFORM 1 FROM catalog.datasets WHERE id = v FOR UPDATE;
    UPDATE catalog.datasets SET raster = jsonb_set(raster, '{storage_key}', '""'::jsonb)
    WHERE id = v AND coalesce(raster->>'storage_key', '') <> '';
    SELECT live_generation INTO served FROM catalog.vrt_datasets WHERE dataset_id = v FOR UPDATE;
    UPDATE catalog.vrt_datasets SET live_generation = NULL, wanted = coalesce(wanted, reason) WHERE dataset_id = v;
    UPDATE catalog.vrt_generations SET retired_at = now() WHERE id = served;
    PERFORM catalog.vrt_set_status(v);
END
$$;

-- A source changed (its audience, owner or data) or goes (gone): every VRT whose served
-- generation holds its data and that may no longer include it is withdrawn; every VRT listing it
-- regenerates (reason).
CREATE FUNCTION catalog.vrt_source_changed(src uuid, gone boolean, reason text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v uuid;
BEGIN
    FOR v IN
        SELECT g.vrt_id FROM catalog.vrt_generations g
        JOIN catalog.vrt_datasets x ON x.dataset_id = g.vrt_id AND x.live_generation = g.id
        JOIN catalog.datasets vd ON vd.id = g.vrt_id
        LEFT JOIN catalog.datasets s ON s.id = src
        WHERE g.source_ids @> ARRAY[src] AND g.live_from IS NOT NULL AND g.retired_at IS NULL
          AND (gone OR s.id IS NULL OR catalog.vrt_refusal(s.record_type, s.raster, s.visibility, s.record_status, s.created_by,
                   vd.created_by, catalog.user_is_admin(vd.created_by), vd.visibility) IS NOT NULL)
    LOOP
        PERFORM catalog.vrt_withdraw(v, reason);
    END LOOP;
    FOR v IN SELECT vs.vrt_id FROM catalog.vrt_sources vs WHERE vs.source_id = src LOOP
        PERFORM 1 FROM catalog.datasets WHERE id = v FOR UPDATE;
        UPDATE catalog.vrt_datasets SET wanted = coalesce(wanted, reason) WHERE dataset_id = v;
        PERFORM catalog.vrt_set_status(v);
    END LOOP;
END
$$;

-- VRT v's owner changed or lost the admin role: its served generation is re-checked as a whole.
CREATE FUNCTION catalog.vrt_recheck(v uuid) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM catalog.datasets WHERE id = v FOR UPDATE;
    IF EXISTS (SELECT 1 FROM catalog.vrt_datasets x
               JOIN catalog.vrt_generations g ON g.id = x.live_generation
               JOIN catalog.datasets vd ON vd.id = x.dataset_id
               CROSS JOIN LATERAL unnest(g.source_ids) AS u(id)
               LEFT JOIN catalog.datasets s ON s.id = u.id
               WHERE x.dataset_id = v
                 AND (s.id IS NULL OR catalog.vrt_refusal(s.record_type, s.raster, s.visibility, s.record_status, s.created_by,
                          vd.created_by, catalog.user_is_admin(vd.created_by), vd.visibility) IS NOT NULL)) THEN
        PERFORM catalog.vrt_withdraw(v, 'source_updated');
    END IF;
    UPDATE catalog.vrt_datasets SET wanted = coalesce(wanted, 'source_updated') WHERE dataset_id = v;
    PERFORM catalog.vrt_set_status(v);
END
$$;

CREATE FUNCTION catalog.vrt_dataset_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM catalog.vrt_source_changed(NEW.id, false, 'source_updated');
    IF NEW.record_type = 'vrt_dataset' AND OLD.created_by IS DISTINCT FROM NEW.created_by THEN
        PERFORM catalog.vrt_recheck(NEW.id);
    END IF;
    RETURN NULL;
END
$$;

-- Every path that narrows, re-owns or replaces a dataset's data writes one of these columns.
CREATE TRIGGER datasets_vrt_source AFTER UPDATE ON catalog.datasets FOR EACH ROW
WHEN (OLD.visibility IS DISTINCT FROM NEW.visibility
   OR OLD.record_status IS DISTINCT FROM NEW.record_status
   OR OLD.created_by IS DISTINCT FROM NEW.created_by
   OR OLD.raster->>'storage_key' IS DISTINCT FROM NEW.raster->>'storage_key')
EXECUTE FUNCTION catalog.vrt_dataset_updated();

-- Before the deletion: the memberships it cascades to are still there to find the VRTs by.
CREATE FUNCTION catalog.vrt_dataset_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM catalog.vrt_source_changed(OLD.id, true, 'source_removed');
    RETURN OLD;
END
$$;

CREATE TRIGGER datasets_vrt_source_deleted BEFORE DELETE ON catalog.datasets FOR EACH ROW
EXECUTE FUNCTION catalog.vrt_dataset_deleted();

-- A source removed (by Remove VRT Source or with its dataset) changes the count the record shows.
CREATE FUNCTION catalog.vrt_source_left() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM catalog.vrt_set_status(OLD.vrt_id);
    RETURN NULL;
END
$$;

CREATE TRIGGER vrt_sources_left AFTER DELETE ON catalog.vrt_sources FOR EACH ROW
EXECUTE FUNCTION catalog.vrt_source_left();

-- A VRT is never seen by more people than any of its sources: widening its visibility past a
-- source's is refused (SQLSTATE MV001, answered 422), whatever path writes it.
CREATE FUNCTION catalog.vrt_widening() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    narrower text;
BEGIN
    SELECT string_agg(vs.source_id::text, ', ' ORDER BY vs.position) INTO narrower
    FROM catalog.vrt_sources vs JOIN catalog.datasets s ON s.id = vs.source_id
    WHERE vs.vrt_id = NEW.id AND catalog.vrt_audience(s.visibility, s.record_status) < catalog.visibility_rank(NEW.visibility);
    IF narrower IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'MV001', MESSAGE = format(
            'a VRT is never seen by more people than any of its sources, and these are seen by fewer than a %s dataset is: %s; '
            'remove them from the VRT (Remove VRT Source), or widen them, first', NEW.visibility, narrower);
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER datasets_vrt_widening BEFORE UPDATE OF visibility ON catalog.datasets FOR EACH ROW
WHEN (NEW.record_type = 'vrt_dataset' AND catalog.visibility_rank(NEW.visibility) > catalog.visibility_rank(OLD.visibility))
EXECUTE FUNCTION catalog.vrt_widening();

-- An owner who stops being an admin may no longer include other owners' non-public rasters.
CREATE FUNCTION catalog.vrt_owner_demoted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    v uuid;
BEGIN
    FOR v IN SELECT x.dataset_id FROM catalog.vrt_datasets x JOIN catalog.datasets d ON d.id = x.dataset_id
             WHERE d.created_by = NEW.id LOOP
        PERFORM catalog.vrt_recheck(v);
    END LOOP;
    RETURN NULL;
END
$$;

CREATE TRIGGER users_vrt_owner_demoted AFTER UPDATE OF role, status ON catalog.users FOR EACH ROW
WHEN (OLD.role = 'admin' AND OLD.status = 'active' AND NOT (NEW.role = 'admin' AND NEW.status = 'active'))
EXECUTE FUNCTION catalog.vrt_owner_demoted();
