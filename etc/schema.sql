-- schema.sql - the idempotency table of twice, for DBAs who create it by hand
-- (twiced creates or migrates it itself at start: core/idem/idem_schema.c, idem_migrate).
-- Not for other table names: twice quotes the configured name; edit it here.
--
-- The same DDL as idem_migrate, kept in sync by tests/integration/itest-idem.c.
-- Safe to run again, on an existing "classic" two-column table
-- (idempotency_key, processed_at): its rows become completed keys, and on a
-- table of an older twice, whose check knew only in_progress and completed.
--
-- Run it as the tables' owner, and twiced's role needs no CREATE on the schema:
--   GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO twice;
--   GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO twice;  -- the outbox's ids
-- (twiced looks before it creates anything; tests/integration/test_ready.py runs so).

BEGIN;

-- The classic two columns: many teams already have exactly this table.
CREATE TABLE IF NOT EXISTS twice_idempotency (
    idempotency_key TEXT PRIMARY KEY,
    -- time of the key's last state change (claim, takeover, release, completion)
    processed_at TIMESTAMPTZ NOT NULL DEFAULT now()
) WITH (fillfactor = 50);  -- see the lease index below

ALTER TABLE twice_idempotency
    -- in_progress, released, crashed, interrupted or completed (core/idem/idem.h
    -- says what each means). DEFAULT 'completed' only so that migrated rows
    -- count as done; twice always sets the state explicitly.
    ADD COLUMN IF NOT EXISTS state TEXT NOT NULL DEFAULT 'completed',
    -- the worker process holding an in_progress key, and until when
    ADD COLUMN IF NOT EXISTS owner TEXT,
    ADD COLUMN IF NOT EXISTS lease_until TIMESTAMPTZ,
    -- SHA-256 of the message body, to tell a duplicate from a conflict
    ADD COLUMN IF NOT EXISTS payload_sha256 BYTEA,
    -- the SQS message that holds or completed the key
    ADD COLUMN IF NOT EXISTS message_id TEXT,
    -- handler runs counted for the key (an attempt is a run, not a delivery)
    ADD COLUMN IF NOT EXISTS attempts INTEGER NOT NULL DEFAULT 1,
    ADD COLUMN IF NOT EXISTS created_at TIMESTAMPTZ NOT NULL DEFAULT now();

-- The states. Older versions checked only in_progress and completed, under a
-- name PostgreSQL chose: drop every check of the column that lacks the newest
-- state, then add the current one. Those versions counted claims in attempts,
-- the current one among them, where this one counts runs that ended: a key in
-- progress at the upgrade gives its current claim back (once: the next run
-- finds no old check), so that taking over its lapsed lease costs no attempt.
DO $twice$
DECLARE c name;
        claims boolean := false;
BEGIN
    FOR c IN SELECT k.conname FROM pg_constraint k
             JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attname = 'state'
             WHERE k.conrelid = 'twice_idempotency'::regclass AND k.contype = 'c'
               AND k.conkey = ARRAY[a.attnum]
               AND pg_get_constraintdef(k.oid) NOT LIKE '%interrupted%' LOOP
        EXECUTE format('ALTER TABLE twice_idempotency DROP CONSTRAINT %I', c);
        claims := true;
    END LOOP;
    IF claims THEN
        UPDATE twice_idempotency SET attempts = greatest(attempts - 1, 0)
            WHERE state = 'in_progress';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_constraint k
                   JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attname = 'state'
                   WHERE k.conrelid = 'twice_idempotency'::regclass AND k.contype = 'c'
                     AND k.conkey = ARRAY[a.attnum]) THEN
        ALTER TABLE twice_idempotency ADD CONSTRAINT twice_idempotency_state_check
            CHECK (state IN ('in_progress', 'released', 'crashed', 'interrupted', 'completed'));
    END IF;
END $twice$;

