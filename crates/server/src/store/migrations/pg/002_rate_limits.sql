-- `serve --rate-limit N` shared by every server process on the database: per
-- token (its selector), the theoretical arrival time of its next request
-- (GCRA), in Unix seconds of the database's clock.
CREATE TABLE rate_limits (
    key TEXT PRIMARY KEY,
    tat DOUBLE PRECISION NOT NULL
);
