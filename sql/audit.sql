-- name: RecordAudit :exec
INSERT INTO catalog.audit_log (actor_id, actor_display, action, resource_type, resource_id, outcome, ip, user_agent, detail)
VALUES (@actor_id, @actor_display, @action, @resource_type, @resource_id, @outcome, @ip, @user_agent, @detail);
