-- Collection names are unique per owner (without regard to case), no longer across the catalog:
-- the global index let anyone find out which names other users had taken, private collections
-- included, and stopped two users from each having their own "Roads".
--
-- The global index made duplicates within one owner impossible, but a database whose index was
-- dropped by hand could hold some, and this migration must not fail on it: the oldest keeps its
-- name, each later one gets its id appended (ids are unique, so the new names cannot collide with
-- one another), trimmed to stay within 255 characters. Ownerless collections (their owner was
-- deleted) never conflict: NULL owners are distinct in a unique index.
WITH ranked AS (
    SELECT id, row_number() OVER (PARTITION BY created_by, lower(name) ORDER BY created_at, id) AS n
    FROM catalog.collections
    WHERE created_by IS NOT NULL
)
UPDATE catalog.collections c
SET name = left(c.name, 216) || ' (' || c.id::text || ')', updated_at = now()
FROM ranked r
WHERE r.id = c.id AND r.n > 1;

DROP INDEX IF EXISTS catalog.collections_name_lower_key;
CREATE UNIQUE INDEX collections_owner_name_lower_key ON catalog.collections (created_by, lower(name));
