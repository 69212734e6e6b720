-- name: InsertMap :one
INSERT INTO catalog.maps (name, description, notes, center_lng, center_lat, zoom, bearing, pitch, basemap_style,
    show_basemap_labels, basemap_config, terrain_config, visibility, plugins, legend_title, forked_from_id, created_by)
VALUES (@name, @description, @notes, @center_lng, @center_lat, @zoom, @bearing, @pitch, @basemap_style,
    @show_basemap_labels, @basemap_config, @terrain_config, @visibility, @plugins, @legend_title, @forked_from_id, @created_by)
RETURNING id;

-- name: MapDocument :one
-- The map as the caller reads it (catalog.map_document); null when there is no such map.
SELECT catalog.map_document(@id, sqlc.narg(caller_id), sqlc.narg(caller_role), @is_admin::bool, @lent::uuid[])::json AS doc;

-- name: GetMapRecord :one
SELECT * FROM catalog.maps WHERE id = @id;

-- name: LockMapRecord :one
SELECT * FROM catalog.maps WHERE id = @id FOR UPDATE;

-- name: ReplaceMapSettings :exec
UPDATE catalog.maps SET name = @name, description = @description, notes = @notes, center_lng = @center_lng,
    center_lat = @center_lat, zoom = @zoom, bearing = @bearing, pitch = @pitch, basemap_style = @basemap_style,
    show_basemap_labels = @show_basemap_labels, basemap_config = @basemap_config, terrain_config = @terrain_config,
    visibility = @visibility, plugins = @plugins, legend_title = @legend_title, updated_at = now()
WHERE id = @id;

-- name: TouchMap :exec
UPDATE catalog.maps SET updated_at = now() WHERE id = @id;

-- name: DeleteMap :exec
DELETE FROM catalog.maps WHERE id = @id;

-- name: ListVisibleMaps :many
-- A page of the maps the caller may read (catalog.maps_matching), with its maps' layer counts
-- and creators, and how many match in all.
SELECT m.id, m.name, m.description, m.visibility, m.created_at, m.updated_at, u.username AS created_by_username,
    (SELECT count(*) FROM catalog.map_layers l WHERE l.map_id = m.id) AS layer_count,
    (SELECT count(*) FROM catalog.maps_matching(sqlc.narg(caller_id), @is_admin::bool, sqlc.narg(q), sqlc.narg(visibility),
        @mine::bool, sqlc.narg(dataset_id))) AS total
FROM catalog.maps_matching(sqlc.narg(caller_id), @is_admin::bool, sqlc.narg(q), sqlc.narg(visibility), @mine::bool, sqlc.narg(dataset_id)) m
LEFT JOIN catalog.users u ON u.id = m.created_by
ORDER BY
    CASE WHEN @sort::text = 'name' THEN lower(m.name) END ASC,
    CASE WHEN @sort::text = '-name' THEN lower(m.name) END DESC,
    CASE WHEN @sort::text = 'created_at' THEN m.created_at END ASC,
    CASE WHEN @sort::text = '-created_at' THEN m.created_at END DESC,
    CASE WHEN @sort::text = 'updated_at' THEN m.updated_at END ASC,
    m.updated_at DESC, m.id
LIMIT @lim OFFSET @off;

-- name: InsertMapLayer :one
INSERT INTO catalog.map_layers (map_id, dataset_id, sort_order, visible, opacity, paint, layout, display_name,
    layer_type, filter, label_config, popup_config, style_config, show_in_legend)
VALUES (@map_id, @dataset_id, @sort_order, @visible, @opacity, @paint, @layout, @display_name,
    @layer_type, @filter, @label_config, @popup_config, @style_config, @show_in_legend)
RETURNING id;

-- name: ListMapLayers :many
SELECT * FROM catalog.map_layers WHERE map_id = @map_id ORDER BY sort_order, created_at, id;

-- name: UpdateMapLayer :execrows
-- A partial update: a null argument keeps the stored value of a column that cannot be null; the
-- nullable members are written (null too) when their set_ flag says the request named them.
UPDATE catalog.map_layers SET
    sort_order = coalesce(sqlc.narg(sort_order), sort_order),
    visible = coalesce(sqlc.narg(visible), visible),
    opacity = coalesce(sqlc.narg(opacity), opacity),
    paint = coalesce(sqlc.narg(paint), paint),
    layout = coalesce(sqlc.narg(layout), layout),
    display_name = CASE WHEN @set_display_name::bool THEN sqlc.narg(display_name) ELSE display_name END,
    layer_type = coalesce(sqlc.narg(layer_type), layer_type),
    filter = CASE WHEN @set_filter::bool THEN sqlc.narg(filter) ELSE filter END,
    label_config = CASE WHEN @set_label_config::bool THEN sqlc.narg(label_config) ELSE label_config END,
    popup_config = CASE WHEN @set_popup_config::bool THEN sqlc.narg(popup_config) ELSE popup_config END,
    style_config = CASE WHEN @set_style_config::bool THEN sqlc.narg(style_config) ELSE style_config END,
    show_in_legend = coalesce(sqlc.narg(show_in_legend), show_in_legend)
