/*
 * test-hostapi-key.c - what the host accepts from a plugin's derive_key():
 * a key is 1 to TWICE_KEY_MAX bytes of UTF-8 without control characters;
 * anything else dead-letters that one message as bad-key-field or
 * key-too-long, with the reason, instead of failing the batch it came in.
 */
#include "buf.h"
#include "check.h"
#include "hostapi.h"
#include "job.h"
#include "instance.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What the fake plugin's derive_key returns next. */
static const char *next_key;
static int next_len;

static int
fake_derive(void *state, const twice_job *job, char *out, size_t cap)
{
    (void) state;
    (void) job;
    size_t n = strlen(next_key); /* a longer length claims bytes never written */
    memcpy(out, next_key, n < cap ? n : cap);
    return next_len;
}

/* Derive with the fake plugin; the key, or NULL with *reason set. */
static char *
derive(const char *key, int len, char *reason, size_t cap)
{
    static twice_plugin desc;
    desc.derive_key = fake_derive;
    struct plugin_instance p = {.name = "fake"};
    p.lp.desc = &desc;
    struct twice_job j = {.retry_after = -1};
    struct buf out = BUF_INIT;
    next_key = key;
    next_len = len;
    char *k = NULL;
    reason[0] = '\0';
    if (hostapi_derive_key(&p, &j, &out) == 0) {
        k = buf_steal(&out);
        CHECK_INT(j.action, JOB_ACT_NONE);
    } else {
        CHECK_INT(j.action, JOB_ACT_DEADLETTER);
        snprintf(reason, cap, "%s: %s", j.reason, j.error != NULL ? j.error : "");
    }
    buf_free(&out);
    free(j.error);
    return k;
}

int
main(void)
{
    char reason[256];
    char *k = derive("welcome:42", 10, reason, sizeof(reason));
    CHECK_STR(k, "welcome:42");
    free(k);
    k = derive("caf\xc3\xa9:1", 7, reason, sizeof(reason));
    CHECK_STR(k, "caf\xc3\xa9:1");
    free(k);

    CHECK(derive("bad-\xff\xfe", 6, reason, sizeof(reason)) == NULL);
    CHECK_STR(reason, "bad-key-field: derive_key returned bytes that are not UTF-8");
    CHECK(derive("\xed\xa0\x80", 3, reason, sizeof(reason)) == NULL); /* a surrogate */
    CHECK_CONTAINS(reason, "not UTF-8");
    CHECK(derive("caf\xc3", 4, reason, sizeof(reason)) == NULL); /* cut in the middle */
    CHECK_CONTAINS(reason, "not UTF-8");
    CHECK(derive("a\nb", 3, reason, sizeof(reason)) == NULL);
    CHECK_STR(reason, "bad-key-field: derive_key returned a control character");
    CHECK(derive("", 0, reason, sizeof(reason)) == NULL);
    CHECK_CONTAINS(reason, "bad-key-field: derive_key returned 0 bytes");
    CHECK(derive("x", TWICE_KEY_MAX + 1, reason, sizeof(reason)) == NULL);
    CHECK_CONTAINS(reason, "key-too-long");
    return check_done("test-hostapi-key");
}
