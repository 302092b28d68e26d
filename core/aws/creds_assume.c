/*
 * creds_assume.c - assume-role profiles, as the AWS CLI reads them: a
 * role_arn with source_profile (whose credentials, followed through chained
 * roles, sign the request) or credential_source (Environment,
 * Ec2InstanceMetadata, EcsContainer), exchanged at STS with AssumeRole
 * (creds_sts.c). The whole chain is walked again at every refresh. Not web
 * identity (creds_webid.c) and not a profile's own keys (creds_profile.c).
 */
#include "awsconfig.h"
#include "awsregion.h"
#include "buf.h"
#include "cnum.h"
#include "creds.h"
#include "creds_provider.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Profiles in one chain of roles, at most (botocore has no limit but
 * loops; AWS itself limits chained sessions to an hour). */
#define ASSUME_MAX_CHAIN 8

/* One role to assume: its profile's settings, copied. */
struct assume_role {
    char *profile, *role_arn, *session, *external_id;
    long duration; /* DurationSeconds; 0: STS's default (an hour) */
};

/* A walked chain: roles[0] is the profile asked for, roles[n - 1] the one
 * whose source gives the first credentials. */
struct assume_chain {
    struct assume_role roles[ASSUME_MAX_CHAIN];
    size_t n;
    char *base_profile;      /* the source profile with credentials of its own, or */
    char *credential_source; /* the source named by credential_source */
    char *region;            /* the first profile's region, for STS */
};

static void
chain_free(struct assume_chain *ch)
{
    for (size_t i = 0; i < ch->n; i++) {
        free(ch->roles[i].profile);
        free(ch->roles[i].role_arn);
        free(ch->roles[i].session);
        free(ch->roles[i].external_id);
    }
    free(ch->base_profile);
    free(ch->credential_source);
    free(ch->region);
    memset(ch, 0, sizeof(*ch));
}

int
creds_assume_profile(const struct awsconfig_section *cred, const struct awsconfig_section *conf)
{
    return creds_profile_get(cred, conf, "role_arn") != NULL &&
           (creds_profile_get(cred, conf, "source_profile") != NULL ||
            creds_profile_get(cred, conf, "credential_source") != NULL);
}

/* A copy of s (NULL stays NULL); *failed set on ENOMEM. */
static char *
copy(const char *s, int *failed)
{
    char *c = s != NULL ? strdup(s) : NULL;
    *failed |= s != NULL && c == NULL;
    return c;
}

/* The profile's sections of both files (either NULL when absent). 0, or
 * -1 with why when a file cannot be read. */
static int
load_sections(const char *profile, struct awsconfig_section **cred,
              struct awsconfig_section **conf, char *why, size_t whylen)
{
    const enum awsconfig_kind kinds[2] = {AWSCONFIG_CREDENTIALS, AWSCONFIG_CONFIG};
    struct awsconfig_section **out[2] = {cred, conf};

    *cred = *conf = NULL;
    for (int i = 0; i < 2; i++) {
        const char *shown = NULL;
        char *path = awsconfig_path(kinds[i], &shown);
        if (path == NULL && errno != ENOMEM) {
            continue; /* no home directory: no files */
        }
        if (path == NULL ||
            awsconfig_read_profile(path, kinds[i], profile, out[i]) == AWSCONFIG_ERROR) {
            snprintf(why, whylen, "%s: %s", path != NULL ? shown : "the shared files",
                     cnum_strerror(errno));
            free(path);
            awsconfig_section_free(*cred);
            awsconfig_section_free(*conf);
            *cred = *conf = NULL;
            return -1;
        }
        free(path);
    }
    return 0;
}