WHERE id = @id AND map_id = @map_id;

-- name: DeleteMapLayers :many
DELETE FROM catalog.map_layers WHERE map_id = @map_id AND id = ANY(@ids::uuid[]) RETURNING id, display_name, dataset_id;

-- name: RecordMapHistory :exec
INSERT INTO catalog.map_history (map_id, actor_id, target_type, target_id, target_name, action, summary, details)
VALUES (@map_id, @actor_id, @target_type, @target_id, @target_name, @action, @summary, @details);

-- name: ListMapHistory :many
SELECT sqlc.embed(h), u.username AS actor_username, count(*) OVER () AS total
FROM catalog.map_history h LEFT JOIN catalog.users u ON u.id = h.actor_id
WHERE h.map_id = @map_id
ORDER BY h.seq DESC
LIMIT @lim OFFSET @off;

-- name: ReadableLayerDatasets :many
-- Which of the map's layers' datasets the caller may read, with their visibility.
SELECT l.id AS layer_id, d.id AS dataset_id, d.title, d.visibility, d.record_status,
    catalog.dataset_visible(d.id, d.visibility, d.record_status, d.created_by, sqlc.narg(caller_id), sqlc.narg(caller_role), @is_admin::bool)::bool AS readable
FROM catalog.map_layers l JOIN catalog.datasets d ON d.id = l.dataset_id
WHERE l.map_id = @map_id
ORDER BY l.sort_order, l.created_at, l.id;

-- name: RevokeMapShareTokens :many
UPDATE catalog.map_share_tokens SET revoked_at = now() WHERE map_id = @map_id AND revoked_at IS NULL RETURNING id;

-- name: NonPublicLayerDatasets :many
-- The datasets of a public map's layers that an anonymous reader cannot read (not public, or not
-- published); none for a map that is not public. readable: whether the caller may read it.
SELECT DISTINCT d.id, d.title,
    catalog.dataset_visible(d.id, d.visibility, d.record_status, d.created_by, sqlc.narg(caller_id), sqlc.narg(caller_role), @is_admin::bool)::bool AS readable
FROM catalog.maps m
JOIN catalog.map_layers l ON l.map_id = m.id
JOIN catalog.datasets d ON d.id = l.dataset_id
WHERE m.id = @map_id AND m.visibility = 'public'
  AND NOT catalog.dataset_visible(d.id, d.visibility, d.record_status, d.created_by, NULL, NULL, false)
ORDER BY d.title, d.id;

-- name: InsertMapShareToken :one
INSERT INTO catalog.map_share_tokens (map_id, token_sha256, token_sealed, expires_at, created_by)
VALUES (@map_id, @token_sha256, @token_sealed, @expires_at, @created_by)
RETURNING *;

-- name: LiveMapShareToken :one
SELECT * FROM catalog.map_share_tokens WHERE map_id = @map_id AND revoked_at IS NULL;

-- name: SetMapShareExpiry :one
UPDATE catalog.map_share_tokens SET expires_at = @expires_at WHERE map_id = @map_id AND revoked_at IS NULL
RETURNING *;

-- name: FindMapShareToken :one
SELECT * FROM catalog.map_share_tokens WHERE token_sha256 = @token_sha256;

-- name: ListAllShareTokens :many
SELECT sqlc.embed(t), m.name AS map_name, count(*) OVER () AS total
FROM catalog.map_share_tokens t JOIN catalog.maps m ON m.id = t.map_id
WHERE (sqlc.narg(map_id)::uuid IS NULL OR t.map_id = sqlc.narg(map_id))
  AND (sqlc.narg(active)::bool IS NULL OR (t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > now())) = sqlc.narg(active))
  AND (sqlc.narg(q)::text IS NULL OR m.name ILIKE '%' || sqlc.narg(q) || '%')
ORDER BY t.created_at DESC, t.id
LIMIT @lim OFFSET @off;

-- name: RevokeShareTokenByID :one
UPDATE catalog.map_share_tokens SET revoked_at = coalesce(revoked_at, now()) WHERE id = @id RETURNING map_id;

-- name: DatasetsReadableBy :many
-- Which of the datasets the caller may read (catalog.dataset_visible), with what a layer or a
-- signed tile template of them needs.
SELECT d.id, d.title, d.record_type, d.visibility, d.record_status, d.table_schema, d.table_name
FROM catalog.datasets d
WHERE d.id = ANY(@ids::uuid[])
  AND catalog.dataset_visible(d.id, d.visibility, d.record_status, d.created_by, sqlc.narg(caller_id), sqlc.narg(caller_role), @is_admin::bool);

-- name: DatasetsLendableBy :many
-- Which of the datasets the creator of a share link may lend to its anonymous readers
-- (catalog.dataset_lendable), with their tables for the signed tile templates.
SELECT d.id, d.table_schema, d.table_name
FROM catalog.datasets d
WHERE d.id = ANY(@ids::uuid[])
  AND catalog.dataset_lendable(d.visibility, d.record_status, d.created_by, sqlc.narg(creator)::uuid, @creator_is_admin::bool);

