-- When an import's credential goes was written twice, in DropStacImportCredential (an import's
-- items ended) and in migration 142's trigger (a dataset reading with it went): one function now,
-- which both call. It goes once no download of the import is left to run (a download River runs
-- again after its server went away is still 'downloading') and no registered raster reads with it.
CREATE FUNCTION catalog.drop_stac_credential_if_unread(job uuid) RETURNS void LANGUAGE sql AS $$
    UPDATE catalog.stac_imports s SET credential = NULL
    WHERE s.job_id = job AND s.credential IS NOT NULL
        AND NOT EXISTS (SELECT 1 FROM catalog.stac_import_items i WHERE i.import_id = s.job_id AND i.state IN ('queued', 'downloading'))
        AND NOT EXISTS (SELECT 1 FROM catalog.datasets d WHERE d.raster ? 'remote' AND d.raster->'remote'->>'credential_import' = job::text);
$$;

CREATE OR REPLACE FUNCTION catalog.drop_unread_stac_credential() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM catalog.drop_stac_credential_if_unread((OLD.raster->'remote'->>'credential_import')::uuid);
    RETURN NULL;
END
$$;
