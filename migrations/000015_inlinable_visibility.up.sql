-- dataset_visible guards every dataset read, and feature reads check it in the page query. As
-- written in 000005 its body held the grant lookup (an EXISTS subquery), which stops PostgreSQL
-- from inlining the function: each query then set up and planned the function body anew, which
-- cost a single-feature read about 0.07 ms of its 0.1 ms in the database. The grant lookup moves
-- to a function of its own, called only for restricted datasets, and dataset_visible becomes a
-- plain expression the planner inlines into the calling query. The rule itself is unchanged.
CREATE FUNCTION catalog.dataset_granted(dataset_id uuid, caller uuid, caller_role text)
RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT EXISTS (SELECT 1 FROM catalog.dataset_grants g
                   WHERE g.dataset_id = dataset_granted.dataset_id AND (g.user_id = caller OR g.role = caller_role))
$$;

CREATE OR REPLACE FUNCTION catalog.dataset_visible(dataset_id uuid, visibility text, record_status text, created_by uuid,
                                                   caller uuid, caller_role text, is_admin boolean)
RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT is_admin
        OR (caller IS NOT NULL AND created_by = caller)
        OR (record_status = 'published' AND (
               visibility = 'public'
            OR (caller IS NOT NULL AND visibility = 'internal')
            OR (caller IS NOT NULL AND visibility = 'restricted' AND catalog.dataset_granted(dataset_id, caller, caller_role))))
$$;
