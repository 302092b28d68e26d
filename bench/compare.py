"""compare.py: two bench results side by side - what a change did (issue 19).

    /usr/bin/python3 bench/compare.py BEFORE.json AFTER.json

BEFORE and AFTER are the .json files bench/run.sh writes next to its report
(build-bench/bench-results.txt.json; copy the first one away before the second run).
Prints, as Markdown, the medians of every run the two have in common, the ratios of the
runs of each round (twiced / peer) and the callgrind count, each before, after and the
change. Absolute figures move with the machine's load; the ratios and the callgrind count
are what to trust. Not for: judging anything; it prints what the files hold.
"""

import json
import sys

FIGURES = [
    ("msgs_per_s", "messages/s", "%.0f"),
    ("cpu_per_10k", "CPU s / 10k msgs", "%.2f"),
    ("peak_rss_mb", "peak RSS MB", "%.1f"),
    ("pg_cpu_per_10k", "PostgreSQL CPU s / 10k msgs", "%.2f"),
    ("statements_per_msg", "statements / msg", "%.3f"),
    ("commits_per_msg", "commits / msg", "%.3f"),
    ("wal_bytes_per_msg", "WAL bytes / msg", "%.0f"),
    ("wal_fpi_per_1k", "WAL full-page images / 1k msgs", "%.1f"),
    ("rows_written_per_msg", "rows written / msg", "%.2f"),
    ("hot_share", "HOT share of updates", "%.2f"),
    ("sqs_requests_per_msg", "SQS calls / msg", "%.3f"),
]


def change(old, new):
    if old is None or new is None:
        return ""
    if old == 0:
        return "" if new == 0 else "new"
    return "%+.0f%%" % (100.0 * (new - old) / old)


def cell(value, spec):
    return "n/a" if value is None else spec % value


def main(argv):
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    with open(argv[1]) as f:
        old = json.load(f)
    with open(argv[2]) as f:
        new = json.load(f)
    print("before: %s, twiced %s, %s mode, %d messages x %d round(s)"
          % (old["info"]["date"], old["info"]["revision"], old["info"].get("mode", "standard"),
             old["info"]["n"], len(old["rounds"])))
    print("after:  %s, twiced %s, %s mode, %d messages x %d round(s)"
          % (new["info"]["date"], new["info"]["revision"], new["info"].get("mode", "standard"),
             new["info"]["n"], len(new["rounds"])))
    print()
    print("| run | figure | before | after | change |")
    print("| --- | --- | ---: | ---: | ---: |")
    for key in [k for k in new["medians"] if k in old["medians"]]:
        a, b = old["medians"][key], new["medians"][key]
        for name, text, spec in FIGURES:
            if a.get(name) is None and b.get(name) is None:
                continue
            print("| %s | %s | %s | %s | %s |" % (key, text, cell(a.get(name), spec),
                                                  cell(b.get(name), spec),
                                                  change(a.get(name), b.get(name))))
    old_r = {(r["a"], r["b"], r["figure"]): r["ratio"] for r in old.get("ratios", [])}
    new_r = {(r["a"], r["b"], r["figure"]): r["ratio"] for r in new.get("ratios", [])}
    common = [k for k in new_r if k in old_r and (old_r[k] is not None or new_r[k] is not None)]
    if common:
        print()
        print("| ratio (median of per-round ratios) | before | after | change |")
        print("| --- | ---: | ---: | ---: |")
        for k in common:
            print("| %s / %s: %s | %s | %s | %s |" % (k[0], k[1], k[2], cell(old_r[k], "%.2f"),
                                                    cell(new_r[k], "%.2f"),
                                                    change(old_r[k], new_r[k])))
    if old.get("callgrind") and new.get("callgrind"):
        a, b = old["callgrind"]["ir_per_msg"], new["callgrind"]["ir_per_msg"]
        print()
        print("callgrind, instructions per message: %.0f -> %.0f (%s)" % (a, b, change(a, b)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
