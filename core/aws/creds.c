/*
 * creds.c - struct creds, ISO 8601 expirations, and the credential chain
 * of creds.h: the sources in order, the cache, and the thread that
 * refreshes temporary credentials ahead of their expiration. Not the
 * sources themselves (creds_env.c, creds_webid.c, creds_profile.c,
 * creds_container.c, creds_imds.c) and not the INI reading (awsconfig.c).
 */
#include "creds.h"

#include "atomics.h"
#include "awsconfig.h"
#include "backoff.h"
#include "buf.h"
#include "cnum.h"
#include "creds_provider.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Cached credentials closer than this to their expiration count as
 * expired: a request signed now must still be valid when AWS reads it. */
#define CREDS_EXPIRY_SKEW     10
/* Refresh at most this long before the expiration (botocore's advisory
 * window); shorter lifetimes are refreshed at half-life. */
#define CREDS_REFRESH_WINDOW  (15 * 60)
/* Retries of a failed refresh: full-jitter backoff between these. */
#define CREDS_RETRY_BASE_MS   1000
#define CREDS_RETRY_CAP_MS    60000
/* The longest creds_get waits for the refresh thread's first answer (the
 * sources' own timeouts add up to less). */
#define CREDS_WAIT_LIMIT      120
/* Credentials AWS refused are read again from their source no sooner
 * than this long after they were obtained (creds_refused). */
#define CREDS_REFUSED_MIN_AGE 10
/* The refresh thread looks at the wall clock at least this often. */
#define CREDS_MAX_SLEEP       60

#define CREDS_MAX_PROVIDERS 8

/* ---- struct creds ---- */

void
creds_clear(struct creds *c)
{
    free(c->access_key_id);
    buf_free_secret(c->secret_access_key);
    buf_free_secret(c->session_token);
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
    size_t n = strnlen(provider, sizeof(c->provider) - 1); /* as snprintf cuts it, */
    memcpy(c->provider, provider, n);                      /* without a printf per request */
    return 0;
}

