-- Share links and embed tokens lend a map's datasets to whoever holds them, anonymous callers
-- included. A grant lets its holder read a restricted dataset, never widen its audience: a link or
-- token may lend only what its creator could publish (issue 28): a dataset the creator owns, any
-- dataset when the creator is an admin (who may change any dataset's visibility), and otherwise
-- only what is already public and published. Read access alone (a grant, internal visibility) is
-- not enough. Embed tokens check it when made (their scope) and at every use, in the statement
-- that resolves the token, since ownership, roles and visibility change after a token is made;
-- share links check it each time the link is opened.
CREATE FUNCTION catalog.dataset_lendable(visibility text, record_status text, created_by uuid, creator uuid, creator_is_admin boolean)
RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
    SELECT creator_is_admin
        OR (creator IS NOT NULL AND created_by = creator)
        OR (visibility = 'public' AND record_status = 'published')
$$;
