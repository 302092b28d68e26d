/*
 * test-hostile-input.c - regression tests for what the fuzz targets and
 * test_hostile.py found, each with the input that showed it, plus the pure
 * half of the hostile-message cases (bodies twice must refuse, and why).
 * Not a home for a module's ordinary tests: those stay in test-<module>.c.
 */
#include "buf.h"
#include "check.h"
#include "config.h"
#include "config_ctx.h"
#include "escape.h"
#include "jsondoc.h"
#include "sqs.h"
#include "sqs_parse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONF "/nonexistent-twice-test/twice.conf"

static int
has_control(const char *s)
{
    for (; *s != '\0'; s++) {
        if ((unsigned char) *s < 0x20 || *s == 0x7f) {
            return 1;
        }
    }
    return 0;
}

/* The lines `twiced -t` prints for text, checked to be one line each. */
static char *
config_problems(const char *text)
{
    struct diag d = DIAG_INIT;
    struct config *c = NULL;
    struct buf all = BUF_INIT;

    CHECK_INT(config_load(CONF, text, &c, &d), -1);
    for (size_t i = 0; i < d.n; i++) {
        CHECK(!has_control(d.lines[i]));
        buf_printf(&all, "%s\n", d.lines[i]);
    }
    diag_free(&d);
    config_free(c);
    return buf_steal(&all);
}

/* fuzz-config: "did you mean" quoted a configured plugin name raw, so a
 * name holding a newline split the message of `twiced -t` in two. */
static void
test_config_suggestion_is_shown_safely(void)
{
    char *out = config_problems(
        "idempotency = { dsn = \"x\"; };\n"
        "plugins = ( { name = \"p\\n\"; path = \"/nonexistent-twice-test/p.so\"; } );\n"
        "queues = ( { name = \"q\"; url = \"http://h/a\"; dlq_url = \"http://h/d\"; "
        "plugin = \"p\"; } );\n");
    CHECK_CONTAINS(out, CONF ":3: queue 'q': plugin 'p' is not configured (did you mean 'p\\n'?)");
    free(out);
}

/* A queue or plugin name in twiced -t's FILE:LINE lines: C1 controls (U+009B
 * CSI drives a terminal, U+0085 NEL ends a line for Unicode-aware readers)
 * and bytes that are not UTF-8 were quoted raw; only ASCII controls became
 * '?'. A long name is cut on a whole character. */
static void
test_config_names_are_escaped(void)
{
    char *out = config_problems(
        "idempotency = { dsn = \"x\"; };\n"
        "plugins = ( { name = \"p\"; path = \"/nonexistent-twice-test/p.so\"; } );\n"
        "queues = ( { name = \"q\xc2\x9b"
        "2J\xff\"; url = \"http://h/a\"; "
        "dlq_url = \"http://h/d\"; plugin = \"p\xc2\x85x\xe2\x80\xa8\"; } );\n");
    CHECK_CONTAINS(out, CONF ":3: queue 1: name 'q\\u009b2J\\xff' may only use");
    CHECK_CONTAINS(out, "plugin 'p\\u0085x\\u2028' is not configured");
    free(out);

    char shown[64];
    char long_name[80];
    memset(long_name, 'a', 54);
    memcpy(long_name + 54, "\xc3\xa9\xc3\xa9", 4);
    long_name[58] = '\0';
    CHECK_STR(config_shown(long_name, shown),
              "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\xc3\xa9...");
    CHECK_STR(config_shown("tab\there \"q\"", shown), "tab\\there \\\"q\\\"");
}

/* fuzz-config: a plugin path that does not exist was quoted raw. */
static void
test_config_plugin_path_is_escaped(void)
{
    char *out = config_problems(
        "idempotency = { dsn = \"x\"; };\n"
        "plugins = ( { name = \"p\"; path = \"missing.s\\x04o\\n\"; } );\n"
        "queues = ( { name = \"q\"; url = \"http://h/a\"; dlq_url = \"http://h/d\"; "
        "plugin = \"p\"; } );\n");
    CHECK_CONTAINS(out, "/missing.s\\x04o\\n: No such file or directory");
    free(out);
}

