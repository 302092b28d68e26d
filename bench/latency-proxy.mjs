// latency-proxy.mjs - the SQS latency of bench/run.sh --latency P50:P99 (issue 19): an HTTP
// proxy in front of the emulator that holds every call for a delay drawn from a lognormal
// distribution with the given median and 99th percentile, one call in 1,000 for 2 s
// instead, and counts the calls by action. Half the delay is spent before the call goes to
// the emulator, half before its answer goes back, as a network round trip would. Both
// sides keep their connections alive. Not a general proxy: one upstream, plain HTTP.
//
// Protocol with bench.py: prints "listening PORT" once it listens; on stdin, "stats"
// prints one JSON line of counters, "reset" zeroes them, "stop" (or EOF) exits.
//
//   node latency-proxy.mjs --upstream URL --p50 MS --p99 MS [--slow-every N]
//                          [--slow-ms MS] [--seed N]
// --p50 0 --p99 0 forwards at once (no outliers either): the proxy's own cost.

import http from "node:http";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";

const { values: opt } = parseArgs({
    options: {
        upstream: { type: "string" },
        p50: { type: "string", default: "20" },
        p99: { type: "string", default: "150" },
        "slow-every": { type: "string", default: "1000" },
        "slow-ms": { type: "string", default: "2000" },
        seed: { type: "string", default: "1" },
    },
});
const upstream = new URL(opt.upstream ?? "");
const p50 = Number(opt.p50);
const p99 = Number(opt.p99);
const slowEvery = Number(opt["slow-every"]);
const slowMs = Number(opt["slow-ms"]);
if (!(p50 >= 0 && p99 >= p50 && slowEvery >= 1 && slowMs >= 0)) {
    console.error("latency-proxy.mjs: want 0 <= p50 <= p99, slow-every >= 1, slow-ms >= 0");
    process.exit(2);
}
const delays = p99 > 0;
const mu = Math.log(Math.max(p50, 1e-9));
const sigma = p99 > p50 ? (Math.log(p99) - mu) / 2.3263478740408408 : 0; // z(0.99)

// mulberry32: a small seeded generator, so that runs draw the same delays.
let state = Number(opt.seed) >>> 0;
function random() {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}

// Milliseconds this call is held in all: lognormal, or slowMs for one call in slowEvery.
function delay() {
    if (!delays) {
        return 0;
    }
    if (random() * slowEvery < 1) {
        counts.slow++;
        return slowMs;
    }
    const u = 1 - random();
    const z = Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * random());
    return Math.exp(mu + sigma * z);
}

const sleep = (ms) => (ms > 0 ? new Promise((r) => setTimeout(r, ms)) : Promise.resolve());

function zero() {
    return { calls: {}, received: 0, empty_receives: 0, slow: 0, errors: 0,
             delay_ms: 0, connections: 0, open: 0, max_open: 0 };
}
let counts = zero();
let open = 0;

// Messages in a ReceiveMessage answer: its "ReceiptHandle" keys (no JSON parse: cheap).
function messagesIn(body) {
    let n = 0;
    for (let i = body.indexOf("\"ReceiptHandle\""); i >= 0;
        i = body.indexOf("\"ReceiptHandle\"", i + 15)) {
        n++;
    }
    return n;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });

function forward(method, headers, body) {
    return new Promise((resolve, reject) => {
        const req = http.request({
            host: upstream.hostname, port: upstream.port, path: "/", method, agent, headers,
        }, (res) => {
            const chunks = [];
            res.on("data", (c) => chunks.push(c));
            res.on("end", () => resolve({ status: res.statusCode, headers: res.headers,
                                          body: Buffer.concat(chunks) }));
            res.on("error", reject);
        });
        req.on("error", reject);
        req.end(body);
    });
}

async function handle(req, res, body) {
    const target = String(req.headers["x-amz-target"] ?? "");
    const action = target.slice(target.lastIndexOf(".") + 1) || "(none)";
    counts.calls[action] = (counts.calls[action] ?? 0) + 1;
    const d = delay();
    counts.delay_ms += d;
    await sleep(d / 2);
    const headers = { ...req.headers, "content-length": body.length };
    delete headers.connection;
    delete headers["keep-alive"];
    const up = await forward(req.method, headers, body);
    if (action === "ReceiveMessage" && up.status === 200) {
        const n = messagesIn(up.body);
        counts.received += n;
        counts.empty_receives += n === 0 ? 1 : 0;
    }
    await sleep(d / 2);
    const out = { ...up.headers, "content-length": up.body.length };
    delete out.connection;
    delete out["keep-alive"];
    delete out["transfer-encoding"];
    res.writeHead(up.status, out);
    res.end(up.body);
}

const server = http.createServer({ keepAliveTimeout: 600000, headersTimeout: 60000,
                                   requestTimeout: 0 }, (req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
        handle(req, res, Buffer.concat(chunks)).catch((err) => {
            counts.errors++;
            console.error(`latency-proxy.mjs: ${err.message}`);
            if (!res.headersSent) {
                res.writeHead(502, { "content-type": "text/plain" });
            }
            res.end(String(err.message));
        });
    });
});
server.keepAliveTimeout = 600000;
server.on("connection", (sock) => {
    counts.connections++;
    open++;
    counts.max_open = Math.max(counts.max_open, open);
    sock.on("close", () => open--);
});

const lines = createInterface({ input: process.stdin });
lines.on("line", (line) => {
    if (line === "stats") {
        const cpu = process.cpuUsage();
        process.stdout.write(JSON.stringify({ ...counts, open,
                                              cpu_s: (cpu.user + cpu.system) / 1e6 }) + "\n");
    } else if (line === "reset") {
        counts = zero();
        counts.max_open = open;
    } else if (line === "stop") {
        process.exit(0);
    }
});
lines.on("close", () => process.exit(0));

server.listen(0, "127.0.0.1", () => {
    process.stdout.write(`listening ${server.address().port}\n`);
});
