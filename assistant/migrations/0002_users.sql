-- v2: the console's users. A password is kept only as its argon2 hash. Adding or removing a user, every
-- login, refused login and console action is a journal row of kind 'access', chained with the rest.

CREATE TABLE users (
    name TEXT PRIMARY KEY,
    role TEXT NOT NULL CHECK (role IN ('caller', 'floor', 'inspector')),
    password_hash TEXT NOT NULL,
    added_at TEXT NOT NULL          -- wall clock, UTC, ISO 8601
);

CREATE VIEW access AS
SELECT id, occasion, type AS what, json_extract(payload, '$.user') AS user, json_extract(payload, '$.role') AS role,
       json_extract(payload, '$.action') AS action, json_extract(payload, '$.reason') AS reason,
       json_extract(payload, '$.address') AS address, recorded_at
FROM events WHERE kind = 'access';
