-- STAC Import mode register (issue 30): an import's items are either copied (downloaded and
-- ingested like uploads) or registered (each remote GeoTIFF described where it is and read by
-- byte range from then on, catalog.datasets.raster->'remote'). The mode is the import's.
ALTER TABLE catalog.stac_imports ADD COLUMN mode text NOT NULL DEFAULT 'copy' CHECK (mode IN ('copy', 'register'));

-- A registered raster names the import whose sealed credential its reads send
-- (raster->'remote'->>'credential_import'): that credential stays while a dataset names it.
CREATE INDEX datasets_remote_credential ON catalog.datasets ((raster->'remote'->>'credential_import'))
    WHERE raster ? 'remote';
