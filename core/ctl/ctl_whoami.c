/*
 * ctl_whoami.c - `twicectl whoami`: which source of the credential chain
 * supplies twice's AWS credentials, the access key id's last 4
 * characters, when they expire and the region, as text or --json. Never a
 * secret. Not a check of permissions (that would need a signed call).
 */
#include "config.h"
#include "creds.h"
#include "ctl.h"
#include "sqs.h"

#include <getopt.h>
#include <jansson.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char whoami_usage[] =
    "usage: twicectl [-c FILE] whoami [--json]\n"
    "Shows which AWS credentials twice uses: the source in the chain (env, web-identity,\n"
    "assume-role:NAME, profile:NAME, process:NAME, container, imds), the access key id's\n"
    "last 4 characters, the expiry of temporary credentials and the region. Nothing secret\n"
    "is shown.\n";

/* "in 41 minutes", "in 5 hours", "3 minutes ago" for the gap d (seconds). */
static void
relative_time(long long d, char *out, size_t len)
{
    long long a = d < 0 ? -d : d, n;
    const char *unit;

    if (a < 120) {
        n = a, unit = "second";
    } else if (a < 2 * 3600) {
        n = a / 60, unit = "minute";
    } else if (a < 48 * 3600) {
        n = a / 3600, unit = "hour";
    } else {
        n = a / 86400, unit = "day";
    }
    snprintf(out, len, "%s%lld %s%s%s", d < 0 ? "" : "in ", n, unit, n == 1 ? "" : "s",
             d < 0 ? " ago" : "");
}

/* What whoami shows, gathered before printing. */
struct whoami {
    struct creds creds;
    char last4[5];
    char expires[32]; /* ISO time, "" for long-term credentials */
    char expires_in[48];
    const char *region;   /* NULL when unknown */
    const char *endpoint; /* NULL when unknown */
    char region_err[256];
};

static void
print_text(const struct whoami *w)
{
    printf("provider:       %s\n", w->creds.provider);
    printf("access key id:  ...%s\n", w->last4);
    printf("session token:  %s\n", w->creds.session_token != NULL ? "yes (temporary)" : "no");
    if (w->expires[0] != '\0') {
        printf("expires:        %s (%s)\n", w->expires, w->expires_in);
    } else {
        printf("expires:        never (long-term credentials)\n");
    }
    printf("region:         %s\n", w->region != NULL ? w->region : w->region_err);
    if (w->endpoint != NULL) {
        printf("endpoint:       %s\n", w->endpoint);
    }
}

static int
print_json(const struct whoami *w, time_t now)
{
    json_t *o = json_pack(
        "{s:s, s:s, s:b, s:o, s:o, s:o, s:o}", "provider", w->creds.provider,
        "access_key_id_last4", w->last4, "temporary", w->creds.session_token != NULL, "expiration",
        w->expires[0] ? json_string(w->expires) : json_null(), "expires_in_seconds",
        w->expires[0] ? json_integer((json_int_t) (w->creds.expiration - now)) : json_null(),
        "region", w->region != NULL ? json_string(w->region) : json_null(), "endpoint",
        w->endpoint != NULL ? json_string(w->endpoint) : json_null());
    return ctl_print_json(o);
}

/* Fill w from the credentials: the key id's tail and the expiry. */
static void
describe(struct whoami *w, time_t now)
{
    const char *akid = w->creds.access_key_id;
    size_t n = strlen(akid);
    struct tm tm;

    snprintf(w->last4, sizeof(w->last4), "%s", akid + (n > 4 ? n - 4 : 0));
    if (w->creds.expiration != 0) {
        gmtime_r(&w->creds.expiration, &tm);
        strftime(w->expires, sizeof(w->expires), "%Y-%m-%dT%H:%M:%SZ", &tm);
        relative_time((long long) (w->creds.expiration - now), w->expires_in,
                      sizeof(w->expires_in));
    }
}

/* The credentials, from the context's chain or a chain of our own. 0, or
 * CTL_FAIL after printing why. */
static int
fetch_creds(struct ctl *c, const struct config *cfg, const char *region, struct creds *out)
{
    struct creds_chain *own = NULL, *chain = c->creds;
    char err[1024];
    int rc;

    if (chain == NULL) {
        own = chain = creds_chain_new(cfg->aws.profile);
        if (own == NULL || creds_chain_set_region(own, region) != 0) {
            creds_chain_free(own);
            return ctl_fail("whoami: out of memory");
        }
    }
    rc = creds_get(chain, out, err, sizeof(err));
    creds_chain_free(own);
    return rc == 0 ? CTL_OK : ctl_fail("whoami: %s", err);
}

int
ctl_whoami(struct ctl *c, int argc, char **argv)
{
    struct whoami w;
    struct sqs_endpoint own = {0};
    const struct sqs_endpoint *ep = c->endpoint;
    static const struct option longopts[] = {CTL_LONG_OPTIONS};
    int opt, rc;
    while ((opt = getopt_long(argc, argv, ":c:h", longopts, NULL)) != -1) {
        if ((rc = ctl_option(c, "whoami", whoami_usage, opt, argc, argv)) >= 0) {
            return rc;
        }
    }
    if (optind < argc) {
        return ctl_usage_error("whoami", "unexpected argument \"%s\"", argv[optind]);
    }
    const struct config *cfg = ctl_config(c);
    if (cfg == NULL) {
        return CTL_FAIL;
    }
    memset(&w, 0, sizeof(w));
    if (ep == NULL &&
        sqs_endpoint_resolve(cfg->aws.region, cfg->aws.endpoint, cfg->aws.profile,
                             cfg->aws.ca_file, &own, w.region_err, sizeof(w.region_err)) == 0) {
        ep = &own;
    }
    w.region = ep != NULL ? ep->region : NULL;
    w.endpoint = ep != NULL ? ep->url : NULL;
    rc = fetch_creds(c, cfg, w.region, &w.creds);
    if (rc == CTL_OK) {
        time_t now = time(NULL);
        describe(&w, now);
        rc = c->json ? print_json(&w, now) : (print_text(&w), CTL_OK);
        if (rc == CTL_OK && w.region == NULL) {
            rc = ctl_fail("whoami: %s", w.region_err);
        }
    }
    creds_clear(&w.creds);
    sqs_endpoint_free(&own);
    return rc;
}
