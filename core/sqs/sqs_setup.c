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
