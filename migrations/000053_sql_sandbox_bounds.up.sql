-- Read-only SQL may not take the database host's memory, keep data in the database, nor read what
-- the catalog's statistics say of other users' tables (issue #28).
--
-- Memory: PostgreSQL bounds no backend's memory, and work_mem does not cover values a function
-- builds: repeat('a', 250000000) four times in one row held 1.4 GB. The functions that build a
-- value far larger than their arguments from a count are taken from PUBLIC and shadowed, in the
-- schema the sandbox's search_path puts first, by versions that refuse a result over the
-- sandbox's value bound before building it; and a row over that bound is refused before it is
-- sent (sql_sandbox.open). Values grown stepwise (a recursive CTE doubling a string, aggregates)
-- are bounded by that row check, the statement timeout, PostgreSQL's 1 GB per value and the
-- number of sandbox queries a server runs at once (SQL_MAX_CONCURRENT).
--
-- Large objects: lo_from_bytea and the other large-object functions work in a read-only
-- transaction, and every user shares the sandbox role, so one user read and overwrote another's
-- objects and could fill the disk. They are taken from PUBLIC, and the objects the sandbox role
-- made are removed.
--
-- Statistics: pg_stat_user_tables and the functions behind it gave exact row counts of users,
-- keys and private tables. The per-relation and per-database statistics views and functions are
-- taken from PUBLIC (pg_stat_activity stays: the sandbox's statements are parameters, never in
-- it). pg_class.reltuples, an estimate every role reads, is left.
--
-- Functions and views of pg_catalog belong to the bootstrap superuser: as migration 33, this only
-- takes them when a superuser runs it, gives them back to the server's role and the database's
-- owner (pg_monitor keeps the statistics), and otherwise warns; the server names at start what
-- the sandbox can still call (sqlquery.Unconfined).

CREATE TABLE catalog.sql_sandbox_limits (
    only_one        boolean PRIMARY KEY DEFAULT true CHECK (only_one),
    -- the largest value or row a sandbox query may build or return (SQL_MAX_VALUE_BYTES, which
    -- the server writes here at start)
    max_value_bytes bigint NOT NULL DEFAULT 1048576 CHECK (max_value_bytes > 0)
);
INSERT INTO catalog.sql_sandbox_limits DEFAULT VALUES;

-- fits refuses a value or row of more bytes than the bound (54000: program limit exceeded).
CREATE FUNCTION sql_sandbox.fits(what text, bytes bigint) RETURNS boolean
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog AS $$
DECLARE
    bound bigint := (SELECT max_value_bytes FROM catalog.sql_sandbox_limits);
BEGIN
    IF bytes > bound THEN
        RAISE EXCEPTION '% of % bytes is over the % bytes a read-only query may build or return', what, bytes, bound
            USING ERRCODE = '54000';
    END IF;
    RETURN true;
END
$$;

CREATE FUNCTION sql_sandbox.repeat(s text, n integer) RETURNS text
LANGUAGE plpgsql STABLE STRICT SECURITY DEFINER SET search_path = pg_catalog AS $$
BEGIN
    PERFORM sql_sandbox.fits('repeat()', octet_length(s)::bigint * greatest(n, 0));
    RETURN pg_catalog.repeat(s, n);
END
$$;

-- A padded string has n characters, each at most 4 bytes in UTF-8. One function per signature
-- of pg_catalog's, so each call finds its shadow first on the search path.
CREATE FUNCTION sql_sandbox.lpad(s text, n integer) RETURNS text
LANGUAGE plpgsql STABLE STRICT SECURITY DEFINER SET search_path = pg_catalog AS $$
BEGIN
    PERFORM sql_sandbox.fits('lpad()', 4 * greatest(n, 0)::bigint);
    RETURN pg_catalog.lpad(s, n);
END
$$;

CREATE FUNCTION sql_sandbox.lpad(s text, n integer, fill text) RETURNS text
LANGUAGE plpgsql STABLE STRICT SECURITY DEFINER SET search_path = pg_catalog AS $$
BEGIN
    PERFORM sql_sandbox.fits('lpad()', 4 * greatest(n, 0)::bigint);
    RETURN pg_catalog.lpad(s, n, fill);
END
$$;

CREATE FUNCTION sql_sandbox.rpad(s text, n integer) RETURNS text
LANGUAGE plpgsql STABLE STRICT SECURITY DEFINER SET search_path = pg_catalog AS $$
BEGIN
    PERFORM sql_sandbox.fits('rpad()', 4 * greatest(n, 0)::bigint);
    RETURN pg_catalog.rpad(s, n);
END
$$;

CREATE FUNCTION sql_sandbox.rpad(s text, n integer, fill text) RETURNS text
LANGUAGE plpgsql STABLE STRICT SECURITY DEFINER SET search_path = pg_catalog AS $$
BEGIN
    PERFORM sql_sandbox.fits('rpad()', 4 * greatest(n, 0)::bigint);
    RETURN pg_catalog.rpad(s, n, fill);
END
$$;

-- array_fill builds the product of its dimensions times the value.
CREATE FUNCTION sql_sandbox.array_cells(v anyelement, dims integer[]) RETURNS bigint
LANGUAGE sql STABLE SET search_path = pg_catalog AS $$
    SELECT least(coalesce(exp(sum(ln(greatest(d, 1)))), 1) * greatest(coalesce(pg_column_size(v), 1), 1), 1e15)::bigint
    FROM unnest(dims) d
$$;

CREATE FUNCTION sql_sandbox.array_fill(v anyelement, dims integer[]) RETURNS anyarray
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog AS $$
BEGIN
    PERFORM sql_sandbox.fits('array_fill()', sql_sandbox.array_cells(v, dims));
    RETURN pg_catalog.array_fill(v, dims);
END
$$;

CREATE FUNCTION sql_sandbox.array_fill(v anyelement, dims integer[], lbounds integer[]) RETURNS anyarray
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog AS $$
BEGIN
    PERFORM sql_sandbox.fits('array_fill()', sql_sandbox.array_cells(v, dims));
    RETURN pg_catalog.array_fill(v, dims, lbounds);
END
$$;

-- open (migration 29) also refuses a row over the bound, before it is sent: a single value
-- returned whole once left a 200 MB body in the server's memory.
CREATE OR REPLACE FUNCTION sql_sandbox.open(statement text) RETURNS refcursor
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    c refcursor := 'q';
BEGIN
    OPEN c NO SCROLL FOR EXECUTE format(E'SELECT q.* FROM (%s\n) q WHERE sql_sandbox.fits(''a row'', pg_column_size(q.*))', statement);
    RETURN c;
END
$$;

-- A table's gate names it rather than its dataset: the policies are readable by every role
-- (pg_policies), and one naming dataset ids mapped every table to its private dataset.
CREATE FUNCTION sql_sandbox.allowed_table(relation regclass) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog AS $$
    SELECT EXISTS (SELECT 1 FROM catalog.sql_grants g JOIN catalog.datasets d ON d.id = g.dataset_id
                   JOIN pg_catalog.pg_class c ON c.relname = d.table_name
                   JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace AND n.nspname = d.table_schema
                   WHERE c.oid = relation
                     AND g.token = nullif(current_setting('meridian.sql_token', true), '')::uuid
                     AND g.expires_at > now())
$$;

DO $$
DECLARE
    t record;
BEGIN
    FOR t IN SELECT c.oid::regclass AS rel FROM pg_catalog.pg_policy p JOIN pg_catalog.pg_class c ON c.oid = p.polrelid
             JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
             WHERE p.polname = 'meridian_sql' AND n.nspname = 'data' LOOP
        EXECUTE format('ALTER POLICY meridian_sql ON %s USING ((SELECT sql_sandbox.allowed_table(%L::regclass)))', t.rel, t.rel::text);
    END LOOP;
END
$$;

REVOKE ALL ON FUNCTION sql_sandbox.fits(text, bigint), sql_sandbox.repeat(text, integer), sql_sandbox.lpad(text, integer),
    sql_sandbox.lpad(text, integer, text), sql_sandbox.rpad(text, integer), sql_sandbox.rpad(text, integer, text),
    sql_sandbox.array_cells(anyelement, integer[]), sql_sandbox.array_fill(anyelement, integer[]),
    sql_sandbox.array_fill(anyelement, integer[], integer[]), sql_sandbox.allowed_table(regclass) FROM PUBLIC;
-- The sandbox role gets EXECUTE on every function of sql_sandbox at start (sqlquery.OpenSandbox).

-- What the sandbox role may not call, named once for this migration and the server's check at
-- start: migration 33's functions that reach other sessions, the amplifiers shadowed above, the
-- large-object functions and the statistics functions.
CREATE FUNCTION catalog.sandbox_denied_functions() RETURNS SETOF regprocedure LANGUAGE sql STABLE AS $$
    SELECT f FROM catalog.session_reaching_functions() f
    UNION
    SELECT p.oid::regprocedure FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
    WHERE n.nspname = 'pg_catalog' AND (
        p.proname IN ('repeat', 'lpad', 'rpad', 'array_fill')
        OR p.proname LIKE 'lo\_%' OR p.proname IN ('loread', 'lowrite')
        OR (p.proname LIKE 'pg\_stat\_get\_%' AND p.pronargs = 1 AND p.proargtypes[0] = 'oid'::regtype))
$$;

-- The statistics views of relations, indexes, sequences, functions and databases.
CREATE FUNCTION catalog.sandbox_denied_views() RETURNS SETOF regclass LANGUAGE sql STABLE AS $$
    SELECT c.oid::regclass FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = 'pg_catalog' AND c.relkind = 'v'
      AND (c.relname ~ '^pg_stat(io)?_(all|sys|user|xact)_' OR c.relname IN ('pg_stat_database', 'pg_stat_database_conflicts'))
$$;

DO $$
DECLARE
    f regprocedure;
    v regclass;
    owner text := (SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = current_database());
    sandbox text := (SELECT role FROM catalog.sql_sandbox_login);
BEGIN
    IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        RAISE WARNING 'read-only SQL: repeat/lpad/rpad/array_fill, large objects and table statistics stay open to every role; run the migrations once as a superuser to confine the sandbox';
        RETURN;
    END IF;
    FOR f IN SELECT catalog.sandbox_denied_functions() EXCEPT SELECT catalog.session_reaching_functions() LOOP
        EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', f);
        EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %I, %I', f, current_user, owner);
        IF f::text LIKE 'pg_stat_get_%' THEN
            EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO pg_monitor', f);
        END IF;
    END LOOP;
    FOR v IN SELECT catalog.sandbox_denied_views() LOOP
        EXECUTE format('REVOKE SELECT ON %s FROM PUBLIC', v);
        EXECUTE format('GRANT SELECT ON %s TO %I, %I, pg_monitor', v, current_user, owner);
    END LOOP;
    IF sandbox IS NOT NULL AND EXISTS (SELECT 1 FROM pg_roles WHERE rolname = sandbox) THEN
        PERFORM lo_unlink(l.oid) FROM pg_catalog.pg_largeobject_metadata l WHERE l.lomowner = (SELECT oid FROM pg_roles WHERE rolname = sandbox);
    END IF;
END
$$;
