"""report.py: the text report of bench.py (Markdown tables, pasted as is into
bench/README.md and docs/sizing.md). Not for: measuring or checking anything.
"""

import re

# Figures compared as a/b inside each round (medians of those ratios are reported).
RATIO_FIGURES = ("msgs_per_s", "msgs_per_s_per_instance", "cpu_per_10k", "peak_rss_mb",
                 "pg_cpu_per_10k", "statements_per_msg", "commits_per_msg",
                 "wal_bytes_per_msg", "sqs_requests_per_msg")

RATIO_NAMES = {
    "msgs_per_s": "messages/s",
    "msgs_per_s_per_instance": "messages/s per instance",
    "cpu_per_10k": "CPU s / 10k msgs",
    "peak_rss_mb": "peak RSS",
    "pg_cpu_per_10k": "PostgreSQL CPU s / 10k msgs",
    "statements_per_msg": "statements / msg",
    "commits_per_msg": "commits / msg",
    "wal_bytes_per_msg": "WAL bytes / msg",
    "sqs_requests_per_msg": "SQS calls / msg",
}

# Issue 19's targets, judged on the standard mode's (a) twiced / (b) sqs-consumer ratios.
TARGETS = [
    ("PostgreSQL CPU per message: twiced <= 0.6x the peer's guard", "pg_cpu_per_10k", "<=",
     0.6),
    ("twiced messages/s >= 2.5x sqs-consumer's", "msgs_per_s", ">=", 2.5),
    ("twiced CPU s / 10k msgs <= 10% of sqs-consumer's", "cpu_per_10k", "<=", 0.10),
    ("twiced peak RSS <= 20% of sqs-consumer's", "peak_rss_mb", "<=", 0.20),
]
IR_TARGET = 80000


def name_of(key, mode):
    if key.startswith("hosts-"):
        return "%s twiced host(s)" % key[6:]
    names = {"twiced": "(a) twiced + no-op, guard on",
             "sqs-consumer": "(b) sqs-consumer + batched claim",
             "bare": "(c) bare receive+delete",
             "twiced-baseline": "(a') twiced, baseline build",
             "twiced-default": "twiced, built-in defaults",
             "sqs-consumer-default": "sqs-consumer, one Consumer"}
    if mode == "latency":
        names.update({"twiced": "twiced, tuned", "sqs-consumer": "sqs-consumer, tuned"})
    return names.get(key, key)


def fmt(value, spec):
    return "n/a" if value is None else spec % value


def header(info, keys, rounds):
    m = info["machine"]
    mode = info["mode"]
    if mode == "latency":
        mode += " (every SQS call of the contenders delayed: p50 %g ms, p99 %g ms, 1 in " \
                "1,000 calls 2 s)" % tuple(info["latency"])
    elif mode == "hosts":
        mode += " (up to %d twiced masters on one database and one queue%s)" % (
            info["hosts"], "; SQS p50 %g ms, p99 %g ms" % tuple(info["latency"])
            if info["latency"] else "")
    noisy = sum(1 for r in rounds if r["noisy"])
    base = ["(a') is twiced built in %s" % info["baseline"]] if info.get("baseline") else []
    return [
        "twice benchmark, %s (twiced %s), %s mode" % (info["date"], info["revision"], mode),
        "machine: %d CPUs, %s, %.1f GiB RAM, Linux %s; load average at start %.2f"
        % (m["nproc"], m["cpu"], m["ram_gib"], m["kernel"], m["load_at_start"][0]),
        "%d messages per run over %d distinct keys (10%% duplicates), %d round(s) of: %s"
        % (info["n"], info["distinct"], len(rounds), ", ".join(keys)),
        "each idempotency table holds %d completed keys from before the run (vacuumed and "
        "analysed)" % info.get("prefill", 0) if info.get("prefill") else
        "each idempotency table starts empty (--prefill 0)",
        "statements counted by %s; %d of %d round(s) noisy (load average above %d)"
        % ("pg_stat_statements" if info["pg_stat_statements"] else
           "nothing (pg_stat_statements unavailable: rows written from pg_stat_database "
           "instead)", noisy, len(rounds), m["nproc"]),
    ] + base


