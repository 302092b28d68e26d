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

#endif
