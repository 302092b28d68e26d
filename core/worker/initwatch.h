/*
 * initwatch.h - a watch over a starting worker's plugin init() calls. A
 * plugin whose init() hangs (a server it waits for, a lock) held a worker
 * silently for ever: after the first generation's start, nothing bounds a
 * worker started in another's place, and the stop signals it blocks went
 * unanswered until the master killed it at drain_timeout + 15 s. The watch
 * says which plugin's init() is slow, ends the worker when that init() has
 * run for ready_timeout (the master starts another, with its backoff), and
 * ends it at once on a stop signal: there is nothing to drain yet.
 */
#ifndef TWICE_INITWATCH_H
#define TWICE_INITWATCH_H

#include <signal.h>
#include <sys/types.h>

struct initwatch;

/* Start watching; stops: the stop signals (blocked in every thread), taken
 * by the watch while it runs (worker_signal_judge names their senders).
 * limit_s: ready_timeout. NULL when its thread cannot start (the worker
 * then starts unwatched, as before). */
struct initwatch *initwatch_start(const sigset_t *stops, int slot, pid_t master, int limit_s);

/* The plugin whose init() is called next (its name outlives the watch). */
void initwatch_enter(struct initwatch *w, const char *plugin);

/* Stop watching and free w (NULL is fine). */
void initwatch_stop(struct initwatch *w);

#endif
