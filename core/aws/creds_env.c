/*
 * creds_env.c - the first source of the credential chain: the variables
 * AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN (or the
 * legacy AWS_SECURITY_TOKEN) and AWS_CREDENTIAL_EXPIRATION. Not the other
 * variables the chain reads: each source reads its own.
 */
#include "awsconfig.h"
#include "creds.h"
#include "creds_provider.h"

#include <stdio.h>
#include <stdlib.h>

/* Both keys or nothing (a lone key id falls through to the next source,
 * with the reason). */
static int
env_resolve(struct creds_provider *p, const struct creds_ctx *ctx, struct creds *out, char *why,
            size_t whylen)
{
    const char *akid = awsconfig_env("AWS_ACCESS_KEY_ID");
    const char *secret = awsconfig_env("AWS_SECRET_ACCESS_KEY");
    const char *token = awsconfig_env("AWS_SESSION_TOKEN");
    const char *expiry = awsconfig_env("AWS_CREDENTIAL_EXPIRATION");
    time_t expiration = 0;

    (void) p;
    (void) ctx;
    if (token == NULL) {
        token = awsconfig_env("AWS_SECURITY_TOKEN");
    }
    if (akid == NULL) {
        snprintf(why, whylen, "AWS_ACCESS_KEY_ID not set");
        return 0;
    }
    if (secret == NULL) {
        snprintf(why, whylen, "AWS_ACCESS_KEY_ID set but AWS_SECRET_ACCESS_KEY not");
        return 0;
    }
    if (expiry != NULL && creds_parse_time(expiry, &expiration) != 0) {
        snprintf(why, whylen, "AWS_CREDENTIAL_EXPIRATION \"%.40s\" is not an ISO 8601 time",
                 expiry);
        return 0;
    }
    if (creds_set(out, akid, secret, token, expiration, "env") != 0) {
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    return 1;
}

static void
env_free(struct creds_provider *p)
{
    free(p);
}

struct creds_provider *
creds_provider_env_new(const char *profile)
{
    struct creds_provider *p = calloc(1, sizeof(*p));

    (void) profile;
    if (p != NULL) {
        p->label = "env";
        p->resolve = env_resolve;
        p->free = env_free;
    }
    return p;
}