-- One index of leases (the "lease layout"), with half of each page left free:
-- a completion then changes no indexed column and finds room on its row's
-- page, so it is a HOT update (no index entries, half the WAL). The index
-- serves the master, which ends the live leases of a worker process that has
-- gone, and the janitor, which deletes keys whose lease and last change are
-- older than the retention (a completion leaves lease_until as it was;
-- release and the master set it to when the lease ended).
--
-- A table that twiced created before this layout keeps its three partial
-- indexes (on processed_at for completed and for free keys, and on (owner,
-- idempotency_key) for in-progress ones): twiced does not build an index on a
-- table that may be large, and works with either. To convert one, at a quiet
-- time, without blocking the workers:
--   CREATE INDEX CONCURRENTLY twice_idempotency_lease_idx
--       ON twice_idempotency (lease_until);
--   ALTER TABLE twice_idempotency SET (fillfactor = 50);  -- pages written from now on
--   DROP INDEX CONCURRENTLY twice_idempotency_janitor_idx;
--   DROP INDEX CONCURRENTLY twice_idempotency_owner_idx;
--   DROP INDEX CONCURRENTLY twice_idempotency_free_idx;
-- and restart twiced (each connection looks the layout up once).
CREATE INDEX IF NOT EXISTS twice_idempotency_lease_idx ON twice_idempotency (lease_until);

-- Queue pauses (twicectl pause, and each queue's circuit breaker): one row per
-- paused queue, read by every twiced host every few seconds (core/idem/pause.h).
-- twiced and twicectl create it themselves; named after the table above.
CREATE TABLE IF NOT EXISTS twice_idempotency_pause (
    queue TEXT PRIMARY KEY,
    -- 'operator' (twicectl pause) or 'breaker' (the queue's circuit breaker)
    kind TEXT NOT NULL DEFAULT 'operator' CHECK (kind IN ('operator', 'breaker')),
    reason TEXT NOT NULL,
    paused_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    -- operator: when the pause ends by itself (--for); breaker: the cooldown's end
    until TIMESTAMPTZ,
    -- breaker: the current cooldown in seconds, and the host running the probe
    cooldown INTEGER,
    probe_owner TEXT,
    probe_until TIMESTAMPTZ,
    -- resumed, kept until one host has sent the "resumed" alert
    resumed BOOLEAN NOT NULL DEFAULT false,
    -- one host has sent the "paused" alert
    announced BOOLEAN NOT NULL DEFAULT false
);

-- The outbox (core/idem/outbox.c, outbox_migrate): follow-up messages that
-- handlers staged with send(), written in the transaction that completes
-- their job's key, sent and deleted by the outbox relay (run by the worker
-- leading a host's duties). pending rows wait for the relay (claimed_until: a
-- relay holds them until then; claimed_by: the worker whose relay did, so
-- that its claims end when it does); refused ones were refused by SQS for
-- good and stay until `twicectl outbox retry` (or `twicectl outbox delete`).
CREATE TABLE IF NOT EXISTS twice_idempotency_outbox (
    id BIGSERIAL PRIMARY KEY,
    source_key TEXT NOT NULL,      -- the staging job's key: twice-outbox-id is key#idx
    idx INTEGER NOT NULL,          -- the message's index within that job's run
    source_queue TEXT NOT NULL,
    plugin TEXT NOT NULL,
    queue TEXT NOT NULL,           -- as the handler named it
    queue_url TEXT NOT NULL,
    body TEXT NOT NULL,
    delay_seconds INTEGER NOT NULL DEFAULT 0,
    group_id TEXT,
    attributes TEXT,               -- JSON array ["name","value",...] of String attributes
    state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'refused')),
    error TEXT,
    tries INTEGER NOT NULL DEFAULT 0,
    claimed_until TIMESTAMPTZ,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    claimed_by TEXT
);
-- A table created by an older twice gets the column it lacks.
ALTER TABLE twice_idempotency_outbox ADD COLUMN IF NOT EXISTS claimed_by TEXT;

-- For the relay, which claims the oldest pending rows.
CREATE INDEX IF NOT EXISTS twice_idempotency_outbox_pending
    ON twice_idempotency_outbox (id) WHERE state = 'pending';

-- Shared rate limits (rate_limit in twice.conf): one token bucket per limit,
-- leased from by every host (core/idem/tokens.c). twiced creates it on the
-- first lease; create it here when its database user may not create tables.
CREATE TABLE IF NOT EXISTS twice_idempotency_rate_limits (
    name TEXT PRIMARY KEY,         -- plugin:NAME or queue:NAME
    tokens DOUBLE PRECISION NOT NULL,  -- left after the last lease
    granted INTEGER NOT NULL DEFAULT 0,  -- what the last lease got
    updated_at TIMESTAMPTZ NOT NULL      -- when it was last refilled
);

COMMIT;
