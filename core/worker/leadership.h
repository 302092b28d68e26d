/*
 * leadership.h - a worker's side of leading (proc/leader.h): a thread of
 * the worker, from its start (before its plugins load, so the duties run
 * while a worker waits for its store or queues) to its stop, asks about
 * once a second whether the place is its; it starts the host's duties
 * (duty/duties.h) with the worker's configuration when it is, and stops
 * them, then gives the place up, when it no longer is or the worker stops.
 */
#ifndef TWICE_LEADERSHIP_H
#define TWICE_LEADERSHIP_H

struct config;
struct leadership;

/* How often the thread asks (ms): about the longest the duties wait for a
 * leader after the running generation changed or its leader died. */
#define LEADERSHIP_EVERY_MS 1000

/* Start asking, for a worker of generation gen running cfg (both cfg and
 * owner, the worker's lease owner, must outlive it). NULL when the thread
 * cannot start (logged): this worker then never leads, and another may. */
struct leadership *leadership_start(const struct config *cfg, int gen, const char *owner);

/* Stop asking: the duties, if this worker runs them, are stopped first,
 * then the place is given up; leadership_stop waits for that and frees,
 * leadership_ask_stop only begins it (a drain runs meanwhile). NULL: no-op. */
void leadership_ask_stop(struct leadership *l);
void leadership_stop(struct leadership *l);

#endif
