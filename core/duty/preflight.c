/*
 * preflight.c - `twiced -t --connect` (see preflight.h): one connection to
 * PostgreSQL (which must take writes: not a standby, nor a server, database
 * or role with default_transaction_read_only on), one GetQueueAttributes
 * per queue and dead-letter queue, each bounded in time, and a GET of an
 * absent object in each payload_bucket; nothing is created or changed.
 */
#include "preflight.h"

#include "config.h"
#include "creds.h"
#include "diag.h"
#include "idem.h"
#include "s3.h"
#include "sqs.h"
#include "sqs_setup.h"

#include <stdio.h>

#define PREFLIGHT_CALL_MS 10000 /* one queue's budget, retries included */

struct found {
    const struct config *c;
    struct diag *d;
};

static void
queue_problem(void *arg, const struct config_queue *q, const char *what)
{
    struct found *f = arg;
    diag_add(f->d, f->c->file, q->line, "%s", what);
}

/* The store connects, takes writes (idem_takes_writes: what the start and
 * a reload refuse, refused here too) and its role may write claims
 * (idem_claim_allowed, as the start asks). */
static int
check_store(const struct config *c, struct diag *d)
{
    struct idem_store *s = NULL;
    char err[768];
    int rc = idem_open_bounded(c->idempotency.dsn, c->idempotency.table, "twiced -t", 0, &s, err,
                               sizeof(err));
    if (rc == 0) {
        rc = idem_takes_writes(s, err, sizeof(err));
    }
    if (rc == 0) {
        rc = idem_claim_allowed(s, err, sizeof(err));
    }
    idem_close(s);
    if (rc != 0) {
        const char *file = c->idempotency.dsn_src != NULL ? c->idempotency.dsn_src : c->file;
        diag_add(d, file, c->idempotency.dsn_line, "idempotency.dsn: %s", err);
        return 1;
    }
    return 0;
}

/* Each queue's payload_bucket (where `twicectl send` puts large bodies)
 * answers as a bucket that exists. */
static int
check_buckets(const struct config *c, const char *region, struct creds_chain *chain,
              struct diag *d)
{
    struct s3_client *s3 = NULL;
    char err[768];
    int n = 0;
    for (size_t i = 0; i < c->nqueues; i++) {
        const struct config_queue *q = &c->queues[i];
        if (q->payload_bucket == NULL) {
            continue;
        }
        if (s3 == NULL && s3_client_new(c->aws.s3_endpoint, region, c->aws.ca_file, chain, &s3,
                                        err, sizeof(err)) != 0) {
            diag_add(d, c->file, q->line, "queue %s: payload_bucket: %s", q->name, err);
            return n + 1;
        }
        struct s3_error e;
        if (s3_check_bucket(s3, q->payload_bucket, &e) != 0) {
            diag_add(d, c->file, q->line, "queue %s: payload_bucket %s: %s: %s", q->name,
                     q->payload_bucket, e.code, e.message);
            n++;
        }
    }
    s3_client_free(s3);
    return n;
}

static int
check_queues(const struct config *c, struct diag *d)
{
    struct sqs_endpoint ep;
    struct creds_chain *chain = NULL;
    char err[768];
    if (sqs_setup(c, &ep, &chain, err, sizeof(err)) != 0) {
        diag_add(d, c->file, 0, "aws: %s", err);
        return 1;
    }
    struct sqs_client *sqs = sqs_client_new(&ep, chain);
    int n = 0;
    if (sqs == NULL) {
        diag_add(d, c->file, 0, "out of memory");
        n = 1;
    } else {
        struct found f = {c, d};
        sqs_client_set_timeout(sqs, PREFLIGHT_CALL_MS);
        n = sqs_check_queues(sqs, c, 2 * c->nqueues, queue_problem, &f, NULL);
        n += check_buckets(c, ep.region, chain, d);
    }
    sqs_client_free(sqs);
    creds_chain_free(chain);
    sqs_endpoint_free(&ep);
    return n;
}

int
preflight_connect(const struct config *c, struct diag *d)
{
    return check_store(c, d) + check_queues(c, d);
}
