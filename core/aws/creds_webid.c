/*
 * creds_webid.c - web identity credentials (EKS IRSA and the like): the
 * token file and role from AWS_WEB_IDENTITY_TOKEN_FILE / AWS_ROLE_ARN /
 * AWS_ROLE_SESSION_NAME or the profile's web_identity_token_file /
 * role_arn / role_session_name, exchanged at STS with an unsigned
 * AssumeRoleWithWebIdentity (creds_sts.c). The token file is read again
 * on every refresh (it rotates).
 */
#include "awsconfig.h"
#include "awsregion.h"
#include "buf.h"
#include "cnum.h"
#include "creds.h"
#include "creds_provider.h"
#include "http.h"
#include "sigv4.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WEBID_MAX_TOKEN (64 * 1024)

struct webid_provider {
    struct creds_provider base; /* first: the chain sees only this */
    char *profile;
    struct http_client *http; /* made on first use */
};

/* ---- the request ---- */

/* What the variables and the profile say. Strings are borrowed from the
 * environment or from section. */
struct webid_conf {
    struct awsconfig_section *section; /* the config file's profile, or NULL */
    const char *token_file, *role_arn, *session;
    char session_buf[48];
};

static const char *
either(const char *var, const struct awsconfig_section *s, const char *key)
{
    const char *v = awsconfig_env(var);
    const char *p = v == NULL ? awsconfig_get(s, key) : NULL;
    return v != NULL ? v : p != NULL && *p != '\0' ? p : NULL;
}

static void
webid_conf_load(const struct webid_provider *wp, struct webid_conf *c)
{
    char *path = awsconfig_path(AWSCONFIG_CONFIG, NULL);

    memset(c, 0, sizeof(*c));
    if (path != NULL &&
        awsconfig_read_profile(path, AWSCONFIG_CONFIG, wp->profile, &c->section) != AWSCONFIG_OK) {
        c->section = NULL; /* unreadable: the profile source reports it */
    }
    free(path);
    c->token_file = either("AWS_WEB_IDENTITY_TOKEN_FILE", c->section, "web_identity_token_file");
    c->role_arn = either("AWS_ROLE_ARN", c->section, "role_arn");
    c->session = either("AWS_ROLE_SESSION_NAME", c->section, "role_session_name");
    if (c->session == NULL) {
        snprintf(c->session_buf, sizeof(c->session_buf), "twice-session-%lld",
                 (long long) time(NULL));
        c->session = c->session_buf;
    }
}

/* Exchange the token for credentials: 1, or -1 with why. */
static int
assume_role(struct webid_provider *wp, const struct creds_ctx *ctx, const struct webid_conf *c,
            struct creds *out, char *why, size_t whylen)
{
    struct buf form = BUF_INIT;
    char *url = NULL, *token = creds_read_token_file(c->token_file, WEBID_MAX_TOKEN);
    int rc = -1;

    if (token == NULL) {
        snprintf(why, whylen, "web identity token file %s: %s", c->token_file,
                 cnum_strerror(errno));
        return -1;
    }
    /* STS's region: the chain's (checked where it was read), else the
     * environment's or the profile's, checked here */
    char *own_region = NULL;
    if (ctx->region == NULL && awsregion_resolve(wp->profile, &own_region, why, whylen) < 0) {
        buf_free_secret(token);
        return -1;
    }
    url = awsconfig_sts_url(ctx->region != NULL ? ctx->region : own_region, why, whylen);
    free(own_region);
    buf_reserve(&form, 3 * (strlen(token) + strlen(c->role_arn) + strlen(c->session)) + 128);
    creds_form_put(&form, "Action", "AssumeRoleWithWebIdentity");
    creds_form_put(&form, "Version", "2011-06-15");
    creds_form_put(&form, "RoleArn", c->role_arn);
    creds_form_put(&form, "RoleSessionName", c->session);
    creds_form_put(&form, "WebIdentityToken", token);
    if (url == NULL) {
        /* why says it: a bad endpoint variable, or out of memory */
    } else if (form.failed) {
        snprintf(why, whylen, "out of memory");
    } else {
        rc = creds_sts_call(&wp->http, ctx, url, "AssumeRoleWithWebIdentity", &form, NULL, NULL,
                            "web-identity", out, why, whylen);
    }
    buf_free_wipe(&form);
    buf_free_secret(token);
    free(url);
    return rc;
}

static int
webid_resolve(struct creds_provider *p, const struct creds_ctx *ctx, struct creds *out, char *why,
              size_t whylen)
{
    struct webid_provider *wp = (struct webid_provider *) p;
    struct webid_conf c;
    int rc = 0;

    webid_conf_load(wp, &c);
    if (c.token_file == NULL) {
        snprintf(why, whylen, "AWS_WEB_IDENTITY_TOKEN_FILE not set");
    } else if (c.role_arn == NULL) {
        snprintf(why, whylen, "a web identity token file but no AWS_ROLE_ARN or role_arn");
    } else {
        rc = assume_role(wp, ctx, &c, out, why, whylen);
    }
    awsconfig_section_free(c.section);
    return rc;
}

static void
webid_free(struct creds_provider *p)
{
    struct webid_provider *wp = (struct webid_provider *) p;

    http_client_free(wp->http);
    free(wp->profile);
    free(wp);
}

struct creds_provider *
creds_provider_webid_new(const char *profile)
{
    struct webid_provider *wp = calloc(1, sizeof(*wp));

    if (wp == NULL) {
        return NULL;
    }
    wp->base.label = "web-identity";
    wp->base.resolve = webid_resolve;
    wp->base.free = webid_free;
    wp->profile = strdup(profile);
    if (wp->profile == NULL) {
        free(wp);
        return NULL;
    }
    return &wp->base;
}
