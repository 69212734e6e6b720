-- Servers keep the principal of an access token once read (internal/auth, principals.go): every
-- committed change of a user, and every revocation or removal of a refresh token (which may end
-- a session), is announced on auth_users with the user's id, and each server forgets what it
-- keeps of that user. Announcements of one transaction with the same payload arrive once.
CREATE FUNCTION catalog.announce_user() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'users' THEN
        PERFORM pg_notify('auth_users', OLD.id::text);
    ELSE
        PERFORM pg_notify('auth_users', OLD.user_id::text);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER users_announce AFTER UPDATE OR DELETE ON catalog.users
    FOR EACH ROW EXECUTE FUNCTION catalog.announce_user();

CREATE TRIGGER refresh_tokens_announce_revoked AFTER UPDATE OF revoked_at ON catalog.refresh_tokens
    FOR EACH ROW WHEN (OLD.revoked_at IS NULL AND NEW.revoked_at IS NOT NULL) EXECUTE FUNCTION catalog.announce_user();

CREATE TRIGGER refresh_tokens_announce_removed AFTER DELETE ON catalog.refresh_tokens
    FOR EACH ROW WHEN (OLD.revoked_at IS NULL) EXECUTE FUNCTION catalog.announce_user();
