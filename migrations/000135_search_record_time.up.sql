-- A search with a bbox and a datetime (STAC item search above all) found its candidates by the
-- extent's index alone and looked up every one of them in catalog.datasets to test its time: at
-- 10,000 records a 60x40 degree box and five years matched 135 records out of 586 candidates, and
-- the 451 lookups were most of the statement. The documents now carry the record's time as a
-- range, indexed with the extent, so the index answers both. The range spans the data vintage, or
-- the creation date for a record without one, from the earlier end to the later: a superset of
-- what either kind of datetime match accepts (a vintage's ends given in the wrong order included),
-- so the exact test on the record stays and decides; the range only narrows the candidates.
ALTER TABLE catalog.dataset_search ADD COLUMN record_time daterange;

-- The creation date widens by a day each way: a session's time zone decides which date a
-- timestamp falls on, and the copy must hold whatever zone the search runs in.
CREATE FUNCTION catalog.search_record_time(vintage_start date, vintage_end date, created timestamptz) RETURNS daterange
LANGUAGE sql STABLE AS $$
    SELECT daterange(least(s, e), greatest(s, e), '[]')
    FROM (SELECT coalesce(vintage_start, vintage_end, created::date - 1) AS s,
                 coalesce(vintage_end, vintage_start, created::date + 1) AS e) x
$$;

CREATE OR REPLACE FUNCTION catalog.dataset_search_fill() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    SELECT d.extent_bbox, catalog.search_extent(d.extent_bbox), d.visibility, d.record_status, d.created_by,
        d.record_type, d.theme_category, d.source_organization, d.srid, d.geometry_type,
        catalog.search_record_time(d.data_vintage_start, d.data_vintage_end, d.created_at)
    INTO NEW.extent_bbox, NEW.extent, NEW.visibility, NEW.record_status, NEW.created_by,
        NEW.record_type, NEW.theme_category, NEW.source_organization, NEW.srid, NEW.geometry_type, NEW.record_time
    FROM catalog.datasets d WHERE d.id = NEW.dataset_id;
    RETURN NEW;
END
$$;

CREATE OR REPLACE FUNCTION catalog.datasets_search_record() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE catalog.dataset_search SET extent = catalog.search_extent(NEW.extent_bbox), extent_bbox = NEW.extent_bbox,
        visibility = NEW.visibility, record_status = NEW.record_status, created_by = NEW.created_by,
        record_type = NEW.record_type, theme_category = NEW.theme_category, source_organization = NEW.source_organization,
        srid = NEW.srid, geometry_type = NEW.geometry_type,
        record_time = catalog.search_record_time(NEW.data_vintage_start, NEW.data_vintage_end, NEW.created_at)
    WHERE dataset_id = NEW.id;
    RETURN NULL;
END
$$;
DROP TRIGGER datasets_search_record ON catalog.datasets;
CREATE TRIGGER datasets_search_record AFTER UPDATE OF extent_bbox, visibility, record_status, created_by,
        record_type, theme_category, source_organization, srid, geometry_type, data_vintage_start, data_vintage_end, created_at
    ON catalog.datasets FOR EACH ROW
    WHEN ((OLD.extent_bbox, OLD.visibility, OLD.record_status, OLD.created_by, OLD.record_type, OLD.theme_category,
            OLD.source_organization, OLD.srid, OLD.geometry_type, OLD.data_vintage_start, OLD.data_vintage_end, OLD.created_at)
        IS DISTINCT FROM (NEW.extent_bbox, NEW.visibility, NEW.record_status, NEW.created_by, NEW.record_type,
            NEW.theme_category, NEW.source_organization, NEW.srid, NEW.geometry_type, NEW.data_vintage_start,
            NEW.data_vintage_end, NEW.created_at))
    EXECUTE FUNCTION catalog.datasets_search_record();

UPDATE catalog.dataset_search s SET record_time = catalog.search_record_time(d.data_vintage_start, d.data_vintage_end, d.created_at)
FROM catalog.datasets d WHERE d.id = s.dataset_id;

-- One index answers the extent alone (its first column) and the extent with a time.
CREATE INDEX dataset_search_extent_time_idx ON catalog.dataset_search USING gist (extent, record_time);
DROP INDEX catalog.dataset_search_extent_idx;
