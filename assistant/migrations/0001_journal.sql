-- v1: one append-only journal holding every record in insertion order, chained by sha256.
-- Typed views below read it; they hold no data of their own, so there is nothing to edit but the journal.

CREATE TABLE events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    occasion INTEGER,               -- NULL for chain anchors
    kind TEXT NOT NULL,             -- occasion-start | input | output | winner | occasion-close | anchor
    seq INTEGER,                    -- input: its sequence number; output: the sequence number of the input that caused it
    sub INTEGER,                    -- output: its index among the outputs of that input
    type TEXT NOT NULL,             -- message class (Utterance, CallMade, ...) or record kind
    payload TEXT NOT NULL,          -- canonical JSON (sorted keys, compact)
    recorded_at TEXT NOT NULL,      -- wall clock, UTC, ISO 8601
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL
);

-- role: 'journal' (the live database) or 'archive' (rows moved out by prune, with the hash the archive's chain starts from)
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

CREATE UNIQUE INDEX events_input ON events (occasion, seq) WHERE kind = 'input';
CREATE UNIQUE INDEX events_output ON events (occasion, seq, sub) WHERE kind = 'output';
CREATE UNIQUE INDEX events_occasion ON events (occasion, kind) WHERE kind IN ('occasion-start', 'occasion-close');
CREATE INDEX events_by_occasion ON events (occasion, kind, id);

CREATE VIEW occasions AS
SELECT s.occasion AS id,
       json_extract(s.payload, '$.source') AS source,
       json_extract(s.payload, '$.started_at') AS started_at,
       json_extract(c.payload, '$.closed_at') AS closed_at
FROM events s LEFT JOIN events c ON c.occasion = s.occasion AND c.kind = 'occasion-close'
WHERE s.kind = 'occasion-start';

CREATE VIEW games AS
SELECT o.occasion, json_extract(o.payload, '$.game') AS game,
       json_extract(o.payload, '$.plan.type') AS type,
       json_extract(o.payload, '$.plan.balls') AS balls,
       json_extract(o.payload, '$.plan.cards_sold') AS cards_sold,
       json_extract(o.payload, '$.plan.prize') AS prize,
       json_extract(o.payload, '$.plan.last_ball_required') AS last_ball_required,
       json_extract(o.payload, '$.time') AS start,
       json_extract(c.payload, '$.status') AS status,
       json_extract(c.payload, '$.time') AS end
FROM events o LEFT JOIN events c
  ON c.occasion = o.occasion AND c.kind = 'output' AND c.type = 'GameClosed'
 AND json_extract(c.payload, '$.game') = json_extract(o.payload, '$.game')
WHERE o.kind = 'output' AND o.type = 'GameOpened';

CREATE VIEW utterances AS
SELECT occasion, seq, json_extract(payload, '$.start') AS start, json_extract(payload, '$.end') AS end,
       json_extract(payload, '$.role') AS role, json_extract(payload, '$.text') AS words,
       json_extract(payload, '$.confidence') AS confidence, json_extract(payload, '$.uncertain') AS uncertain,
       json_extract(payload, '$.start') AS audio_offset
FROM events WHERE kind = 'input' AND type = 'Utterance';

CREATE VIEW board_keys AS
SELECT occasion, seq, json_extract(payload, '$.time') AS time, json_extract(payload, '$.ball') AS ball
FROM events WHERE kind = 'input' AND type = 'BoardKey';

CREATE VIEW calls AS
SELECT occasion, json_extract(payload, '$.game') AS game, json_extract(payload, '$.ball') AS ball,
       json_extract(payload, '$.time') AS time, json_extract(payload, '$.heard') AS heard
FROM events WHERE kind = 'output' AND type = 'CallMade';

CREATE VIEW claims AS
SELECT occasion, json_extract(payload, '$.game') AS game, json_extract(payload, '$.time') AS time,
       json_extract(payload, '$.valid') AS valid, json_extract(payload, '$.manufacturer') AS manufacturer,
       json_extract(payload, '$.serial') AS serial
FROM events WHERE kind = 'output' AND type = 'ClaimResolved';

CREATE VIEW findings AS
SELECT occasion, json_extract(payload, '$.game') AS game, json_extract(payload, '$.clause') AS clause,
       json_extract(payload, '$.code') AS code, json_extract(payload, '$.severity') AS severity,
       json_extract(payload, '$.time') AS time, json_extract(payload, '$.heard') AS heard,
       json_extract(payload, '$.message') AS message
FROM events WHERE kind = 'output' AND type = 'Finding';

CREATE VIEW prompts AS
SELECT occasion, json_extract(payload, '$.time') AS time, json_extract(payload, '$.kind') AS kind,
       json_extract(payload, '$.text') AS text, json_extract(payload, '$.clause') AS clause
FROM events WHERE kind = 'output' AND type = 'Prompt';

CREATE VIEW winners AS
SELECT occasion, json_extract(payload, '$.game') AS game, json_extract(payload, '$.name') AS name,
       json_extract(payload, '$.contact') AS contact, json_extract(payload, '$.prize') AS prize,
       json_extract(payload, '$.tax_document') AS tax_document, recorded_at
FROM events WHERE kind = 'winner';
