-- Distributions of a catalog record beyond the exports the service makes itself (Records:
-- distributions, exported as dcat:Distribution): external downloads and access points.
CREATE TABLE catalog.record_distributions (
    id                uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    dataset_id        uuid NOT NULL REFERENCES catalog.datasets (id) ON DELETE CASCADE,
    distribution_type text NOT NULL CHECK (char_length(distribution_type) BETWEEN 1 AND 30),
    format            text NOT NULL CHECK (char_length(format) BETWEEN 1 AND 50),
    url               text NOT NULL CHECK (char_length(url) <= 2048 AND url ~ '^https?://'),
    title             text CHECK (char_length(title) <= 500),
    description       text CHECK (char_length(description) <= 2000),
    protocol          text CHECK (char_length(protocol) <= 100),
    media_type        text CHECK (char_length(media_type) <= 100),
    is_primary        boolean NOT NULL DEFAULT false,
    created_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX record_distributions_dataset_idx ON catalog.record_distributions (dataset_id, created_at);
-- At most one primary distribution per record.
CREATE UNIQUE INDEX record_distributions_primary ON catalog.record_distributions (dataset_id) WHERE is_primary;
