/*
 * creds_profile.c - the shared-files source of the credential chain, in
 * botocore's order: an assume-role profile (role_arn with source_profile
 * or credential_source) goes to creds_assume.c; otherwise the profile's
 * keys in the credentials file, then its credential_process (run by
 * creds_process.c), then its keys in the config file. SSO profiles are
 * refused with the way around (credential_process). Not the INI reading
 * (awsconfig.c) and not web identity profiles (creds_webid.c reads
 * web_identity_token_file and role_arn).
 */
#include "awsconfig.h"
#include "buf.h"
#include "cnum.h"
#include "creds.h"
#include "creds_provider.h"
#include "http.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct profile_provider {
    struct creds_provider base; /* first: the chain sees only this */
    char *profile;
    char *label;              /* "profile NAME" */
    struct http_client *http; /* STS, for assume-role; made on first use */
};

/* One of the two files, read for one resolve. */
struct profile_file {
    enum awsconfig_kind kind;
    const char *shown;           /* the name messages use; borrowed from the environment */
    struct awsconfig_section *s; /* NULL unless the profile's section was found */
    enum awsconfig_status status;
    int no_home;
    int error; /* errno of AWSCONFIG_ERROR */
};

static const char *
nonempty(const char *s)
{
    return s != NULL && *s != '\0' ? s : NULL;
}

/* The section as the user wrote it, for messages: "dev" in the
 * credentials file, "profile dev" (but "default") in the config file. */
static const char *
section_prefix(const char *profile, enum awsconfig_kind kind)
{
    return kind == AWSCONFIG_CONFIG && strcmp(profile, "default") != 0 ? "profile " : "";
}

/* Read the profile's section of one file into *f. 0, or -1 on ENOMEM. */
static int
load_file(const char *profile, enum awsconfig_kind kind, struct profile_file *f)
{
    char *path = awsconfig_path(kind, &f->shown);

    f->kind = kind;
    if (path == NULL) {
        f->no_home = 1;
        return errno == ENOMEM ? -1 : 0;
    }
    f->status = awsconfig_read_profile(path, kind, profile, &f->s);
    f->error = errno;
    free(path);
    return f->status == AWSCONFIG_ERROR && f->error == ENOMEM ? -1 : 0;
}

const char *
creds_profile_get(const struct awsconfig_section *cred, const struct awsconfig_section *conf,
                  const char *key)
{
    const char *v = nonempty(awsconfig_get(cred, key));
    return v != NULL ? v : nonempty(awsconfig_get(conf, key));
}

int
creds_profile_sso(const struct awsconfig_section *conf)
{
    return nonempty(awsconfig_get(conf, "sso_session")) != NULL ||
           nonempty(awsconfig_get(conf, "sso_start_url")) != NULL;
}

void
creds_profile_sso_refusal(const char *profile, char *why, size_t whylen)
{
    snprintf(why, whylen,
             "[profile %s] is an IAM Identity Center (SSO) profile, which twice does not "
             "read: give twice a profile with credential_process = aws configure "
             "export-credentials --profile %s --format process",
             profile, profile);
}

/* Why a file gave nothing, appended to why ("; " between files). */
static void
file_reason(const char *profile, const struct profile_file *f, struct buf *why)
{
    const char *pre = section_prefix(profile, f->kind);

    if (why->len > 0) {
        buf_puts(why, "; ");
    }
    if (f->no_home) {
        buf_printf(why, "%s: no home directory", f->shown);
    } else if (f->status == AWSCONFIG_NO_FILE) {
        buf_printf(why, "%s: no such file", f->shown);
    } else if (f->status == AWSCONFIG_NO_SECTION) {
        buf_printf(why, "%s: no [%s%s]", f->shown, pre, profile);
    } else if (f->status == AWSCONFIG_ERROR) {
        buf_printf(why, "%s: %s", f->shown, cnum_strerror(f->error));
    } else if (nonempty(awsconfig_get(f->s, "aws_access_key_id")) == NULL) {
        buf_printf(why, "%s: [%s%s] has no aws_access_key_id", f->shown, pre, profile);
        if (awsconfig_get(f->s, "role_arn") != NULL) {
            buf_puts(why, " (its role_arn needs source_profile or credential_source)");
        }
    } else {
        buf_printf(why, "%s: [%s%s] has aws_access_key_id but no aws_secret_access_key", f->shown,
                   pre, profile);
    }
}

/* The keys of a found section: 1 with *out filled, 0 when the set is
 * incomplete (whole sets only: keys are never mixed from two files), -1
 * on ENOMEM. */
