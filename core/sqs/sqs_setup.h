/*
 * sqs_setup.h - the one way a process of twice turns its configuration into what
 * it needs to talk to SQS: the resolved endpoint and region, and a
 * credential chain that knows that region (web identity uses the regional
 * STS endpoint). Used by workers, the master's DLQ monitor and twicectl.
 */
#ifndef TWICE_SQS_SETUP_H
#define TWICE_SQS_SETUP_H

#include <stddef.h>

struct config;
struct creds_chain;
struct sqs_endpoint;

/* Fill *ep and *chain (both owned by the caller: sqs_endpoint_free,
 * creds_chain_free). 0, or -1 with err and nothing left allocated. */
int sqs_setup(const struct config *c, struct sqs_endpoint *ep, struct creds_chain **chain,
              char *err, size_t errlen);

struct config_queue;
struct sqs_client;

/* A queue that did not answer: what (one line naming the queue, which URL and
 * the error with its hint). */
typedef void sqs_queue_problem_fn(void *arg, const struct config_queue *q, const char *what);

/*
 * Ready means able to work: check that every queue of c and its dead-letter
 * queue answer (sqs_check_queue), calling problem for each that does not,
 * at most max of them. Returns how many did not. dlq_max_bytes (NULL, or
 * c->nqueues entries) gets each DLQ's MaximumMessageSize from the same call
 * (0 when unknown), which dead letters are built to fit (dlq.h).
 */
int sqs_check_queues(struct sqs_client *sqs, const struct config *c, size_t max,
                     sqs_queue_problem_fn *problem, void *arg, size_t *dlq_max_bytes);

#endif
