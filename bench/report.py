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


# Columns of the per-run tables: (title, figure, format; "pct" is a share in percent).
THROUGHPUT_COLUMNS = [
    ("settings", "settings", "%s"), ("msg/s", "msgs_per_s", "%.0f"),
    ("msg/s per instance", "msgs_per_s_per_instance", "%.0f"),
    ("CPU s / 10k msgs", "cpu_per_10k", "%.2f"), ("peak RSS MB", "peak_rss_mb", "%.1f"),
    ("peak PSS MB", "peak_pss_mb", "%.1f"),
    ("emulator CPU s / 10k", "emulator_cpu_per_10k", "%.2f"),
    ("PostgreSQL CPU s / 10k", "pg_cpu_per_10k", "%.2f"),
]
DB_COLUMNS = [
    ("statements / msg", "statements_per_msg", "%.3f"),
    ("commits / msg", "commits_per_msg", "%.3f"),
    ("WAL bytes / msg", "wal_bytes_per_msg", "%.0f"),
    ("WAL full-page images / 1k msgs", "wal_fpi_per_1k", "%.1f"),
    ("rows written / msg", "rows_written_per_msg", "%.2f"),
    ("HOT share of updates", "hot_share", "pct"),
    ("PostgreSQL CPU s / 10k", "pg_cpu_per_10k", "%.2f"),
]
SQS_COLUMNS = [
    ("SQS calls / msg", "sqs_requests_per_msg", "%.3f"),
    ("ReceiveMessage / msg", "receives_per_msg", "%.3f"),
    ("empty receives / msg", "empty_receives_per_msg", "%.3f"),
    ("DeleteMessageBatch / msg", "deletes_per_msg", "%.3f"),
    ("ChangeMessageVisibility* / msg", "visibility_per_msg", "%.4f"),
    ("proxy CPU, % of a core", "proxy_cores", "pct"),
]
HOSTS_COLUMNS = [
    ("msg/s", "msgs_per_s", "%.0f"), ("msg/s per host", "msgs_per_s_per_instance", "%.0f"),
    ("twiced CPU s / 10k", "cpu_per_10k", "%.2f"), ("PostgreSQL cores busy", "pg_cores", "%.2f"),
    ("PostgreSQL CPU s / 10k", "pg_cpu_per_10k", "%.2f"), ("commits/s", "commits_per_s", "%.0f"),
    ("statements/s", "statements_per_s", "%.0f"), ("WAL MB/s", "wal_mb_per_s", "%.2f"),
    ("emulator cores busy", "emulator_cores", "%.2f"), ("machine busy", "machine_busy", "pct"),
]


def cell(value, spec):
    if spec == "pct":
        return "n/a" if value is None else "%.0f%%" % (100 * value)
    return fmt(value, spec)


def md_table(titles, rows, text_columns=1):
    """A Markdown table: the first text_columns columns left-aligned, the others right."""
    return (["| " + " | ".join(titles) + " |",
             "|" + " --- |" * text_columns + " ---: |" * (len(titles) - text_columns)] +
            ["| " + " | ".join(row) + " |" for row in rows])


def run_table(keys, med, mode, columns):
    """One line per run (bare left out where it has no database figures)."""
    keys = [k for k in keys if k != "bare" or columns is not DB_COLUMNS]
    texts = 1 + sum(1 for _, _, spec in columns if spec == "%s")
    return md_table(["run"] + [c[0] for c in columns],
                    [[name_of(k, mode)] + [cell(med[k].get(f), spec) for _, f, spec in columns]
                     for k in keys], texts)


def hosts_table(keys, med):
    return md_table(["hosts"] + [c[0] for c in HOSTS_COLUMNS],
                    [[k[6:]] + [cell(med[k].get(f), spec) for _, f, spec in HOSTS_COLUMNS]
                     for k in keys], 0)


def ratio_table(pairs, ratios, mode):
    rows = []
    for fig in RATIO_FIGURES:
        vals = [ratios.get((a, b, fig)) for a, b in pairs]
        if all(v is None for v in vals):
            continue
        if fig in ("statements_per_msg", "commits_per_msg", "wal_bytes_per_msg",
                   "pg_cpu_per_10k", "sqs_requests_per_msg"):
            vals = [None if b == "bare" else v for (_, b), v in zip(pairs, vals)]
        rows.append([RATIO_NAMES[fig]] + [fmt(v, "%.2f") for v in vals])
    return md_table(["figure"] + ["%s / %s" % (name_of(a, mode), name_of(b, mode))
                                  for a, b in pairs], rows)


def targets_table(ratios, cg):
    rows = []
    for text, fig, op, want in TARGETS:
        v = ratios.get(("twiced", "sqs-consumer", fig))
        ok = v is not None and (v >= want if op == ">=" else v <= want)
        rows.append([text, fmt(v, "%.2f"), "pass" if ok else "FAIL"])
    if cg is not None:
        rows.append(["worker instructions per message (callgrind) <= 80,000",
                     "%.0f" % cg["ir_per_msg"],
                     "pass" if cg["ir_per_msg"] <= IR_TARGET else "FAIL"])
    rows.append(["zero lost, zero double-handled (every run checked)", "all runs", "pass"])
    table = md_table(["target (issue 19)", "measured: median of per-round ratios", ""], rows)
    table[:2] = ["| target (issue 19) | measured: median of per-round ratios | |",
                 "| --- | ---: | --- |"]
    return table


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
    rows = []
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
        for q, (calls, nrows, ms, wal) in sorted(often, key=lambda x: -x[1][0])[:top]:
            rows.append([name_of(k, mode), "`%s`" % squeeze(q).replace("|", "\\|"),
                         "%.3f" % (calls / total_n), "%.1f" % (nrows / calls),
                         "%.3f" % (ms / calls), "%.0f" % (wal / total_n)])
    return md_table(["run", "statement", "calls / msg", "rows / call", "ms / call",
                     "WAL bytes / msg"], rows, 2)


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
    lines += ["", "Throughput and CPU (medians):", ""]
    lines += run_table(keys, med, mode, THROUGHPUT_COLUMNS)
    lines += ["", "Database work per message (medians):", ""]
    lines += run_table(keys, med, mode, DB_COLUMNS)
    if mode == "latency":
        lines += ["", "SQS calls per message, counted by the proxy (medians):", ""]
        lines += run_table(keys, med, mode, SQS_COLUMNS)
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
