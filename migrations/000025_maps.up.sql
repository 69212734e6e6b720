-- Maps of the map builder: a view of the world, a basemap and an ordered list of layers, each
-- showing one dataset. A layer stores only how it draws its dataset; what it says about the
-- dataset (name, geometry type, extent, columns, tile version, visibility) is read live from the
-- catalog when the map is read.
CREATE TABLE catalog.maps (
    id                  uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name                text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 255),
    description         text CHECK (char_length(description) <= 2000),
    notes               text CHECK (char_length(notes) <= 50000),
    center_lng          double precision CHECK (center_lng BETWEEN -180 AND 180),
    center_lat          double precision CHECK (center_lat BETWEEN -90 AND 90),
    zoom                double precision CHECK (zoom BETWEEN 0 AND 24),
    bearing             double precision NOT NULL DEFAULT 0,
    pitch               double precision NOT NULL DEFAULT 0,
    basemap_style       text NOT NULL CHECK (char_length(basemap_style) <= 2000),
    show_basemap_labels boolean NOT NULL DEFAULT true,
    basemap_config      jsonb,
    terrain_config      jsonb,
    visibility          text NOT NULL DEFAULT 'private' CHECK (visibility IN ('private', 'internal', 'public')),
    plugins             text[],
    legend_title        text CHECK (char_length(legend_title) <= 255),
    forked_from_id      uuid REFERENCES catalog.maps (id) ON DELETE SET NULL,
    created_by          uuid REFERENCES catalog.users (id) ON DELETE SET NULL,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX maps_created_by_idx ON catalog.maps (created_by);
CREATE INDEX maps_listing_idx ON catalog.maps (visibility, updated_at DESC);

-- Deleting a dataset removes its layers from every map (the map's history says so).
CREATE TABLE catalog.map_layers (
    id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    map_id         uuid NOT NULL REFERENCES catalog.maps (id) ON DELETE CASCADE,
    dataset_id     uuid NOT NULL REFERENCES catalog.datasets (id) ON DELETE CASCADE,
    sort_order     integer NOT NULL DEFAULT 0 CHECK (sort_order BETWEEN 0 AND 32767),
    visible        boolean NOT NULL DEFAULT true,
    opacity        double precision NOT NULL DEFAULT 1 CHECK (opacity BETWEEN 0 AND 1),
    paint          jsonb NOT NULL DEFAULT '{}',
    layout         jsonb NOT NULL DEFAULT '{}',
    display_name   text CHECK (char_length(display_name) <= 255),
    layer_type     text NOT NULL DEFAULT 'vector_service' CHECK (layer_type IN ('vector_service', 'raster_service', 'geojson')),
    filter         jsonb,
    label_config   jsonb,
    popup_config   jsonb,
    style_config   jsonb,
    show_in_legend boolean NOT NULL DEFAULT true,
    created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX map_layers_map_idx ON catalog.map_layers (map_id, sort_order);
CREATE INDEX map_layers_dataset_idx ON catalog.map_layers (dataset_id);

-- Every change of a map: who, when, what (target: the map itself, a layer, a share link).
CREATE TABLE catalog.map_history (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    seq         bigint GENERATED ALWAYS AS IDENTITY,
    map_id      uuid NOT NULL REFERENCES catalog.maps (id) ON DELETE CASCADE,
    actor_id    uuid REFERENCES catalog.users (id) ON DELETE SET NULL,
    target_type text NOT NULL CHECK (target_type IN ('map', 'layer', 'share')),
    target_id   uuid,
    target_name text,
    action      text NOT NULL,
    summary     text NOT NULL,
    details     jsonb NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX map_history_map_idx ON catalog.map_history (map_id, seq DESC);

-- A layer removed with its dataset is written to its map's history by the database itself, as
-- the cascade runs.
CREATE FUNCTION catalog.note_layer_dropped_with_dataset() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM catalog.datasets WHERE id = OLD.dataset_id) THEN
        INSERT INTO catalog.map_history (map_id, target_type, target_id, target_name, action, summary, details)
        SELECT OLD.map_id, 'layer', OLD.id, OLD.display_name, 'layer_removed',
               'Layer removed: its dataset was deleted', jsonb_build_object('dataset_id', OLD.dataset_id)
        WHERE EXISTS (SELECT 1 FROM catalog.maps WHERE id = OLD.map_id);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER map_layers_dataset_gone AFTER DELETE ON catalog.map_layers
FOR EACH ROW EXECUTE FUNCTION catalog.note_layer_dropped_with_dataset();

-- Share links: anyone holding the token sees the map (and the layers the link may expose). The
-- token is kept sealed (the owner can read it again) and found by its SHA-256.
CREATE TABLE catalog.map_share_tokens (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    map_id       uuid NOT NULL REFERENCES catalog.maps (id) ON DELETE CASCADE,
    token_sha256 bytea NOT NULL UNIQUE,
    token_sealed bytea NOT NULL,
    expires_at   timestamptz,
    revoked_at   timestamptz,
    created_by   uuid REFERENCES catalog.users (id) ON DELETE SET NULL,
    created_at   timestamptz NOT NULL DEFAULT now()
);
-- One live link per map: sharing again replaces it.
CREATE UNIQUE INDEX map_share_tokens_live_idx ON catalog.map_share_tokens (map_id) WHERE revoked_at IS NULL;

-- The read rule of maps (open-points.md, without grants or publication): admins and the creator
-- always; internal maps for every signed-in user; public maps for everyone.
CREATE FUNCTION catalog.map_visible(visibility text, created_by uuid, caller uuid, is_admin boolean)
RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
    SELECT is_admin OR (caller IS NOT NULL AND created_by = caller) OR visibility = 'public'
        OR (caller IS NOT NULL AND visibility = 'internal')
$$;
