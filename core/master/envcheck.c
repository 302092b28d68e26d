/*
 * envcheck.c - the region and endpoints the environment or the AWS profile
 * give a configuration that leaves them out, checked as the clients will
 * read them (envcheck.h).
 */
#include "envcheck.h"

#include "awsconfig.h"
#include "awsregion.h"
#include "config.h"
#include "diag.h"
#include "tracecfg.h"
#include "url.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An endpoint of service (label in messages) the environment sets when setting (aws.endpoint,
 * aws.s3_endpoint) does not: 1 with a problem in d when flags (url.h) refuse
 * it. The value is not shown: it is the user's own, named by its variable. */
static int
check_endpoint(const char *setting, const char *service, const char *label, unsigned flags,
               struct diag *d)
{
    const char *name = NULL, *v = NULL, *why;
    if ((setting != NULL && setting[0] != '\0') ||
        (v = awsconfig_endpoint_env(service, &name)) == NULL ||
        (why = url_problem(v, flags)) == NULL) {
        return 0;
    }
    diag_add(d, NULL, 0, "%s: not a usable %s endpoint URL: %s", name, label, why);
    return 1;
}

/* STS's endpoint from the environment, whenever one is set: the credential
 * chain's web-identity and assume-role sources call STS, and whether one
 * will run is known only when it does. AWS_ENDPOINT_URL is STS's too when
 * AWS_ENDPOINT_URL_STS is not set; it is left to check_endpoint when SQS
 * reads it as well (no aws.endpoint, no AWS_ENDPOINT_URL_SQS), so that one
 * bad URL is said once. 1 with a problem in d when it is not a usable URL. */
static int
check_sts(const struct config *c, struct diag *d)
{
    const char *name = NULL, *why;
    const char *v = awsconfig_endpoint_env("sts", &name);
    int generic = v != NULL && strcmp(name, "AWS_ENDPOINT_URL") == 0;
    if (v == NULL || (generic && (c->aws.endpoint == NULL || c->aws.endpoint[0] == '\0') &&
                      awsconfig_env("AWS_ENDPOINT_URL_SQS") == NULL)) {
        return 0;
    }
    if ((why = url_problem(v, URL_NO_QUERY)) == NULL) {
        return 0;
    }
    diag_add(d, NULL, 0, "%s: not a usable STS endpoint URL: %s",
             generic ? "AWS_ENDPOINT_URL" : "AWS_ENDPOINT_URL_STS", why);
    return 1;
}

int
envcheck_aws(const struct config *c, struct diag *d)
{
    int n = 0;
    if (c->aws.region == NULL || c->aws.region[0] == '\0') {
        char *region = NULL, why[768];
        if (awsregion_resolve(c->aws.profile, &region, why, sizeof(why)) < 0) {
            diag_add(d, NULL, 0, "%s", why);
            n++;
        }
        free(region);
    }
    n += check_endpoint(c->aws.endpoint, "sqs", "SQS", URL_NO_QUERY, d);
    n += check_sts(c, d);
    int s3 = 0; /* S3 is used for the payloads of queues that keep them there only */
    for (size_t i = 0; i < c->nqueues; i++) {
        s3 |= c->queues[i].payload_bucket != NULL;
    }
    if (s3) {
        n += check_endpoint(c->aws.s3_endpoint, "s3", "S3", URL_NO_QUERY | URL_NO_PATH, d);
    }
    return n;
}

int
envcheck_tracing(const struct config *c, char *why, size_t cap)
{
    struct tracecfg t;
    char bad[600];
    if (c->tracing.exporter != CONFIG_TRACING_OTLP) {
        return 0;
    }
    if (tracecfg_resolve(c, &t, bad, sizeof(bad)) != 0) {
        snprintf(why, cap, "%s (tracing will be off in every worker; jobs run)", bad);
        return 1;
    }
    tracecfg_free(&t);
    return 0;
}