/* A configuration path (-c FILE) or its directory, where @include files are
 * looked for, holding a newline, a terminal escape or a bidirectional
 * control was printed raw in every FILE:LINE line of twiced -t, of a refused
 * start and of twicectl, and in the messages beside them. */
#define HOSTILE_DIR  "/nonexistent-twice-test/d\n\x1b[2J\xe2\x80\xae"
#define SHOWN_DIR    "/nonexistent-twice-test/d\\n\\x1b[2J\\u202e"
#define HOSTILE_CONF HOSTILE_DIR "/tw\x1b]0;x\x07.conf"
#define SHOWN_CONF   SHOWN_DIR "/tw\\x1b]0;x\\x07.conf"

static void
test_config_paths_are_escaped(void)
{
    struct diag d = DIAG_INIT;
    struct config *c = NULL;
    struct buf all = BUF_INIT;
    CHECK_INT(config_load(HOSTILE_CONF,
                          "idempotency = { dsn = \"x\"; };\n"
                          "@include \"/etc/abs.conf\"\n"
                          "queues = ( { name = \"q\"; } );\n",
                          &c, &d),
              -1);
    for (size_t i = 0; i < d.n; i++) {
        CHECK(!has_control(d.lines[i]));
        CHECK(strstr(d.lines[i], "\xe2\x80\xae") == NULL);
        buf_printf(&all, "%s\n", d.lines[i]);
    }
    CHECK_CONTAINS(buf_str(&all), SHOWN_CONF ":2: @include \"/etc/abs.conf\": an absolute "
                                             "path; write it relative to " SHOWN_DIR ", the "
                                             "configuration's directory");
    diag_free(&d);
    config_free(c);
    buf_free(&all);

    char *text = NULL;
    size_t len = 0;
    CHECK_INT(config_text_read_file(HOSTILE_CONF, &text, &len, &d), -1);
    CHECK_INT(d.n, 1);
    CHECK_STR(d.n > 0 ? d.lines[0] : "",
              SHOWN_CONF ": cannot read the configuration: No such file or directory");
    diag_free(&d);
    free(text);

    /* twiced -t's "OK" line, twiced -s and twicectl's messages */
    char *out = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&out, &n);
    CHECK(f != NULL);
    if (f != NULL) {
        diag_print_line(f, "%s: configuration and %d plugins OK", HOSTILE_CONF, 3);
        fclose(f);
        CHECK_STR(out, SHOWN_CONF ": configuration and 3 plugins OK\n");
        free(out);
    }
}

/* fuzz-sqs-response: a failed batch entry with "Code": "" had no code. */
static void
test_batch_failure_without_code(void)
{
    const char *json = "{\"Failed\":[{\"Id\":\"1\",\"Code\":\"\"}]}";
    const char *ids[] = {"0", "1"};
    struct sqs_batch_result r[2];
    struct sqs_error e;

    CHECK_INT(sqs_parse_batch(json, strlen(json), ids, 2, r, &e), 0);
    CHECK_INT(r[1].ok, 0);
    CHECK_STR(r[1].code, "Failed");
    CHECK_STR(r[0].code, "NoResult");
}

static char *
escaped(const char *s)
{
    struct buf b = BUF_INIT;
    escape_text(&b, s, strlen(s));
    return buf_steal(&b);
}

/* test_hostile.py: SQS lets U+2028/U+2029 and C1 controls (U+0085 NEL,
 * U+009B CSI) into attributes and bodies; a plugin logging them split text
 * log lines for Unicode-aware readers and could drive a terminal. */
static void
test_escape_line_breaking_unicode(void)
{
    char *s = escaped("a\xe2\x80\xa8"
                      "b\xe2\x80\xa9"
                      "c\xc2\x85"
                      "d\xc2\x9b[31me");
    CHECK_STR(s, "a\\u2028b\\u2029c\\u0085d\\u009b[31me");
    free(s);
    /* their neighbours stay as they are */
    s = escaped("\xc2\xa0\xc3\xa9\xe2\x80\xa7\xf0\x9f\x98\x80");
    CHECK_STR(s, "\xc2\xa0\xc3\xa9\xe2\x80\xa7\xf0\x9f\x98\x80");
    free(s);
    s = escaped("t\tn\nr\r\x01\x7f\"\\\xff\xc0\xaf\xed\xa0\x80");
    CHECK_STR(s, "t\\tn\\nr\\r\\x01\\x7f\\\"\\\\\\xff\\xc0\\xaf\\xed\\xa0\\x80");
    free(s);
}

