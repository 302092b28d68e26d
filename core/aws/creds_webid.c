/*
 * creds_webid.c - web identity credentials (EKS IRSA and the like): the
 * token file and role from AWS_WEB_IDENTITY_TOKEN_FILE / AWS_ROLE_ARN /
 * AWS_ROLE_SESSION_NAME or the profile's web_identity_token_file /
 * role_arn / role_session_name, exchanged at STS with an unsigned
 * AssumeRoleWithWebIdentity. The token file is read again on every
 * refresh (it rotates). Not a general STS client or XML parser: the reply
 * is searched for the few elements it must have.
 */
#include "awsconfig.h"
#include "buf.h"
#include "creds.h"
#include "creds_provider.h"
#include "http.h"
#include "sigv4.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STS_CONNECT_TIMEOUT_MS 3000
#define STS_TIMEOUT_MS         10000
#define STS_MAX_REPLY          (256 * 1024)
#define WEBID_MAX_TOKEN        (64 * 1024)

struct webid_provider {
    struct creds_provider base; /* first: the chain sees only this */
    char *profile;
    struct http_client *http; /* made on first use */
};

/* ---- the XML reply ---- */

/* The content of the first <name> element in [p, end), as [*c, *c_end);
 * NULL when there is none. Attributes on the tag are allowed. */
static const char *
element(const char *p, const char *end, const char *name, const char **c_end)
{
    size_t n = strlen(name);

    while (p < end && (p = memchr(p, '<', (size_t) (end - p))) != NULL) {
        p++;
        if ((size_t) (end - p) > n && memcmp(p, name, n) == 0 &&
            (p[n] == '>' || p[n] == ' ' || p[n] == '\t' || p[n] == '\n' || p[n] == '\r')) {
            const char *open_end = memchr(p + n, '>', (size_t) (end - p - n));
            if (open_end == NULL || open_end[-1] == '/') {
                return NULL;
            }
            for (const char *q = open_end + 1; q + n + 3 <= end; q++) {
                if (q[0] == '<' && q[1] == '/' && memcmp(q + 2, name, n) == 0 && q[2 + n] == '>') {
                    *c_end = q;
                    return open_end + 1;
                }
            }
            return NULL;
        }
    }
    return NULL;
}

/* Append the UTF-8 encoding of code point cp. 0, or -1 if it is no
 * character. */
static int
put_utf8(struct buf *b, unsigned long cp)
{
    if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
        return -1;
    }
    if (cp < 0x80) {
        return buf_putc(b, (char) cp);
    }
    if (cp < 0x800) {
        buf_putc(b, (char) (0xC0 | (cp >> 6)));
    } else if (cp < 0x10000) {
        buf_putc(b, (char) (0xE0 | (cp >> 12)));
        buf_putc(b, (char) (0x80 | ((cp >> 6) & 0x3F)));
    } else {
        buf_putc(b, (char) (0xF0 | (cp >> 18)));
        buf_putc(b, (char) (0x80 | ((cp >> 12) & 0x3F)));
        buf_putc(b, (char) (0x80 | ((cp >> 6) & 0x3F)));
    }
    return buf_putc(b, (char) (0x80 | (cp & 0x3F)));
}

/* One entity at p (after the '&', up to ';' before end) appended to b;
 * the bytes it took, or 0 when it is not one. */
static size_t
entity(const char *p, const char *end, struct buf *b)
{
    static const struct {
        const char *name;
        char c;
    } named[] = {{"amp;", '&'}, {"lt;", '<'}, {"gt;", '>'}, {"quot;", '"'}, {"apos;", '\''}};
    const char *semi = memchr(p, ';', (size_t) (end - p));

    if (semi == NULL) {
        return 0;
    }
    size_t n = (size_t) (semi - p) + 1;
    for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++) {
        if (n == strlen(named[i].name) && memcmp(p, named[i].name, n) == 0) {
            buf_putc(b, named[i].c);
            return n;
        }
    }
    if (n < 3 || n > 10 || p[0] != '#') {
        return 0;
    }
    char digits[12], *stop = NULL;
    int hex = p[1] == 'x' || p[1] == 'X';
    memcpy(digits, p + 1 + hex, n - 2 - (size_t) hex);
    digits[n - 2 - (size_t) hex] = '\0';
    unsigned long cp = strtoul(digits, &stop, hex ? 16 : 10);
    return digits[0] != '\0' && *stop == '\0' && put_utf8(b, cp) == 0 ? n : 0;
}

/* The text of element `name` in [p, end), unescaped, as a new string the
 * caller wipes and frees; NULL when missing, malformed (errno EINVAL) or
 * on ENOMEM. The buffer is sized first: no realloc copies a secret. */
static char *
element_text(const char *p, const char *end, const char *name)
{
    const char *c_end = NULL, *c = element(p, end, name, &c_end);
    struct buf b = BUF_INIT;

    if (c == NULL) {
        errno = EINVAL;
        return NULL;
    }
    if (buf_reserve(&b, (size_t) (c_end - c) + 1) != 0) {
        errno = ENOMEM;
        return NULL;
    }
    while (c < c_end) {
        size_t used = *c == '&' ? entity(c + 1, c_end, &b) : 0;
        if (*c == '&' && used == 0) {
            buf_free_wipe(&b);
            errno = EINVAL;
            return NULL;
        }
        if (used == 0) {
            buf_putc(&b, *c);
        }
        c += used + 1;
    }
    buf_putc(&b, '\0'); /* an empty element still gives a string */
    return buf_steal(&b);
}

