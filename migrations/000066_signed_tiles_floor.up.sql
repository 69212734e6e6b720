-- A signed tile template names only its table and its expiry (sig = HMAC over "{scope}:{exp}",
-- open-points.md), so it cannot say who it was issued to, and it kept serving for up to an hour
-- and a quarter after its dataset's audience narrowed (issue 28). Each dataset now carries
-- signed_tiles_floor: templates whose exp is at or below it are void, and templates issued after
-- it get an exp above it (internal/tiles). Whenever the audience of a dataset narrows (a lower
-- visibility, leaving published, a new owner, a grant removed or moved), the floor moves past
-- every exp issued so far: past exp of a template issued now (rounded up to the quarter hour
-- with the configured lifetime, as internal/tiles rounds it) and past the bumped exps of
-- templates issued after the previous narrowing (floor + 900). A tile checks it on the kept
-- record, which the announcement of the change makes every server forget: no query per tile.
ALTER TABLE catalog.datasets ADD COLUMN signed_tiles_floor bigint NOT NULL DEFAULT 0;

-- The audiences in order: each includes the next (internal: every signed-in user, grantees of a
-- restricted dataset included; restricted: the owner too).
CREATE FUNCTION catalog.visibility_rank(visibility text) RETURNS integer LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE visibility WHEN 'public' THEN 3 WHEN 'internal' THEN 2 WHEN 'restricted' THEN 1 ELSE 0 END
$$;

-- The floor after a narrowing of a dataset whose floor was old. The template lifetime is the
-- setting tile_config.token_ttl_seconds (default 3600, as internal/settings says).
CREATE FUNCTION catalog.signed_tiles_floor_after(old bigint) RETURNS bigint LANGUAGE sql VOLATILE AS $$
    SELECT greatest(old + 900,
        ceil((extract(epoch FROM clock_timestamp())
              + coalesce((SELECT (s.value #>> '{}')::numeric FROM catalog.settings s WHERE s.key = 'tile_config.token_ttl_seconds'), 3600))
             / 900)::bigint * 900)
$$;

CREATE FUNCTION catalog.datasets_audience_narrowed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.signed_tiles_floor := catalog.signed_tiles_floor_after(OLD.signed_tiles_floor);
    RETURN NEW;
END
$$;

CREATE TRIGGER datasets_audience_narrowed BEFORE UPDATE ON catalog.datasets FOR EACH ROW
WHEN (catalog.visibility_rank(NEW.visibility) < catalog.visibility_rank(OLD.visibility)
   OR (OLD.record_status = 'published' AND NEW.record_status <> 'published')
   OR OLD.created_by IS DISTINCT FROM NEW.created_by)
EXECUTE FUNCTION catalog.datasets_audience_narrowed();

-- A grant removed, or moved to another user, role or dataset, narrows the audience it left.
CREATE FUNCTION catalog.dataset_grants_narrowed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE catalog.datasets SET signed_tiles_floor = catalog.signed_tiles_floor_after(signed_tiles_floor)
    WHERE id = OLD.dataset_id;
    RETURN NULL;
END
$$;

CREATE TRIGGER dataset_grants_removed AFTER DELETE ON catalog.dataset_grants
FOR EACH ROW EXECUTE FUNCTION catalog.dataset_grants_narrowed();
CREATE TRIGGER dataset_grants_moved AFTER UPDATE ON catalog.dataset_grants FOR EACH ROW
WHEN (OLD.dataset_id <> NEW.dataset_id OR OLD.user_id IS DISTINCT FROM NEW.user_id OR OLD.role IS DISTINCT FROM NEW.role)
EXECUTE FUNCTION catalog.dataset_grants_narrowed();
