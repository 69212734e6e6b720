-- Whether a text reads as a value of a type: the type change of a column asks it of every value
-- before converting (PostgreSQL 16 has pg_input_is_valid; 15 does not). The type name goes
-- through regtype, so only a type can be named.
CREATE FUNCTION catalog.input_is_valid(value text, type_name text) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    EXECUTE format('SELECT %L::%s', value, type_name::regtype);
    RETURN true;
EXCEPTION WHEN data_exception THEN
    RETURN false;
END
$$;
