// fauxqs.mjs: starts the SQS emulator fauxqs (pinned in tests/package.json) for the tests,
// on 127.0.0.1 only and without a log line per request. Not the fauxqs CLI: that one
// listens on every interface and logs each request. Started by scripts/testenv.sh.
//
//   node scripts/fauxqs.mjs --port PORT [--pidfile FILE] [--modules DIR/node_modules]

import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

const PINNED = "1.9.2";
const here = dirname(fileURLToPath(import.meta.url));
const { values } = parseArgs({
    options: {
        port: { type: "string" },
        pidfile: { type: "string" },
        modules: { type: "string", default: join(here, "..", "tests", "node_modules") },
    },
});
const port = Number(values.port);
if (!Number.isInteger(port) || port <= 0 || port > 65535) {
    console.error("fauxqs.mjs: --port PORT is required (1-65535)");
    process.exit(2);
}

// The package lives in tests/node_modules, not beside this script, so import it by path
// (its package.json "exports" entry), after checking it is the pinned version.
const pkgDir = join(values.modules, "fauxqs");
let pkg;
try {
    pkg = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8"));
} catch (e) {
    console.error(`fauxqs.mjs: cannot read ${pkgDir}/package.json (${e.message}): ` +
        "run scripts/deps.sh (npm ci in tests/)");
    process.exit(1);
}
if (pkg.version !== PINNED) {
    console.error(`fauxqs.mjs: found fauxqs ${pkg.version} in ${pkgDir}, want ${PINNED}: ` +
        "run scripts/deps.sh");
    process.exit(1);
}
const entry = pkg.exports?.["."]?.import?.default ?? pkg.main;
const { buildApp } = await import(pathToFileURL(join(pkgDir, entry)).href);

const app = buildApp({ logger: false });
await app.listen({ port, host: "127.0.0.1" });
if (values.pidfile) {
    writeFileSync(values.pidfile, `${process.pid}\n`);
}
console.log(`fauxqs ${pkg.version} listening on http://127.0.0.1:${port}`);

let closing = false;
for (const sig of ["SIGTERM", "SIGINT"]) {
    process.on(sig, () => {
        if (closing) {
            process.exit(1);
        }
        closing = true;
        app.close().finally(() => process.exit(0));
    });
}
