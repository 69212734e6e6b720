-- Vector tiles are cached by the dataset's content version: tile_version moves on with every
-- change of what a tile of the dataset shows (a feature edit, a reupload or refresh, a column
-- change, a new table or reference system), and with nothing else, so editing a title keeps the
-- cached tiles. A trigger rather than each writer: every path that changes the data also writes
-- one of these columns, including the ones to come.
ALTER TABLE catalog.datasets ADD COLUMN tile_version bigint NOT NULL DEFAULT 1;

CREATE FUNCTION catalog.bump_tile_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.tile_version := OLD.tile_version + 1;
    RETURN NEW;
END
$$;

CREATE TRIGGER datasets_tile_version BEFORE UPDATE ON catalog.datasets FOR EACH ROW
WHEN (OLD.last_edited_at IS DISTINCT FROM NEW.last_edited_at
   OR OLD.last_refreshed_at IS DISTINCT FROM NEW.last_refreshed_at
   OR OLD.column_info IS DISTINCT FROM NEW.column_info
   OR OLD.srid IS DISTINCT FROM NEW.srid
   OR OLD.geometry_type IS DISTINCT FROM NEW.geometry_type
   OR OLD.table_schema IS DISTINCT FROM NEW.table_schema
   OR OLD.table_name IS DISTINCT FROM NEW.table_name)
EXECUTE FUNCTION catalog.bump_tile_version();

-- Servers keep dataset records in memory so that a repeated tile needs no round trip. Every
-- committed change of a record or of its grants is announced on the channel catalog_datasets
-- (payload: the dataset id), and every server listening forgets its copy. PostgreSQL delivers
-- notifications at commit, folds duplicates within a transaction, and drops none while the
-- listener is connected; a server that loses its listening connection forgets everything.
CREATE FUNCTION catalog.announce_dataset_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'datasets' THEN
        PERFORM pg_notify('catalog_datasets', OLD.id::text);
    ELSIF TG_OP = 'INSERT' THEN
        PERFORM pg_notify('catalog_datasets', NEW.dataset_id::text);
    ELSE
        PERFORM pg_notify('catalog_datasets', OLD.dataset_id::text);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER datasets_announce AFTER UPDATE OR DELETE ON catalog.datasets
FOR EACH ROW EXECUTE FUNCTION catalog.announce_dataset_change();
CREATE TRIGGER dataset_grants_announce AFTER INSERT OR UPDATE OR DELETE ON catalog.dataset_grants
FOR EACH ROW EXECUTE FUNCTION catalog.announce_dataset_change();
