-- name: RecordAudit :exec
INSERT INTO catalog.audit_log (actor_id, actor_display, action, resource_type, resource_id, outcome, ip, user_agent, detail)
VALUES (@actor_id, @actor_display, @action, @resource_type, @resource_id, @outcome, @ip, @user_agent, @detail);

-- name: ListAuditRecords :many
-- Newest first. after_id pages by keyset for exports; off/lim page the admin list. action ending
-- in ".*" matches every action with that prefix.
SELECT a.*, count(*) OVER () AS total FROM catalog.audit_log a
WHERE (sqlc.narg(action)::text IS NULL
       OR a.action = sqlc.narg(action)
       OR (right(sqlc.narg(action), 2) = '.*' AND starts_with(a.action, left(sqlc.narg(action), -1))))
  AND (sqlc.narg(actor_id)::uuid IS NULL OR a.actor_id = sqlc.narg(actor_id))
  AND (sqlc.narg(resource_type)::text IS NULL OR a.resource_type = sqlc.narg(resource_type))
  AND (sqlc.narg(resource_id)::text IS NULL OR a.resource_id = sqlc.narg(resource_id))
  AND (sqlc.narg(outcome)::text IS NULL OR a.outcome = sqlc.narg(outcome))
  AND (sqlc.narg(since)::timestamptz IS NULL OR a.occurred_at >= sqlc.narg(since))
  AND (sqlc.narg(until)::timestamptz IS NULL OR a.occurred_at < sqlc.narg(until))
  AND (sqlc.narg(before_id)::bigint IS NULL OR a.id < sqlc.narg(before_id))
  AND (sqlc.narg(search)::text IS NULL OR a.action ILIKE '%' || sqlc.narg(search) || '%'
       OR a.resource_type ILIKE '%' || sqlc.narg(search) || '%' OR a.resource_id ILIKE '%' || sqlc.narg(search) || '%'
       OR a.actor_display ILIKE '%' || sqlc.narg(search) || '%')
-- @sort: created_at (default), action, resource_type, ip_address, username; @descending for desc.
ORDER BY
  CASE WHEN NOT @descending::bool THEN CASE @sort::text WHEN 'action' THEN a.action WHEN 'resource_type' THEN a.resource_type
    WHEN 'ip_address' THEN a.ip WHEN 'username' THEN a.actor_display END END,
  CASE WHEN @descending::bool THEN CASE @sort::text WHEN 'action' THEN a.action WHEN 'resource_type' THEN a.resource_type
    WHEN 'ip_address' THEN a.ip WHEN 'username' THEN a.actor_display END END DESC,
  CASE WHEN NOT @descending::bool THEN a.id END,
  a.id DESC
LIMIT @lim OFFSET @off;
