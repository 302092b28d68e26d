/*
 * ready.c - a worker's readiness checks before it tells the master "ready"
 * (see ready.h): the store (one that takes writes: idem_takes_writes, and
 * a claim: idem_claim_check, one rolled-back claim), then every queue. The
 * store check is the one a worker needs anyway (idem_migrate) and the
 * receivers' claim check, on a connection that the acknowledger then takes
 * over (w->ready_store); the receivers open theirs afterwards. A stop
 * signal gives the check up at once, whatever PostgreSQL does (it may take
 * the connection and say nothing).
 */
#include "ready.h"

#include "backoff.h"
#include "config.h"
#include "idem.h"
#include "log.h"
#include "sqs.h"
#include "sqs_setup.h"
#include "worker.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define READY_CALL_MS 10000 /* one check's SQS budget */
#define READY_WHY     1024  /* bytes of a reason */

/* The tick of the store check's connect and statements (idem_open_waiting):
 * nonzero, to give them up, when a stop signal is pending (blocked, it waits
 * for ready_wait to take it). */
static int
stop_pending(void *arg)
{
    (void) arg;
    sigset_t p;
    return sigpending(&p) == 0 && (sigismember(&p, SIGTERM) == 1 || sigismember(&p, SIGINT) == 1 ||
                                   sigismember(&p, SIGQUIT) == 1);
}

/* The first queue problem, kept by the callback of sqs_check_queues. */
static void
first_problem(void *arg, const struct config_queue *q, const char *what)
{
    (void) q;
    snprintf(arg, READY_WHY, "%s", what);
}

/* 0 when the store and every queue answer, else -1 with why (READY_WHY
 * bytes). Each DLQ's MaximumMessageSize, told by the same call, goes to its
 * queue (wqueue.dlq_max_bytes): dead letters are built to fit it. On 0 the
 * store's connection is kept in w->ready_store for the acknowledger, which
 * would otherwise open one more right after (each costs the server a
 * backend's start, and the client a SCRAM exchange). */
static int
check_once(struct worker *w, struct sqs_client *sqs, char *why)
{
    const struct config *c = w->cfg;
    struct idem_store *s = NULL;
    char err[768];
    struct idem_wait wait = {.answer_ms = 0, .tick_ms = 100, .tick = stop_pending, .arg = NULL};
    if (idem_open_waiting(c->idempotency.dsn, c->idempotency.table, w->owner, &wait, &s, err,
                          sizeof(err)) != 0 ||
        idem_takes_writes(s, err, sizeof(err)) != 0 || idem_migrate(s, err, sizeof(err)) != 0 ||
        idem_claim_check(s, err, sizeof(err)) != 0) {
        /* a server that takes no writes: waited on like an outage (a failover
         * promotes it), with the reason its migration's read-only error would
         * not say as plainly; a store that refuses claims (a revoked grant, a
         * statement_timeout, a full disk: the receivers' claim check) is no
         * more able to work than one that is down */
        snprintf(why, READY_WHY, "idempotency store: %s", err);
        idem_close(s);
        return -1;
    }
    size_t *sizes = calloc(c->nqueues > 0 ? c->nqueues : 1, sizeof(*sizes));
    if (sizes == NULL) {
        snprintf(why, READY_WHY, "out of memory");
        idem_close(s);
        return -1;
    }
    int rc = sqs_check_queues(sqs, c, 1, first_problem, why, sizes) == 0 ? 0 : -1;
    for (size_t i = 0; i < w->nqueues && i < c->nqueues; i++) {
        w->queues[i].dlq_max_bytes = sizes[i];
    }
    free(sizes);
    if (rc == 0) {
        idem_close(w->ready_store);
        w->ready_store = s;
    } else {
        idem_close(s);
    }
    return rc;
}

/* Tell the master what we wait for: one line, written whole. */
static void
tell_master(int fd, const char *why)
{
    char line[512];
    int n = snprintf(line, sizeof(line), "W%s\n", why);
    if (fd < 0 || n < 0) {
        return;
    }
    if ((size_t) n >= sizeof(line)) {
        n = (int) sizeof(line) - 1;
        line[n - 1] = '\n';
    }
    for (int i = 0; i < n - 1; i++) {
        if (line[i] == '\n' || line[i] == '\r') {
            line[i] = ' '; /* one reason, one line */
        }
    }
    ssize_t rc;
    do {
        rc = write(fd, line, (size_t) n);
    } while (rc < 0 && errno == EINTR);
}

enum worker_ask
ready_wait(struct worker *w, int ctl_fd, const sigset_t *set, pid_t master)
{
    struct sqs_client *sqs = sqs_client_new(w->endpoint, w->creds);
    char why[READY_WHY], said[READY_WHY] = "";
    enum worker_ask ask = WORKER_IGNORE;
    if (sqs == NULL) {
        log_error("not ready: out of memory");
        return WORKER_STOP;
    }
    sqs_client_set_timeout(sqs, READY_CALL_MS);
    for (int failures = 1; check_once(w, sqs, why) != 0; failures++) {
        if (!stop_pending(NULL) && strcmp(why, said) != 0) {
            log_error("not ready: %s (retrying)", why);
            tell_master(ctl_fd, why);
            snprintf(said, sizeof(said), "%s", why);
        }
        siginfo_t si;
        int ms = (int) backoff_ceiling(500, 10000, failures);
        if (worker_signal_wait(set, ms, &si) > 0 &&
            (ask = worker_signal_judge(&si, w->slot, master)) != WORKER_IGNORE) {
            break;
        }
    }
    if (said[0] != '\0' && ask == WORKER_IGNORE) {
        log_info("the idempotency store and every queue answer now");
    }
    sqs_client_free(sqs);
    return ask;
}
