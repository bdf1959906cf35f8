-- v2 on PostgreSQL: the console's users, per hall. A password is kept only as its argon2 hash. Adding or
-- removing a user, every login, refused login and console action is a journal row of kind 'access', chained with the
-- rest.

CREATE TABLE console_users (
    hall TEXT NOT NULL DEFAULT current_setting('bingo.hall'),
    name TEXT NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('caller', 'floor', 'inspector')),
    password_hash TEXT NOT NULL,
    added_at TEXT NOT NULL,         -- wall clock, UTC, ISO 8601
    PRIMARY KEY (hall, name)
);

CREATE VIEW users AS
SELECT name, role, password_hash, added_at FROM console_users WHERE hall = current_setting('bingo.hall')
WITH CHECK OPTION;

CREATE VIEW access AS
SELECT id, occasion, type AS what, (payload::jsonb #>> '{user}') AS "user", (payload::jsonb #>> '{role}') AS role,
       (payload::jsonb #>> '{action}') AS action, (payload::jsonb #>> '{reason}') AS reason,
       (payload::jsonb #>> '{address}') AS address, recorded_at
FROM events WHERE kind = 'access';
