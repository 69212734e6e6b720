-- History entries are addressed by uuid in the contract (DatasetHistoryEntry.id).
ALTER TABLE catalog.dataset_history ADD COLUMN public_id uuid NOT NULL DEFAULT gen_random_uuid();
CREATE UNIQUE INDEX dataset_history_public_id_key ON catalog.dataset_history (public_id);
