-- The document's copy of its record (migrations 34 and 35) is rewritten only when a copied field
-- changed. Updates name these columns whether or not they change them (a feature edit sets the
-- extent every time, a metadata save sets every field), and each rewrite left a new row version
-- of the document behind.
DROP TRIGGER datasets_search_record ON catalog.datasets;
CREATE TRIGGER datasets_search_record AFTER UPDATE OF extent_bbox, visibility, record_status, created_by,
        record_type, theme_category, source_organization, srid, geometry_type
    ON catalog.datasets FOR EACH ROW
    WHEN ((OLD.extent_bbox, OLD.visibility, OLD.record_status, OLD.created_by, OLD.record_type, OLD.theme_category,
            OLD.source_organization, OLD.srid, OLD.geometry_type)
        IS DISTINCT FROM (NEW.extent_bbox, NEW.visibility, NEW.record_status, NEW.created_by, NEW.record_type,
            NEW.theme_category, NEW.source_organization, NEW.srid, NEW.geometry_type))
    EXECUTE FUNCTION catalog.datasets_search_record();
