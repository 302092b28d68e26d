/*
 * creds_env.c - the first source of the credential chain: the variables
 * AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN (or the
 * legacy AWS_SECURITY_TOKEN) and AWS_CREDENTIAL_EXPIRATION; unless the
 * chain's profile assumes a role with credential_source = Environment:
 * then they are that role's source (creds_assume.c), not the identity.
 * Not the other variables the chain reads: each source reads its own.
 */
#include "awsconfig.h"
#include "creds.h"
#include "creds_provider.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct env_provider {
    struct creds_provider base; /* first: the chain sees only this */
    char *profile;
};

int
creds_env_read(struct creds *out, char *why, size_t whylen)
{
    const char *akid = awsconfig_env("AWS_ACCESS_KEY_ID");
    const char *secret = awsconfig_env("AWS_SECRET_ACCESS_KEY");
    const char *token = awsconfig_env("AWS_SESSION_TOKEN");
    const char *expiry = awsconfig_env("AWS_CREDENTIAL_EXPIRATION");
    time_t expiration = 0;

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

/* Whether the profile assumes a role with credential_source =
 * Environment (as `aws --profile` does, the keys then sign for the role). */
static int
source_of_role(const char *profile)
{
    char *path = awsconfig_path(AWSCONFIG_CONFIG, NULL);
    struct awsconfig_section *s = NULL;
    int yes = 0;

    if (path != NULL &&
        awsconfig_read_profile(path, AWSCONFIG_CONFIG, profile, &s) == AWSCONFIG_OK) {
        const char *cs = awsconfig_get(s, "credential_source");
        yes = cs != NULL && strcmp(cs, "Environment") == 0 && awsconfig_get(s, "role_arn") != NULL;
    }
    awsconfig_section_free(s);
    free(path);
    return yes;
}

static int
env_resolve(struct creds_provider *p, const struct creds_ctx *ctx, struct creds *out, char *why,
            size_t whylen)
{
    const struct env_provider *ep = (const struct env_provider *) p;

    (void) ctx;
    if (awsconfig_env("AWS_ACCESS_KEY_ID") != NULL && source_of_role(ep->profile)) {
        snprintf(why, whylen,
                 "the keys are the source of [profile %s]'s role (credential_source = "
                 "Environment)",
                 ep->profile);
        return 0;
    }
    return creds_env_read(out, why, whylen);
}

static void
env_free(struct creds_provider *p)
{
    free(((struct env_provider *) p)->profile);
    free(p);
}

struct creds_provider *
creds_provider_env_new(const char *profile)
{
    struct env_provider *ep = calloc(1, sizeof(*ep));

    if (ep == NULL || (ep->profile = strdup(profile)) == NULL) {
        free(ep);
        return NULL;
    }
    ep->base.label = "env";
    ep->base.resolve = env_resolve;
    ep->base.free = env_free;
    return &ep->base;
}
