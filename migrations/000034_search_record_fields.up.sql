-- A search reads its page's records only: the documents carry a copy of what decides whether a
-- record matches apart from its text (who may see it, and its stored box), so the match, its
-- order and its count are found in dataset_search alone, and only the page's records are looked
-- up in catalog.datasets instead of every matching one (at 100,000 records a common word matches
-- hundreds of records within a bbox, and their lookups took a quarter of the search). Triggers write
-- the copy in the same statement as the record's change, so every snapshot sees the copy and the
-- record agree.
ALTER TABLE catalog.dataset_search
    ADD COLUMN visibility    text,
    ADD COLUMN record_status text,
    ADD COLUMN created_by    uuid,
    ADD COLUMN extent_bbox   double precision[];

-- A new document takes its record's fields as it is inserted (by catalog.index_dataset, after the
-- record's insert): one row version, where an update after the insert left a dead one behind for
-- every record until vacuum.
CREATE FUNCTION catalog.dataset_search_fill() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    SELECT d.extent_bbox, catalog.search_extent(d.extent_bbox), d.visibility, d.record_status, d.created_by
    INTO NEW.extent_bbox, NEW.extent, NEW.visibility, NEW.record_status, NEW.created_by
    FROM catalog.datasets d WHERE d.id = NEW.dataset_id;
    RETURN NEW;
END
$$;
CREATE TRIGGER dataset_search_fill BEFORE INSERT ON catalog.dataset_search
    FOR EACH ROW EXECUTE FUNCTION catalog.dataset_search_fill();

-- A changed record updates its document's copy.
CREATE FUNCTION catalog.datasets_search_record() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE catalog.dataset_search SET extent = catalog.search_extent(NEW.extent_bbox), extent_bbox = NEW.extent_bbox,
        visibility = NEW.visibility, record_status = NEW.record_status, created_by = NEW.created_by
    WHERE dataset_id = NEW.id;
    RETURN NULL;
END
$$;
DROP TRIGGER datasets_search_extent ON catalog.datasets;
DROP FUNCTION catalog.datasets_search_extent();
CREATE TRIGGER datasets_search_record AFTER UPDATE OF extent_bbox, visibility, record_status, created_by
    ON catalog.datasets FOR EACH ROW EXECUTE FUNCTION catalog.datasets_search_record();

UPDATE catalog.dataset_search s SET extent_bbox = d.extent_bbox, visibility = d.visibility, record_status = d.record_status,
    created_by = d.created_by
FROM catalog.datasets d WHERE d.id = s.dataset_id;
