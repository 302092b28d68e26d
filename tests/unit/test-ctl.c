/*
 * test-ctl.c - the pure pieces of twicectl: what `dlq redrive` sends back
 * (user attributes kept, packed ones unpacked, twice-* but twice-outbox-id
 * dropped, a stable
 * deduplication id), round-tripped through the real dead-letter builder of
 * dlq.c; and the escaping of untrusted text for a terminal. Not a test of
 * the subcommands against servers (test_ctl.py does that).
 */
#include "buf.h"
#include "check.h"
#include "ctl.h"
#include "dlq.h"

#include <stdlib.h>
#include <string.h>

static struct sqs_attr
str_attr(const char *name, const char *value)
{
    struct sqs_attr a = {(char *) name, (char *) "String", (char *) value, NULL, 0};
    return a;
}

static const struct sqs_attr *
find(const struct ctl_redrive *r, const char *name)
{
    for (size_t i = 0; i < r->nattrs; i++) {
        if (strcmp(r->attrs[i].name, name) == 0) {
            return &r->attrs[i];
        }
    }
    return NULL;
}

/* What `dlq redrive` would send back for letter l, received with message
 * id `id`; ctl_redrive_build's answer. */
static int
redrive_letter(const struct dlq_letter *l, const char *id, struct ctl_redrive *r)
{
    struct sqs_message letter = {0};
    char err[256];
    letter.message_id = (char *) id;
    letter.attrs = (struct sqs_attr *) l->attrs;
    letter.nattrs = l->nattrs;
    return ctl_redrive_build(&letter, r, err, sizeof(err));
}

/* A source message with n user attributes (one Binary) goes to the DLQ
 * through dlq_letter_build; the letter comes back as it would be received. */
static void
round_trip(size_t n)
{
    static unsigned char bin[] = {0, 1, 2, 0xff};
    char names[10][24], values[10][24];
    struct sqs_attr user[10];
    for (size_t i = 0; i < n; i++) {
        snprintf(names[i], sizeof(names[i]), "u%zu", i);
        snprintf(values[i], sizeof(values[i]), "v%zu", i);
        user[i] = str_attr(names[i], values[i]);
    }
    if (n > 0) {
        user[n - 1] = (struct sqs_attr){names[n - 1], (char *) "Binary.raw", NULL, bin, 4};
    }
    struct sqs_message src = {0};
    src.message_id = (char *) "src-1";
    src.body = (char *) "{\"id\":1}";
    src.body_len = strlen(src.body);
    src.attrs = user;
    src.nattrs = n;
    struct dlq_reason why = {"rejected", "boom", "p", 3, "http://q/jobs", "k:1"};
    struct dlq_letter l;
    CHECK_INT(dlq_letter_build(&l, &src, &why, 0, 0), 0);
    /* twice's diagnostics keep their slots whatever the user's take. */
    const struct sqs_attr *diag = sqs_attr_find(l.attrs, l.nattrs, "twice-error");
    CHECK_STR(diag != NULL ? diag->string_value : NULL, "boom");
    diag = sqs_attr_find(l.attrs, l.nattrs, "twice-key");
    CHECK_STR(diag != NULL ? diag->string_value : NULL, "k:1");

    struct ctl_redrive r;
    CHECK_INT(redrive_letter(&l, "dlq-7", &r), 0);
    CHECK_INT(r.nattrs, n);
    for (size_t i = 0; i + 1 < n; i++) {
        const struct sqs_attr *a = find(&r, names[i]);
        CHECK(a != NULL);
        CHECK_STR(a != NULL ? a->string_value : NULL, values[i]);
        CHECK_STR(a != NULL ? a->data_type : NULL, "String");
    }
    if (n > 0) {
        const struct sqs_attr *b = find(&r, names[n - 1]);
        CHECK(b != NULL && b->string_value == NULL);
        CHECK_STR(b != NULL ? b->data_type : NULL, "Binary.raw");
        CHECK(b != NULL && b->binary_len == 4 && memcmp(b->binary, bin, 4) == 0);
    }
    for (size_t i = 0; i < r.nattrs; i++) {
        CHECK(strncmp(r.attrs[i].name, "twice-", 6) != 0);
    }
    CHECK_STR(r.dedup, "redrive-dlq-7");
    ctl_redrive_free(&r);
    dlq_letter_free(&l);
}

static void
test_redrive_build(void)
{
    round_trip(0);
    round_trip(2);  /* all direct */
    round_trip(3);  /* the last that fits without packing */
    round_trip(4);  /* the first packed */
    round_trip(10); /* most packed into twice-packed-attributes */

    struct sqs_attr bad[] = {str_attr("twice-packed-attributes", "[1,2]"),
                             str_attr("twice-reason", "rejected")};
    struct sqs_message m = {0};
    m.message_id = (char *) "x";
    m.attrs = bad;
    m.nattrs = 2;
    struct ctl_redrive r;
    char err[256];
    CHECK_INT(ctl_redrive_build(&m, &r, err, sizeof(err)), -1);
    CHECK_CONTAINS(err, "twice-packed-attributes is not a JSON object");

    bad[0] = str_attr("twice-packed-attributes", "{\"b\":{\"DataType\":\"Binary\","
                                                 "\"BinaryValue\":\"***\"}}");
    CHECK_INT(ctl_redrive_build(&m, &r, err, sizeof(err)), -1);
    CHECK_CONTAINS(err, "attribute 'b' is not base64");
}

