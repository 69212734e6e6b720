-- List Maps reads a page in the order asked for and counts the whole match. The matching maps are
-- defined once, as an inlinable function, for both; the page then stops after its rows on the
-- index of the default order (most recently updated first) instead of numbering every visible
-- map with window functions.
CREATE INDEX maps_recent_idx ON catalog.maps (updated_at DESC, id);

CREATE FUNCTION catalog.maps_matching(caller uuid, is_admin boolean, q text, vis text, mine boolean, dataset uuid)
RETURNS SETOF catalog.maps LANGUAGE sql STABLE AS $$
    SELECT m.* FROM catalog.maps m
    WHERE catalog.map_visible(m.visibility, m.created_by, caller, is_admin)
      AND (q IS NULL OR m.name ILIKE '%' || q || '%' OR m.description ILIKE '%' || q || '%')
      AND (vis IS NULL OR m.visibility = vis)
      AND (NOT mine OR m.created_by = caller)
      AND (dataset IS NULL OR EXISTS (SELECT 1 FROM catalog.map_layers l WHERE l.map_id = m.id AND l.dataset_id = dataset))
$$;
