/*
 * mime.c - the welcome email as an RFC 5322 / MIME message: its header
 * lines (a deterministic Message-ID from the idempotency key, an RFC 2047
 * subject) and a multipart/alternative body of a text/plain and a text/html
 * part, assembled and base64-encoded by libcurl's MIME API. Not an SMTP
 * client (welcome_email.c).
 */
#include "welcome.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define SUBJECT_MAX 400 /* bytes of subject text kept */

int
mime_valid_address(const char *addr)
{
    const char *at = strchr(addr, '@');
    size_t len = strlen(addr);
    if (at == NULL || at == addr || at[1] == '\0' || strchr(at + 1, '@') != NULL || len > 254) {
        return 0;
    }
    for (const char *p = addr; *p != '\0'; p++) {
        unsigned char c = (unsigned char) *p;
        if (c <= 0x20 || c == 0x7f || strchr("<>()[],;:\"\\", c) != NULL) {
            return 0;
        }
    }
    return 1;
}

int
mime_valid_domain(const char *domain)
{
    static const char label_chars[] =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-";
    if (strlen(domain) == 0 || strlen(domain) > 253) {
        return 0;
    }
    for (const char *p = domain;; p++) {
        size_t len = strspn(p, label_chars);
        if (len == 0 || len > 63 || p[0] == '-' || p[len - 1] == '-') {
            return 0;
        }
        p += len;
        if (*p != '.') {
            return *p == '\0';
        }
    }
}

static int
sha256_hex(const char *s, char hex[65])
{
    unsigned char md[32];
    unsigned int n = 0;
    if (EVP_Digest(s, strlen(s), md, &n, EVP_sha256(), NULL) != 1 || n != 32) {
        return -1;
    }
    for (int i = 0; i < 32; i++) {
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
    }
    return 0;
}

int
mime_message_id(const char *key, const char *id_part, const char *domain, char *out, size_t cap)
{
    char hex[65], id[65];
    size_t n = 0;
    if (sha256_hex(key, hex) != 0) {
        return -1;
    }
    for (const char *p = id_part != NULL ? id_part : ""; *p != '\0' && n < 64; p++) {
        if (strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-", *p) !=
            NULL) {
            id[n++] = *p;
        }
    }
    id[n] = '\0';
    snprintf(out, cap, "<welcome-email.%s.%.16s@%s>", n > 0 ? id : "x", hex, domain);
    return 0;
}

/* The Date header (no line end): RFC 5322, UTC, English names whatever the
 * locale. */