static const char *
esc(struct buf *b, const char *s, size_t max)
{
    buf_reset(b);
    ctl_escape(b, s, strlen(s), max);
    return buf_str(b);
}

static void
test_escape(void)
{
    struct buf b = BUF_INIT;
    CHECK_STR(esc(&b, "{\"id\":\"k1\"}", 0), "{\"id\":\"k1\"}");
    CHECK_STR(esc(&b, "a\nb\tc\\d\x1b[31m", 0), "a\\nb\\tc\\\\d\\x1b[31m");
    CHECK_STR(esc(&b, "caf\xc3\xa9 \xe2\x82\xac", 0), "caf\xc3\xa9 \xe2\x82\xac");
    CHECK_STR(esc(&b, "bad \xff\xc3(", 0), "bad \\xff\\xc3(");
    CHECK_STR(esc(&b,
                  "csi \xc2\x9b"
                  "2J",
                  0),
              "csi \\u009b2J");
    /* bidirectional controls could reorder the line on a terminal */
    CHECK_STR(esc(&b,
                  "a\xe2\x80\xae"
                  "b\xe2\x80\x8e\xe2\x80\x8f\xe2\x80\xaa\xe2\x81\xa6\xe2\x81\xa9\xd8\x9c",
                  0),
              "a\\u202eb\\u200e\\u200f\\u202a\\u2066\\u2069\\u061c");
    CHECK_STR(esc(&b, "\xe2\x80\x8d\xe2\x80\xaf\xe2\x81\xa5\xe2\x81\xaa", 0),
              "\xe2\x80\x8d\xe2\x80\xaf\xe2\x81\xa5\xe2\x81\xaa");
    CHECK_STR(esc(&b, "abcdef", 3), "abc...");
    CHECK_STR(esc(&b, "\xc3\xa9\xc3\xa9\xc3\xa9", 2), "\xc3\xa9\xc3\xa9...");
    CHECK_STR(esc(&b, "abc", 3), "abc");
    buf_free(&b);
}

/* `twicectl pause --for`: seconds, or numbers with units; anything else,
 * zero, and more than 366 days are refused (issue 16.1). */
static void
test_duration(void)
{
    static const struct {
        const char *text;
        long want;
    } rows[] = {
        {"45", 45},
        {"90s", 90},
        {"15m", 900},
        {"2h", 7200},
        {"1h30m", 5400},
        {"1d2h3m4s", 93784},
        {"366d", 31622400},
        {"0s1m", 60},
        {"0", -1},
        {"0s", -1},
        {"", -1},
        {"-5", -1},
        {"+5", -1},
        {"5x", -1},
        {"1h30", -1},
        {"h", -1},
        {"1.5h", -1},
        {"367d", -1},
        {"99999999999999999999", -1},
        {"1m-1s", -1},
        {" 5", -1},
        {"5 ", -1},
        {"5S", -1},
        {"1w", -1},
        {"366d1s", -1},
        {"10ss", -1},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        long got = ctl_parse_duration(rows[i].text);
        if (got != rows[i].want) {
            fprintf(stderr, "duration '%s': got %ld, want %ld\n", rows[i].text, got, rows[i].want);
        }
        CHECK(got == rows[i].want);
    }
    CHECK(ctl_parse_duration(NULL) == -1);
}

/* A follow-up message's twice-outbox-id is the user's, not twice's: a letter
 * keeps it (and only its own twice-reason, not a stale one the message came
 * with), and a redrive sends it back, packed or not, so a queue keyed on it
 * derives the same key again. */
static void
test_outbox_id_round_trip(size_t users)
{
    char names[9][24];
    struct sqs_attr in[11];
    size_t n = 0;
    in[n++] = str_attr("twice-outbox-id", "signup:42#0");
    in[n++] = str_attr("twice-reason", "stale");
    for (size_t i = 0; i < users; i++) {
        snprintf(names[i], sizeof(names[i]), "u%zu", i);
        in[n++] = str_attr(names[i], "v");
    }
    struct sqs_message src = {0};
    src.message_id = (char *) "src-2";
    src.body = (char *) "{}";
    src.body_len = 2;
    src.attrs = in;
    src.nattrs = n;
    struct dlq_reason why = {"max-attempts", "down", "p", 2, "http://q/jobs", "signup:42#0"};
    struct dlq_letter l;
    CHECK_INT(dlq_letter_build(&l, &src, &why, 0, 0), 0);
    size_t reasons = 0;
    for (size_t i = 0; i < l.nattrs; i++) {
        reasons += strcmp(l.attrs[i].name, "twice-reason") == 0;
    }
    CHECK_INT(reasons, 1);
    const struct sqs_attr *a = sqs_attr_find(l.attrs, l.nattrs, "twice-reason");
    CHECK_STR(a != NULL ? a->string_value : NULL, "max-attempts");

    struct ctl_redrive r;
    CHECK_INT(redrive_letter(&l, "dlq-8", &r), 0);
    CHECK_INT(r.nattrs, users + 1);
    a = find(&r, "twice-outbox-id");
    CHECK_STR(a != NULL ? a->string_value : NULL, "signup:42#0");
    CHECK(find(&r, "twice-reason") == NULL);
    ctl_redrive_free(&r);
    dlq_letter_free(&l);
}

int
main(void)
{
    test_redrive_build();
    test_outbox_id_round_trip(0);
    test_outbox_id_round_trip(9); /* the id among the packed ones */
    test_escape();
    test_duration();
    return check_done("test-ctl");
}
