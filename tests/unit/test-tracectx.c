/*
 * test-tracectx.c - trace context headers (text/tracectx.c): the W3C
 * traceparent values a message may carry, good and malformed (each refused
 * one would otherwise become a span's parent), their formatting, and the
 * X-Ray header of the AWSTraceHeader system attribute turned into ids.
 */
#include "check.h"
#include "tracectx.h"

#include <string.h>

#define TP_GOOD "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

typedef int parse_fn(const char *s, size_t len, struct tracectx *out, const char **why);

static int
parse_tp(const char *s)
{
    struct tracectx c;
    return tracectx_parse_traceparent(s, strlen(s), &c, NULL);
}

/* Every value of bad (ending with NULL) is refused by parse. */
static void
check_refused(parse_fn *parse, const char *const *bad)
{
    struct tracectx c;
    for (size_t i = 0; bad[i] != NULL; i++) {
        int rc = parse(bad[i], strlen(bad[i]), &c, NULL);
        if (rc != -1) {
            fprintf(stderr, "accepted: \"%s\"\n", bad[i]);
        }
        CHECK_INT(rc, -1);
    }
}

static void
test_traceparent_good(void)
{
    struct tracectx c;
    char out[TRACECTX_TRACEPARENT_LEN + 1], hex[33];
    const char *why = NULL;
    CHECK_INT(tracectx_parse_traceparent(TP_GOOD, strlen(TP_GOOD), &c, &why), 0);
    tracectx_hex(c.trace_id, 16, hex);
    CHECK_STR(hex, "4bf92f3577b34da6a3ce929d0e0e4736");
    tracectx_hex(c.span_id, 8, hex);
    CHECK_STR(hex, "00f067aa0ba902b7");
    CHECK_INT(c.flags, 1);
    tracectx_format_traceparent(&c, out);
    CHECK_STR(out, TP_GOOD);
    /* not sampled, and unknown flag bits kept */
    CHECK_INT(parse_tp("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"), 0);
    const char *flags = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-09";
    CHECK_INT(tracectx_parse_traceparent(flags, strlen(flags), &c, NULL), 0);
    CHECK_INT(c.flags, 9);
    /* a later version: 55 characters, or more after a '-' */
    const char *v1 = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-future";
    CHECK_INT(tracectx_parse_traceparent(v1, strlen(v1), &c, NULL), 0);
    tracectx_format_traceparent(&c, out);
    CHECK_STR(out, TP_GOOD); /* passed on as version 00 */
    CHECK_INT(parse_tp("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"), 0);
    /* only len bytes are read */
    CHECK_INT(tracectx_parse_traceparent(TP_GOOD "garbage", strlen(TP_GOOD), &c, NULL), 0);
}

static void
test_traceparent_bad(void)
{
    static const char *const bad[] = {
        "",
        "00",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",   /* short */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-", /* 00 with more */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-010",
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", /* version ff */
        "0g-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", /* upper case */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00F067AA0BA902B7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0A",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01", /* zero trace */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", /* zero span */
        "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7_01",
        " 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", /* blanks */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 ",
        "00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01",  /* shifted dash */
        "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x", /* later version */
        "00-4bf92f3577b34da6a3ce929d0e0e47\xc3\xa9-00f067aa0ba902b7-01",
        NULL,
    };
    check_refused(tracectx_parse_traceparent, bad);
    struct tracectx c;
    const char *why = NULL;
    CHECK_INT(tracectx_parse_traceparent(NULL, 0, &c, &why), -1);
    CHECK_STR(why, "shorter than 55 characters");
    const char nul[] = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0\0";
    CHECK_INT(tracectx_parse_traceparent(nul, 55, &c, &why), -1);
    CHECK_STR(why, "the flags are not 2 lower-case hex digits");
    const char *zero = "00-00000000000000000000000000000000-00f067aa0ba902b7-01";
    CHECK_INT(tracectx_parse_traceparent(zero, strlen(zero), &c, &why), -1);
    CHECK_STR(why, "the trace id is all zeros");
}

static void
check_xray(const char *s, const char *trace, const char *span, int flags)
{
    struct tracectx c;
    char hex[33];
    const char *why = "(none)";
    int rc = tracectx_parse_xray(s, strlen(s), &c, &why);
    if (rc != 0) {
        fprintf(stderr, "refused \"%s\": %s\n", s, why);
    }
    CHECK_INT(rc, 0);
    if (rc == 0) {
        tracectx_hex(c.trace_id, 16, hex);
        CHECK_STR(hex, trace);
        tracectx_hex(c.span_id, 8, hex);
        CHECK_STR(hex, span);
        CHECK_INT(c.flags, flags);
    }
}

static void
test_xray(void)
{
    const char *t = "5759e988bd862e3fe1be46a994272793";
    check_xray("Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1", t,
               "53995c3f42cd8ad8", 1);
    check_xray("Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=0", t,
               "53995c3f42cd8ad8", 0);
    check_xray("Parent=53995C3F42CD8AD8; Root=1-5759E988-BD862E3FE1BE46A994272793", t,
               "53995c3f42cd8ad8", 0);
    check_xray("Root=1-5759e988-bd862e3fe1be46a994272793;Self=1-5759e988-"
               "000000000000000000000001;Parent=53995c3f42cd8ad8;Sampled=?;Lineage=a87bd80c:0",
               t, "53995c3f42cd8ad8", 0);

    static const char *const bad[] = {
        "",
        "Root=1-5759e988-bd862e3fe1be46a994272793", /* no Parent */
        "Parent=53995c3f42cd8ad8;Sampled=1",        /* no Root */
        "Root=2-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8",
        "Root=1-5759e988bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8",
        "Root=1-5759e988-bd862e3fe1be46a99427279;Parent=53995c3f42cd8ad8",
        "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad",
        "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8adz",
        "Root=1-00000000-000000000000000000000000;Parent=53995c3f42cd8ad8",
        "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=0000000000000000",
        "Root=1-5759e988-bd862e3fe1be46a994272793;Root=1-5759e988-bd862e3fe1be46a994272793;"
        "Parent=53995c3f42cd8ad8",
        "Root 1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        NULL,
    };
    check_refused(tracectx_parse_xray, bad);
    struct tracectx c;
    char longer[400];
    memset(longer, ' ', sizeof(longer));
    memcpy(longer, "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;", 65);
    CHECK_INT(tracectx_parse_xray(longer, sizeof(longer), &c, NULL), -1);
    CHECK_INT(tracectx_parse_xray(longer, 256, &c, NULL), 0);
}

int
main(void)
{
    test_traceparent_good();
    test_traceparent_bad();
    test_xray();
    return check_done("test-tracectx");
}
