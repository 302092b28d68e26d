/*
 * test-dlq.c - building dead letters (core/sqs/dlq.c): a letter fits its
 * DLQ's size limit as SQS counts it, cutting only twice's optional
 * attributes (twice-error first) and never the body, the user's attributes
 * or what redrive needs; a letter that cannot fit says how large it is;
 * twice's own attributes keep their slots beside ten user attributes; text
 * twice writes into attributes keeps only characters SQS accepts; the size
 * SQS states in a refusal is read. Round trips through redrive: test-ctl.c.
 */
#include "check.h"
#include "dlq.h"

#include <stdlib.h>
#include <string.h>

/* A letter's attribute's string value, NULL when absent. */
static const char *
value(const struct dlq_letter *l, const char *name)
{
    const struct sqs_attr *a = sqs_attr_find(l->attrs, l->nattrs, name);
    return a != NULL ? a->string_value : NULL;
}

/* A letter's size as SQS counts it, recounted here. */
static size_t
count(const struct dlq_letter *l)
{
    size_t n = l->entry.body_len;
    for (size_t i = 0; i < l->nattrs; i++) {
        const struct sqs_attr *a = &l->attrs[i];
        n += strlen(a->name) + strlen(a->data_type) +
             (a->string_value != NULL ? strlen(a->string_value) : 4 * ((a->binary_len + 2) / 3));
    }
    return n;
}

static struct sqs_message
message(const char *body, struct sqs_attr *attrs, size_t nattrs)
{
    struct sqs_message m = {0};
    m.message_id = (char *) "3f6c1c1e-6d0b-4f5e-9a8a-0d5cf3c2a001";
    m.body = (char *) body;
    m.body_len = strlen(body);
    m.attrs = attrs;
    m.nattrs = nattrs;
    return m;
}

static const struct dlq_reason why = {"rejected",
                                      "the CRM answered 422: candidate 42 has no email address",
                                      "sync",
                                      3,
                                      "http://127.0.0.1:4566/000000000000/jobs",
                                      "sync:candidate:42:9"};

/* A letter within its limit is whole; one a few bytes over has twice-error
 * shortened by just that much; further over, the optional parts go one by
 * one; the body, the user's attribute, reason and source always stay. */
