-- Registered tables keep their own key and geometry column names; ingested and created datasets
-- use gid and geom.
ALTER TABLE catalog.datasets
    ADD COLUMN id_column       text NOT NULL DEFAULT 'gid',
    ADD COLUMN geometry_column text NOT NULL DEFAULT 'geom';
