-- Token buckets of the rate limits every replica must share (RATE_LIMITS_SHARED: sign-in,
-- registration, verification, token refresh), so that N replicas behind a balancer allow what
-- one server allows, not N times as many guesses. Unlogged: a crash forgets the buckets, which
-- only refills them early; one row per operation and client, removed once it is full again.
CREATE UNLOGGED TABLE catalog.rate_buckets (
    scope   text NOT NULL,
    key     text NOT NULL,
    tokens  float8 NOT NULL,
    granted boolean NOT NULL,
    at      timestamptz NOT NULL,
    PRIMARY KEY (scope, key)
);
