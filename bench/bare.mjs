// bare.mjs - contender (c) of the benchmark, the ceiling: --loops concurrent loops of
// ReceiveMessage(10) + DeleteMessageBatch over kept-alive HTTP connections, signed with
// SigV4, no guard and no handler. It measures what the emulator itself can serve on this
// machine. Not an SQS client for anything else.
//
// Protocol with bench.py: prints "ready", starts on a "go" line on stdin, stops on "stop"
// and prints one JSON line of counts, then exits.
//
//   node bare.mjs --endpoint URL --region R --queue URL --loops N --wait S --visibility S

import { createHash, createHmac } from "node:crypto";
import http from "node:http";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";

const { values: opt } = parseArgs({
    options: {
        endpoint: { type: "string" },
        region: { type: "string", default: "us-east-1" },
        queue: { type: "string" },
        loops: { type: "string", default: "4" },
        wait: { type: "string", default: "1" },
        visibility: { type: "string", default: "30" },
    },
});
if (!opt.endpoint || !opt.queue) {
    console.error("bare.mjs: --endpoint and --queue are required");
    process.exit(2);
}
const endpoint = new URL(opt.endpoint);
const accessKey = process.env.AWS_ACCESS_KEY_ID;
const secretKey = process.env.AWS_SECRET_ACCESS_KEY;
const agent = new http.Agent({ keepAlive: true, maxSockets: Number(opt.loops) });

const sha256hex = (data) => createHash("sha256").update(data).digest("hex");
const hmac = (key, data) => createHmac("sha256", key).update(data).digest();

// SigV4 for a POST to "/" with no query: the signed headers are host, x-amz-date and
// x-amz-target (content-type travels unsigned, which SigV4 allows).
function authorization(amzDate, target, body) {
    const day = amzDate.slice(0, 8);
    const canonical = ["POST", "/", "", `host:${endpoint.host}`, `x-amz-date:${amzDate}`,
                       `x-amz-target:${target}`, "", "host;x-amz-date;x-amz-target",
                       sha256hex(body)].join("\n");
    const scope = `${day}/${opt.region}/sqs/aws4_request`;
    const toSign = ["AWS4-HMAC-SHA256", amzDate, scope, sha256hex(canonical)].join("\n");
    let key = hmac("AWS4" + secretKey, day);
    for (const part of [opt.region, "sqs", "aws4_request"]) {
        key = hmac(key, part);
    }
    const signature = createHmac("sha256", key).update(toSign).digest("hex");
    return `AWS4-HMAC-SHA256 Credential=${accessKey}/${scope}, ` +
        `SignedHeaders=host;x-amz-date;x-amz-target, Signature=${signature}`;
}

function call(operation, params) {
    const body = JSON.stringify(params);
    const amzDate = new Date().toISOString().replace(/[-:]/g, "").replace(/\.\d+/, "");
    const target = "AmazonSQS." + operation;
    return new Promise((resolve, reject) => {
        const req = http.request({
            host: endpoint.hostname,
            port: endpoint.port,
            path: "/",
            method: "POST",
            agent,
            headers: {
                "Content-Type": "application/x-amz-json-1.0",
                "Content-Length": Buffer.byteLength(body),
                "X-Amz-Date": amzDate,
                "X-Amz-Target": target,
                Authorization: authorization(amzDate, target, body),
            },
        }, (res) => {
            const chunks = [];
            res.on("data", (c) => chunks.push(c));
            res.on("end", () => {
                const text = Buffer.concat(chunks).toString("utf8");
                if (res.statusCode !== 200) {
                    reject(new Error(`${operation}: HTTP ${res.statusCode}: ${text}`));
                    return;
                }
                resolve(text ? JSON.parse(text) : {});
            });
        });
        req.on("error", reject);
        req.end(body);
    });
}

const counts = { received: 0, deleted: 0, failed: 0, errors: 0 };
let running = false;

async function loop() {
    while (running) {
        try {
            const r = await call("ReceiveMessage", {
                QueueUrl: opt.queue,
                MaxNumberOfMessages: 10,
                WaitTimeSeconds: Number(opt.wait),
                VisibilityTimeout: Number(opt.visibility),
            });
            const msgs = r.Messages ?? [];
            if (msgs.length === 0) {
                continue;
            }
            counts.received += msgs.length;
            const d = await call("DeleteMessageBatch", {
                QueueUrl: opt.queue,
                Entries: msgs.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle })),
            });
            counts.deleted += (d.Successful ?? []).length;
            counts.failed += (d.Failed ?? []).length;
        } catch (err) {
            counts.errors++;
            console.error(`bare.mjs: ${err.message}`);
            await new Promise((r) => setTimeout(r, 100));
        }
    }
}

let loops = [];
const lines = createInterface({ input: process.stdin });
lines.on("line", async (line) => {
    if (line === "go" && !running) {
        running = true;
        loops = Array.from({ length: Number(opt.loops) }, loop);
    } else if (line === "stop") {
        running = false;
        await Promise.all(loops);
        agent.destroy();
        process.stdout.write(JSON.stringify(counts) + "\n");
        process.exit(0);
    }
});
process.stdout.write("ready\n");