/* The role of one profile of the chain into r; 0, or -1 with why. */
static int
read_role(const char *profile, const struct awsconfig_section *cred,
          const struct awsconfig_section *conf, struct assume_role *r, char *why, size_t whylen)
{
    const char *duration = creds_profile_get(cred, conf, "duration_seconds");
    char *end = NULL;
    int failed = 0;

    if (creds_profile_get(cred, conf, "mfa_serial") != NULL) {
        snprintf(why, whylen,
                 "[profile %s] has mfa_serial: twice runs unattended and cannot ask for an MFA "
                 "code; use a role that does not require MFA, or credential_process",
                 profile);
        return -1;
    }
    if (duration != NULL) {
        errno = 0;
        r->duration = strtol(duration, &end, 10);
        if (errno != 0 || *end != '\0' || r->duration < 900 || r->duration > 43200) {
            snprintf(why, whylen,
                     "[profile %s]: duration_seconds must be 900-43200 seconds, not \"%.20s\"",
                     profile, duration);
            return -1;
        }
    }
    r->profile = copy(profile, &failed);
    r->role_arn = copy(creds_profile_get(cred, conf, "role_arn"), &failed);
    r->session = copy(creds_profile_get(cred, conf, "role_session_name"), &failed);
    r->external_id = copy(creds_profile_get(cred, conf, "external_id"), &failed);
    if (failed) {
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    return 0;
}

/* "a -> b -> c" for the loop message: the profiles of the chain, then next. */
static void
loop_path(const struct assume_chain *ch, const char *next, char *why, size_t whylen)
{
    struct buf b = BUF_INIT;
    for (size_t i = 0; i < ch->n; i++) {
        buf_printf(&b, "%s -> ", ch->roles[i].profile);
    }
    buf_puts(&b, next);
    snprintf(why, whylen, "source_profile loops: %s", b.failed ? "?" : buf_str(&b));
    buf_free(&b);
}

/* Where the chain goes after profile p (its role read already): 1 to go on
 * to *next (a copy), 0 when it ends here (ch's base set), -1 with why. */
static int
next_source(struct assume_chain *ch, const char *p, const struct awsconfig_section *cred,
            const struct awsconfig_section *conf, char **next, char *why, size_t whylen)
{
    const char *cs = creds_profile_get(cred, conf, "credential_source");
    const char *src = creds_profile_get(cred, conf, "source_profile");
    int failed = 0;

    *next = NULL;
    if (cs != NULL && src != NULL) {
        snprintf(why, whylen, "[profile %s] sets both source_profile and credential_source", p);
        return -1;
    }
    if (cs != NULL) {
        if (strcmp(cs, "Environment") != 0 && strcmp(cs, "Ec2InstanceMetadata") != 0 &&
            strcmp(cs, "EcsContainer") != 0) {
            snprintf(why, whylen,
                     "[profile %s]: credential_source must be Environment, "
                     "Ec2InstanceMetadata or EcsContainer, not \"%.40s\"",
                     p, cs);
            return -1;
        }
        ch->credential_source = copy(cs, &failed);
    } else if (strcmp(src, p) == 0) {
        ch->base_profile = copy(p, &failed); /* its own keys sign for its role */
    } else {
        for (size_t i = 0; i < ch->n; i++) {
            if (strcmp(ch->roles[i].profile, src) == 0) {
                loop_path(ch, src, why, whylen);
                return -1;
            }
        }
        *next = copy(src, &failed);
    }
    if (failed) {
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    return *next != NULL ? 1 : 0;
}

/* Walk from profile start to the source of the first credentials. 0, or
 * -1 with why. */
static int
walk(const char *start, struct assume_chain *ch, char *why, size_t whylen)
{
    char *p = strdup(start);
    int rc = 1, failed = p == NULL;

    while (rc == 1 && !failed) {
        struct awsconfig_section *cred = NULL, *conf = NULL;
        char *next = NULL;
        if (load_sections(p, &cred, &conf, why, whylen) != 0) {
            rc = -1;
        } else if (ch->n > 0 && !creds_assume_profile(cred, conf)) {
            ch->base_profile = copy(p, &failed); /* credentials of its own */
            rc = 0;
        } else if (ch->n == ASSUME_MAX_CHAIN) {
            snprintf(why, whylen, "more than %d roles chained by source_profile",
                     ASSUME_MAX_CHAIN);
            rc = -1;
        } else if (read_role(p, cred, conf, &ch->roles[ch->n], why, whylen) != 0) {
            ch->n++; /* what was copied is freed with the chain */
            rc = -1;
        } else {
            ch->n++;
            if (ch->region == NULL) {
                ch->region = copy(creds_profile_get(cred, conf, "region"), &failed);
            }
            rc = next_source(ch, p, cred, conf, &next, why, whylen);
        }
        awsconfig_section_free(cred);
        awsconfig_section_free(conf);
        free(p);
        p = next;
    }
    free(p);
    if (failed) {
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    return rc;
}

/* The first credentials: the base profile's own, or credential_source's.
 * 1, or -1 with why. */
static int
base_creds(const struct assume_chain *ch, const char *start, const struct creds_ctx *ctx,
           struct creds *out, char *why, size_t whylen)
{
    char reason[400] = "";
    int rc;

    if (ch->base_profile != NULL) {
        rc = creds_profile_own(ch->base_profile, ctx, out, reason, sizeof(reason));
        if (rc != 1) {
            snprintf(why, whylen, "source profile %s: %s", ch->base_profile, reason);
        }
        return rc == 1 ? 1 : -1;
    }
    if (strcmp(ch->credential_source, "Environment") == 0) {
        rc = creds_env_read(out, reason, sizeof(reason));
    } else {
        struct creds_provider *p = strcmp(ch->credential_source, "EcsContainer") == 0
                                       ? creds_provider_container_new(start)
                                       : creds_provider_imds_new(start);
        if (p == NULL) {
            snprintf(why, whylen, "out of memory");
            return -1;
        }
        rc = p->resolve(p, ctx, out, reason, sizeof(reason));
        p->free(p);
    }
    if (rc != 1) {
        snprintf(why, whylen, "credential_source %s: %s", ch->credential_source,
                 reason[0] != '\0' ? reason : "no credentials");
    }
    return rc == 1 ? 1 : -1;
}

/* One AssumeRole of role r signed with signer: 1, or -1 with why. */
static int
assume(const struct assume_role *r, const char *region, const struct creds_ctx *ctx,
       struct http_client **http, const struct creds *signer, struct creds *out, char *why,
       size_t whylen)
{
    char session[64], provider[sizeof(out->provider)], duration[24], reason[512];
    struct buf form = BUF_INIT;
    char *url = awsconfig_sts_url(region, reason, sizeof(reason)); /* reason: why not */
    int rc = -1;

    memset(out, 0, sizeof(*out));
    snprintf(session, sizeof(session), "twice-session-%lld", (long long) time(NULL));
    snprintf(provider, sizeof(provider), "assume-role:%.*s", (int) sizeof(provider) - 13,
             r->profile);
    snprintf(duration, sizeof(duration), "%ld", r->duration);
    creds_form_put(&form, "Action", "AssumeRole");
    creds_form_put(&form, "Version", "2011-06-15");
    creds_form_put(&form, "RoleArn", r->role_arn);
    creds_form_put(&form, "RoleSessionName", r->session != NULL ? r->session : session);
    if (r->external_id != NULL) {
        creds_form_put(&form, "ExternalId", r->external_id);
    }
    if (r->duration > 0) {
        creds_form_put(&form, "DurationSeconds", duration);
    }
    if (url == NULL) {
        snprintf(why, whylen, "%s", reason);
    } else if (form.failed) {
        snprintf(why, whylen, "out of memory");
    } else if ((rc = creds_sts_call(http, ctx, url, "AssumeRole", &form, signer,
                                    region != NULL ? region : "us-east-1", provider, out, reason,
                                    sizeof(reason))) != 1) {
        snprintf(why, whylen, "[profile %s] role %s: %s", r->profile, r->role_arn, reason);
    }
    buf_free(&form);
    free(url);
    return rc;
}

int
creds_assume_resolve(const char *profile, const struct creds_ctx *ctx, struct http_client **http,
                     struct creds *out, char *why, size_t whylen)
{
    struct assume_chain ch;
    struct creds cur;
    int rc = -1;

    memset(&ch, 0, sizeof(ch));
    memset(&cur, 0, sizeof(cur));
    memset(out, 0, sizeof(*out));
    if (walk(profile, &ch, why, whylen) == 0 &&
        base_creds(&ch, profile, ctx, &cur, why, whylen) == 1) {
        /* STS's region: the chain's (checked where it was read), else the
         * environment's or the first profile's, checked here */
        const char *src = NULL, *region = ctx->region;
        char own[200];
        if (region == NULL && (region = awsregion_env(&src)) == NULL &&
            (region = ch.region) != NULL) {
            snprintf(own, sizeof(own), "profile %.150s's region", awsconfig_profile_name(profile));
            src = own;
        }
        rc =
            ctx->region == NULL && region != NULL && awsregion_check(src, region, why, whylen) != 0
                ? -1
                : 1;
        for (size_t i = ch.n; rc == 1 && i-- > 0;) {
            struct creds next;
            rc = assume(&ch.roles[i], region, ctx, http, &cur, &next, why, whylen);
            creds_clear(&cur);
            cur = next;
        }
    }
    if (rc == 1) {
        *out = cur;
    } else {
        creds_clear(&cur);
        rc = -1;
    }
    chain_free(&ch);
    return rc;
}
