-- The AI tokens each user spent per day (UTC), for the daily quota
-- (ai.max_tokens_per_user_per_day): every provider call adds what the provider reported, or an
-- estimate when it reports nothing. Rows of past days are kept small (one per user and day) and
-- go with their user.
CREATE TABLE catalog.ai_token_usage (
    user_id  uuid NOT NULL REFERENCES catalog.users (id) ON DELETE CASCADE,
    day      date NOT NULL,
    tokens   bigint NOT NULL DEFAULT 0 CHECK (tokens >= 0),
    requests integer NOT NULL DEFAULT 0,
    PRIMARY KEY (user_id, day)
);