static void
test_fit(void)
{
    static char body[4096];
    memset(body, 'x', sizeof(body) - 1);
    struct sqs_attr user[] = {{(char *) "origin", (char *) "String", (char *) "test", NULL, 0}};
    struct sqs_message m = message(body, user, 1);
    struct dlq_letter l;
    CHECK_INT(dlq_letter_build(&l, &m, &why, 0, 0), 0);
    size_t whole = l.bytes;
    CHECK_INT(whole, count(&l));
    CHECK_INT(l.trimmed, 0);
    CHECK_INT(l.nattrs, 8);
    dlq_letter_free(&l);

    CHECK_INT(dlq_letter_build(&l, &m, &why, 0, whole), 0);
    CHECK_INT(l.trimmed, 0);
    dlq_letter_free(&l);

    CHECK_INT(dlq_letter_build(&l, &m, &why, 0, whole - 10), 0);
    CHECK_INT(l.bytes, whole - 10);
    CHECK_INT(count(&l), whole - 10);
    CHECK_INT(l.trimmed, DLQ_TRIM_ERROR_CUT);
    CHECK_INT(strlen(value(&l, "twice-error")), strlen(why.error) - 10);
    CHECK(strncmp(value(&l, "twice-error"), why.error, strlen(why.error) - 10) == 0);
    CHECK_STR(value(&l, "twice-key"), why.key);
    dlq_letter_free(&l);

    /* Over by more than the error: it goes, then the key. */
    size_t err_attr = strlen("twice-error") + strlen("String") + strlen(why.error);
    CHECK_INT(dlq_letter_build(&l, &m, &why, 0, whole - err_attr - 1), 0);
    CHECK(l.bytes <= whole - err_attr - 1);
    CHECK(value(&l, "twice-error") == NULL);
    CHECK(value(&l, "twice-key") == NULL);
    CHECK_INT(l.trimmed, DLQ_TRIM_ERROR | DLQ_TRIM_KEY);
    CHECK_STR(value(&l, "twice-plugin"), "sync");
    dlq_letter_free(&l);

    /* The smallest letter: body, user attribute, reason and source. */
    size_t least = strlen(body) + strlen("origin") + strlen("String") + strlen("test") +
                   strlen("twice-reason") + strlen("String") + strlen("rejected") +
                   strlen("twice-source-message-id") + strlen("String") + strlen(m.message_id) +
                   strlen("twice-source-queue") + strlen("String") + strlen(why.queue_url);
    CHECK_INT(dlq_letter_build(&l, &m, &why, 0, least), 0);
    CHECK_INT(l.bytes, least);
    CHECK_INT(l.nattrs, 4);
    CHECK_STR(value(&l, "twice-reason"), "rejected");
    CHECK_STR(value(&l, "twice-source-queue"), why.queue_url);
    CHECK_STR(value(&l, "twice-source-message-id"), m.message_id);
    CHECK_STR(value(&l, "origin"), "test");
    CHECK(l.entry.body == body && l.entry.body_len == strlen(body));
    CHECK_INT(l.trimmed, DLQ_TRIM_ERROR | DLQ_TRIM_KEY | DLQ_TRIM_ATTEMPTS | DLQ_TRIM_PLUGIN);
    dlq_letter_free(&l);

    /* One byte less: nothing is cut that may not be; it says how large. */
    CHECK_INT(dlq_letter_build(&l, &m, &why, 0, least - 1), -2);
    CHECK_INT(l.bytes, least);
    dlq_letter_free(&l);
}

/* A body as large as the DLQ's limit can never be a letter; a letter of a
 * message with packed attributes fits too (packing is no cut). */
static void
test_too_large(void)
{
    size_t limit = 262144;
    char *body = malloc(limit + 1);
    CHECK(body != NULL);
    memset(body, 'x', limit);
    body[limit] = '\0';
    struct sqs_message m = message(body, NULL, 0);
    struct dlq_letter l;
    CHECK_INT(dlq_letter_build(&l, &m, &why, 0, limit), -2);
    CHECK(l.bytes > limit);
    dlq_letter_free(&l);
    CHECK_INT(dlq_letter_build(&l, &m, &why, 0, 0), 0); /* SQS's 1 MiB */
    dlq_letter_free(&l);
    free(body);
}

/* Ten user attributes (SQS's most): twice-error and twice-key keep their
 * slots, the user's that do not fit are packed. */
static void
test_ten_user_attributes(void)
{
    char names[10][8];
    struct sqs_attr user[10];
    for (size_t i = 0; i < 10; i++) {
        snprintf(names[i], sizeof(names[i]), "u%zu", i);
        user[i] = (struct sqs_attr){names[i], (char *) "String", (char *) "v", NULL, 0};
    }
    struct sqs_message m = message("{}", user, 10);
    struct dlq_letter l;
    CHECK_INT(dlq_letter_build(&l, &m, &why, 0, 0), 0);
    CHECK_INT(l.nattrs, DLQ_MAX_ATTRS);
    CHECK_STR(value(&l, "twice-error"), why.error);
    CHECK_STR(value(&l, "twice-key"), why.key);
    CHECK_STR(value(&l, "twice-reason"), "rejected");
    CHECK(value(&l, "twice-packed-attributes") != NULL);
    CHECK_STR(value(&l, "u0"), "v");
    CHECK_STR(value(&l, "u1"), "v");
    CHECK(value(&l, "u2") == NULL);
    dlq_letter_free(&l);

    /* Three fit beside twice's seven without packing. */
    m.nattrs = 3;
    CHECK_INT(dlq_letter_build(&l, &m, &why, 0, 0), 0);
    CHECK_INT(l.nattrs, DLQ_MAX_ATTRS);
    CHECK(value(&l, "twice-packed-attributes") == NULL);
    CHECK_STR(value(&l, "twice-key"), why.key);
    dlq_letter_free(&l);
}