static void
put_date(struct text *out)
{
    static const char *days[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static const char *months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                   "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    char date[64];
    struct tm tm;
    time_t now = time(NULL);
    gmtime_r(&now, &tm);
    snprintf(date, sizeof(date), "Date: %s, %02d %s %04d %02d:%02d:%02d +0000", days[tm.tm_wday],
             tm.tm_mday, months[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
    text_puts(out, date);
}

/* The length of s[0..n) without a last character that was cut short. */
static size_t
utf8_whole(const char *s, size_t n)
{
    size_t j = n;
    while (j > 0 && ((unsigned char) s[j - 1] & 0xc0) == 0x80) {
        j--;
    }
    if (j == 0) {
        return n;
    }
    unsigned char lead = (unsigned char) s[j - 1];
    size_t want = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
    return n - (j - 1) < want ? j - 1 : n;
}

/*
 * The subject header (no line end): control characters dropped, at most SUBJECT_MAX bytes (cut
 * on a UTF-8 boundary). Plain ASCII is written as is; anything else as
 * RFC 2047 encoded words of whole characters, one per folded line.
 */
static void
put_subject(struct text *out, const char *subject)
{
    char s[SUBJECT_MAX + 1];
    size_t n = 0;
    int ascii = 1;
    for (const char *p = subject; *p != '\0' && n < SUBJECT_MAX; p++) {
        unsigned char c = (unsigned char) *p;
        if (c >= 0x20 && c != 0x7f) {
            s[n++] = *p;
            ascii &= c < 0x80;
        }
    }
    n = utf8_whole(s, n);
    s[n] = '\0';
    text_puts(out, "Subject: ");
    if (ascii) {
        text_puts(out, s);
        return;
    }
    for (size_t i = 0; i < n;) {
        size_t most = n - i < 45 ? n - i : 45, chunk = most;
        while (chunk > 0 && i + chunk < n && ((unsigned char) s[i + chunk] & 0xc0) == 0x80) {
            chunk--;
        }
        if (chunk == 0) {
            chunk = most; /* not UTF-8: no character starts within reach */
        }
        unsigned char enc[64];
        int len = EVP_EncodeBlock(enc, (const unsigned char *) s + i, (int) chunk);
        text_puts(out, i > 0 ? "\r\n =?UTF-8?B?" : "=?UTF-8?B?");
        text_append(out, (const char *) enc, (size_t) len);
        text_puts(out, "?=");
        i += chunk;
    }
}

/* Append one header line (no line end) to *list; -1 on ENOMEM. */
static int
add_header(struct curl_slist **list, const char *line)
{
    struct curl_slist *l = curl_slist_append(*list, line);
    if (l == NULL) {
        return -1;
    }
    *list = l;
    return 0;
}

static int
add_header2(struct curl_slist **list, const char *name, const char *value)
{
    struct text t = {0};
    text_puts(&t, name);
    text_puts(&t, ": ");
    text_puts(&t, value);
    int rc = t.failed ? -1 : add_header(list, t.s);
    text_free(&t);
    return rc;
}

/* The header lines, in the order mail readers show them. */
static int
headers_of(const struct mime_mail *m, struct curl_slist **list)
{
    char msgid[400];
    struct text subject = {0}, date = {0};
    put_subject(&subject, m->subject);
    put_date(&date);
    int rc = subject.failed || date.failed ||
                     mime_message_id(m->key, m->id_part, m->domain, msgid, sizeof(msgid)) != 0 ||
                     add_header2(list, "From", m->from) != 0 ||
                     add_header2(list, "To", m->to) != 0 || add_header(list, subject.s) != 0 ||
                     add_header(list, date.s) != 0 ||
                     add_header2(list, "Message-ID", msgid) != 0 ||
                     add_header(list, "MIME-Version: 1.0") != 0 ||
                     /* curl adds the boundary to the message's own Content-Type */
                     add_header(list, "Content-Type: multipart/alternative") != 0
                 ? -1
                 : 0;
    text_free(&subject);
    text_free(&date);
    return rc;
}

/* One body part: its text with bare LF or CR made CRLF (MIME's canonical
 * form for text), base64-encoded by curl. */
static int
add_part(curl_mime *mime, const char *type, const char *body)
{
    struct text canon = {0};
    for (const char *p = body; *p != '\0'; p++) {
        if (*p == '\r' || *p == '\n') {
            text_puts(&canon, "\r\n");
            p += p[0] == '\r' && p[1] == '\n';
        } else {
            text_append(&canon, p, 1);
        }
    }
    curl_mimepart *part = curl_mime_addpart(mime);
    int rc = canon.failed || part == NULL ||
                     curl_mime_data(part, canon.s != NULL ? canon.s : "", canon.len) != CURLE_OK ||
                     curl_mime_type(part, type) != CURLE_OK ||
                     curl_mime_encoder(part, "base64") != CURLE_OK
                 ? -1
                 : 0;
    text_free(&canon);
    return rc;
}

int
mime_attach(CURL *c, const struct mime_mail *m, struct curl_slist **headers, curl_mime **mime)
{
    *headers = NULL;
    *mime = curl_mime_init(c);
    if (*mime == NULL || headers_of(m, headers) != 0 ||
        add_part(*mime, "text/plain; charset=UTF-8", m->text) != 0 ||
        add_part(*mime, "text/html; charset=UTF-8", m->html) != 0) {
        curl_mime_free(*mime);
        curl_slist_free_all(*headers);
        *mime = NULL;
        *headers = NULL;
        return -1;
    }
    return 0;
}