/* An ErrorResponse's Code and Message into why ("" parts when absent). */
static void
error_reason(const char *xml, const char *end, char *why, size_t whylen)
{
    const char *e_end = NULL, *e = element(xml, end, "Error", &e_end);
    char *code = e != NULL ? element_text(e, e_end, "Code") : NULL;
    char *msg = e != NULL ? element_text(e, e_end, "Message") : NULL;

    if (code != NULL) {
        snprintf(why, whylen, "%.100s%s%.300s", code, msg != NULL ? ": " : "",
                 msg != NULL ? msg : "");
    } else {
        snprintf(why, whylen, "the reply has no Credentials");
    }
    free(code);
    free(msg);
}

int
creds_webid_parse(const char *xml, size_t len, struct creds *out, char *why, size_t whylen)
{
    const char *end = xml + len, *c_end = NULL;
    const char *c = element(xml, end, "Credentials", &c_end);
    char *akid = NULL, *secret = NULL, *token = NULL, *expiry = NULL;
    time_t expiration = 0;
    int rc = 0;

    memset(out, 0, sizeof(*out));
    if (c == NULL) {
        error_reason(xml, end, why, whylen);
        return 0;
    }
    akid = element_text(c, c_end, "AccessKeyId");
    secret = element_text(c, c_end, "SecretAccessKey");
    token = element_text(c, c_end, "SessionToken");
    expiry = element_text(c, c_end, "Expiration");
    if (akid == NULL || secret == NULL || token == NULL || expiry == NULL) {
        rc = errno == ENOMEM ? -1 : 0;
        snprintf(why, whylen, "%s",
                 rc < 0 ? "out of memory"
                        : "the reply's Credentials lack AccessKeyId, "
                          "SecretAccessKey, SessionToken or Expiration");
    } else if (*akid == '\0' || *secret == '\0' || creds_parse_time(expiry, &expiration) != 0) {
        snprintf(why, whylen, "the reply's Credentials are empty or expire at \"%.40s\"", expiry);
    } else if (creds_set(out, akid, secret, token, expiration, "web-identity") != 0) {
        snprintf(why, whylen, "out of memory");
        rc = -1;
    } else {
        rc = 1;
    }
    free(akid);
    buf_free_secret(secret);
    buf_free_secret(token);
    free(expiry);
    return rc;
}

/* ---- the request ---- */

/* application/x-www-form-urlencoded: unreserved bytes as they are. */
static void
form_put(struct buf *b, const char *name, const char *value)
{
    buf_printf(b, "%s%s=", b->len > 0 ? "&" : "", name);
    sigv4_uri_encode(b, value, strlen(value), 0);
}

/* What the variables and the profile say. Strings are borrowed from the
 * environment or from section. */
struct webid_conf {
    struct awsconfig_section *section; /* the config file's profile, or NULL */
    const char *token_file, *role_arn, *session, *region;
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
webid_conf_load(const struct webid_provider *wp, const struct creds_ctx *ctx, struct webid_conf *c)
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
    c->region = ctx->region != NULL ? ctx->region : awsconfig_env("AWS_REGION");
    if (c->region == NULL) {
        c->region = either("AWS_DEFAULT_REGION", c->section, "region");
    }
}

/* POST the form to STS and read the reply: 1, or -1 with why. */
static int
call_sts(struct webid_provider *wp, const struct creds_ctx *ctx, const char *url,
         const struct buf *form, struct creds *out, char *why, size_t whylen)
{
    static const char *const headers[] = {
        "Content-Type: application/x-www-form-urlencoded; charset=utf-8",
        "Accept: text/xml",
    };
    struct http_request req = {
        .method = "POST",
        .url = url,
        .headers = headers,
        .nheaders = 2,
        .body = form->data,
        .body_len = form->len,
        .timeout_ms = STS_TIMEOUT_MS,
        .connect_timeout_ms = STS_CONNECT_TIMEOUT_MS,
        .cancel = ctx->cancel,
        .max_response = STS_MAX_REPLY,
    };
    struct http_response resp;
    struct http_error herr;
    char reason[400];
    int rc = -1;

    if (creds_http(&wp->http) == NULL) {
        snprintf(why, whylen, "cannot set up HTTP");
        return -1;
    }
    http_response_init(&resp);
    buf_reserve(&resp.body, 16384); /* the usual reply, without realloc copies */
    if (http_perform(wp->http, &req, &resp, &herr) != 0) {
        snprintf(why, whylen, "STS %s: %s: %s", url, herr.code, herr.message);
    } else if (resp.status != 200) {
        error_reason(buf_str(&resp.body), buf_str(&resp.body) + resp.body.len, reason,
                     sizeof(reason));
        snprintf(why, whylen, "STS %s: AssumeRoleWithWebIdentity: HTTP %ld: %s", url, resp.status,
                 reason);
    } else if ((rc = creds_webid_parse(buf_str(&resp.body), resp.body.len, out, reason,
                                       sizeof(reason))) != 1) {
        snprintf(why, whylen, "STS %s: AssumeRoleWithWebIdentity: %s", url, reason);
        rc = -1;
    }
    buf_free_wipe(&resp.body);
    http_response_free(&resp);
    return rc;
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
        snprintf(why, whylen, "web identity token file %s: %s", c->token_file, strerror(errno));
        return -1;
    }
    url = awsconfig_service_url("sts", c->region);
    buf_reserve(&form, 3 * (strlen(token) + strlen(c->role_arn) + strlen(c->session)) + 128);
    form_put(&form, "Action", "AssumeRoleWithWebIdentity");
    form_put(&form, "Version", "2011-06-15");
    form_put(&form, "RoleArn", c->role_arn);
    form_put(&form, "RoleSessionName", c->session);
    form_put(&form, "WebIdentityToken", token);
    if (url == NULL || form.failed) {
        snprintf(why, whylen, "out of memory");
    } else {
        rc = call_sts(wp, ctx, url, &form, out, why, whylen);
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

    webid_conf_load(wp, ctx, &c);
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
