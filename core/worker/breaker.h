/*
 * breaker.h - a queue's circuit breaker as a worker sees it: before a job
 * runs (a job received but not started while the breaker is open goes back
 * uncounted), after it ran or ran past its timeout (count a transient
 * failure, open the breaker at the threshold, report a probe's outcome), and
 * what the receiver may take (nothing while paused or open, one probe job
 * after a cooldown). The state
 * is shared by the host's workers through proc/flow.h; the master records it
 * in PostgreSQL (duty/pausewatch.c) so every host follows.
 */
#ifndef TWICE_BREAKER_H
#define TWICE_BREAKER_H

#include <twice/plugin.h>

struct twice_job;
struct wqueue;

/* What the receiver of q may do now: receive up to its slots (-1), nothing
 * (0: paused, open, or no probe left), or one probe job (1; it holds a
 * probe, handed back with breaker_probe_unused if no job runs as it). */
int breaker_receivable(struct wqueue *q);
void breaker_probe_unused(struct wqueue *q);

/* Whether q must not receive now (its batch just received goes back). */
int breaker_paused(struct wqueue *q);

/* Before a job runs: 1 when it was given back because q's breaker is open
 * (its verdict is set), else 0. */
int breaker_before_run(struct twice_job *j);

/* After handle() returned st: count a transient failure (and open the
 * breaker at the threshold), report a probe. *open is set when the breaker
 * is open (the run is not to be counted), *delay to the cooldown left. */
void breaker_after_run(struct twice_job *j, twice_status st, int *open, int *delay);

/* A run went past its queue's timeout (timeout.c, the heartbeat's thread): a
 * transient failure, as breaker_after_run's RETRY (a downstream that hangs is
 * down); a probe's run past it is a failed probe. Also for a transactional
 * run, which goes on: its answer, when it comes, is not counted again (while
 * the breaker is open its RETRY is still given back uncounted). Safe while
 * the handler runs: what both touch is atomic. */
void breaker_after_timeout(struct twice_job *j, int *open, int *delay);

#endif
