/*
 * health.h - whether the idempotency store answers, for /readyz: a thread of
 * the master asks PostgreSQL something trivial every few seconds on a
 * connection of its own, so readiness follows the database while no message
 * flows, at no cost per message.
 */
#ifndef TWICE_HEALTH_H
#define TWICE_HEALTH_H

#include <stddef.h>

struct health;
struct idem_identity;

/* Start checking the store at dsn (table: for messages); NULL when out of
 * memory or no thread (readiness then ignores the store). */
struct health *health_start(const char *dsn, const char *table);

/* Whether h checks the store at dsn and table (h may be NULL: no). */
int health_is_for(const struct health *h, const char *dsn, const char *table);

/* Stop and free (NULL: nothing). */
void health_stop(struct health *h);
/* Tell it to stop, without waiting (health_stop waits): relay_ask_stop says why. */
void health_ask_stop(struct health *h);

/* 1 when the store answered the last check, recently; else 0 and why in out
 * ("idempotency store does not answer: ..."). Thread-safe. */
int health_store_ok(struct health *h, char *out, size_t cap);

/* The keys the store's connection reached when it last answered (its
 * cluster, database and table; idem.h), learned once on every (re)connect so
 * that a reload's dsn can be checked against it even when that store is
 * down by then (a failover). 0 and *out, or -1 when it never answered (h
 * may be NULL: -1). Thread-safe. */
int health_identity(struct health *h, struct idem_identity *out);

/* A generation got ready, so its workers have created the keys table: when
 * what was learned names none (the first connect came before them), the next
 * check learns it again, once (h may be NULL). Thread-safe. */
void health_relearn(struct health *h);

#endif
