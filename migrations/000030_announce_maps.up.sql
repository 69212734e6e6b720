-- Servers keep map documents in memory (internal/maps): every committed change of a map, its
-- layers or its pictures is announced on catalog_maps (payload: the map id), as dataset changes
-- are on catalog_datasets (migration 24); a server forgets what it kept on either.
CREATE FUNCTION catalog.announce_map_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'maps' THEN
        PERFORM pg_notify('catalog_maps', coalesce(NEW.id, OLD.id)::text);
    ELSIF TG_OP = 'DELETE' THEN
        PERFORM pg_notify('catalog_maps', OLD.map_id::text);
    ELSE
        PERFORM pg_notify('catalog_maps', NEW.map_id::text);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER maps_announce AFTER UPDATE OR DELETE ON catalog.maps
FOR EACH ROW EXECUTE FUNCTION catalog.announce_map_change();
CREATE TRIGGER map_layers_announce AFTER INSERT OR UPDATE OR DELETE ON catalog.map_layers
FOR EACH ROW EXECUTE FUNCTION catalog.announce_map_change();
CREATE TRIGGER map_images_announce AFTER INSERT OR UPDATE OR DELETE ON catalog.map_images
FOR EACH ROW EXECUTE FUNCTION catalog.announce_map_change();