/* Bidirectional controls (U+061C, U+200E, U+200F, U+202A-U+202E,
 * U+2066-U+2069) in a body, attribute or name reorder the rest of a log line
 * on a terminal (Trojan Source): they are escaped like the C1 controls, in
 * log text, quoted text and a configuration's names; their neighbours
 * (U+061B, U+200D, U+202F, U+2065, U+206A) are kept. */
static void
test_escape_bidirectional_controls(void)
{
    const char *in = "a\xe2\x80\xae"
                     "b\xe2\x80\x8e\xe2\x80\x8f\xe2\x80\xaa\xe2\x80\xab\xe2\x80\xac"
                     "\xe2\x80\xad\xe2\x81\xa6\xe2\x81\xa7\xe2\x81\xa8\xe2\x81\xa9\xd8\x9c"
                     "c";
    const char *want = "a\\u202eb\\u200e\\u200f\\u202a\\u202b\\u202c\\u202d\\u2066\\u2067"
                       "\\u2068\\u2069\\u061cc";
    char *s = escaped(in);
    CHECK_STR(s, want);
    free(s);

    struct buf b = BUF_INIT;
    escape_unquoted(&b, in, strlen(in));
    CHECK_STR(buf_str(&b), want);
    buf_free(&b);

    const char *kept = "\xd8\x9b\xe2\x80\x8d\xe2\x80\xaf\xe2\x81\xa5\xe2\x81\xaa";
    s = escaped(kept);
    CHECK_STR(s, kept);
    free(s);

    char shown[64];
    CHECK_STR(config_shown("q\xe2\x80\xaegnp.exe\xd8\x9c", shown), "q\\u202egnp.exe\\u061c");

    char *out = config_problems(
        "idempotency = { dsn = \"x\"; };\n"
        "plugins = ( { name = \"p\"; path = \"/nonexistent-twice-test/p.so\"; } );\n"
        "queues = ( { name = \"q\"; url = \"http://h/a\"; "
        "dlq_url = \"http://h/d\"; plugin = \"p\xe2\x81\xa6x\xe2\x80\x8f\"; } );\n");
    CHECK_CONTAINS(out, "plugin 'p\\u2066x\\u200f' is not configured");
    free(out);
}

/* Bodies that can reach a worker and that twice refuses as invalid-json:
 * the reason's text names where, and quotes nothing raw. */
static void
refused_body(const char *body, const char *want)
{
    char err[256];
    struct jsondoc *d = jsondoc_parse(body, strlen(body), err, sizeof(err));

    CHECK(d == NULL);
    jsondoc_free(d);
    CHECK(strncmp(err, "line 1 column ", 14) == 0);
    CHECK_CONTAINS(err, want);
    CHECK(!has_control(err));
}

static void
test_hostile_bodies_are_refused(void)
{
    size_t depth = 10000;
    char *deep = malloc(2 * depth + 1);

    CHECK(deep != NULL);
    if (deep != NULL) {
        memset(deep, '[', depth);
        memset(deep + depth, ']', depth);
        deep[2 * depth] = '\0';
        refused_body(deep, "depth");
        free(deep);
    }
    refused_body("{\"id\":\"\\ud800\"}", "surrogate");
    refused_body("{\"id\":\"\x01\"}", "invalid character inside string");
    refused_body("{\"id\":\"\x1b[31m\"}", "invalid character inside string");
    refused_body("{\"id\":1}\x1b[2J", "trailing garbage");
}

int
main(void)
{
    test_config_suggestion_is_shown_safely();
    test_config_plugin_path_is_escaped();
    test_config_names_are_escaped();
    test_config_paths_are_escaped();
    test_batch_failure_without_code();
    test_escape_line_breaking_unicode();
    test_escape_bidirectional_controls();
    test_hostile_bodies_are_refused();
    return check_done("test-hostile-input");
}
