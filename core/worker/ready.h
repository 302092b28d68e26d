/*
 * ready.h - when a worker may say "ready": ready means able to work, so it
 * waits until PostgreSQL accepts it (the idempotency table created or
 * migrated, and a claim checked: written and rolled back, so that a role
 * whose grant was revoked is not ready) and every queue and dead-letter queue of the configuration
 * has answered a GetQueueAttributes.
 */
#ifndef TWICE_READY_H
#define TWICE_READY_H

#include <signal.h>
#include <sys/types.h>

#include "signals.h"

struct worker;

/*
 * Check, and retry with backoff (logging each new reason once and telling the
 * master on ctl_fd, as a line "W<reason>") until everything answers: returns
 * WORKER_IGNORE then. A stop or quit signal (set, blocked; judged as
 * worker_signal_judge does) ends the wait: its ask is returned.
 */
enum worker_ask ready_wait(struct worker *w, int ctl_fd, const sigset_t *set, pid_t master);

#endif
