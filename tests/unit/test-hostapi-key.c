/*
 * test-hostapi-key.c - what the host accepts from a plugin's derive_key():
 * a key is 1 to TWICE_KEY_MAX bytes of UTF-8 without control characters;
 * anything else dead-letters that one message as bad-key-field or
 * key-too-long, with the reason, instead of failing the batch it came in.
 * And which key source wins: a queue's key over the plugin's template or
 * derive_key(). And what a failed init() is reported with: its last
 * error line, cut between characters and marked when long.
 */
#include "buf.h"
#include "check.h"
#include "config.h"
#include "hostapi.h"
#include "instance.h"
#include "job.h"
#include "keying.h"
#include "keytmpl.h"

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
    if (hostapi_derive_key(&p, NULL, &j, &out) == 0) {
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

/* The key of body on a queue whose key is queue_tmpl (NULL: none) with a
 * plugin that has the template plugin_tmpl (NULL: derive_key). */
static char *
key_of(const char *queue_tmpl, const char *plugin_tmpl, const char *body, enum keying_source *src)
{
    static twice_plugin desc;
    char err[256];
    struct config_queue qc = {.name = "q", .key = (char *) queue_tmpl};
    struct keytmpl *qt = NULL;
    struct plugin_instance p = {.name = "fake"};
    desc.derive_key = plugin_tmpl == NULL ? fake_derive : NULL;
    desc.key_template = plugin_tmpl;
    p.lp.desc = &desc;
    p.lp.key = plugin_tmpl != NULL ? LOADER_KEY_TEMPLATE : LOADER_KEY_DERIVE;
    CHECK_INT(keying_queue_key(&qc, &qt, err, sizeof(err)), 0);
    if (plugin_tmpl != NULL) {
        CHECK_INT(keytmpl_compile(plugin_tmpl, &p.lp.tmpl, err, sizeof(err)), 0);
    }
    *src = keying_source(&p.lp, qt);
    struct twice_job j = {.retry_after = -1, .qcfg = &qc};
    j.msg.body = (char *) body;
    j.msg.body_len = strlen(body);
    struct buf out = BUF_INIT;
    next_key = "derived:1";
    next_len = 9;
    char *k = hostapi_derive_key(&p, qt, &j, &out) == 0 ? buf_steal(&out) : NULL;
    buf_free(&out);
    jsondoc_free(j.body);
    free(j.error);
    keytmpl_free(qt);
    keytmpl_free(p.lp.tmpl);
    return k;
}

static void
test_sources(void)
{
    enum keying_source src;
    const char *body = "{\"id\":7,\"detail\":{\"invoiceId\":\"INV-9\"}}";
    char *k = key_of(NULL, "plugin:{id}", body, &src);
    CHECK_STR(k, "plugin:7");
    CHECK_INT(src, KEYING_TEMPLATE);
    free(k);
    k = key_of("invoice:{detail.invoiceId}", "plugin:{id}", body, &src);
    CHECK_STR(k, "invoice:INV-9");
    CHECK_INT(src, KEYING_QUEUE);
    free(k);
    k = key_of(NULL, NULL, body, &src);
    CHECK_STR(k, "derived:1");
    CHECK_INT(src, KEYING_DERIVE);
    free(k);
    k = key_of("invoice:{detail.invoiceId}", NULL, body, &src); /* over derive_key too */
    CHECK_STR(k, "invoice:INV-9");
    CHECK_INT(src, KEYING_QUEUE);
    free(k);
    CHECK_STR(keying_source_name(KEYING_QUEUE), "queue key");
}

static int
long_init(const twice_api *api, const twice_settings *settings, void **state)
{
    (void) settings;
    (void) state;
    char text[3001];
    for (int i = 0; i < 1000; i++) {
        memcpy(text + 3 * i, "\xe2\x82\xac", 3); /* the euro sign */
    }
    text[3000] = '\0';
    api->log(NULL, TWICE_LOG_ERROR, "x%s", text); /* 'x': the cut falls mid-character */
    return -1;
}

static twice_status
long_handle(void *state, twice_job *job)
{
    (void) state;
    (void) job;
    return TWICE_DONE;
}

/* A 3 KB reason of init(): twiced -t's line has its start, whole
 * characters, and says it is cut. */
static void
test_long_init_cause(void)
{
    twice_plugin d = {.magic = TWICE_ABI_MAGIC,
                      .abi_major = TWICE_ABI_MAJOR,
                      .abi_minor = TWICE_ABI_MINOR,
                      .size = (uint32_t) sizeof(twice_plugin),
                      .name = "long",
                      .key_template = "k:{id}",
                      .init = long_init,
                      .handle = long_handle};
    struct config_plugin cp = {.name = "long", .line = 7};
    struct plugin_instance p = {.name = "long", .cfg = &cp};
    char err[2048];
    p.lp.desc = &d;
    CHECK_INT(hostapi_init(&p, "twice.conf", err, sizeof(err)), -1);
    CHECK_CONTAINS(err, "twice.conf:7: plugin 'long': init failed: x\xe2\x82\xac");
    CHECK(strstr(err, "\\x") == NULL); /* no byte of a cut character shown escaped */
    size_t n = strlen(err);
    CHECK(n > 3 && strcmp(err + n - 6, "\xe2\x82\xac...") == 0);
}

int
main(void)
{
    test_sources();
    test_long_init_cause();
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
