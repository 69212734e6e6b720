-- Read-only SQL (POST /query/) runs as a login role of its own (internal/sqlquery), which holds
-- nothing but: USAGE on this schema, SELECT on its views, EXECUTE on its two functions. A view
-- per dataset reads the dataset's table as the view's owner, but only rows of a dataset the
-- current request was granted: sql_grants holds, per request, a random token and the datasets
-- the caller may read; the request's transaction names its token in meridian.sql_token, and
-- allowed() checks the pair. The sandbox role can neither read sql_grants nor guess another
-- request's token (122 random bits, passed as a parameter, never in a statement's text).
CREATE SCHEMA sql_sandbox;
REVOKE ALL ON SCHEMA sql_sandbox FROM PUBLIC;

CREATE TABLE catalog.sql_grants (
    token      uuid NOT NULL,
    dataset_id uuid NOT NULL REFERENCES catalog.datasets (id) ON DELETE CASCADE,
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (token, dataset_id)
);

CREATE FUNCTION sql_sandbox.allowed(dataset uuid) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog AS $$
    SELECT EXISTS (SELECT 1 FROM catalog.sql_grants g
                   WHERE g.token = nullif(current_setting('meridian.sql_token', true), '')::uuid
                     AND g.dataset_id = dataset AND g.expires_at > now())
$$;
REVOKE ALL ON FUNCTION sql_sandbox.allowed(uuid) FROM PUBLIC;

-- run wraps the caller's statement as a subquery, so only a query fits (no second statement, no
-- utility command, no data-modifying WITH), limits its rows, and answers each row as a JSON
-- array (geometries as GeoJSON through PostGIS's cast), built by PostgreSQL so the server only
-- copies bytes. The first row is a header: an object with the result's columns, all null, so an
-- empty result still names its columns. As an invoker's
-- function it runs with the sandbox role's rights; and the statement's own text is only ever a
-- parameter of run(), so no other session sees it in pg_stat_activity.
CREATE FUNCTION sql_sandbox.run(statement text, max_rows integer) RETURNS SETOF json
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    RETURN QUERY EXECUTE format(E'SELECT to_json(x) FROM (SELECT q.* FROM (SELECT 1) h LEFT JOIN (SELECT * FROM (%s\n) s LIMIT 0) q ON true) x', statement);
    RETURN QUERY EXECUTE format(E'SELECT coalesce((SELECT json_agg(e.value) FROM json_each(to_json(q)) e), ''[]'') FROM (%s\n) q LIMIT %s',
                                statement, max_rows);
END
$$;
REVOKE ALL ON FUNCTION sql_sandbox.run(text, integer) FROM PUBLIC;

-- The sandbox's login: a role of this database's own (roles belong to the cluster, which may hold
-- several Meridian databases) and its password, made by the first server to start and used by
-- every server of the database. Only the server's role can read it.
CREATE TABLE catalog.sql_sandbox_login (
    only_one boolean PRIMARY KEY DEFAULT true CHECK (only_one),
    role     text NOT NULL,
    password text NOT NULL
);
