#!/usr/bin/env node
// A twice exec handler in Node: one JSON line in per job on stdin, one out on stdout.
// twice.conf: { name = "orders"; path = "exec.so"; settings = {
//     command = "node /srv/exec-handler.js"; key = "order:{orderId}"; }; }
// Each order is written to orders.log in the working directory; twice runs a key once.
"use strict";
const fs = require("fs");
const readline = require("readline");

readline.createInterface({ input: process.stdin }).on("line", (line) => {
  const job = JSON.parse(line); // key, body, message_id, attempt, queue, attributes
  let answer;
  try {
    const order = JSON.parse(job.body);
    if (typeof order.amount !== "number") throw new TypeError("amount must be a number");
    fs.appendFileSync("orders.log", `${job.key} ${order.amount * (order.quantity ?? 1)}\n`);
    answer = { status: "done" };
  } catch (e) {
    answer = e.code // a system error (disk full...): maybe better later, retry in 5 s
      ? { status: "retry", error: e.message, retry_after: 5 }
      : { status: "reject", error: `bad order: ${e.message}` }; // to the dead-letter queue
  }
  answer.message_id = job.message_id; // names the job answered: never mistaken
  process.stdout.write(JSON.stringify(answer) + "\n"); // exactly one line per job
});
// End of input: twice is stopping; readline closes and the process exits.
