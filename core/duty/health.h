/*
 * health.h - whether the idempotency store answers, for /readyz: a thread of
 * the master asks PostgreSQL something trivial every few seconds on a
 * connection of its own, so readiness follows the database while no message
 * flows, at no cost per message. What it finds is in the shared region,
 * read through storehealth.h (proc/), not here.
 */
#ifndef TWICE_HEALTH_H
#define TWICE_HEALTH_H

#include <stddef.h>

struct health;

/* Start checking the store at dsn (table: for messages); NULL when out of
 * memory or no thread (readiness then ignores the store). */
struct health *health_start(const char *dsn, const char *table);

/* Whether h checks the store at dsn and table (h may be NULL: no). */
int health_is_for(const struct health *h, const char *dsn, const char *table);

/* Stop and free (NULL: nothing). */
void health_stop(struct health *h);
/* Tell it to stop, without waiting (health_stop waits): relay_ask_stop says why. */
void health_ask_stop(struct health *h);

#endif
