/*
 * sqs_setup.c - endpoint, region and credentials from the configuration (see
 * sqs_setup.h). Credentials are not fetched here: the chain resolves lazily.
 */
#include "sqs_setup.h"

#include "config.h"
#include "creds.h"
#include "sqs.h"

#include <stdio.h>
#include <string.h>

int
sqs_setup(const struct config *c, struct sqs_endpoint *ep, struct creds_chain **chain, char *err,
          size_t errlen)
{
    memset(ep, 0, sizeof(*ep));
    *chain = NULL;
    if (sqs_endpoint_resolve(c->aws.region, c->aws.endpoint, c->aws.profile, c->aws.ca_file, ep,
                             err, errlen) != 0) {
        return -1;
    }
    *chain = creds_chain_new(c->aws.profile);
    if (*chain == NULL || creds_chain_set_region(*chain, ep->region) != 0) {
        snprintf(err, errlen, "out of memory setting up AWS credentials");
        creds_chain_free(*chain);
        *chain = NULL;
        sqs_endpoint_free(ep);
        return -1;
    }
    return 0;
}

int
sqs_check_queues(struct sqs_client *sqs, const struct config *c, size_t max,
                 sqs_queue_problem_fn *problem, void *arg, size_t *dlq_max_bytes)
{
    size_t found = 0;
    for (size_t i = 0; i < c->nqueues && found < max; i++) {
        const struct config_queue *q = &c->queues[i];
        const char *urls[2] = {q->url, q->dlq_url};
        for (int k = 0; k < 2 && found < max; k++) {
            struct sqs_error e;
            char desc[1024], what[1536], where[512];
            size_t *size = k == 1 && dlq_max_bytes != NULL ? &dlq_max_bytes[i] : NULL;
            if (urls[k] == NULL || sqs_check_queue(sqs, urls[k], size, &e) == 0) {
                continue;
            }
            config_queue_where(q, k == 0 ? "url" : "dlq_url", where, sizeof(where));
            sqs_error_describe_at(&e, "GetQueueAttributes", where, desc, sizeof(desc));
            snprintf(what, sizeof(what), "queue %s: %s %s: %s", q->name,
                     k == 0 ? "url" : "dlq_url", urls[k], desc);
            problem(arg, q, what);
            found++;
        }
    }
    return (int) found;
}
