/*
 * gone.h - the worker processes that have gone, on their way from the master
 * (which reaps them) to the janitor (which ends their leases and counts the
 * runs of the jobs that crashed them, duty/janitor.c), through the shared
 * region: so that the janitor may run in another process than the master.
 * Not the leases themselves (idem_expire_owner), nor who crashed a worker
 * (master/master.c reads that from its job records).
 *
 * One producer, the master: gone_push never blocks and never waits for the
 * janitor. One consumer at a time, the janitor (a reload's old and new ones
 * overlap): gone_drain holds the queue's robust lock for its pass, so the
 * other's pass waits for its next try, and a janitor's process that dies
 * mid-pass leaves the lock and the owner it was on to the next. An owner
 * leaves the queue only once the janitor is done with it: a janitor that
 * stops mid-way leaves the rest to its successor.
 *
 * When it is full (256 owners: the janitor has not reached PostgreSQL for a
 * while) an owner is not queued: its keys wait out their leases, taken over
 * uncounted by the next delivery, so the run of a job that crashed it is not
 * counted; an owner whose culprits the pool (512) has no room for is queued
 * with those that fit, the others' runs not counted. Either way a message
 * that keeps crashing workers is still dead-lettered by max_receives. The
 * master logs both. The state itself is struct shm_gone_queue in shm.h.
 * Without a mapped region nothing is queued.
 */
#ifndef TWICE_GONE_H
#define TWICE_GONE_H

#include "shm.h"

#include <stddef.h>
#include <stdint.h>

/* Master: queue the gone worker owner (its lease owner, childargs_owner),
 * reaped at gone_ms (clock_mono_ms), and the jobs that crashed it: their
 * job records jobs[0..n) (none when it exited or was stopped), copied, so
 * the caller may reset them once this returns. Returns how many culprits
 * were kept (n, unless the pool was short), or -1 when the queue is full or
 * there is no region: the owner is not queued. */
int gone_push(const char *owner, int64_t gone_ms, const struct shm_job *const *jobs, size_t n);

/* A queued gone worker, as gone_drain hands it over: borrowed for the call. */
struct gone_owner {
    const char *owner;
    int64_t gone_ms;
    size_t n; /* culprits: gone_culprit(g, 0 .. n - 1) */
    const struct shm_gone *entry;
};
/* The i-th culprit of g (i < g->n): in the region, borrowed as g is. */
const struct shm_gone_culprit *gone_culprit(const struct gone_owner *g, size_t i);

/*
 * The janitor: hand each queued owner, oldest first, to expire(arg, g). An
 * owner for which it returns 0 is removed; the first for which it does not
 * ends the pass and stays first. Owners the master queues during the pass
 * are in it. Returns 0 when the queue was emptied, -1 when expire refused
 * one (try again later), 1 when another janitor is at the queue (try again
 * shortly). Never called by the master.
 */
int gone_drain(int (*expire)(void *arg, const struct gone_owner *g), void *arg);

/* Whether an owner waits: a look without the lock, for a janitor's wait. */
int gone_pending(void);

#endif
