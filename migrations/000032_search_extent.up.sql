-- A search with a text and a bbox finds its records in one bitmap of dataset_search: the
-- documents that match the text AND (BitmapAnd) the extents that meet the bbox, instead of
-- looking up every matching document's record to test its extent. The extent here is a coarse
-- copy for the index (an extent crossing the antimeridian covers all longitudes); the exact test
-- stays on the record, so the copy can only ever let more records through to it.
CREATE FUNCTION catalog.search_extent(bbox double precision[]) RETURNS geometry
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN cardinality(bbox) <> 4 THEN NULL
        WHEN bbox[1] <= bbox[3] THEN ST_MakeEnvelope(bbox[1], bbox[2], bbox[3], bbox[4], 4326)
        ELSE ST_MakeEnvelope(-180, bbox[2], 180, bbox[4], 4326) END
$$;

ALTER TABLE catalog.dataset_search ADD COLUMN extent geometry;

-- After datasets_index (triggers fire in name order), which makes the row of a new record.
CREATE FUNCTION catalog.datasets_search_extent() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE catalog.dataset_search SET extent = catalog.search_extent(NEW.extent_bbox) WHERE dataset_id = NEW.id;
    RETURN NULL;
END
$$;
CREATE TRIGGER datasets_search_extent AFTER INSERT OR UPDATE OF extent_bbox ON catalog.datasets
    FOR EACH ROW EXECUTE FUNCTION catalog.datasets_search_extent();

UPDATE catalog.dataset_search s SET extent = catalog.search_extent(d.extent_bbox) FROM catalog.datasets d WHERE d.id = s.dataset_id;
CREATE INDEX dataset_search_extent_idx ON catalog.dataset_search USING gist (extent);
