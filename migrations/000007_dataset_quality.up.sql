-- QualityDetail of the catalog record (spec 2.5), recomputed by Validate Dataset.
ALTER TABLE catalog.datasets ADD COLUMN quality_detail jsonb;
