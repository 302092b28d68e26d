/*
 * duties.c - starting and stopping the host's duties together (see
 * duties.h). The order matters in two places: the pause watch posts its
 * notices through the DLQ monitor, so it starts after and stops before it;
 * the monitor leaves its carry in the shared region when it stops.
 */
#include "duties.h"

#include "config.h"
#include "dlqmon.h"
#include "health.h"
#include "janitor.h"
#include "log.h"
#include "pausewatch.h"
#include "relay.h"
#include "shm.h"

#include <stdlib.h>

struct duties {
    struct janitor *janitor;
    struct health *health;
    struct dlqmon *dlqmon;
    struct pausewatch *pausewatch;
    struct relay *relay;
};

struct duties *
duties_start(const struct config *c, const char *owner)
{
    struct duties *d = calloc(1, sizeof(*d));
    if (d == NULL) {
        log_error("cannot start the host's duties (janitor, health check, DLQ monitor, pause "
                  "watch, relay): out of memory");
        return NULL;
    }
    d->janitor = janitor_start(c->idempotency.dsn, c->idempotency.table, c->idempotency.retention,
                               c->idempotency.janitor_interval, c->idempotency.janitor_batch);
    d->health = health_start(c->idempotency.dsn, c->idempotency.table);
    d->dlqmon = dlqmon_start(c, shm_dlq_carry());
    d->pausewatch = pausewatch_start(c, d->dlqmon);
    d->relay = relay_start(c, owner);
    return d;
}

void
duties_stop(struct duties *d)
{
    if (d == NULL) {
        return;
    }
    relay_ask_stop(d->relay);
    pausewatch_ask_stop(d->pausewatch);
    dlqmon_ask_stop(d->dlqmon);
    janitor_ask_stop(d->janitor);
    health_ask_stop(d->health);
    relay_stop(d->relay);           /* rows it had claimed: sent again once their claim lapses */
    pausewatch_stop(d->pausewatch); /* it posts through the monitor */
    dlqmon_stop(d->dlqmon, shm_dlq_carry()); /* its state, for the next monitor */
    janitor_stop(d->janitor);                /* gone workers it leaves are the next one's */
    health_stop(d->health);
    free(d);
}
