/*
 * creds.c - the AWS credential chain of creds.h and its first two sources:
 * environment variables and the shared profile files. Not the INI reading
 * (awsconfig.c) and not the network sources (files of their own, added to
 * chain_order below).
 */
#include "creds.h"

#include "awsconfig.h"
#include "buf.h"
#include "creds_provider.h"

#include <openssl/crypto.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Cached credentials that expire are resolved again this long before
 * they do, so a request is never signed with ones about to lapse. */
#define CREDS_REFRESH_MARGIN 300

#define CREDS_MAX_PROVIDERS 8

/* ---- struct creds ---- */

static void
wipe_free(char *s)
{
    if (s != NULL) {
        OPENSSL_cleanse(s, strlen(s));
        free(s);
    }
}

void
creds_clear(struct creds *c)
{
    free(c->access_key_id);
    wipe_free(c->secret_access_key);
    wipe_free(c->session_token);
    memset(c, 0, sizeof(*c));
}

int
creds_set(struct creds *c, const char *access_key_id, const char *secret_access_key,
          const char *session_token, time_t expiration, const char *provider)
{
    memset(c, 0, sizeof(*c));
    c->access_key_id = strdup(access_key_id);
    c->secret_access_key = strdup(secret_access_key);
    c->session_token = session_token != NULL ? strdup(session_token) : NULL;
    if (c->access_key_id == NULL || c->secret_access_key == NULL ||
        (session_token != NULL && c->session_token == NULL)) {
        creds_clear(c);
        errno = ENOMEM;
        return -1;
    }
    c->expiration = expiration;
    snprintf(c->provider, sizeof(c->provider), "%s", provider);
    return 0;
}

int
creds_copy(struct creds *dst, const struct creds *src)
{
    if (src->access_key_id == NULL || src->secret_access_key == NULL) {
        memset(dst, 0, sizeof(*dst));
        snprintf(dst->provider, sizeof(dst->provider), "%s", src->provider);
        dst->expiration = src->expiration;
        return 0;
    }
    return creds_set(dst, src->access_key_id, src->secret_access_key, src->session_token,
                     src->expiration, src->provider);
}

/* ---- ISO 8601 times ---- */

/* n decimal digits at s into *v; 0, or -1 if they are not all digits. */
static int
digits(const char *s, int n, int *v)
{
    *v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return -1;
        }
        *v = *v * 10 + (s[i] - '0');
    }
    return 0;
}

/* The zone after the seconds: "Z", "+hh:mm", "-hhmm" or nothing. The
 * offset in seconds east of UTC, or -1 on junk (never a real offset:
 * those are whole minutes). */
static long
zone_offset(const char *p)
{
    int hh, mm;

    if (*p == '\0' || ((*p == 'Z' || *p == 'z') && p[1] == '\0')) {
        return 0;
    }
    if ((*p != '+' && *p != '-') || digits(p + 1, 2, &hh) != 0) {
        return -1;
    }
    const char *m = p[3] == ':' ? p + 4 : p + 3;
    if (digits(m, 2, &mm) != 0 || m[2] != '\0' || hh > 23 || mm > 59) {
        return -1;
    }
    long off = hh * 3600L + mm * 60L;
    return *p == '-' ? -off : off;
}

int
creds_parse_time(const char *s, time_t *out)
{
    struct tm tm;
    int y, mo, d, h, mi, sec;

    memset(&tm, 0, sizeof(tm));
    if (strlen(s) < 19 || digits(s, 4, &y) || s[4] != '-' || digits(s + 5, 2, &mo) ||
        s[7] != '-' || digits(s + 8, 2, &d) || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') ||
        digits(s + 11, 2, &h) || s[13] != ':' || digits(s + 14, 2, &mi) || s[16] != ':' ||
        digits(s + 17, 2, &sec)) {
        return -1;
    }
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60) {
        return -1;
    }
    const char *p = s + 19;
    if (*p == '.' || *p == ',') {
        size_t n = strspn(p + 1, "0123456789");
        if (n == 0) {
            return -1;
        }
        p += 1 + n;
    }
    long off = zone_offset(p);
    if (off == -1) {
        return -1;
    }
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = sec;
    *out = timegm(&tm) - off;
    return 0;
}

/* ---- source 1: environment variables ---- */

static const char *
env_nonempty(const char *name)
{
    const char *v = getenv(name);
    return v != NULL && *v != '\0' ? v : NULL;
}

/* AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, both or nothing (a lone key
 * id falls through to the next source, with the reason); the token from
 * AWS_SESSION_TOKEN or the legacy AWS_SECURITY_TOKEN. */
