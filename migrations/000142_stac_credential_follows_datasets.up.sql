-- A sealed STAC Import credential is kept only while a registered raster reads with it. The
-- import itself drops it when its items end (DropStacImportCredential); a trigger drops it when
-- the last dataset reading with it is deleted or stops reading with it (re-registered by another
-- import, replaced by an upload), whichever path did that, so no secret outlives its use.
CREATE FUNCTION catalog.drop_unread_stac_credential() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    job text := OLD.raster->'remote'->>'credential_import';
BEGIN
    UPDATE catalog.stac_imports s SET credential = NULL
    WHERE s.job_id = job::uuid AND s.credential IS NOT NULL
        AND NOT EXISTS (SELECT 1 FROM catalog.stac_import_items i WHERE i.import_id = s.job_id AND i.state IN ('queued', 'downloading'))
        AND NOT EXISTS (SELECT 1 FROM catalog.datasets d WHERE d.raster ? 'remote' AND d.raster->'remote'->>'credential_import' = job);
    RETURN NULL;
END
$$;

CREATE TRIGGER datasets_deleted_drop_stac_credential AFTER DELETE ON catalog.datasets
    FOR EACH ROW WHEN (OLD.raster->'remote'->>'credential_import' IS NOT NULL)
    EXECUTE FUNCTION catalog.drop_unread_stac_credential();

CREATE TRIGGER datasets_reread_drop_stac_credential AFTER UPDATE OF raster ON catalog.datasets
    FOR EACH ROW WHEN (OLD.raster->'remote'->>'credential_import' IS NOT NULL
        AND OLD.raster->'remote'->>'credential_import' IS DISTINCT FROM NEW.raster->'remote'->>'credential_import')
    EXECUTE FUNCTION catalog.drop_unread_stac_credential();
