// consumer.mjs - contender (b) of the benchmark: sqs-consumer (pinned in bench/package.json)
// with a no-op handler behind a batched PostgreSQL idempotency guard, the way a careful Node
// team would write it. Not a general-purpose consumer, and not run by tests.
//
// One process runs --consumers Consumer instances (each one polls, handles and deletes in
// turn, as sqs-consumer does) sharing one SQSClient and one pg.Pool. Per received batch of
// up to 10 messages the handler does, in order:
//   1. claim: ONE statement inserts an in_progress row (owner, lease) for each distinct key
//      of the batch, takes over a row whose lease has expired, and reports for the others
//      whether they are completed (ON CONFLICT DO UPDATE ... WHERE lease expired);
//   2. runs the no-op handler once per claimed key (it counts its calls);
//   3. complete: ONE statement marks the claimed keys completed (where we still own them);
//   4. returns the messages of completed keys (claimed now or earlier) to sqs-consumer, which
//      deletes them with one DeleteMessageBatch. A key held by a live lease elsewhere is left
//      alone: its message comes back after the visibility timeout (sqs-consumer has no
//      per-message "hide until" from a batch handler without one more call per batch).
// That is twice's claim + complete, less its payload hash, attempt count and heartbeat.
//
// Protocol with bench.py: prints "ready" once connected, starts on a "go" line on stdin,
// stops on "stop" and prints one JSON line of counts, then exits.
//
//   node consumer.mjs --endpoint URL --region R --queue URL --dsn DSN --table T
//                     --consumers N --wait S --visibility S

import { createInterface } from "node:readline";
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { parseArgs } from "node:util";

import { SQSClient } from "@aws-sdk/client-sqs";
import pg from "pg";
import { Consumer } from "sqs-consumer";

const { values: opt } = parseArgs({
    options: {
        endpoint: { type: "string" },
        region: { type: "string", default: "us-east-1" },
        queue: { type: "string" },
        dsn: { type: "string" },
        table: { type: "string", default: "peer_idempotency" },
        consumers: { type: "string", default: "4" },
        wait: { type: "string", default: "1" },
        visibility: { type: "string", default: "30" },
        "lease-margin": { type: "string", default: "5" },
    },
});
for (const name of ["endpoint", "queue", "dsn"]) {
    if (!opt[name]) {
        console.error(`consumer.mjs: --${name} is required`);
        process.exit(2);
    }
}
const nconsumers = Number(opt.consumers);
const visibility = Number(opt.visibility);
const lease = visibility + Number(opt["lease-margin"]);
const owner = `${hostname()}:${process.pid}:${randomBytes(4).toString("hex")}`;
const table = '"' + opt.table.replaceAll('"', '""') + '"';

// Claim the distinct keys of a batch ($1), in key order so that two claimers of overlapping
// batches cannot deadlock. The final SELECT reads the statement's snapshot: a key neither
// inserted nor taken over is completed (final) or held by a live lease.
const sqlClaim =
    `WITH input AS (SELECT DISTINCT k FROM unnest($1::text[]) AS u (k)),` +
    ` ins AS (INSERT INTO ${table} AS t (idempotency_key, state, owner, lease_until,` +
    ` processed_at) SELECT k, 'in_progress', $2, now() + $3::int * interval '1 second', now()` +
    ` FROM input ORDER BY k ON CONFLICT (idempotency_key) DO UPDATE SET owner = excluded.owner,` +
    ` lease_until = excluded.lease_until, processed_at = excluded.processed_at` +
    ` WHERE t.state = 'in_progress' AND t.lease_until < now() RETURNING t.idempotency_key)` +
    ` SELECT i.k, ins.idempotency_key IS NOT NULL AS claimed, t.state` +
    ` FROM input i LEFT JOIN ins ON ins.idempotency_key = i.k` +
    ` LEFT JOIN ${table} t ON t.idempotency_key = i.k`;
const sqlComplete =
    `UPDATE ${table} SET state = 'completed', processed_at = now(), lease_until = NULL,` +
    ` owner = NULL WHERE idempotency_key = ANY ($1::text[]) AND owner = $2` +
    ` AND state = 'in_progress' RETURNING idempotency_key`;

const counts = { received: 0, handled: 0, acked: 0, busy: 0, lost_lease: 0, errors: 0 };

function keyOf(message) {
    return "noop:" + JSON.parse(message.Body).id;
}

// The no-op handler: the whole effect is this counter.
function noop() {
    counts.handled++;
}

async function handleBatch(pool, messages) {
    counts.received += messages.length;
    const keys = messages.map(keyOf);
    const claim = await pool.query({ name: "claim", text: sqlClaim,
                                     values: [keys, owner, lease] });
    const claimed = [];
    const done = new Set();
    for (const row of claim.rows) {
        if (row.claimed) {
            claimed.push(row.k);
        } else if (row.state === "completed") {
            done.add(row.k);
        } else {
            counts.busy++;
        }
    }
    for (let i = 0; i < claimed.length; i++) {
        noop();
    }
    if (claimed.length > 0) {
        const res = await pool.query({ name: "complete", text: sqlComplete,
                                       values: [claimed, owner] });
        for (const row of res.rows) {
            done.add(row.idempotency_key);
        }
        counts.lost_lease += claimed.length - res.rows.length;
    }
    const acked = messages.filter((m, i) => done.has(keys[i]));
    counts.acked += acked.length;
    return acked;
}

const sqs = new SQSClient({
    region: opt.region,
    endpoint: opt.endpoint,
    useQueueUrlAsEndpoint: false,
    credentials: {
        accessKeyId: process.env.AWS_ACCESS_KEY_ID,
        secretAccessKey: process.env.AWS_SECRET_ACCESS_KEY,
    },
});
const pool = new pg.Pool({ connectionString: opt.dsn, max: nconsumers });
// Connect every pool slot before "ready", so that setup is not measured.
const warm = await Promise.all(Array.from({ length: nconsumers }, () => pool.connect()));
warm.forEach((c) => c.release());

const consumers = [];
for (let i = 0; i < nconsumers; i++) {
    const c = Consumer.create({
        queueUrl: opt.queue,
        sqs,
        batchSize: 10,
        waitTimeSeconds: Number(opt.wait),
        visibilityTimeout: visibility,
        handleMessageBatch: (messages) => handleBatch(pool, messages),
    });
    c.on("error", (err) => {
        counts.errors++;
        console.error(`consumer.mjs: ${err.message}`);
    });
    c.on("processing_error", (err) => {
        counts.errors++;
        console.error(`consumer.mjs: processing: ${err.message}`);
    });
    consumers.push(c);
}

function stopped(c) {
    return new Promise((resolve) => {
        if (!c.status.isPolling) {
            resolve();
            return;
        }
        const check = setInterval(() => {
            if (!c.status.isPolling) {
                clearInterval(check);
                resolve();
            }
        }, 20);
    });
}

async function stopAll() {
    consumers.forEach((c) => c.stop());
    await Promise.all(consumers.map(stopped));
    await pool.end();
    sqs.destroy();
    process.stdout.write(JSON.stringify(counts) + "\n");
    process.exit(0);
}

const lines = createInterface({ input: process.stdin });
lines.on("line", (line) => {
    if (line === "go") {
        consumers.forEach((c) => c.start());
    } else if (line === "stop") {
        stopAll();
    }
});
process.stdout.write("ready\n");
