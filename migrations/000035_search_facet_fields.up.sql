-- Facets count a search's matches by their records' type, themes, organization, srid and geometry
-- type: the documents carry a copy of those too (as of visibility and the box, migration 34), so
-- the counts of a search need no lookup of each matching record. The same triggers keep them.
ALTER TABLE catalog.dataset_search
    ADD COLUMN record_type         text,
    ADD COLUMN theme_category      text[],
    ADD COLUMN source_organization text,
    ADD COLUMN srid                integer,
    ADD COLUMN geometry_type       text;

CREATE OR REPLACE FUNCTION catalog.dataset_search_fill() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    SELECT d.extent_bbox, catalog.search_extent(d.extent_bbox), d.visibility, d.record_status, d.created_by,
        d.record_type, d.theme_category, d.source_organization, d.srid, d.geometry_type
    INTO NEW.extent_bbox, NEW.extent, NEW.visibility, NEW.record_status, NEW.created_by,
        NEW.record_type, NEW.theme_category, NEW.source_organization, NEW.srid, NEW.geometry_type
    FROM catalog.datasets d WHERE d.id = NEW.dataset_id;
    RETURN NEW;
END
$$;

CREATE OR REPLACE FUNCTION catalog.datasets_search_record() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE catalog.dataset_search SET extent = catalog.search_extent(NEW.extent_bbox), extent_bbox = NEW.extent_bbox,
        visibility = NEW.visibility, record_status = NEW.record_status, created_by = NEW.created_by,
        record_type = NEW.record_type, theme_category = NEW.theme_category, source_organization = NEW.source_organization,
        srid = NEW.srid, geometry_type = NEW.geometry_type
    WHERE dataset_id = NEW.id;
    RETURN NULL;
END
$$;
DROP TRIGGER datasets_search_record ON catalog.datasets;
CREATE TRIGGER datasets_search_record AFTER UPDATE OF extent_bbox, visibility, record_status, created_by,
        record_type, theme_category, source_organization, srid, geometry_type
    ON catalog.datasets FOR EACH ROW EXECUTE FUNCTION catalog.datasets_search_record();

UPDATE catalog.dataset_search s SET record_type = d.record_type, theme_category = d.theme_category,
    source_organization = d.source_organization, srid = d.srid, geometry_type = d.geometry_type
FROM catalog.datasets d WHERE d.id = s.dataset_id;
