/*
 * sqs_results.c - the answers of the *Batch calls (which entries succeeded,
 * which failed and why), read as a stream (jsonparse.c on yajl): one per
 * acknowledger pass, so no tree. Read as jansson read them before: every
 * Successful entry first, then every Failed one (a failure wins), the last
 * of a repeated name wins, members of the wrong type count as absent.
 */
#include "sqs_parse.h"

#include "jsonparse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum list { L_NONE, L_SUCCESSFUL, L_FAILED };

/* One entry being read. */
struct entry {
    char id[96]; /* "" when absent; a longer Id names no entry of ours */
    char message_id[128], code[128], message[256];
    int sender_fault;
};

/* What each list said of the entries of ours: set[i] tells whether succ[i]
 * (or fail[i]) holds anything, so nothing needs zeroing up front. */
struct results {
    const char *const *ids;
    size_t n;
    struct sqs_batch_result *succ, *fail; /* n each */
    unsigned char *succ_set, *fail_set;   /* n each */
    enum list list;                       /* the list being read, L_NONE outside */
    struct entry cur;
    char key[16]; /* the current member of the root or the entry */
};

static long
find_id(const struct results *r, const char *id)
{
    for (size_t i = 0; id[0] != '\0' && i < r->n; i++) {
        if (strcmp(r->ids[i], id) == 0) {
            return (long) i;
        }
    }
    return -1;
}

/* A string member's text, cut to fit (and at a NUL, as C strings are); ""
 * for a member of another type. */
static void
set_text(char *dst, size_t cap, enum jsonparse_kind kind, const char *s, size_t n)
{
    sqs_copy_cut(dst, cap, kind == JSONPARSE_STRING ? s : "", kind == JSONPARSE_STRING ? n : 0);
}

static int
on_scalar(struct jsonparse *p, enum jsonparse_kind kind, const char *s, size_t n)
{
    struct results *r = p->ctx;
    if (p->depth == 0) {
        return jsonparse_fail(p, "not an object");
    }
    if (p->depth != 3 || r->list == L_NONE) {
        return 0;
    }
    struct entry *e = &r->cur;
    if (strcmp(r->key, "Id") == 0) {
        set_text(e->id, sizeof(e->id), kind, s, n);
    } else if (strcmp(r->key, "MessageId") == 0) {
        set_text(e->message_id, sizeof(e->message_id), kind, s, n);
    } else if (strcmp(r->key, "Code") == 0) {
        set_text(e->code, sizeof(e->code), kind, s, n);
    } else if (strcmp(r->key, "Message") == 0) {
        set_text(e->message, sizeof(e->message), kind, s, n);
    } else if (strcmp(r->key, "SenderFault") == 0) {
        /* a JSON boolean; "true" is accepted as well */
        e->sender_fault = kind == JSONPARSE_TRUE ||
                          (kind == JSONPARSE_STRING && n == 4 && memcmp(s, "true", 4) == 0);
    }
    return 0;
}

/* Member names longer than any we know are kept as "" (they match none). */
static int
on_key(struct jsonparse *p, const char *s, size_t n)
{
    struct results *r = p->ctx;
    sqs_copy_cut(r->key, sizeof(r->key), s, n < sizeof(r->key) ? n : 0);
    if (p->depth == 1) {
        r->list = L_NONE;
        if (strcmp(r->key, "Successful") == 0 || strcmp(r->key, "Failed") == 0) {
            /* the last of a repeated list wins: forget the earlier one */
            int failed = r->key[0] == 'F';
            memset(failed ? r->fail_set : r->succ_set, 0, r->n);
            r->list = failed ? L_FAILED : L_SUCCESSFUL;
        }
    }
    return 0;
}

static int
on_open(struct jsonparse *p, int object)
{
    struct results *r = p->ctx;
    if (p->depth == 0 && !object) {
        return jsonparse_fail(p, "not an object");
    }
    if (p->depth == 1 && object) {
        r->list = L_NONE; /* a list that is not an array holds no entries */
    }
    if (p->depth == 2 && object && r->list != L_NONE) {
        struct entry *e = &r->cur;
        e->id[0] = e->message_id[0] = e->code[0] = e->message[0] = '\0';
        e->sender_fault = 0;
    }
    return 0;
}

/* An entry ends: what it says about the entry of ours it names. */
static int
on_close(struct jsonparse *p, int object)
{
    struct results *r = p->ctx;
    if (p->depth != 2 || !object || r->list == L_NONE) {
        return 0;
    }
    long i = find_id(r, r->cur.id);
    if (i < 0) {
        return 0;
    }
    const struct entry *e = &r->cur;
    struct sqs_batch_result *out = r->list == L_FAILED ? &r->fail[i] : &r->succ[i];
    (r->list == L_FAILED ? r->fail_set : r->succ_set)[i] = 1;
    out->ok = r->list == L_SUCCESSFUL;
    out->sender_fault = r->list == L_FAILED && e->sender_fault;
    sqs_copy_cut(out->message_id, sizeof(out->message_id), e->message_id,
                 r->list == L_SUCCESSFUL ? strlen(e->message_id) : 0);
    const char *code = r->list == L_SUCCESSFUL ? "" : e->code[0] != '\0' ? e->code : "Failed";
    sqs_copy_cut(out->code, sizeof(out->code), code, strlen(code));
    sqs_copy_cut(out->message, sizeof(out->message), e->message,
                 r->list == L_FAILED ? strlen(e->message) : 0);
    return 0;
}

static const struct jsonparse_events events = {
    .scalar = on_scalar,
    .key = on_key,
    .open = on_open,
    .close = on_close,
};

int
sqs_parse_batch(const char *json, size_t len, const char *const *ids, size_t n,
                struct sqs_batch_result *results, struct sqs_error *e)
{
    /* a *Batch call has at most 10 entries: no allocation for those */
    struct sqs_batch_result small[2 * 10];
    unsigned char small_set[2 * 10];
    struct sqs_batch_result *both = n <= 10 ? small : malloc(2 * n * sizeof(*both));
    unsigned char *set = n <= 10 ? small_set : malloc(2 * n);
    if (both == NULL || set == NULL) {
        if (n > 10) {
            free(both);
            free(set);
        }
        sqs_error_set(e, "OutOfMemory", 0, "out of memory");
        return -1;
    }
    memset(set, 0, 2 * n);
    struct results r = {
        .ids = ids, .n = n, .succ = both, .fail = both + n, .succ_set = set, .fail_set = set + n};
    char err[256];
    int rc = 0;
    if (len > 0 && jsonparse_run(json, len, &events, &r, err, sizeof(err)) != 0) {
        sqs_error_set(e, "MalformedResponse", 1, "the response is not a JSON object: %s", err);
        rc = -1;
    }
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (r.fail_set[i]) {
            results[i] = r.fail[i];
        } else if (r.succ_set[i]) {
            results[i] = r.succ[i];
        } else {
            memset(&results[i], 0, sizeof(results[i]));
            snprintf(results[i].code, sizeof(results[i].code), "NoResult");
            snprintf(results[i].message, sizeof(results[i].message),
                     "the response reported this entry neither successful nor failed");
        }
    }
    if (n > 10) {
        free(both);
        free(set);
    }
    return rc;
}