-- name: CopyMapLayers :execrows
-- A duplicate's layers: those of the source whose datasets the caller may read, in order.
INSERT INTO catalog.map_layers (map_id, dataset_id, sort_order, visible, opacity, paint, layout, display_name,
    layer_type, filter, label_config, popup_config, style_config, show_in_legend)
SELECT @new_map_id, l.dataset_id, l.sort_order, l.visible, l.opacity, l.paint, l.layout, l.display_name,
    l.layer_type, l.filter, l.label_config, l.popup_config, l.style_config, l.show_in_legend
FROM catalog.map_layers l JOIN catalog.datasets d ON d.id = l.dataset_id
WHERE l.map_id = @source_map_id
  AND catalog.dataset_visible(d.id, d.visibility, d.record_status, d.created_by, sqlc.narg(caller_id), sqlc.narg(caller_role), @is_admin::bool);

-- name: CountMapLayers :one
SELECT count(*) FROM catalog.map_layers WHERE map_id = @map_id;

-- name: LockDatasetLayers :many
SELECT * FROM catalog.map_layers WHERE dataset_id = @dataset_id ORDER BY id FOR UPDATE;

-- name: SetLayerStyle :exec
-- A layer's JSON members after a column it refers to was renamed or dropped.
UPDATE catalog.map_layers SET paint = @paint, layout = @layout, filter = @filter, label_config = @label_config,
    popup_config = @popup_config, style_config = @style_config
WHERE id = @id;

-- name: PutMapImage :exec
INSERT INTO catalog.map_images (map_id, kind, media_type, data) VALUES (@map_id, @kind, @media_type, @data)
ON CONFLICT (map_id, kind) DO UPDATE SET media_type = excluded.media_type, data = excluded.data, updated_at = now();

-- name: GetMapImage :one
SELECT * FROM catalog.map_images WHERE map_id = @map_id AND kind = @kind;

-- name: InsertMapIcon :one
INSERT INTO catalog.map_icons (name, slug, media_type, data, sha256, width, height, created_by)
VALUES (@name, @slug, @media_type, @data, @sha256, @width, @height, @created_by)
ON CONFLICT (sha256) DO NOTHING
RETURNING id, name, slug, media_type, length(data)::int AS size_bytes, created_at;

-- name: FindMapIconBySHA :one
SELECT id, name FROM catalog.map_icons WHERE sha256 = @sha256;

-- name: ListMapIcons :many
SELECT id, name, slug, media_type, length(data)::int AS size_bytes, created_at, count(*) OVER () AS total
FROM catalog.map_icons
WHERE sqlc.narg(q)::text IS NULL OR name ILIKE '%' || sqlc.narg(q) || '%'
ORDER BY created_at DESC, id
LIMIT @lim OFFSET @off;

-- name: GetMapIcon :one
SELECT * FROM catalog.map_icons WHERE id = @id;

-- name: SpriteIcons :many
-- The raster icons of the sprite sheet, in a stable order.
SELECT id, data, width, height FROM catalog.map_icons WHERE media_type = 'image/png' ORDER BY created_at, id;

-- name: LockIconSet :one
-- Uploads and deletions of icons take turns, so that quotas count what is there.
SELECT version FROM catalog.map_icon_set FOR UPDATE;

-- name: IconUsage :one
-- What a user's icons and all icons hold, against the quotas: counts, and pixels of the raster
-- icons (the sprite sheet's area).
SELECT count(*) FILTER (WHERE created_by = @user_id)::bigint AS user_icons,
    coalesce(sum(width::bigint * height) FILTER (WHERE created_by = @user_id), 0)::bigint AS user_pixels,
    count(*)::bigint AS all_icons,
    coalesce(sum(width::bigint * height), 0)::bigint AS all_pixels
FROM catalog.map_icons;

-- name: DeleteMapIcon :one
DELETE FROM catalog.map_icons WHERE id = @id RETURNING id, name, created_by;

-- name: IconSetVersion :one
SELECT version FROM catalog.map_icon_set;

-- name: SpriteState :one
-- The icon set's version and that of the stored sheet (0: none), without the sheet.
SELECT v.version AS icon_set, coalesce((SELECT s.icon_set FROM catalog.map_sprite s), 0)::bigint AS built
FROM catalog.map_icon_set v;

-- name: StoredSprite :one
SELECT icon_set, index, png FROM catalog.map_sprite;

-- name: StoreSprite :exec
-- A sheet replaces the stored one unless that was built from a later icon set (two builders racing).
INSERT INTO catalog.map_sprite (icon_set, index, png) VALUES (@icon_set, @index, @png)
ON CONFLICT (only_row) DO UPDATE SET icon_set = excluded.icon_set, index = excluded.index, png = excluded.png, built_at = now()
WHERE catalog.map_sprite.icon_set <= excluded.icon_set;
