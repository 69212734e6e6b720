-- The icon sprite sheet was built in memory by each server from every raster icon, again after
-- each upload, by whichever anonymous reader asked first, and icons could not be deleted
-- (issue 28). The icon set now has a version, moved on by every change of catalog.map_icons in
-- the same transaction; the sheet built from one version is stored once, by the server that made
-- the change right after it, and read by every server (internal/maps/icons.go).
CREATE TABLE catalog.map_icon_set (
    only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    version  bigint NOT NULL
);
INSERT INTO catalog.map_icon_set (version) VALUES (1);

CREATE FUNCTION catalog.map_icon_set_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE catalog.map_icon_set SET version = version + 1;
    RETURN NULL;
END
$$;
CREATE TRIGGER map_icons_changed AFTER INSERT OR UPDATE OR DELETE ON catalog.map_icons
FOR EACH STATEMENT EXECUTE FUNCTION catalog.map_icon_set_changed();

-- The sheet of one version of the icon set: the PNG and its MapLibre index.
CREATE TABLE catalog.map_sprite (
    only_row  boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    icon_set  bigint NOT NULL,
    index     jsonb NOT NULL,
    png       bytea NOT NULL,
    built_at  timestamptz NOT NULL DEFAULT now()
);

-- Icon quotas count a user's icons.
CREATE INDEX map_icons_created_by_idx ON catalog.map_icons (created_by);