static int
file_creds(const char *profile, const struct profile_file *f, struct creds *out)
{
    const char *akid = nonempty(awsconfig_get(f->s, "aws_access_key_id"));
    const char *secret = nonempty(awsconfig_get(f->s, "aws_secret_access_key"));
    const char *token = nonempty(awsconfig_get(f->s, "aws_session_token"));
    char provider[sizeof(out->provider)];

    if (f->s == NULL || akid == NULL || secret == NULL) {
        return 0;
    }
    snprintf(provider, sizeof(provider), "profile:%.*s", (int) sizeof(provider) - 9, profile);
    return creds_set(out, akid, secret, token, 0, provider) == 0 ? 1 : -1;
}

/* The credentials file, the profile's credential_process (the
 * credentials file's wins, as botocore merges the two), the config file. */
static int
resolve_files(const char *profile, const struct creds_ctx *ctx, const struct profile_file *cred,
              const struct profile_file *conf, struct creds *out, char *why, size_t whylen)
{
    int rc = file_creds(profile, cred, out);
    if (rc != 0) {
        return rc;
    }
    const char *process = nonempty(awsconfig_get(cred->s, "credential_process"));
    if (process == NULL) {
        process = nonempty(awsconfig_get(conf->s, "credential_process"));
    }
    if (process != NULL) {
        return creds_process_resolve(process, profile, ctx, out, why, whylen);
    }
    return file_creds(profile, conf, out);
}

/*
 * A profile's credentials from the files: an assume-role profile through
 * creds_assume.c when assume is nonzero (else it counts as one without
 * keys), an SSO profile refused, else resolve_files. The provider's 1, 0
 * or -1.
 */
static int
resolve_profile(const char *profile, int assume, const struct creds_ctx *ctx,
                struct http_client **http, struct creds *out, char *why, size_t whylen)
{
    struct profile_file cred = {0}, conf = {0};
    struct buf reasons = BUF_INIT;
    int rc = -1;

    if (load_file(profile, AWSCONFIG_CREDENTIALS, &cred) != 0 ||
        load_file(profile, AWSCONFIG_CONFIG, &conf) != 0) {
        snprintf(why, whylen, "out of memory");
    } else if (assume && creds_assume_profile(cred.s, conf.s)) {
        rc = creds_assume_resolve(profile, ctx, http, out, why, whylen);
    } else if (creds_profile_sso(conf.s) &&
               creds_profile_get(cred.s, conf.s, "aws_access_key_id") == NULL &&
               creds_profile_get(cred.s, conf.s, "credential_process") == NULL) {
        creds_profile_sso_refusal(profile, why, whylen);
    } else {
        rc = resolve_files(profile, ctx, &cred, &conf, out, why, whylen);
    }
    if (rc == 0) {
        file_reason(profile, &cred, &reasons);
        file_reason(profile, &conf, &reasons);
        snprintf(why, whylen, "%s", reasons.failed ? "out of memory" : buf_str(&reasons));
        rc = reasons.failed ? -1 : 0;
    } else if (rc == -1 && why[0] == '\0') {
        snprintf(why, whylen, "out of memory");
    }
    buf_free(&reasons);
    awsconfig_section_free(cred.s);
    awsconfig_section_free(conf.s);
    return rc;
}

int
creds_profile_own(const char *profile, const struct creds_ctx *ctx, struct creds *out, char *why,
                  size_t whylen)
{
    return resolve_profile(profile, 0, ctx, NULL, out, why, whylen);
}

static int
profile_resolve(struct creds_provider *p, const struct creds_ctx *ctx, struct creds *out,
                char *why, size_t whylen)
{
    struct profile_provider *pp = (struct profile_provider *) p;
    return resolve_profile(pp->profile, 1, ctx, &pp->http, out, why, whylen);
}

static void
profile_free(struct creds_provider *p)
{
    struct profile_provider *pp = (struct profile_provider *) p;

    http_client_free(pp->http);
    free(pp->profile);
    free(pp->label);
    free(pp);
}

struct creds_provider *
creds_provider_profile_new(const char *profile)
{
    struct profile_provider *pp = calloc(1, sizeof(*pp));

    if (pp == NULL) {
        return NULL;
    }
    pp->base.resolve = profile_resolve;
    pp->base.free = profile_free;
    pp->profile = strdup(profile);
    if (pp->profile == NULL || asprintf(&pp->label, "profile %s", profile) < 0) {
        pp->label = NULL;
        profile_free(&pp->base);
        return NULL;
    }
    pp->base.label = pp->label;
    return &pp->base;
}
