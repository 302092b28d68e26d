/*
 * verdict.h - carrying out a lifecycle verdict (lifecycle.h) on a job: the
 * side of the decision table that logs and counts. The I/O half of
 * lifecycle.c, shared by the receiver, the handlers and the acker.
 */
#ifndef TWICE_VERDICT_H
#define TWICE_VERDICT_H

#include "job.h"

struct lifecycle_verdict;

/* Count what v says to count (conflicts, skipped duplicates), log its line with
 * j's context, and set j's action (and delay, or dead-letter reason and detail).
 * Returns the action. v may borrow j->error: it is read before it is replaced. */
enum job_action verdict_apply(struct twice_job *j, const struct lifecycle_verdict *v);

#endif
