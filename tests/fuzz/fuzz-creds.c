/*
 * fuzz-creds.c - libFuzzer target: what credential sources answer, as a
 * broken or hostile endpoint could send it: STS's XML replies (read by
 * creds_sts.c's own small reader, entities and character references
 * included), the JSON documents of IMDS, the container endpoint and
 * credential_process (creds_from_json), the times they carry
 * (creds_parse_time), and the container URIs twice agrees to call. Not for
 * the HTTP exchange or signing (fuzz-sigv4).
 *
 * Input: the first byte chooses (mod 4) which; the rest is the text.
 * Promises checked: credentials read have a key, a secret, a token where
 * one is required, and a time that was parsed; a reason is terminated and
 * never holds the reply's SecretAccessKey or SessionToken (credentials
 * never reach a log line); a time read formats back to the same second;
 * the secrets' copies are freed (LSan watches).
 */
#include "fuzz.h"

#include "creds.h"
#include "creds_provider.h"

#include <time.h>

/* The raw text of the first <name>...</name> in xml, when it is plain (no
 * markup or entity, so the reader decodes it as it is), has a digit (so it
 * is none of the reasons' own words), appears only once in the whole input,
 * and comes before every element a reason may quote (Code, Message,
 * Expiration): then no reason can hold it honestly. NULL otherwise; caller
 * frees. */
static char *
plain_element(const char *xml, size_t len, const char *name)
{
    char open[64], close[64];
    snprintf(open, sizeof(open), "<%s>", name);
    snprintf(close, sizeof(close), "</%s>", name);
    const char *end = xml + len;
    const char *s = memmem(xml, len, open, strlen(open));
    if (s == NULL) {
        return NULL;
    }
    static const char *const quoted[] = {"<Code", "<Message", "<Expiration"};
    for (size_t i = 0; i < sizeof(quoted) / sizeof(quoted[0]); i++) {
        const char *q = memmem(xml, len, quoted[i], strlen(quoted[i]));
        if (q != NULL && q < s) {
            return NULL;
        }
    }
    s += strlen(open);
    const char *e = memmem(s, (size_t) (end - s), close, strlen(close));
    size_t n = e != NULL ? (size_t) (e - s) : 0;
    if (n < 12 || memchr(s, '<', n) != NULL || memchr(s, '&', n) != NULL ||
        memchr(s, '\0', n) != NULL || strcspn(s, "0123456789") >= n) {
        return NULL; /* the reasons' own words have no digit: a secret with one is no word */
    }
    /* the only copy in the whole input, NUL bytes or not */
    if (memmem(xml, len, s, n) != s || memmem(s + 1, (size_t) (end - s - 1), s, n) != NULL) {
        return NULL;
    }
    return strndup(s, n);
}

static void
check_creds(const struct creds *c, int need_token, int need_expiry, const char *provider)
{
    FUZZ_ASSERT(c->access_key_id != NULL && c->access_key_id[0] != '\0');
    FUZZ_ASSERT(c->secret_access_key != NULL && c->secret_access_key[0] != '\0');
    FUZZ_ASSERT(!need_token || c->session_token != NULL);
    FUZZ_ASSERT(!need_expiry || c->expiration != 0);
    FUZZ_ASSERT(strncmp(c->provider, provider, sizeof(c->provider) - 1) == 0);
}

static void
sts_reply(const char *xml, size_t len)
{
    struct creds c;
    char why[512];
    why[0] = '\0';
    int rc = creds_sts_parse(xml, len, "assume-role:fuzz", &c, why, sizeof(why));
    FUZZ_ASSERT(rc >= -1 && rc <= 1);
    if (rc == 1) {
        check_creds(&c, 1, 1, "assume-role:fuzz");
    } else {
        FUZZ_ASSERT(memchr(why, '\0', sizeof(why)) != NULL && why[0] != '\0');
        FUZZ_ASSERT(c.access_key_id == NULL && c.secret_access_key == NULL);
        const char *secrets[] = {"SecretAccessKey", "SessionToken"};
        for (size_t i = 0; i < 2; i++) {
            char *secret = plain_element(xml, len, secrets[i]);
            FUZZ_ASSERT(secret == NULL || strstr(why, secret) == NULL);
            free(secret);
        }
    }
    creds_clear(&c);
}

static void
json_document(unsigned flags, const char *text, size_t len)
{
    struct creds c;
    char why[512];
    why[0] = '\0';
    const char *token_key = flags & CREDS_JSON_VERSION_1 ? "SessionToken" : "Token";
    int rc = creds_from_json(text, len, token_key, flags, "imds", &c, why, sizeof(why));
    FUZZ_ASSERT(rc >= -1 && rc <= 1);
    if (rc == 1) {
        check_creds(&c, 0, flags & CREDS_JSON_EXPIRATION, "imds");
        /* never quoted: a reason may not hold the secret it was given */
    } else {
        FUZZ_ASSERT(memchr(why, '\0', sizeof(why)) != NULL && why[0] != '\0');
    }
    creds_clear(&c);
}

static void
time_text(const char *s)
{
    time_t t;
    if (creds_parse_time(s, &t) != 0) {
        return;
    }
    struct tm tm;
    char again[64];
    if (gmtime_r(&t, &tm) == NULL || tm.tm_year + 1900 < 1 || tm.tm_year + 1900 > 9999) {
        return; /* a time the format cannot write back */
    }
    snprintf(again, sizeof(again), "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    time_t u;
    FUZZ_ASSERT(creds_parse_time(again, &u) == 0 && u == t);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) {
        return 0;
    }
    char *text = fuzz_rest(data, size);
    if (text == NULL) {
        return 0;
    }
    switch (data[0] % 4) {
    case 0:
        sts_reply(text, size - 1);
        break;
    case 1:
        json_document((data[0] >> 2) & 7, text, size - 1);
        break;
    case 2:
        time_text(text);
        break;
    default:
        (void) creds_container_uri_allowed(text);
        break;
    }
    free(text);
    return 0;
}
