-- Audit records are addressed by uuid in the contract (AuditRecord.id); the bigint identity stays
-- as the cheap ordering key.
ALTER TABLE catalog.audit_log ADD COLUMN public_id uuid NOT NULL DEFAULT gen_random_uuid();
CREATE UNIQUE INDEX audit_log_public_id_key ON catalog.audit_log (public_id);
CREATE INDEX audit_log_actor_idx ON catalog.audit_log (actor_id, occurred_at DESC);
