-- The credential a STAC import was given for its remote (issue 30), sealed with the server's
-- secret box (header and value), for its downloads that run later; dropped once none is left.
ALTER TABLE catalog.stac_imports ADD COLUMN credential bytea;
