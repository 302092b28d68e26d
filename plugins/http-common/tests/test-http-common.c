/*
 * test-http-common.c - what the HTTP plugins share: Retry-After and
 * Twice-Retry-After values (seconds and the three HTTP date forms), the
 * capture of an answer's first kilobyte and headers, body text made safe
 * for an error line, URL template checks, and the url and timeout settings
 * checked. No server: the pool and requests are exercised by the plugins'
 * integration tests.
 */
#include "check.h"
#include "http_common.h"
#include "turkish_locale.h"

#include <stdlib.h>
#include <string.h>

static void
test_retry_after(void)
{
    time_t now = 1700000000; /* Tue, 14 Nov 2023 22:13:20 GMT */
    CHECK_INT(http_retry_after(" 7\r\n", now), 7);
    CHECK_INT(http_retry_after("0", now), 0);
    CHECK_INT(http_retry_after("Tue, 14 Nov 2023 22:15:20 GMT", now), 120);
    CHECK_INT(http_retry_after("Tuesday, 14-Nov-23 22:14:20 GMT", now), 60);
    CHECK_INT(http_retry_after("Tue Nov 14 22:13:50 2023", now), 30);
    CHECK_INT(http_retry_after("Mon, 13 Nov 2023 22:13:20 GMT", now), 0);
    CHECK_INT(http_retry_after("soon", now), -1);
    CHECK_INT(http_retry_after("-5", now), -1);
    CHECK_INT(http_retry_after("", now), -1);
    /* delta-seconds with leading zeros: their value, not the cap */
    CHECK_INT(http_retry_after("0000000030", now), 30);
    CHECK_INT(http_retry_after("000", now), 0);
    CHECK_INT(http_retry_after("00001234567890", now), 999999999);
    /* read whole, never cut short to something that reads */
    char v[300];
    snprintf(v, sizeof(v), "5%200sx", "");
    CHECK_INT(http_retry_after(v, now), -1);
    snprintf(v, sizeof(v), "%200sTue, 14 Nov 2023 22:15:20 GMT%50s\r\n", "", "");
    CHECK_INT(http_retry_after(v, now), 120);
    snprintf(v, sizeof(v), "Tue, 14 Nov 2023 22:15:20 GMT%120s!", "");
    CHECK_INT(http_retry_after(v, now), -1);
}

static void
test_sanitize(void)
{
    char out[64];
    http_sanitize("a\r\nb\tc\x01"
                  "d\x7f",
                  9, out, sizeof(out));
    CHECK_STR(out, "a  b c?d?");
    http_sanitize("\xc3\xa9t\xc3\xa9 \xff\xc3", 8, out, sizeof(out));
    CHECK_STR(out, "\xc3\xa9t\xc3\xa9 ??");
    http_sanitize("\xed\xa0\x80"
                  "x",
                  4, out, sizeof(out)); /* a surrogate */
    CHECK_STR(out, "???x");
    http_sanitize("abcdef", 6, out, 4);
    CHECK_STR(out, "abc");
    http_sanitize("\xc3\xa9", 2, out, 2); /* no room for the whole character */
    CHECK_STR(out, "?");
    /* no room: out untouched, or only its NUL */
    out[0] = 'z';
    http_sanitize("abc", 3, out, 0);
    CHECK_INT(out[0], 'z');
    http_sanitize("abc", 3, out, 1);
    CHECK_STR(out, "");
}

/* An error about an answer quotes its body after ": ", or says the body
 * was empty (or blank) instead of ending in "HTTP 429: ". */
static void
test_body_shown(void)
{
    char out[32];
    http_body_shown("busy\r\n", 6, out, sizeof(out));
    CHECK_STR(out, ": busy  ");
    http_body_shown("", 0, out, sizeof(out));
    CHECK_STR(out, " (empty body)");
    http_body_shown(" \r\n\t", 4, out, sizeof(out));
    CHECK_STR(out, " (empty body)");
    http_body_shown("abcdefghijklmnopqrstuvwxyz0123456789", 36, out, sizeof(out));
    CHECK_STR(out, ": abcdefghijklmnopqrstuvwxyz012");
}

/* The header callback as libcurl calls it, one line at a time; a new
 * status line (after a 1xx) forgets earlier delays. */
static void
test_answer_capture(void)
{
    struct http_answer a;
    http_answer_init(&a);
    CHECK_INT(a.retry_after, -1);
    CHECK_INT(a.twice_retry_after, -1);
    const char *lines[] = {"HTTP/1.1 100 Continue\r\n",
                           "Retry-After: 9\r\n",
                           "HTTP/1.1 503 Service Unavailable\r\n",
                           "retry-after:  12 \r\n",
                           "Twice-Retry-After: 30\r\n",
                           "Content-Type: text/plain\r\n"};
    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
        char *l = strdup(lines[i]);
        CHECK_INT(http_answer_header(l, 1, strlen(l), &a), strlen(l));
        free(l);
    }
    CHECK_INT(a.retry_after, 12);
    CHECK_INT(a.twice_retry_after, 30);
    /* a value past the first 127 bytes of the line is still read */
    char *spaced = malloc(200);
    int n = snprintf(spaced, 200, "Retry-After:%130s14\r\n", "");
    CHECK_INT(http_answer_header(spaced, 1, (size_t) n, &a), n);
    CHECK_INT(a.retry_after, 14);
    free(spaced);

    /* Only the first kilobyte is kept; the rest is read and dropped. */
    char chunk[700];
    memset(chunk, 'x', sizeof(chunk));
    CHECK_INT(http_answer_body(chunk, 1, sizeof(chunk), &a), sizeof(chunk));
    CHECK_INT(http_answer_body(chunk, 1, sizeof(chunk), &a), sizeof(chunk));
    CHECK_INT(a.len, HTTP_ANSWER_BODY_MAX);
}

