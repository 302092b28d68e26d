/*
 * recycle.h - a worker whose resident memory passed worker_max_rss, or that
 * ran its share of worker_max_jobs, asks to be recycled: it receives no more
 * and asks the master (shm.h, SHM_REPLACE_RSS or SHM_REPLACE_JOBS) to start
 * another worker in its place at once and to stop it as a reload stops the
 * old generation, so its jobs finish and are acknowledged, none counted as an
 * attempt. Checked on the worker's main thread, which otherwise only waits
 * for signals, about once a second: never on a job's path.
 */
#ifndef TWICE_RECYCLE_H
#define TWICE_RECYCLE_H

#include "shm.h"

#include <stdint.h>

struct worker;

struct recycle {
    long long rss_limit; /* worker_max_rss, bytes; 0: none (or past it once ready) */
    long long max_runs;  /* this worker's share of worker_max_jobs; 0: none */
    long long next_ms;   /* clock_mono_ms of the next look */
    int asked;           /* asked the master already: no more looks */
};

/* The resident bytes in the text of /proc/self/statm (its second field, in
 * pages of page bytes) into *out. 0, or -1 when the text is not that. */
int recycle_statm_rss(const char *text, long page, long long *out);

/* This worker's share of worker_max_jobs n, drawn with r (a uniform 64-bit
 * value) within 10% of n (n - n/10 to n + n/10), at least 1: workers started
 * together are not all recycled at once. 0 when n is 0. */
long long recycle_jobs_share(long long n, uint64_t r);

/* At ready: the limits from w's configuration. A worker already past worker_max_rss (plugins that
 * load that much) would be recycled for ever: it is told in a warning and not recycled for memory.
 */
void recycle_start(struct recycle *r, const struct worker *w);

/* How long the main thread may wait for a signal before recycle_check is
 * due: milliseconds, or -1 (no limit, or asked already). */
int recycle_wait_ms(const struct recycle *r);

/* Main thread, after each wait: when a look is due and a limit is passed,
 * log it (warn) and recycle_ask_replace. 1 when it asked now, else 0. */
int recycle_check(struct recycle *r, struct worker *w);

/* Any thread: w receives no more and asks the master (shm.h, why) to start
 * its replacement at once and drain it, waking the master with a SIGCHLD
 * (its loop otherwise looks once a second, and w receives nothing
 * meanwhile). A recycle, or a handler past its timeout (timeout.c). */
void recycle_ask_replace(struct worker *w, enum shm_replace why);

#endif
