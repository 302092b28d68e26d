-- schema.sql - the idempotency table of twice, for DBAs who create it by hand
-- (twiced creates or migrates it itself at start: core/idem.c, idem_migrate).
-- Not for other table names: twice quotes the configured name; edit it here.
--
-- The same DDL as idem_migrate, kept in sync by tests/integration/itest-idem.c.
-- Safe to run again, and on an existing "classic" two-column table
-- (idempotency_key, processed_at): its rows become completed keys.

BEGIN;

-- The classic two columns: many teams already have exactly this table.
CREATE TABLE IF NOT EXISTS twice_idempotency (
    idempotency_key TEXT PRIMARY KEY,
    -- time of the key's last state change (claim, takeover, completion)
    processed_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

ALTER TABLE twice_idempotency
    -- DEFAULT 'completed' only so that migrated rows count as done; twice
    -- always sets the state explicitly.
    ADD COLUMN IF NOT EXISTS state TEXT NOT NULL DEFAULT 'completed'
        CHECK (state IN ('in_progress', 'completed')),
    -- the worker process holding an in_progress key, and until when
    ADD COLUMN IF NOT EXISTS owner TEXT,
    ADD COLUMN IF NOT EXISTS lease_until TIMESTAMPTZ,
    -- SHA-256 of the message body, to tell a duplicate from a conflict
    ADD COLUMN IF NOT EXISTS payload_sha256 BYTEA,
    -- the SQS message that holds or completed the key
    ADD COLUMN IF NOT EXISTS message_id TEXT,
    -- claims since the key was last free (takeovers count up)
    ADD COLUMN IF NOT EXISTS attempts INTEGER NOT NULL DEFAULT 1,
    ADD COLUMN IF NOT EXISTS created_at TIMESTAMPTZ NOT NULL DEFAULT now();

-- For the janitor, which deletes completed keys older than the retention.
CREATE INDEX IF NOT EXISTS twice_idempotency_janitor_idx
    ON twice_idempotency (processed_at) WHERE state = 'completed';

-- For the master, which ends the leases of a worker process that has gone.
-- Also what completions, releases and lease extensions (owner and keys) use.
CREATE INDEX IF NOT EXISTS twice_idempotency_owner_idx
    ON twice_idempotency (owner, idempotency_key) WHERE state = 'in_progress';

COMMIT;