static int
env_resolve(struct creds_provider *p, struct creds *out, char *why, size_t whylen)
{
    const char *akid = env_nonempty("AWS_ACCESS_KEY_ID");
    const char *secret = env_nonempty("AWS_SECRET_ACCESS_KEY");
    const char *token = env_nonempty("AWS_SESSION_TOKEN");
    const char *expiry = env_nonempty("AWS_CREDENTIAL_EXPIRATION");
    time_t expiration = 0;

    (void) p;
    if (token == NULL) {
        token = env_nonempty("AWS_SECURITY_TOKEN");
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

/* ---- source 2: the shared credentials and config files ---- */

struct profile_provider {
    struct creds_provider base; /* first: the chain sees only this */
    char *profile;
    char *label; /* "profile NAME" */
};

static const char *
nonempty(const char *s)
{
    return s != NULL && *s != '\0' ? s : NULL;
}

/* The section as the user wrote it, for messages: "dev" in the
 * credentials file, "profile dev" (but "default") in the config file. */
static const char *
section_prefix(const struct profile_provider *pp, enum awsconfig_kind kind)
{
    return kind == AWSCONFIG_CONFIG && strcmp(pp->profile, "default") != 0 ? "profile " : "";
}

/* Keys of a found section: 1 with *out filled, 0 with the reason in why
 * when the pair is incomplete, -1 on ENOMEM. */
static int
profile_creds(const struct profile_provider *pp, const struct awsconfig_section *s,
              enum awsconfig_kind kind, const char *shown, struct creds *out, struct buf *why)
{
    const char *akid = nonempty(awsconfig_get(s, "aws_access_key_id"));
    const char *secret = nonempty(awsconfig_get(s, "aws_secret_access_key"));
    const char *token = nonempty(awsconfig_get(s, "aws_session_token"));
    const char *pre = section_prefix(pp, kind);
    char provider[sizeof(out->provider)];

    if (akid == NULL) {
        buf_printf(why, "%s: [%s%s] has no aws_access_key_id", shown, pre, pp->profile);
        return 0;
    }
    if (secret == NULL) {
        buf_printf(why, "%s: [%s%s] has aws_access_key_id but no aws_secret_access_key", shown,
                   pre, pp->profile);
        return 0;
    }
    snprintf(provider, sizeof(provider), "profile:%.*s", (int) sizeof(provider) - 9, pp->profile);
    return creds_set(out, akid, secret, token, 0, provider) == 0 ? 1 : -1;
}

/* The profile's credentials from one of the two files: 1, 0 with the
 * reason appended to why, or -1 on ENOMEM. */
static int
profile_from_file(const struct profile_provider *pp, enum awsconfig_kind kind, struct creds *out,
                  struct buf *why)
{
    const char *shown = "";
    struct awsconfig_section *s = NULL;
    char *path = awsconfig_path(kind, &shown);
    int rc = 0;

    if (why->len > 0) {
        buf_puts(why, "; ");
    }
    if (path == NULL) {
        if (errno == ENOMEM) {
            return -1;
        }
        buf_printf(why, "%s: no home directory", shown);
        return 0;
    }
    switch (awsconfig_read_profile(path, kind, pp->profile, &s)) {
    case AWSCONFIG_OK:
        rc = profile_creds(pp, s, kind, shown, out, why);
        break;
    case AWSCONFIG_NO_FILE:
        buf_printf(why, "%s: no such file", shown);
        break;
    case AWSCONFIG_NO_SECTION:
        buf_printf(why, "%s: no [%s%s]", shown, section_prefix(pp, kind), pp->profile);
        break;
    case AWSCONFIG_ERROR:
        if (errno == ENOMEM) {
            rc = -1;
        } else {
            buf_printf(why, "%s: %s", shown, strerror(errno));
        }
        break;
    }
    awsconfig_section_free(s);
    free(path);
    return rc;
}

/* The credentials file first: for the same profile it wins over the
 * config file, as a whole (keys are never mixed from the two). */
static int
profile_resolve(struct creds_provider *p, struct creds *out, char *why, size_t whylen)
{
    struct profile_provider *pp = (struct profile_provider *) p;
    struct buf reasons = BUF_INIT;

    int rc = profile_from_file(pp, AWSCONFIG_CREDENTIALS, out, &reasons);
    if (rc == 0) {
        rc = profile_from_file(pp, AWSCONFIG_CONFIG, out, &reasons);
    }
    if (rc == 0 && reasons.failed) {
        rc = -1;
    }
    if (rc == 0) {
        snprintf(why, whylen, "%s", buf_str(&reasons));
    } else if (rc == -1) {
        snprintf(why, whylen, "out of memory");
    }
    buf_free(&reasons);
    return rc;
}

static void
profile_free(struct creds_provider *p)
{
    struct profile_provider *pp = (struct profile_provider *) p;

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

/* ---- the chain ---- */

typedef struct creds_provider *(*creds_provider_ctor)(const char *profile);

/* The AWS SDKs' order (sqs-json-protocol.md section 7). Web identity goes
 * between these two; container, then IMDS, after the profile. */
static const creds_provider_ctor chain_order[] = {
    creds_provider_env_new,
    creds_provider_profile_new,
};

_Static_assert(sizeof(chain_order) / sizeof(chain_order[0]) <= CREDS_MAX_PROVIDERS,
               "raise CREDS_MAX_PROVIDERS");

struct creds_chain {
    pthread_mutex_t lock; /* guards cached and serialises resolving */
    struct creds_provider *providers[CREDS_MAX_PROVIDERS];
    size_t nproviders;
    struct creds cached; /* access_key_id NULL until the first success */
};

struct creds_chain *
creds_chain_new(const char *profile)
{
    struct creds_chain *chain = calloc(1, sizeof(*chain));
    const char *name = awsconfig_profile_name(profile);

    if (chain == NULL) {
        return NULL;
    }
    if (pthread_mutex_init(&chain->lock, NULL) != 0) {
        free(chain);
        return NULL;
    }
    for (size_t i = 0; i < sizeof(chain_order) / sizeof(chain_order[0]); i++) {
        struct creds_provider *p = chain_order[i](name);
        if (p == NULL) {
            creds_chain_free(chain);
            return NULL;
        }
        chain->providers[chain->nproviders++] = p;
    }
    return chain;
}

void
creds_chain_free(struct creds_chain *chain)
{
    if (chain == NULL) {
        return;
    }
    for (size_t i = 0; i < chain->nproviders; i++) {
        chain->providers[i]->free(chain->providers[i]);
    }
    creds_clear(&chain->cached);
    pthread_mutex_destroy(&chain->lock);
    free(chain);
}

/* Whether c can be handed out at `now` without asking the sources. */
static int
still_good(const struct creds *c, time_t now)
{
    return c->access_key_id != NULL &&
           (c->expiration == 0 || now < c->expiration - CREDS_REFRESH_MARGIN);
}

/* Ask each source in turn. A source that hands back credentials already
 * expired counts as having none. 0 with *out filled, or -1 with err. */
static int
resolve_chain(struct creds_chain *chain, time_t now, struct creds *out, char *err, size_t errlen)
{
    struct buf tried = BUF_INIT;
    char why[512];

    for (size_t i = 0; i < chain->nproviders; i++) {
        struct creds_provider *p = chain->providers[i];
        why[0] = '\0';
        int rc = p->resolve(p, out, why, sizeof(why));
        if (rc == 1 && out->expiration != 0 && out->expiration <= now) {
            struct tm tm;
            gmtime_r(&out->expiration, &tm);
            strftime(why, sizeof(why), "expired at %Y-%m-%dT%H:%M:%SZ", &tm);
            creds_clear(out);
            rc = 0;
        }
        if (rc == 1) {
            buf_free(&tried);
            return 0;
        }
        if (rc < 0) {
            snprintf(err, errlen, "AWS credentials: %s: %s", p->label, why);
            buf_free(&tried);
            return -1;
        }
        buf_printf(&tried, "%s%s (%s)", tried.len > 0 ? ", " : "", p->label, why);
    }
    snprintf(err, errlen, "no AWS credentials: tried %s",
             tried.failed ? "every source (out of memory)" : buf_str(&tried));
    buf_free(&tried);
    return -1;
}

/*
 * Resolve when nothing is cached or the cached credentials are within
 * CREDS_REFRESH_MARGIN of expiring. If that refresh fails while the cached
 * ones are still valid, keep using them (botocore's advisory refresh).
 */
int
creds_get(struct creds_chain *chain, struct creds *out, char *err, size_t errlen)
{
    time_t now = time(NULL);
    int rc = 0;

    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&chain->lock);
    if (!still_good(&chain->cached, now)) {
        struct creds fresh;
        memset(&fresh, 0, sizeof(fresh));
        if (resolve_chain(chain, now, &fresh, err, errlen) == 0) {
            creds_clear(&chain->cached);
            chain->cached = fresh;
        } else if (chain->cached.access_key_id == NULL || chain->cached.expiration <= now) {
            rc = -1;
        }
    }
    if (rc == 0 && creds_copy(out, &chain->cached) != 0) {
        snprintf(err, errlen, "AWS credentials: out of memory");
        rc = -1;
    }
    pthread_mutex_unlock(&chain->lock);
    if (rc == 0 && errlen > 0) {
        err[0] = '\0';
    }
    return rc;
}
