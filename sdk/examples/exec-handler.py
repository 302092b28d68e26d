#!/usr/bin/env python3
"""A twice exec handler: one JSON line in per job on stdin, one JSON line out on stdout.

twice.conf: { name = "orders"; path = "exec.so"; settings = {
    command = "python3 -u /srv/exec-handler.py"; key = "order:{orderId}"; }; }
Each order is written to orders.log in the working directory; twice runs a key once.
"""
import json
import sys

for line in sys.stdin:  # one job per line; end of input: twice is stopping
    job = json.loads(line)  # key, body, message_id, attempt, queue, attributes
    try:
        order = json.loads(job["body"])
        total = float(order["amount"]) * int(order.get("quantity", 1))
        with open("orders.log", "a") as log:  # the effect, then the answer
            log.write("%s %g\n" % (job["key"], total))
        answer = {"status": "done"}
    except OSError as e:  # maybe better later: retry in 5 s
        answer = {"status": "retry", "error": str(e), "retry_after": 5}
    except (ValueError, KeyError, TypeError) as e:  # never: to the dead-letter queue
        answer = {"status": "reject", "error": "bad order: %r" % e}
    answer["message_id"] = job["message_id"]  # names the job answered: never mistaken
    print(json.dumps(answer), flush=True)  # exactly one line per job
