-- The provenance of an analysis output (issue 33): the source dataset, the operation, its
-- normalized params and the time, as Get Single Dataset's derived_from shows it (params holding
-- dataset ids the reader may not read are left out at read time, not here).
ALTER TABLE catalog.datasets ADD COLUMN derived_from jsonb
    CHECK (derived_from IS NULL OR (jsonb_typeof(derived_from) = 'object' AND derived_from ? 'dataset_id'
        AND derived_from ? 'operation' AND jsonb_typeof(derived_from->'params') = 'object'));
