/*
 * test-locale.c - the host's numbers under a locale whose decimal point is
 * ',' (de_DE.UTF-8), as after a plugin's setlocale(LC_ALL, ""): the key text
 * of a real is the C locale's, two different reals keep two keys, and
 * buf_printf (the log's and /metrics' formatting), /metrics itself and
 * cnum_strtod (the store's answers) read and write "1.5", and error texts
 * stay the C locale's (cnum_strerror, cnum_strsignal) where glibc translates
 * strerror. The same keys through the SDK's mock host are in
 * test-key-texts.c.
 */
#include "check.h"
#include "comma_locale.h"

#include "buf.h"
#include "cnum.h"
#include "jsondoc.h"
#include "jsonpath.h"
#include "metrics.h"
#include "shm.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>

static const char *const reals[] = {
    "1.5",
    "1.7",
    "0.1",
    "19.99",
    "-2.5e-8",
    "1e-400",
    "-1e-400",
    "2E3",
    "1.0",
    "123.125",
    "5e-324",
    "1e300",
    "0.30000000000000004",
};
#define NREALS (sizeof(reals) / sizeof(reals[0]))

/* The key text of {"v": number} ("<fail>" when it has none); the caller frees. */
static char *
key_text(const char *number)
{
    char body[128], err[256];
    snprintf(body, sizeof(body), "{\"v\":%s}", number);
    struct jsondoc *d = jsondoc_parse(body, strlen(body), err, sizeof(err));
    struct buf b = BUF_INIT;
    int rc = d != NULL ? jsonpath_key_text(jsonpath_get(d, "v"), &b) : -1;
    jsondoc_free(d);
    if (rc != 0) {
        buf_free(&b);
        return strdup("<fail>");
    }
    return buf_steal(&b);
}

static char *c_keys[NREALS];

/* The key texts as the C locale spells them, before any setlocale(). */
static void
keys_in_c_locale(void)
{
    for (size_t i = 0; i < NREALS; i++) {
        c_keys[i] = key_text(reals[i]);
    }
    CHECK_STR(c_keys[0], "1.5");
    CHECK_STR(c_keys[1], "1.7");
    CHECK_STR(c_keys[5], "0"); /* 1e-400 underflows to 0: the documented key */
    CHECK_STR(c_keys[6], "-0");
}

/* Every real's key text is the C locale's one, byte for byte. */
static void
keys_match_c_locale(void)
{
    for (size_t i = 0; i < NREALS; i++) {
        char *k = key_text(reals[i]);
        CHECK_STR(k, c_keys[i]);
        free(k);
    }
}

/* A thread with a comma locale of its own (uselocale), as a plugin's thread
 * may have, while the process is back in "C": the keys it derives are the
 * same. arg: a copy of the comma locale (duplocale: newlocale would look
 * it up in LOCPATH again, and glibc leaks that lookup's path). */
static void *
keys_in_thread_locale(void *arg)
{
    locale_t de = arg;
    uselocale(de);
    char text[16];
    snprintf(text, sizeof(text), "%.1f", 1.5);
    CHECK_STR(text, "1,5"); /* the thread's locale is in force */
    keys_match_c_locale();
    uselocale(LC_GLOBAL_LOCALE);
    return NULL;
}

static void
test_formatting(void)
{
    struct buf b = BUF_INIT;
    buf_printf(&b, "%.17g %.1fs %g", 0.25, 2.5, 1e-7);
    CHECK_STR(buf_str(&b), "0.25 2.5s 1e-07");
    buf_free(&b);

    char text[32];
    cnum_snprintf(text, sizeof(text), "%.0fs", 61.4);
    CHECK_STR(text, "61s");
    cnum_snprintf(text, sizeof(text), "%.3f", 1.5);
    CHECK_STR(text, "1.500");

    char *end = NULL;
    const char *lease = "12.75"; /* as PostgreSQL answers an extract(epoch ...) */
    CHECK(cnum_strtod(lease, &end) == 12.75);
    CHECK(end == lease + 5);
    snprintf(text, sizeof(text), "%.1f", 1.5); /* the process's own: the plugin's choice */
    CHECK_STR(text, "1,5");
}

/* /metrics in a worker whose plugin set the comma locale: every sample's
 * value is a number a Prometheus scraper reads. */
static void
test_metrics_text(void)
{
    metrics_observe(MET_DURATION, "q", "p", 0.25);
    struct buf out = BUF_INIT;
    CHECK_INT(metrics_render(&out), 0);
    const char *text = buf_str(&out);
    CHECK_CONTAINS(text, "twice_handler_duration_seconds_sum{queue=\"q\",plugin=\"p\"} 0.25\n");
    int bad = 0;
    for (const char *line = text; *line != '\0';) {
        const char *nl = strchr(line, '\n');
        size_t n = nl != NULL ? (size_t) (nl - line) : strlen(line);
        const char *sp = memrchr(line, ' ', n);
        if (line[0] != '#' && sp != NULL && memchr(sp, ',', n - (size_t) (sp - line)) != NULL) {
            fprintf(stderr, "a sample with a comma: %.*s\n", (int) n, line);
            bad++;
        }
        line += n + (nl != NULL);
    }
    CHECK_INT(bad, 0);
    buf_free(&out);
}

/* Under de_DE.UTF-8, with libc's German messages installed (Debian ships
 * them in libc-l10n), strerror(ENOENT) is "Datei oder Verzeichnis nicht
 * gefunden"; the host's messages must still say the C text. Without the
 * translations the C text is what both give, and the check holds anyway. */
static void
test_error_texts(void)
{
    if (strcmp(strerror(ENOENT), "No such file or directory") == 0) {
        printf("test-locale: no German libc messages here: error texts checked as they are\n");
    }
    CHECK_STR(cnum_strerror(ENOENT), "No such file or directory");
    CHECK_STR(cnum_strerror(EACCES), "Permission denied");
    CHECK_STR(cnum_strerror(123456), "Unknown error 123456");
    CHECK_STR(cnum_strsignal(SIGSEGV), "Segmentation fault");
    CHECK_STR(cnum_strsignal(SIGTERM), "Terminated");
    CHECK(strcmp(setlocale(LC_MESSAGES, NULL), COMMA_LOCALE) == 0); /* not changed by them */
}

int
main(void)
{
    keys_in_c_locale();
    if (comma_locale_set() != 0) {
        return 1;
    }
    keys_match_c_locale();
    test_formatting();
    test_error_texts();
    if (shm_create() < 0) {
        perror("shm_create");
        return 1;
    }
    test_metrics_text();
    locale_t de = duplocale(LC_GLOBAL_LOCALE);
    CHECK(de != (locale_t) 0);
    setlocale(LC_ALL, "C");
    pthread_t t;
    if (de != (locale_t) 0 && pthread_create(&t, NULL, keys_in_thread_locale, de) == 0) {
        pthread_join(t, NULL);
    } else {
        CHECK(!"a thread with the comma locale");
    }
    if (de != (locale_t) 0) {
        freelocale(de);
    }
    for (size_t i = 0; i < NREALS; i++) {
        free(c_keys[i]);
    }
    return check_done("test-locale");
}
