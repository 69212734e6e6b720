-- Dataset history actions become dotted resource.verb names, the names the web UI labels
-- (dataset.create, metadata.edit, dataset.delete) and hides (dataset.view); internal/catalog
-- (actions.go) writes only these from now on.
UPDATE catalog.dataset_history h SET action = m.new
FROM (VALUES ('create', 'dataset.create'), ('update_metadata', 'metadata.edit'), ('status', 'status.change'),
             ('feature_created', 'feature.insert'), ('feature_updated', 'feature.update'), ('feature_deleted', 'feature.delete'),
             ('column_added', 'column.add'), ('column_renamed', 'column.rename'), ('column_type_changed', 'column.alter_type'),
             ('column_dropped', 'column.drop'), ('keyword_added', 'keyword.add'), ('keyword_removed', 'keyword.remove'),
             ('contact_added', 'contact.add'), ('contact_updated', 'contact.update'), ('contact_removed', 'contact.remove'),
             ('distribution_added', 'distribution.add'), ('distribution_updated', 'distribution.update'),
             ('distribution_removed', 'distribution.remove'), ('relationship_added', 'relationship.add'),
             ('relationship_removed', 'relationship.remove'), ('translation_set', 'translation.set'),
             ('translation_removed', 'translation.remove'), ('attribute_updated', 'attribute.update'),
             ('attribute_reset', 'attribute.reset')) AS m (old, new)
WHERE h.action = m.old;

-- current_version counts data versions only (creation, feature edits, schema changes; later
-- reuploads and refreshes), no longer every metadata or status change. Each history entry that
-- made a data version is renumbered 1, 2, ... in order; every other entry carries the data
-- version it saw; and the record's counter is its last data version.
CREATE TEMPORARY TABLE data_actions (action text PRIMARY KEY) ON COMMIT DROP;
INSERT INTO data_actions VALUES ('dataset.create'), ('feature.insert'), ('feature.update'), ('feature.replace'),
    ('feature.delete'), ('column.add'), ('column.rename'), ('column.alter_type'), ('column.drop'),
    ('dataset.reupload'), ('dataset.refresh'), ('dataset.analysis'), ('dataset.regenerate');

UPDATE catalog.dataset_history h SET version = v.n
FROM (SELECT x.id, row_number() OVER (PARTITION BY x.dataset_id ORDER BY x.id) AS n
      FROM catalog.dataset_history x JOIN data_actions a ON a.action = x.action) v
WHERE h.id = v.id;

UPDATE catalog.dataset_history h SET version = coalesce((
    SELECT x.version FROM catalog.dataset_history x JOIN data_actions a ON a.action = x.action
    WHERE x.dataset_id = h.dataset_id AND x.id < h.id ORDER BY x.id DESC LIMIT 1), 1)
WHERE h.action NOT IN (SELECT action FROM data_actions);

UPDATE catalog.datasets d SET current_version = coalesce((
    SELECT max(x.version) FROM catalog.dataset_history x JOIN data_actions a ON a.action = x.action
    WHERE x.dataset_id = d.id), 1);

-- A view is written at most once an hour per caller and dataset (catalog.Service.View): the
-- check for an earlier one reads this index, not the dataset's whole history.
CREATE INDEX dataset_history_views_idx ON catalog.dataset_history (dataset_id, actor_id, occurred_at DESC)
    WHERE action = 'dataset.view';

-- The admin audit log's read-only SQL entries: query.execute for a statement that ran (its
-- outcome says whether it failed at run time), query.reject for one refused before it ran.
-- Earlier entries cannot tell the two failures apart: every failure is taken as a run.
UPDATE catalog.audit_log SET action = 'query.execute' WHERE action = 'sql.query';
