/*
 * timeout.h - a queue's time limit on a handler run (queues.timeout). The
 * handler's thread marks when a run begins and ends; the heartbeat, on the
 * acker's thread, notices a run past the limit and acts on its message at once
 * (lifecycle_on_timeout: retried or dead-lettered as "timeout", given back while
 * the queue's breaker is open, which counts it: breaker.h), and asks the
 * master to replace the worker when the run is still going a grace period later:
 * a C thread cannot be cancelled safely. Whichever of the two threads wins the
 * run's state (job.h, run_ms) decides the message; the other leaves it alone.
 */
#ifndef TWICE_TIMEOUT_H
#define TWICE_TIMEOUT_H

#include <stddef.h>

struct twice_job;
struct worker;

/* Handler thread: a run of j begins (shm_idx: its shared-table entry). */
void timeout_run_begin(struct twice_job *j, int shm_idx);
/* Handler thread: the run ended. 1: its answer stands; 0: the heartbeat already
 * acted on its overrun, the answer is to be ignored (the job's action is then
 * JOB_ACT_NONE, and it is logged). */
int timeout_run_end(struct twice_job *j);

/* Acker thread: whether the heartbeat must leave j alone (not extend it, not
 * give it back): its overrun was acted on, or it is past its grace. */
int timeout_overrun(const struct twice_job *j);

/* Carries out a verdict on the message of a job whose handler still runs (the
 * acker's, acker.c). */
struct lifecycle_verdict;
typedef void timeout_act_fn(void *arg, struct twice_job *j, const struct lifecycle_verdict *v);

/* Acker thread, from the heartbeat: act (with act(arg, ...)) on the runs among
 * jobs[0..n) of worker w past their queue's timeout, and ask for w's replacement
 * when one is still running past timeout_grace. */
void timeout_check(struct worker *w, struct twice_job **jobs, size_t n, timeout_act_fn *act,
                   void *arg);

#endif
