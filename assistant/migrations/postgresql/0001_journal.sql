-- v1 on PostgreSQL: the journal of every hall that shares the server, each hall its own chain (ids, hashes and
-- anchors per hall). A connection sets `bingo.hall`; the views `events`, `meta` and the typed views below show that
-- hall's rows only, and `events` and `meta` take its inserts and deletes (the hall column defaults to the setting), so
-- the store's SQL is the SQLite store's. `hall_occasions` lists the occasions of every hall.

CREATE TABLE journal (
    hall TEXT NOT NULL DEFAULT current_setting('bingo.hall'),
    id BIGINT NOT NULL,
    occasion BIGINT,                -- NULL for chain anchors
    kind TEXT NOT NULL,             -- occasion-start | input | output | winner | occasion-close | anchor
    seq INTEGER,                    -- input: its sequence number; output: the sequence number of the input that caused it
    sub INTEGER,                    -- output: its index among the outputs of that input
    type TEXT NOT NULL,             -- message class (Utterance, CallMade, ...) or record kind
    payload TEXT NOT NULL,          -- canonical JSON (sorted keys, compact), hashed as text
    recorded_at TEXT NOT NULL,      -- wall clock, UTC, ISO 8601
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL,
    PRIMARY KEY (hall, id)
);

-- the highest id each hall ever used: rows cut off the end of a chain are still counted (SQLite's sqlite_sequence)
CREATE TABLE hall_sequence (hall TEXT PRIMARY KEY, last_id BIGINT NOT NULL);

-- role: 'journal' for every hall (archives are SQLite files)
CREATE TABLE hall_meta (
    hall TEXT NOT NULL DEFAULT current_setting('bingo.hall'),
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (hall, key)
);

CREATE UNIQUE INDEX journal_input ON journal (hall, occasion, seq) WHERE kind = 'input';
CREATE UNIQUE INDEX journal_output ON journal (hall, occasion, seq, sub) WHERE kind = 'output';
CREATE UNIQUE INDEX journal_occasion ON journal (hall, occasion, kind) WHERE kind IN ('occasion-start', 'occasion-close');
CREATE INDEX journal_by_occasion ON journal (hall, occasion, kind, id);

CREATE VIEW events AS
SELECT id, occasion, kind, seq, sub, type, payload, recorded_at, prev_hash, hash
FROM journal WHERE hall = current_setting('bingo.hall')
WITH CHECK OPTION;

CREATE VIEW meta AS
SELECT key, value FROM hall_meta WHERE hall = current_setting('bingo.hall')
WITH CHECK OPTION;

CREATE VIEW hall_occasions AS
SELECT s.hall, s.occasion AS id,
       (s.payload::jsonb #>> '{source}') AS source,
       (s.payload::jsonb #>> '{started_at}') AS started_at,
       (c.payload::jsonb #>> '{closed_at}') AS closed_at
FROM journal s LEFT JOIN journal c ON c.hall = s.hall AND c.occasion = s.occasion AND c.kind = 'occasion-close'
WHERE s.kind = 'occasion-start';

CREATE VIEW occasions AS
SELECT s.occasion AS id, current_setting('bingo.hall') AS hall,
       (s.payload::jsonb #>> '{source}') AS source,
       (s.payload::jsonb #>> '{started_at}') AS started_at,
       (c.payload::jsonb #>> '{closed_at}') AS closed_at
FROM events s LEFT JOIN events c ON c.occasion = s.occasion AND c.kind = 'occasion-close'
WHERE s.kind = 'occasion-start';

CREATE VIEW games AS
SELECT o.occasion, (o.payload::jsonb #>> '{game}') AS game,
       (o.payload::jsonb #>> '{plan,type}') AS type,
       (o.payload::jsonb #>> '{plan,balls}') AS balls,
       (o.payload::jsonb #>> '{plan,cards_sold}') AS cards_sold,
       (o.payload::jsonb #>> '{plan,prize}') AS prize,
       (o.payload::jsonb #>> '{plan,last_ball_required}') AS last_ball_required,
       (o.payload::jsonb #>> '{time}') AS start,
       (c.payload::jsonb #>> '{status}') AS status,
       (c.payload::jsonb #>> '{time}') AS "end"
FROM events o LEFT JOIN events c
  ON c.occasion = o.occasion AND c.kind = 'output' AND c.type = 'GameClosed'
 AND (c.payload::jsonb #>> '{game}') = (o.payload::jsonb #>> '{game}')
WHERE o.kind = 'output' AND o.type = 'GameOpened';

CREATE VIEW utterances AS
SELECT occasion, seq, (payload::jsonb #>> '{start}') AS start, (payload::jsonb #>> '{end}') AS "end",
       (payload::jsonb #>> '{role}') AS role, (payload::jsonb #>> '{text}') AS words,
       (payload::jsonb #>> '{confidence}') AS confidence, (payload::jsonb #>> '{uncertain}') AS uncertain,
       (payload::jsonb #>> '{start}') AS audio_offset
FROM events WHERE kind = 'input' AND type = 'Utterance';

CREATE VIEW board_keys AS
SELECT occasion, seq, (payload::jsonb #>> '{time}') AS time, (payload::jsonb #>> '{ball}') AS ball
FROM events WHERE kind = 'input' AND type = 'BoardKey';

CREATE VIEW calls AS
SELECT occasion, (payload::jsonb #>> '{game}') AS game, (payload::jsonb #>> '{ball}') AS ball,
       (payload::jsonb #>> '{time}') AS time, (payload::jsonb #>> '{heard}') AS heard
FROM events WHERE kind = 'output' AND type = 'CallMade';

CREATE VIEW claims AS
SELECT occasion, (payload::jsonb #>> '{game}') AS game, (payload::jsonb #>> '{time}') AS time,
       (payload::jsonb #>> '{valid}') AS valid, (payload::jsonb #>> '{manufacturer}') AS manufacturer,
       (payload::jsonb #>> '{serial}') AS serial
FROM events WHERE kind = 'output' AND type = 'ClaimResolved';

CREATE VIEW findings AS
SELECT occasion, (payload::jsonb #>> '{game}') AS game, (payload::jsonb #>> '{clause}') AS clause,
       (payload::jsonb #>> '{code}') AS code, (payload::jsonb #>> '{severity}') AS severity,
       (payload::jsonb #>> '{time}') AS time, (payload::jsonb #>> '{heard}') AS heard,
       (payload::jsonb #>> '{message}') AS message
FROM events WHERE kind = 'output' AND type = 'Finding';

CREATE VIEW prompts AS
SELECT occasion, (payload::jsonb #>> '{time}') AS time, (payload::jsonb #>> '{kind}') AS kind,
       (payload::jsonb #>> '{text}') AS text, (payload::jsonb #>> '{clause}') AS clause
FROM events WHERE kind = 'output' AND type = 'Prompt';

CREATE VIEW winners AS
SELECT occasion, (payload::jsonb #>> '{game}') AS game, (payload::jsonb #>> '{name}') AS name,
       (payload::jsonb #>> '{contact}') AS contact, (payload::jsonb #>> '{prize}') AS prize,
       (payload::jsonb #>> '{tax_document}') AS tax_document, recorded_at
FROM events WHERE kind = 'winner';