def throughput_table(keys, med, mode):
    out = ["| run | settings | msg/s | msg/s per instance | CPU s / 10k msgs | peak RSS MB |"
           " peak PSS MB | emulator CPU s / 10k | PostgreSQL CPU s / 10k |",
           "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for k in keys:
        f = med[k]
        out.append("| %s | %s | %.0f | %.0f | %.2f | %.1f | %.1f | %.2f | %.2f |"
                   % (name_of(k, mode), f["settings"], f["msgs_per_s"],
                      f["msgs_per_s_per_instance"], f["cpu_per_10k"], f["peak_rss_mb"],
                      f["peak_pss_mb"], f["emulator_cpu_per_10k"], f["pg_cpu_per_10k"]))
    return out


def db_table(keys, med, mode):
    out = ["| run | statements / msg | commits / msg | WAL bytes / msg | WAL full-page images"
           " / 1k msgs | rows written / msg | HOT share of updates | PostgreSQL CPU s / 10k |",
           "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for k in keys:
        if k == "bare":
            continue
        f = med[k]
        hot = "n/a" if f["hot_share"] is None else "%.0f%%" % (100 * f["hot_share"])
        out.append("| %s | %s | %.3f | %.0f | %.1f | %.2f | %s | %.2f |"
                   % (name_of(k, mode), fmt(f["statements_per_msg"], "%.3f"),
                      f["commits_per_msg"], f["wal_bytes_per_msg"], f["wal_fpi_per_1k"],
                      f["rows_written_per_msg"], hot, f["pg_cpu_per_10k"]))
    return out


def ratio_table(pairs, ratios, mode):
    out = ["| figure | " + " | ".join("%s / %s" % (name_of(a, mode), name_of(b, mode))
                                       for a, b in pairs) + " |",
           "| --- |" + " ---: |" * len(pairs)]
    for fig in RATIO_FIGURES:
        vals = [ratios.get((a, b, fig)) for a, b in pairs]
        if all(v is None for v in vals):
            continue
        if fig in ("statements_per_msg", "commits_per_msg", "wal_bytes_per_msg",
                   "pg_cpu_per_10k", "sqs_requests_per_msg") and any(b == "bare"
                                                                    for _, b in pairs):
            vals = [None if b == "bare" else v for (_, b), v in zip(pairs, vals)]
        out.append("| %s | %s |" % (RATIO_NAMES[fig],
                                     " | ".join(fmt(v, "%.2f") for v in vals)))
    return out


def targets_table(ratios, cg):
    out = ["| target (issue 19) | measured: median of per-round ratios | |",
           "| --- | ---: | --- |"]
    for text, fig, op, want in TARGETS:
        v = ratios.get(("twiced", "sqs-consumer", fig))
        ok = v is not None and (v >= want if op == ">=" else v <= want)
        out.append("| %s | %s | %s |" % (text, fmt(v, "%.2f"), "pass" if ok else "FAIL"))
    if cg is not None:
        ok = cg["ir_per_msg"] <= IR_TARGET
        out.append("| worker instructions per message (callgrind) <= 80,000 | %.0f | %s |"
                   % (cg["ir_per_msg"], "pass" if ok else "FAIL"))
    out.append("| zero lost, zero double-handled (every run checked) | all runs | pass |")
    return out


def sqs_table(keys, med, mode):
    out = ["| run | SQS calls / msg | ReceiveMessage / msg | empty receives / msg |"
           " DeleteMessageBatch / msg | ChangeMessageVisibility* / msg | proxy CPU, % of a"
           " core |",
           "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for k in keys:
        f = med[k]
        out.append("| %s | %.3f | %.3f | %.3f | %.3f | %.4f | %.0f%% |"
                   % (name_of(k, mode), f["sqs_requests_per_msg"], f["receives_per_msg"],
                      f["empty_receives_per_msg"], f["deletes_per_msg"],
                      f["visibility_per_msg"], 100 * f["proxy_cores"]))
    return out


def hosts_table(keys, med):
    out = ["| hosts | msg/s | msg/s per host | twiced CPU s / 10k | PostgreSQL cores busy |"
           " PostgreSQL CPU s / 10k | commits/s | statements/s | WAL MB/s |"
           " emulator cores busy | machine busy |",
           "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for k in keys:
        f = med[k]
        out.append("| %s | %.0f | %.0f | %.2f | %.2f | %.2f | %.0f | %s | %.2f | %.2f | %.0f%% |"
                   % (k[6:], f["msgs_per_s"], f["msgs_per_s_per_instance"], f["cpu_per_10k"],
                      f["pg_cores"], f["pg_cpu_per_10k"], f["commits_per_s"],
                      fmt(f["statements_per_s"], "%.0f"), f["wal_mb_per_s"],
                      f["emulator_cores"], 100 * f["machine_busy"]))
    return out


def rounds_lines(keys, rounds, nproc):
    out = ["per round (each starts one run later in the list): msg/s of %s; load average "
           "before -> after; CPU of other processes (cores) during the runs, most of any run:"
           % " / ".join(keys)]
    for i, r in enumerate(rounds, 1):
        figs = r["figs"]
        out.append("  %d: %s; load %.2f -> %.2f; others %.2f cores%s"
                   % (i, " / ".join("%.0f" % figs[k]["msgs_per_s"] for k in keys),
                      r["load_before"], r["load_after"],
                      max(figs[k]["others_cores"] for k in keys),
                      "  NOISY (load above %d)" % nproc if r["noisy"] else ""))
    return out


def squeeze(query, width=90):
    q = re.sub(r"\s+", " ", query).strip()
    return q if len(q) <= width else q[:width - 3] + "..."


def statements_table(keys, rounds, mode, top=6):
    """Per statement text, summed over the rounds: what the optimiser looks at."""
    out = ["| run | statement | calls / msg | rows / call | ms / call | WAL bytes / msg |",
           "| --- | --- | ---: | ---: | ---: | ---: |"]
    for k in keys:
        if k == "bare":
            continue
        total_n = sum(r["figs"][k]["n"] for r in rounds)
        acc = {}
        for r in rounds:
            for s in r["figs"][k]["db"]["by_statement"]:
                a = acc.setdefault(s["query"], [0, 0, 0.0, 0])
                a[0] += s["calls"]
                a[1] += s["rows"]
                a[2] += s["ms"]
                a[3] += s["wal"]
        # Statements run once per run (the migration) are left out: at least 1 in 1,000.
        often = [x for x in acc.items() if x[1][0] * 1000 >= total_n]
        for q, (calls, rows, ms, wal) in sorted(often, key=lambda x: -x[1][0])[:top]:
            out.append("| %s | `%s` | %.3f | %.1f | %.3f | %.0f |"
                       % (name_of(k, mode), squeeze(q).replace("|", "\\|"), calls / total_n,
                          rows / calls, ms / calls, wal / total_n))
    return out


def callgrind_lines(cg):
    out = ["callgrind: one twiced worker (%s), %d messages: %.0f instructions per message"
           % (cg["settings"], cg["n"], cg["ir_per_msg"]),
           "  by object: " + ", ".join("%s %.0f" % (o, v) for v, o in cg["objects"][:8]),
           "  top functions (own Ir per message):"]
    for ir, pct, name, obj in cg["functions"]:
        out.append("    %8.0f %5.1f%%  %s [%s]" % (ir, pct, name, obj))
    return out


def render(info, keys, med, ratios, rounds, cg):
    mode = info["mode"]
    pairs = sorted({(a, b) for a, b, _ in ratios}, key=lambda p: keys.index(p[0]) * 10 +
                   keys.index(p[1]))
    lines = header(info, keys, rounds)
    if mode == "hosts":
        lines += ["", "Scale-out (medians):", ""] + hosts_table(keys, med)
    lines += ["", "Throughput and CPU (medians):", ""] + throughput_table(keys, med, mode)
    lines += ["", "Database work per message (medians):", ""] + db_table(keys, med, mode)
    if mode == "latency":
        lines += ["", "SQS calls per message, counted by the proxy (medians):", ""]
        lines += sqs_table(keys, med, mode)
    if pairs:
        lines += ["", "Ratios (median of per-round ratios):", ""]
        lines += ratio_table(pairs, ratios, mode)
    if mode == "standard":
        lines += [""] + targets_table(ratios, cg)
    lines += [""] + rounds_lines(keys, rounds, info["machine"]["nproc"])
    if info["pg_stat_statements"]:
        lines += ["", "Statements (pg_stat_statements, all rounds; the most frequent of each"
                  " run):", ""] + statements_table(keys, rounds, mode)
    if cg is not None:
        lines += [""] + callgrind_lines(cg)
    return "\n".join(lines)