/* twice-key, twice-plugin and the rest keep only characters SQS accepts in
 * attribute values, as twice-error always did: U+FFFE, U+FFFF, controls and
 * broken UTF-8 become '?'; what SQS accepts is kept. */
static void
test_sanitized(void)
{
    struct dlq_reason w = why;
    w.key = "k:\xef\xbf\xbe:\xef\xbf\xbf:\x01:\xed\xa0\x80:\xc3\xa9:\xf0\x9f\x98\x80";
    w.plugin = "p\x7f\x1b";
    w.error = "e\xef\xbf\xbf";
    struct sqs_message m = message("{}", NULL, 0);
    struct dlq_letter l;
    CHECK_INT(dlq_letter_build(&l, &m, &w, 0, 0), 0);
    CHECK_STR(value(&l, "twice-key"), "k:???:???:?:???:\xc3\xa9:\xf0\x9f\x98\x80");
    CHECK_STR(value(&l, "twice-plugin"), "p\x7f?");
    CHECK_STR(value(&l, "twice-error"), "e???");
    dlq_letter_free(&l);
}

/* twice-error carries a job's detail as its log line has it: JOB_ERROR_MAX
 * bytes and "..." whole (it kept 999 bytes, the mark lost); a longer detail
 * is cut the same way, between characters. */
static void
test_long_error(void)
{
    static char cut[JOB_ERROR_MAX + 4], longer[3000];
    memset(cut, 'x', JOB_ERROR_MAX);
    memcpy(cut + JOB_ERROR_MAX, "...", 4);
    struct dlq_reason w = why;
    w.error = cut;
    struct sqs_message m = message("{}", NULL, 0);
    struct dlq_letter l;
    CHECK_INT(dlq_letter_build(&l, &m, &w, 0, 0), 0);
    CHECK_STR(value(&l, "twice-error"), cut);
    dlq_letter_free(&l);

    /* 1023 bytes, then a two-byte character across the cut */
    memset(longer, 'y', sizeof(longer) - 1);
    memcpy(longer + JOB_ERROR_MAX - 1, "\xc3\xa9", 2);
    w.error = longer;
    CHECK_INT(dlq_letter_build(&l, &m, &w, 0, 0), 0);
    const char *e = value(&l, "twice-error");
    CHECK(e != NULL && strlen(e) == JOB_ERROR_MAX - 1 + 3);
    CHECK(e != NULL && strcmp(e + JOB_ERROR_MAX - 1, "...") == 0);
    CHECK(e != NULL && strncmp(e, longer, JOB_ERROR_MAX - 1) == 0);
    dlq_letter_free(&l);
}

/* The limit SQS states when it refuses a message for its size. */
static void
test_refused_size(void)
{
    struct sqs_error e = {0};
    snprintf(e.code, sizeof(e.code), "InvalidParameterValue");
    snprintf(e.message, sizeof(e.message),
             "One or more parameters are invalid. Reason: Message must be shorter than 262144 "
             "bytes.");
    CHECK_INT(dlq_refused_size(&e), 262144);
    snprintf(e.message, sizeof(e.message), "Value for parameter DelaySeconds is invalid.");
    CHECK_INT(dlq_refused_size(&e), 0);
    snprintf(e.message, sizeof(e.message), "Message must be shorter than 262144 bytes.");
    snprintf(e.code, sizeof(e.code), "AccessDenied");
    CHECK_INT(dlq_refused_size(&e), 0);
}

int
main(void)
{
    test_fit();
    test_too_large();
    test_ten_user_attributes();
    test_sanitized();
    test_long_error();
    test_refused_size();
    return check_done("test-dlq");
}
