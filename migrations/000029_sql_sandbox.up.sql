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

-- open wraps the caller's statement as a subquery, so only a query fits (no second statement, no
-- utility command, no data-modifying WITH), and opens it as the cursor q of the transaction, from
-- which the server fetches its rows. As an invoker's function it runs with the sandbox role's
-- rights; and the statement's text is only ever a parameter of open(), so no other session sees
-- it in pg_stat_activity (that shows `FETCH ... FROM q`).
CREATE FUNCTION sql_sandbox.open(statement text) RETURNS refcursor
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    c refcursor := 'q';
BEGIN
    OPEN c NO SCROLL FOR EXECUTE format(E'SELECT * FROM (%s\n) q', statement);
    RETURN c;
END
$$;
REVOKE ALL ON FUNCTION sql_sandbox.open(text) FROM PUBLIC;

-- The sandbox's login: a role of this database's own (roles belong to the cluster, which may hold
-- several Meridian databases) and its password, made by the first server to start and used by
-- every server of the database. Only the server's role can read it.
CREATE TABLE catalog.sql_sandbox_login (
    only_one boolean PRIMARY KEY DEFAULT true CHECK (only_one),
    role     text NOT NULL,
    password text NOT NULL
);
