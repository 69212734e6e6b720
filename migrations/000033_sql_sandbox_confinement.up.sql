-- The SQL sandbox's role (migration 29) must not reach other sessions. Three kinds of function
-- every role may call by default do: advisory locks (a session lock outlives the request on the
-- pooled connection; the server's own locks have guessable keys, such as the one of admin role
-- changes; and locks fill the shared lock table of every session), signalling backends
-- (pg_cancel_backend and pg_terminate_backend reach every other session of the same role, that
-- is, every other user's query), and pg_notify (even in a read-only transaction: announcements
-- on the server's channels, and gigabytes queued for every listener). Functions of pg_catalog
-- belong to the bootstrap superuser, so only a superuser can take them from PUBLIC; the server's
-- role and the database's owner get them back (a server serving as another role refuses to
-- start, naming them: db.MissingFunctions). Without a superuser this warns, the server says so
-- at start (sqlquery.Unconfined), and the sandbox still releases session locks at the end of
-- every request.
-- The functions, named once for this migration and for the server's check at start
-- (sqlquery.Unconfined).
CREATE FUNCTION catalog.session_reaching_functions() RETURNS SETOF regprocedure LANGUAGE sql STABLE AS $$
    SELECT p.oid::regprocedure FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
    WHERE n.nspname = 'pg_catalog' AND ((p.proname LIKE 'pg%advisory%' AND p.proname <> 'pg_advisory_unlock_all')
        OR p.proname IN ('pg_cancel_backend', 'pg_terminate_backend', 'pg_notify'))
$$;

DO $$
DECLARE
    f regprocedure;
    owner text := (SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = current_database());
BEGIN
    IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        RAISE WARNING 'read-only SQL: advisory locks, backend signals and pg_notify stay open to every role; run the migrations once as a superuser to confine the sandbox';
        RETURN;
    END IF;
    FOR f IN SELECT catalog.session_reaching_functions() LOOP
        EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', f);
        EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %I, %I', f, current_user, owner);
    END LOOP;
END
$$;