static void
test_url_check(void)
{
    CHECK(http_url_check("http://x/{entity}/{id}?v={a.b}") == NULL);
    CHECK_STR(http_url_check("http://x/{id"),
              "has a '{' that does not start a {field} of [A-Za-z0-9_.-]");
    CHECK_STR(http_url_check("http://x/id}"), "has a '}' without its '{'");
    CHECK_STR(http_url_check("http://x/{a b}"),
              "has a '{' that does not start a {field} of [A-Za-z0-9_.-]");
}

/* The timeout setting's value, for a host table that has only setting(). */
static const char *tmo;

static const char *
fake_setting(const twice_settings *s, const char *name)
{
    (void) s;
    return strcmp(name, "timeout") == 0 ? tmo : NULL;
}

/* The url and timeout settings: what is refused, and the setting blamed. */
static void
test_setting_checks(void)
{
    twice_api api = {.size = sizeof(api), .setting = fake_setting};
    struct setting_refusal r = {NULL, ""};
    CHECK_INT(http_check_url("HTTPS://x/{entity}/{id}", &r), 0);
    CHECK_INT(http_check_url("ftp://x/{id}", &r), -1);
    CHECK_STR(r.setting, "url");
    CHECK_STR(r.why, "must start with http:// or https://");
    CHECK_INT(http_check_url(NULL, &r), -1);
    CHECK_STR(r.why, "is not set (an http:// or https:// endpoint)");
    CHECK_INT(http_check_url("http://x/id}", &r), -1);
    CHECK_STR(r.setting, "url");
    CHECK_STR(r.why, "has a '}' without its '{'");

    long t = 0;
    tmo = "600";
    CHECK_INT(http_check_timeout(&api, NULL, 600, &t, &r), 0);
    CHECK_INT(t, 600);
    tmo = "601";
    CHECK_INT(http_check_timeout(&api, NULL, 600, &t, &r), -1);
    CHECK_STR(r.setting, "timeout");
    CHECK_STR(r.why, "must be 1-600 seconds");
    tmo = "0";
    CHECK_INT(http_check_timeout(&api, NULL, 3600, &t, &r), -1);
    CHECK_STR(r.why, "must be 1-3600 seconds");
}

/* What twicectl plugin check shows of a url: never a password or query. */
static void
test_url_shown(void)
{
    char out[256];
    static const char *const cases[][2] = {
        {"http://bob:Pa55word@127.0.0.1:1/x?sig=abc", "http://bob:***@127.0.0.1:1/x?..."},
        {"https://tok3n@h/p", "https://***@h/p"},
        {"http://h:8080/a/{id}", "http://h:8080/a/{id}"},
        {"http://h/a#frag", "http://h/a?..."},
        {"http://u:p@w@h/a", "http://u:***@h/a"},
        {"http://h/path@x:y", "http://h/path@x:y"}, /* an '@' past the host is the path's */
        {"http://h?u:p@x", "http://h?..."},
        {"HTTPS://U:P@H", "HTTPS://U:***@H"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        http_url_shown(cases[i][0], out, sizeof(out));
        CHECK_STR(out, cases[i][1]);
    }
    http_url_shown("http://bob:Pa55word@host/x", out, 12);
    CHECK_STR(out, "http://bob:");
}

/* Under tr_TR.UTF-8 (another plugin's setlocale() in the same worker) a
 * receiver's "TWICE-RETRY-AFTER" is still Twice-Retry-After: libc's
 * strncasecmp there takes 'I' and 'i' for two letters. Run last: the
 * locale stays in force. */
static void
test_turkish_locale(void)
{
    if (turkish_locale_set() != 0) {
        CHECK(!"tr_TR.UTF-8 in force");
        return;
    }
    struct http_answer a;
    http_answer_init(&a);
    char line[] = "TWICE-RETRY-AFTER: 45\r\n";
    CHECK_INT(http_answer_header(line, 1, strlen(line), &a), strlen(line));
    CHECK_INT(a.twice_retry_after, 45);
    CHECK_INT(plugin_ascii_strncasecmp("ID", "id", 2), 0);
}

int
main(void)
{
    test_retry_after();
    test_sanitize();
    test_body_shown();
    test_answer_capture();
    test_url_check();
    test_url_shown();
    test_setting_checks();
    test_turkish_locale();
    return check_done("test-http-common");
}
