-- Collections have no visibility of their own: every caller, anonymous included, sees every
-- collection, and only the member datasets are filtered per caller (catalog.dataset_visible).
-- The stored visibility stays for the clients that send and read it; this function, still called
-- by search (the collections a text search appends), now says so for every caller.
CREATE OR REPLACE FUNCTION catalog.collection_visible(visibility text, created_by uuid, caller uuid, is_admin boolean)
RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
    SELECT true
$$;
