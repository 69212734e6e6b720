-- Read-only SQL reads the datasets' own tables, by the name the assistant's tool server gives
-- agents (data.<table_name>), instead of one view per dataset in sql_sandbox. A view depended on
-- its table, so a dataset ever queried could no longer be dropped or lose a column. Each table
-- the sandbox reads now carries a row security policy for the sandbox role (internal/sqlquery,
-- made on a table's first query): its rows show only to a request granted the dataset, the gate
-- the views had. The table's owner (the server) is not subject to it. The old views go.
DO $$
DECLARE
    v text;
BEGIN
    FOR v IN SELECT viewname FROM pg_catalog.pg_views WHERE schemaname = 'sql_sandbox' LOOP
        EXECUTE format('DROP VIEW sql_sandbox.%I', v);
    END LOOP;
END
$$;
