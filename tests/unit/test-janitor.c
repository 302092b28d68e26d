/*
 * test-janitor.c - the janitor while the database is unreachable: a gone
 * worker's leases are retried with backoff, not in a busy loop (which once
 * made tens of thousands of connection attempts a second and burned a
 * core of the master for as long as the outage lasted).
 */
#include "buf.h"
#include "check.h"
#include "gone.h"
#include "janitor.h"
#include "log.h"
#include "metrics.h"
#include "shm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The sum of twice_pg_errors_total{operation=...} in the rendered metrics. */
static double
pg_errors(const char *operation)
{
    struct buf out = BUF_INIT;
    char prefix[128];
    double sum = 0;
    CHECK_INT(metrics_render(&out), 0);
    snprintf(prefix, sizeof(prefix), "twice_pg_errors_total{operation=\"%s\"", operation);
    for (const char *p = buf_str(&out); (p = strstr(p, prefix)) != NULL; p++) {
        const char *v = strchr(p, ' ');
        if (v != NULL) {
            sum += strtod(v + 1, NULL);
        }
    }
    buf_free(&out);
    return sum;
}

int
main(void)
{
    log_set_level(TWICE_LOG_ERROR); /* the outage is reported at warn */
    CHECK(shm_create() >= 0);
    metrics_set_proc(-1);
    /* port 1 on loopback: refused at once, as fast as a loop can retry */
    struct janitor *j = janitor_start("postgresql://twice@127.0.0.1:1/none?connect_timeout=2",
                                      "twice_idempotency", 3600, 3600, 100);
    CHECK(j != NULL);
    const struct shm_job jobs[] = {{.attempt = 1, .message_id = "m-1"},
                                   {.attempt = 3, .message_id = "m-2"}};
    const struct shm_job *culprits[] = {&jobs[0], &jobs[1]};
    CHECK_INT(gone_push("host:1:g1:0000", 0, culprits, 2), 2);
    CHECK_INT(gone_push("host:1:g1:0001", 0, NULL, 0), 0);
    struct timespec wait = {3, 0};
    nanosleep(&wait, NULL);
    double tries = pg_errors("janitor") + pg_errors("expire");
    CHECK(tries >= 1);  /* it did try */
    CHECK(tries <= 10); /* 1 s, 2 s, ... between tries, not a busy loop */
    janitor_stop(j);
    CHECK(gone_pending()); /* what it could not free stays queued, for the next janitor */
    return check_done("test-janitor");
}
