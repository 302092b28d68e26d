/*
 * advice.h - sizing the visibility timeout against the handler's p99, not
 * its average. Each worker keeps the recent handler durations of every
 * (queue, plugin), publishes their p99 as a gauge, and when a queue's
 * visibility_timeout is below twice that p99 it warns - once an hour for
 * the whole instance - naming the queue, the plugin, the p99 and a value
 * to use instead.
 */
#ifndef TWICE_ADVICE_H
#define TWICE_ADVICE_H

#include <stddef.h>

#define ADVICE_WINDOW      1024 /* durations kept per (queue, plugin) */
#define ADVICE_MIN_SAMPLES 20   /* fewer: no p99 yet */
#define ADVICE_EVERY       3600 /* seconds between two warnings for one pair */

struct wqueue;
struct worker;

/* The recent durations of one (queue, plugin): a ring, guarded by its
 * queue's mutex. */
struct advice_window {
    double d[ADVICE_WINDOW];
    size_t n;    /* samples held (<= ADVICE_WINDOW) */
    size_t next; /* where the next one goes */
};

/* Handler threads: note one duration (seconds) of plugin index p on q. */
void advice_record(struct wqueue *q, size_t p, double seconds);

/* The acker's heartbeat, about every 10 s: publish p99s, warn where due. */
void advice_tick(struct worker *w);

/* The p99 of n values (n >= 1), nearest rank; sorts v. Pure, for tests. */
double advice_p99(double *v, size_t n);

/* The visibility timeout to suggest for a p99: twice it, rounded up. */
int advice_suggest(double p99);

#endif
