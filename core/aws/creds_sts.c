/*
 * creds_sts.c - what the STS sources share (web identity, assume-role):
 * the Query API's form body, the POST to STS, signed with SigV4 when the
 * action needs it (AssumeRole) or not (AssumeRoleWithWebIdentity), and the
 * few elements of the XML reply: Credentials, or an ErrorResponse's Code
 * and Message. Not a general STS client or XML parser.
 */
#include "buf.h"
#include "creds.h"
#include "creds_provider.h"
#include "http.h"
#include "sigv4.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define STS_CONNECT_TIMEOUT_MS 3000
#define STS_TIMEOUT_MS         10000
#define STS_MAX_REPLY          (256 * 1024)
#define STS_CONTENT_TYPE       "application/x-www-form-urlencoded; charset=utf-8"

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
 * caller wipes and frees; NULL when missing, malformed (a bad entity, or a
 * NUL byte, which XML forbids and a C string would cut at; errno EINVAL) or
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
        if ((*c == '&' && used == 0) || *c == '\0') {
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

/* An ErrorResponse's Code and Message into why; without a code, what the
 * message says, and never an empty reason. */
static void
error_reason(const char *xml, const char *end, char *why, size_t whylen)
{
    const char *e_end = NULL, *e = element(xml, end, "Error", &e_end);
    char *code = e != NULL ? element_text(e, e_end, "Code") : NULL;
    char *msg = e != NULL ? element_text(e, e_end, "Message") : NULL;
    if (msg != NULL) {
        sigv4_cut_quoted_signing(msg); /* its session token, were it quoted */
    }
    int has_msg = msg != NULL && msg[0] != '\0';

    if (code != NULL && code[0] != '\0') {
        snprintf(why, whylen, "%.100s%s%.300s", code, has_msg ? ": " : "", has_msg ? msg : "");
    } else if (has_msg) {
        snprintf(why, whylen, "the reply has no Credentials: %.300s", msg);
    } else {
        snprintf(why, whylen, "the reply has no Credentials");
    }
    free(code);
    free(msg);
}

/* 1 when s has nothing but white space: an error answer without a body. */
static int
blank(const char *s)
{
    return s[strspn(s, " \t\r\n")] == '\0';
}

int
creds_sts_parse(const char *xml, size_t len, const char *provider, struct creds *out, char *why,
                size_t whylen)
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
    } else if (creds_set(out, akid, secret, token, expiration, provider) != 0) {
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

void
creds_form_put(struct buf *b, const char *name, const char *value)
{
    buf_printf(b, "%s%s=", b->len > 0 ? "&" : "", name);
    sigv4_uri_encode(b, value, strlen(value), 0);
}

/* The header lines of a signed request (wiped: the token and signature). */
struct sts_signed {
    struct buf date, host, token, auth;
};

static void
sts_signed_free(struct sts_signed *s)
{
    buf_free(&s->date);
    buf_free(&s->host);
    buf_free_wipe(&s->token);
    buf_free_wipe(&s->auth);
}

/* Sign the POST of form to url with signer for region and service "sts". 0,
 * or -1 on ENOMEM. The Host value is the URL's authority, as curl sends it. */
static int
sts_sign(const char *url, const struct buf *form, const struct creds *signer, const char *region,
         struct sts_signed *s)
{
    const char *a = strstr(url, "://");
    a = a != NULL ? a + 3 : url;
    size_t n = strcspn(a, "/?#");
    char date[17], *host = strndup(a, n);
    char *path = strndup(a[n] == '/' ? a + n : "/", a[n] == '/' ? strcspn(a + n, "?#") : 1);
    int rc = -1;
    if (host != NULL && path != NULL) {
        sigv4_amz_date((long long) time(NULL), date);
        struct sigv4_header h[4] = {
            {"content-type", STS_CONTENT_TYPE},
            {"host", host},
            {"x-amz-date", date},
            {"x-amz-security-token", signer->session_token},
        };
        struct sigv4_request r = {
            .method = "POST",
            .path = path,
            .headers = h,
            .nheaders = signer->session_token != NULL ? 4 : 3,
            .body = form->data,
            .body_len = form->len,
            .normalize_path = 1,
        };
        struct buf auth = BUF_INIT;
        rc = sigv4_authorization(&r, signer, region, "sts", date, &auth);
        buf_printf(&s->date, "X-Amz-Date: %s", date);
        buf_printf(&s->host, "Host: %s", host);
        if (signer->session_token != NULL) {
            buf_printf(&s->token, "X-Amz-Security-Token: %s", signer->session_token);
        }
        buf_printf(&s->auth, "Authorization: %s", buf_str(&auth));
        buf_free_wipe(&auth);
        rc = rc != 0 || s->date.failed || s->host.failed || s->token.failed || s->auth.failed ? -1
                                                                                              : 0;
    }
    free(host);
    free(path);
    return rc;
}

int
creds_sts_call(struct http_client **http, const struct creds_ctx *ctx, const char *url,
               const char *action, const struct buf *form, const struct creds *signer,
               const char *region, const char *provider, struct creds *out, char *why,
               size_t whylen)
{
    struct sts_signed s = {BUF_INIT, BUF_INIT, BUF_INIT, BUF_INIT};
    const char *headers[6] = {"Content-Type: " STS_CONTENT_TYPE, "Accept: text/xml"};
    size_t nheaders = 2;
    struct http_response resp;
    struct http_error herr;
    char reason[400];
    int rc = -1;

    if (creds_http(http) == NULL) {
        snprintf(why, whylen, "cannot set up HTTP");
        return -1;
    }
    if (signer != NULL) {
        if (sts_sign(url, form, signer, region, &s) != 0) {
            snprintf(why, whylen, "out of memory signing the STS request");
            sts_signed_free(&s);
            return -1;
        }
        headers[nheaders++] = s.date.data;
        headers[nheaders++] = s.host.data;
        headers[nheaders++] = s.auth.data;
        if (s.token.data != NULL) {
            headers[nheaders++] = s.token.data;
        }
    }
    struct http_request req = {
        .method = "POST",
        .url = url,
        .headers = headers,
        .nheaders = nheaders,
        .body = form->data,
        .body_len = form->len,
        .timeout_ms = STS_TIMEOUT_MS,
        .connect_timeout_ms = STS_CONNECT_TIMEOUT_MS,
        .cancel = ctx->cancel,
        .max_response = STS_MAX_REPLY,
    };
    http_response_init(&resp);
    buf_reserve(&resp.body, 16384); /* the usual reply, without realloc copies */
    if (http_perform(*http, &req, &resp, &herr) != 0) {
        snprintf(why, whylen, "STS %s: %s: %s", url, herr.code, herr.message);
    } else if (resp.status != 200 && blank(buf_str(&resp.body))) {
        snprintf(why, whylen, "STS %s: %s: HTTP %ld (empty body)", url, action, resp.status);
    } else if (resp.status != 200) {
        error_reason(buf_str(&resp.body), buf_str(&resp.body) + resp.body.len, reason,
                     sizeof(reason));
        snprintf(why, whylen, "STS %s: %s: HTTP %ld: %s", url, action, resp.status, reason);
    } else if ((rc = creds_sts_parse(buf_str(&resp.body), resp.body.len, provider, out, reason,
                                     sizeof(reason))) != 1) {
        snprintf(why, whylen, "STS %s: %s: %s", url, action, reason);
        rc = -1;
    }
    buf_free_wipe(&resp.body);
    http_response_free(&resp);
    sts_signed_free(&s);
    return rc;
}
