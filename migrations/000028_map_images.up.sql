-- Pictures of maps (the thumbnail of map lists, the Open Graph preview) and the icons of point
-- symbols. Uploads are decoded and written anew by the service (internal/maps/images.go), so
-- what is stored is an image and nothing else: no metadata, no trailing payload.
CREATE TABLE catalog.map_images (
    map_id     uuid NOT NULL REFERENCES catalog.maps (id) ON DELETE CASCADE,
    kind       text NOT NULL CHECK (kind IN ('thumbnail', 'og_image')),
    media_type text NOT NULL CHECK (media_type IN ('image/png', 'image/jpeg')),
    data       bytea NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (map_id, kind)
);

-- Icons are shared by every map; an identical upload is found by its SHA-256.
CREATE TABLE catalog.map_icons (
    id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name       text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 255),
    slug       text NOT NULL,
    media_type text NOT NULL CHECK (media_type IN ('image/png', 'image/svg+xml')),
    data       bytea NOT NULL,
    sha256     bytea NOT NULL UNIQUE,
    width      integer,
    height     integer,
    created_by uuid REFERENCES catalog.users (id) ON DELETE SET NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX map_icons_created_idx ON catalog.map_icons (created_at DESC);

-- The map as its readers get it (defined here, where the last table it reads, map_images, is made)
-- (the Map schema), null for a map the caller may not read (lent:
-- the maps and datasets an embed token opens), in one statement: the layers the caller may see
-- with the live fields of their datasets, in drawing order, and how many were left out. notes are
-- for the map's editors only.
CREATE FUNCTION catalog.map_document(map_id uuid, caller uuid, caller_role text, is_admin boolean, lent uuid[])
RETURNS json LANGUAGE sql STABLE AS $$
    WITH m AS (SELECT * FROM catalog.maps WHERE id = map_document.map_id
               AND (catalog.map_visible(visibility, created_by, caller, is_admin) OR id = ANY(lent))),
    l AS (
        SELECT l.*, d.title, d.geometry_type, d.table_name, d.extent_bbox, d.column_info, d.feature_count,
               d.record_type, d.is_3d, d.tile_version, d.visibility AS d_visibility, d.record_status, d.attribution,
               (catalog.dataset_visible(d.id, d.visibility, d.record_status, d.created_by, caller, caller_role, is_admin)
                OR d.id = ANY(lent)) AS readable
        FROM catalog.map_layers l JOIN catalog.datasets d ON d.id = l.dataset_id
        WHERE l.map_id = map_document.map_id),
    shown AS (
        SELECT coalesce(json_agg(json_build_object(
            'id', l.id, 'dataset_id', l.dataset_id, 'dataset_name', l.title, 'dataset_geometry_type', l.geometry_type,
            'dataset_table_name', l.table_name, 'dataset_extent_bbox', l.extent_bbox,
            'dataset_column_info', CASE WHEN jsonb_typeof(l.column_info) = 'array' THEN l.column_info END,
            'dataset_feature_count', l.feature_count, 'dataset_sample_values', NULL, 'display_name', l.display_name,
            'sort_order', l.sort_order, 'visible', l.visible, 'opacity', l.opacity, 'paint', l.paint, 'layout', l.layout,
            'layer_type', l.layer_type, 'dataset_record_type', l.record_type, 'filter', l.filter,
            'label_config', l.label_config, 'popup_config', l.popup_config, 'style_config', l.style_config,
            'show_in_legend', l.show_in_legend, 'is_3d', l.is_3d, 'is_dem', NULL, 'dem_vertical_units', NULL,
            'band_count', NULL, 'tile_version', l.tile_version, 'dataset_visibility', l.d_visibility,
            'dataset_status', l.record_status, 'dataset_attribution', l.attribution)
            ORDER BY l.sort_order, l.created_at, l.id), '[]'::json) AS layers,
            count(*) AS n
        FROM l WHERE l.readable),
    editor AS (SELECT is_admin OR (caller IS NOT NULL AND m.created_by = caller) AS yes FROM m)
    SELECT json_build_object(
        'id', m.id, 'name', m.name, 'description', m.description,
        'notes', CASE WHEN (SELECT yes FROM editor) THEN m.notes END,
        'center_lng', m.center_lng, 'center_lat', m.center_lat, 'zoom', m.zoom, 'bearing', m.bearing, 'pitch', m.pitch,
        'basemap_style', m.basemap_style, 'show_basemap_labels', m.show_basemap_labels,
        'basemap_config', m.basemap_config,
        'basemap_position', coalesce(m.basemap_config ->> 'basemap_position', 'bottom'),
        'projection', coalesce(m.basemap_config ->> 'projection', 'mercator'),
        'terrain_config', m.terrain_config, 'visibility', m.visibility, 'thumbnail_url', (SELECT '/api/maps/' || m.id || '/thumbnail/?v=' || floor(extract(epoch FROM i.updated_at) * 1000)::bigint
                          FROM catalog.map_images i WHERE i.map_id = m.id AND i.kind = 'thumbnail'),
        'og_image_url', (SELECT '/api/maps/' || m.id || '/og-image/?v=' || floor(extract(epoch FROM i.updated_at) * 1000)::bigint
                         FROM catalog.map_images i WHERE i.map_id = m.id AND i.kind = 'og_image'),
        'forked_from_id', m.forked_from_id, 'forked_from_name', (SELECT f.name FROM catalog.maps f WHERE f.id = m.forked_from_id),
        'created_by', m.created_by, 'created_by_username', (SELECT u.username FROM catalog.users u WHERE u.id = m.created_by),
        'created_at', m.created_at, 'updated_at', m.updated_at, 'plugins', m.plugins, 'legend_title', m.legend_title,
        'layers', shown.layers, 'layer_count', shown.n,
        'excluded_layer_count', (SELECT count(*) FROM l WHERE NOT l.readable))
    FROM m, shown
$$;

