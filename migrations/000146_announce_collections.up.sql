-- Every change of the collections is announced on catalog_collections (no payload), as dataset
-- changes are on catalog_datasets: servers keep the collections' names and descriptions so that a
-- text search matching none asks nothing (internal/catalog/collectionnames.go), and forget them
-- on the announcement. One per statement: a bulk change is one announcement.
CREATE FUNCTION catalog.announce_collections() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('catalog_collections', '');
    RETURN NULL;
END
$$;

CREATE TRIGGER collections_announce AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON catalog.collections
    FOR EACH STATEMENT EXECUTE FUNCTION catalog.announce_collections();