int
creds_copy(struct creds *dst, const struct creds *src)
{
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

/* ---- the chain ---- */

typedef struct creds_provider *(*creds_provider_ctor)(const char *profile);

/* The AWS SDKs' order (sqs-json-protocol.md section 7). */
static const creds_provider_ctor chain_order[] = {
    creds_provider_env_new,       creds_provider_webid_new, creds_provider_profile_new,
    creds_provider_container_new, creds_provider_imds_new,
};

_Static_assert(sizeof(chain_order) / sizeof(chain_order[0]) <= CREDS_MAX_PROVIDERS,
               "raise CREDS_MAX_PROVIDERS");

/*
 * One lock guards everything below it; the refresh thread drops it while a
 * source resolves, so creds_get never waits behind the network. The thread
 * is the only caller of the sources.
 */
struct creds_chain {
    pthread_mutex_t lock;
    pthread_cond_t wake;     /* to the thread: credentials wanted, or stop */
    pthread_cond_t answered; /* to callers: an attempt finished */
    pthread_t thread;
    int started;
    struct flag stopping; /* also the sources' cancel flag */
    int wanted;           /* a caller waits for the next attempt */
    unsigned long attempts;
    char error[512];     /* why it failed */
    struct creds cached; /* access_key_id NULL until the first success */
    size_t source;       /* the provider that supplied cached */
    time_t obtained_at;  /* when cached was obtained */
    time_t refresh_at;   /* the next attempt; 0: none planned */
    int failures;        /* attempts failed in a row */
    char *region;
    struct creds_provider *providers[CREDS_MAX_PROVIDERS];
    size_t nproviders;
};

struct creds_chain *
creds_chain_new(const char *profile)
{
    struct creds_chain *chain = calloc(1, sizeof(*chain));

    if (chain == NULL) {
        return NULL;
    }
    pthread_mutex_init(&chain->lock, NULL);
    pthread_cond_init(&chain->wake, NULL);
    pthread_cond_init(&chain->answered, NULL);
    profile = awsconfig_profile_name(profile);
    for (size_t i = 0; i < sizeof(chain_order) / sizeof(chain_order[0]); i++) {
        chain->providers[i] = chain_order[i](profile);
        if (chain->providers[i] == NULL) {
            creds_chain_free(chain);
            return NULL;
        }
        chain->nproviders++;
    }
    return chain;
}

void
creds_chain_free(struct creds_chain *chain)
{
    if (chain == NULL) {
        return;
    }
    pthread_mutex_lock(&chain->lock);
    flag_raise(&chain->stopping);
    pthread_cond_broadcast(&chain->wake);
    pthread_cond_broadcast(&chain->answered);
    pthread_mutex_unlock(&chain->lock);
    if (chain->started) {
        pthread_join(chain->thread, NULL);
    }
    for (size_t i = 0; i < chain->nproviders; i++) {
        chain->providers[i]->free(chain->providers[i]);
    }
    creds_clear(&chain->cached);
    pthread_cond_destroy(&chain->answered);
    pthread_cond_destroy(&chain->wake);
    pthread_mutex_destroy(&chain->lock);
    free(chain->region);
    free(chain);
}

int
creds_chain_set_region(struct creds_chain *chain, const char *region)
{
    char *copy = region != NULL ? strdup(region) : NULL;
    int rc = 0;

    if (region != NULL && copy == NULL) {
        return -1;
    }
    pthread_mutex_lock(&chain->lock);
    if (chain->started) {
        errno = EBUSY; /* the thread may be reading it */
        rc = -1;
        free(copy);
    } else {
        free(chain->region);
        chain->region = copy;
    }
    pthread_mutex_unlock(&chain->lock);
    return rc;
}

time_t
creds_refresh_time(time_t obtained, time_t expiration)
{
    if (expiration == 0) {
        return 0;
    }
    time_t lifetime = expiration > obtained ? expiration - obtained : 0;
    time_t window = lifetime / 2 < CREDS_REFRESH_WINDOW ? lifetime / 2 : CREDS_REFRESH_WINDOW;
    /* and before they stop being usable, with room for a retry */
    if (window < 2 * CREDS_EXPIRY_SKEW) {
        window = 2 * CREDS_EXPIRY_SKEW;
    }
    return expiration - window;
}

static int
usable(const struct creds *c, time_t now)
{
    return c->access_key_id != NULL &&
           (c->expiration == 0 || now < c->expiration - CREDS_EXPIRY_SKEW);
}

/* Ask one source; credentials already expired count as none (why says
 * when). The provider's 1, 0 or -1. */
static int
ask(struct creds_provider *p, const struct creds_ctx *ctx, time_t now, struct creds *out,
    char *why, size_t whylen)
{
    why[0] = '\0';
    int rc = p->resolve(p, ctx, out, why, whylen);
    if (rc == 1 && out->expiration != 0 && out->expiration <= now + CREDS_EXPIRY_SKEW) {
        struct tm tm;
        gmtime_r(&out->expiration, &tm);
        strftime(why, whylen, "expired at %Y-%m-%dT%H:%M:%SZ", &tm);
        creds_clear(out);
        rc = 0;
    }
    return rc;
}

/* Ask each source in turn until one answers or one that is configured
 * fails. 0 with *out and *source filled, or -1 with err. */
static int
resolve_chain(struct creds_chain *chain, const struct creds_ctx *ctx, time_t now,
              struct creds *out, size_t *source, char *err, size_t errlen)
{
    struct buf tried = BUF_INIT;
    char why[512];

    for (size_t i = 0; i < chain->nproviders; i++) {
        struct creds_provider *p = chain->providers[i];
        int rc = ask(p, ctx, now, out, why, sizeof(why));
        if (rc == 1) {
            *source = i;
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

/* A refresh asks the source that supplied the cached credentials, as the
 * SDKs do: the chain is walked again only when nothing valid is left. */
static int
refresh_source(struct creds_chain *chain, const struct creds_ctx *ctx, size_t source, time_t now,
               struct creds *out, char *err, size_t errlen)
{
    struct creds_provider *p = chain->providers[source];
    char why[512];

    if (ask(p, ctx, now, out, why, sizeof(why)) == 1) {
        return 0;
    }
    snprintf(err, errlen, "AWS credentials: refreshing from %s: %s", p->label,
             why[0] ? why : "no credentials");
    return -1;
}

/* Record a success: the new credentials and when to refresh them. */
static void
adopt(struct creds_chain *chain, struct creds *fresh, size_t source, time_t now)
{
    creds_clear(&chain->cached);
    chain->cached = *fresh;
    memset(fresh, 0, sizeof(*fresh));
    chain->source = source;
    chain->obtained_at = now;
    chain->failures = 0;
    chain->error[0] = '\0';
    chain->refresh_at = creds_refresh_time(now, chain->cached.expiration);
    if (chain->refresh_at != 0 && chain->refresh_at <= now) {
        chain->refresh_at = now + 1;
    }
}

/* Record a failure: try again after a backoff, and while cached ones are
 * valid, at the latest halfway to their end. */
static void
failed(struct creds_chain *chain, const char *err, time_t now)
{
    chain->failures++;
    snprintf(chain->error, sizeof(chain->error), "%s", err);
    time_t delay =
        (time_t) (backoff_delay(CREDS_RETRY_BASE_MS, CREDS_RETRY_CAP_MS, chain->failures) / 1000);
    if (usable(&chain->cached, now)) {
        time_t half = (chain->cached.expiration - CREDS_EXPIRY_SKEW - now) / 2;
        if (chain->cached.expiration != 0 && delay > half) {
            delay = half;
        }
    }
    chain->refresh_at = now + (delay < 1 ? 1 : delay);
}

/* One attempt, called and returning with the lock held; the lock is
 * dropped while the sources work. */
static void
attempt(struct creds_chain *chain)
{
    struct creds fresh;
    struct creds_ctx ctx = {chain->region, &chain->stopping};
    char err[512] = "";
    time_t now = time(NULL);
    int refresh = usable(&chain->cached, now);
    size_t source = chain->source;

    memset(&fresh, 0, sizeof(fresh));
    pthread_mutex_unlock(&chain->lock);
    int rc = refresh ? refresh_source(chain, &ctx, source, now, &fresh, err, sizeof(err))
                     : resolve_chain(chain, &ctx, now, &fresh, &source, err, sizeof(err));
    pthread_mutex_lock(&chain->lock);
    now = time(NULL);
    if (rc == 0) {
        adopt(chain, &fresh, source, now);
    } else {
        failed(chain, err, now);
    }
    chain->attempts++;
    chain->wanted = 0;
    pthread_cond_broadcast(&chain->answered);
}

/* Sleep until the planned refresh (or a minute, to notice clock jumps),
 * a caller's wish or the stop; with the lock held. */
static void
sleep_until_due(struct creds_chain *chain, time_t now)
{
    if (chain->refresh_at == 0) {
        pthread_cond_wait(&chain->wake, &chain->lock);
        return;
    }
    time_t until =
        chain->refresh_at < now + CREDS_MAX_SLEEP ? chain->refresh_at : now + CREDS_MAX_SLEEP;
    struct timespec ts = {until, 0};
    pthread_cond_timedwait(&chain->wake, &chain->lock, &ts);
}

static void *
refresher_main(void *arg)
{
    struct creds_chain *chain = arg;

    pthread_mutex_lock(&chain->lock);
    while (!flag_is_up(&chain->stopping)) {
        time_t now = time(NULL);
        if (chain->wanted || (chain->refresh_at != 0 && now >= chain->refresh_at)) {
            attempt(chain);
        } else {
            sleep_until_due(chain, now);
        }
    }
    pthread_mutex_unlock(&chain->lock);
    return NULL;
}

/* Start the refresh thread (lock held) with every signal blocked: the
 * process's signals belong to its own threads. 0, or -1 with err. */
static int
start_refresher(struct creds_chain *chain, char *err, size_t errlen)
{
    sigset_t all, old;

    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&chain->thread, NULL, refresher_main, chain);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        snprintf(err, errlen, "AWS credentials: cannot start the refresh thread: %s",
                 cnum_strerror(rc));
        return -1;
    }
    chain->started = 1;
    return 0;
}

/* Nothing valid is cached: wait for the thread's next attempt, unless the
 * last one failed (then its error is the answer until a retry succeeds).
 * Lock held; 0 when valid credentials arrived. */
static int
wait_for_attempt(struct creds_chain *chain, char *err, size_t errlen)
{
    if (chain->failures == 0) {
        unsigned long seen = chain->attempts;
        struct timespec limit = {time(NULL) + CREDS_WAIT_LIMIT, 0};
        chain->wanted = 1;
        pthread_cond_signal(&chain->wake);
        while (chain->attempts == seen && !flag_is_up(&chain->stopping)) {
            if (pthread_cond_timedwait(&chain->answered, &chain->lock, &limit) == ETIMEDOUT) {
                snprintf(err, errlen, "AWS credentials: no answer from the sources within %d s",
                         CREDS_WAIT_LIMIT);
                return -1;
            }
        }
    }
    if (usable(&chain->cached, time(NULL))) {
        return 0;
    }
    snprintf(err, errlen, "%s",
             flag_is_up(&chain->stopping)          ? "AWS credentials: shutting down"
             : chain->error[0]                     ? chain->error
             : chain->cached.access_key_id != NULL ? "AWS credentials: expired"
                                                   : "no AWS credentials");
    return -1;
}

void
creds_refused(struct creds_chain *chain, const char *access_key_id)
{
    pthread_mutex_lock(&chain->lock);
    const char *cached = chain->cached.access_key_id;
    if (chain->started && access_key_id != NULL && cached != NULL &&
        strcmp(cached, access_key_id) == 0 &&
        time(NULL) - chain->obtained_at >= CREDS_REFUSED_MIN_AGE) {
        chain->obtained_at = time(NULL); /* one read per refused set, not per refusal */
        chain->wanted = 1;
        pthread_cond_signal(&chain->wake);
    }
    pthread_mutex_unlock(&chain->lock);
}

int
creds_get(struct creds_chain *chain, struct creds *out, char *err, size_t errlen)
{
    int rc = 0;

    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&chain->lock);
    if (!usable(&chain->cached, time(NULL))) {
        rc = chain->started ? 0 : start_refresher(chain, err, errlen);
        if (rc == 0) {
            rc = wait_for_attempt(chain, err, errlen);
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
