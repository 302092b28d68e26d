/*
 * duties.h - the host's duties of one configuration as one unit: the key
 * janitor, the store's health check, the DLQ monitor with its alerts and
 * queue gauges, the pause watch and the outbox relay, each a thread on its
 * own PostgreSQL connection or SQS client. The leader worker
 * (proc/leader.h) starts them with its configuration and stops them when
 * it stops leading; what one set leaves to the next (gone workers, the DLQ
 * monitor's carry, the store's health) is in the shared region, so the next
 * may run in another process.
 */
#ifndef TWICE_DUTIES_H
#define TWICE_DUTIES_H

struct config;
struct duties;

/* Start every duty for c (copied as each needs), in the process whose lease
 * owner is owner (idem_open's): the relay claims rows as it, so that they
 * are freed when the process is gone. A duty that cannot start is logged
 * and left out; NULL only when out of memory (logged). */
struct duties *duties_start(const struct config *c, const char *owner);

/* Stop them all (told together, so the graces they give a statement of a
 * server that stopped answering overlap: stopwait.h) and free. NULL: no-op. */
void duties_stop(struct duties *d);

#endif
