#!/usr/bin/python3
"""create-queues.py: creates named SQS queues, each with a dead-letter queue, on the
test environment's emulator (or any endpoint) from the command line, for the demo and
for trying twice by hand. Not for: tests, which create unique queues through twicetest.

    scripts/create-queues.py [--endpoint URL] [--region R] [--fifo] NAME...

Prints one line per queue: NAME URL DLQ_URL. The endpoint defaults to
$TWICE_TEST_SQS_ENDPOINT (from RUN_DIR/env.sh), the region to $TWICE_TEST_REGION.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "integration"))
import twicetest  # noqa: E402


def main():
    p = argparse.ArgumentParser(description="create SQS queues with DLQs")
    p.add_argument("names", nargs="+", metavar="NAME")
    p.add_argument("--endpoint", default=os.environ.get("TWICE_TEST_SQS_ENDPOINT"))
    p.add_argument("--region", default=os.environ.get("TWICE_TEST_REGION", "us-east-1"))
    p.add_argument("--fifo", action="store_true", help="FIFO queues (NAME.fifo)")
    p.add_argument("--max-receive-count", type=int, default=100,
                   help="RedrivePolicy maxReceiveCount (default 100: twice decides)")
    p.add_argument("--visibility-timeout", type=int, help="VisibilityTimeout in seconds")
    args = p.parse_args()
    if not args.endpoint:
        p.error("no endpoint: pass --endpoint or source RUN_DIR/env.sh (scripts/testenv.sh)")
    sqs = twicetest.Sqs(args.endpoint, args.region)
    attrs = {}
    if args.visibility_timeout is not None:
        attrs["VisibilityTimeout"] = args.visibility_timeout
    try:
        for name in args.names:
            url, dlq = sqs.create_queue_pair(name, fifo=args.fifo, attributes=attrs,
                                             max_receive_count=args.max_receive_count)
            print(name, url, dlq)
    except twicetest.SqsError as e:
        print("create-queues: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
