/*
 * mime.c - the welcome email as an RFC 5322 / MIME message: headers, a
 * deterministic Message-ID from the idempotency key, multipart/alternative
 * with base64 text and HTML parts. Not an SMTP client (welcome_email.c).
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
mime_message_id(const char *key, const char *id_part, char *out, size_t cap)
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
    snprintf(out, cap, "<welcome-email.%s.%.16s@twice>", n > 0 ? id : "x", hex);
    return 0;
}

/* RFC 5322 date in UTC, with English names whatever the locale. */
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
    snprintf(date, sizeof(date), "Date: %s, %02d %s %04d %02d:%02d:%02d +0000\r\n",
             days[tm.tm_wday], tm.tm_mday, months[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour,
             tm.tm_min, tm.tm_sec);
    text_puts(out, date);
}

/* base64 of n bytes, in lines of at most 76 characters. */
static void
put_base64(struct text *out, const char *s, size_t n)
{
    unsigned char line[80];
    for (size_t i = 0; i < n; i += 57) {
        size_t chunk = n - i < 57 ? n - i : 57;
        int len = EVP_EncodeBlock(line, (const unsigned char *) s + i, (int) chunk);
        text_append(out, (const char *) line, (size_t) len);
        text_puts(out, "\r\n");
    }
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
 * The subject: control characters dropped, at most SUBJECT_MAX bytes (cut
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
        text_puts(out, "\r\n");
        return;
    }
    for (size_t i = 0; i < n;) {
        size_t chunk = n - i < 45 ? n - i : 45;
        while (i + chunk < n && ((unsigned char) s[i + chunk] & 0xc0) == 0x80) {
            chunk--;
        }
        unsigned char enc[64];
        int len = EVP_EncodeBlock(enc, (const unsigned char *) s + i, (int) chunk);
        text_puts(out, i > 0 ? "\r\n =?UTF-8?B?" : "=?UTF-8?B?");
        text_append(out, (const char *) enc, (size_t) len);
        text_puts(out, "?=");
        i += chunk;
    }
    text_puts(out, "\r\n");
}

/* One body part; its text with bare LF or CR made CRLF (MIME's canonical
 * form for text) before base64. */
static void
put_part(struct text *out, const char *boundary, const char *type, const char *body)
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
    text_puts(out, "--");
    text_puts(out, boundary);
    text_puts(out, "\r\nContent-Type: ");
    text_puts(out, type);
    text_puts(out, "; charset=UTF-8\r\nContent-Transfer-Encoding: base64\r\n\r\n");
    if (canon.failed) {
        out->failed = 1;
    } else {
        put_base64(out, canon.s != NULL ? canon.s : "", canon.len);
    }
    text_free(&canon);
}

static void
put_header(struct text *out, const char *name, const char *value)
{
    text_puts(out, name);
    text_puts(out, ": ");
    text_puts(out, value);
    text_puts(out, "\r\n");
}

void
mime_build(const struct mime_mail *m, struct text *out)
{
    char msgid[160], hex[65], boundary[40];
    if (mime_message_id(m->key, m->id_part, msgid, sizeof(msgid)) != 0 ||
        sha256_hex(m->key, hex) != 0) {
        out->failed = 1;
        return;
    }
    /* base64 never holds '_' or "=_", so this cannot occur inside a part */
    snprintf(boundary, sizeof(boundary), "=_twice_%.24s", hex + 16);
    put_header(out, "From", m->from);
    put_header(out, "To", m->to);
    put_subject(out, m->subject);
    put_date(out);
    put_header(out, "Message-ID", msgid);
    put_header(out, "MIME-Version", "1.0");
    text_puts(out, "Content-Type: multipart/alternative; boundary=\"");
    text_puts(out, boundary);
    text_puts(out, "\"\r\n\r\n");
    put_part(out, boundary, "text/plain", m->text);
    put_part(out, boundary, "text/html", m->html);
    text_puts(out, "--");
    text_puts(out, boundary);
    text_puts(out, "--\r\n");
}
