/*
 * recycle.h - a worker whose resident memory passed worker_max_rss asks to
 * be recycled: it receives no more and asks the master (shm.h,
 * SHM_REPLACE_RSS) to start another worker in its place at once and to stop
 * it as a reload stops the old generation, so its jobs finish and are
 * acknowledged, none counted as an attempt. Checked on the worker's main
 * thread, which otherwise only waits for signals, about once a second: never
 * on a job's path.
 */
#ifndef TWICE_RECYCLE_H
#define TWICE_RECYCLE_H

struct worker;

struct recycle {
    long long limit;   /* worker_max_rss, bytes; 0: none */
    long long next_ms; /* clock_mono_ms of the next look */
    int off;           /* asked already, or past the limit when ready: no more looks */
};

/* The resident bytes in the text of /proc/self/statm (its second field, in
 * pages of page bytes) into *out. 0, or -1 when the text is not that. */
int recycle_statm_rss(const char *text, long page, long long *out);

/* At ready: the limit from w's configuration. A worker already past it
 * (plugins that load that much) would be recycled for ever: it is told in
 * a warning and not recycled. */
void recycle_start(struct recycle *r, const struct worker *w);

/* How long the main thread may wait for a signal before recycle_check is
 * due: milliseconds, or -1 (no limit, or asked already). */
int recycle_wait_ms(const struct recycle *r);

/* Main thread, after each wait: when a look is due and the RSS is past the
 * limit, log it (warn), stop receiving and ask the master for the
 * replacement. 1 when it asked now, else 0. */
int recycle_check(struct recycle *r, struct worker *w);

#endif
